"""commit-msg hook: a subject a reviewer can scan, then a blank line.

The subject (the first line that is not a comment) is at most 72
characters; when the message goes on, the line after the subject is blank
and the body follows it. Git's comment lines (``#`` first) and everything
below the scissors line of ``commit -v`` are not part of the message.
Merge, fixup and revert subjects that git writes itself are judged like
any other: git keeps them short.

Usage: ``check_commit_msg.py MESSAGE_FILE`` (pre-commit passes the file).
Exit 0 when the message follows the convention, 1 with one line per
problem on stderr otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

MAX_SUBJECT = 72
SCISSORS = "# ------------------------ >8 ------------------------"


def message_lines(text: str) -> list[str]:
    """The message as git keeps it: no comment lines, nothing below the
    scissors, no trailing blank lines."""
    lines = []
    for line in text.splitlines():
        if line == SCISSORS:
            break
        if not line.startswith("#"):
            lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def problems(text: str) -> list[str]:
    """What is wrong with a commit message, or nothing."""
    lines = message_lines(text)
    if not lines:
        return ["the message is empty"]
    found = []
    subject = lines[0]
    if len(subject) > MAX_SUBJECT:
        found.append(
            f"the subject is {len(subject)} characters; at most {MAX_SUBJECT}: "
            "move the detail to the body"
        )
    if len(lines) > 1 and lines[1]:
        found.append("the second line is not blank: a blank line goes between subject and body")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: check_commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    text = Path(args[0]).read_text(encoding="utf-8", errors="replace")
    found = problems(text)
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    if found:
        print(
            "commit message: the convention is in CONTRIBUTING.md "
            "(a subject of at most 72 characters, a blank line, then the body)",
            file=sys.stderr,
        )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
