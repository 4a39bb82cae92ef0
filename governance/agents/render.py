"""The Markdown view of a capsule for a model: repository metadata in code
spans, every excerpt's exact bytes inside a fence that no content can close."""

from __future__ import annotations

import re
from typing import Any

from governance.core.locator import parse_locator
from governance.core.reader import CapsuleFile
from governance.output import printable

FORMATS = ("markdown",)


def escape_info(text: str) -> str:
    """Repository text as a fence's info string that reads back as exactly
    ``printable(text)``: one line; an info string is not inline Markdown, so
    only what a parser decodes there is escaped (a backslash and an ampersand),
    and a backtick becomes an entity (a backtick fence's info string may hold
    none)."""
    out = []
    for char in printable(text):
        if char == "`":
            out.append("&#96;")
        elif char in "\\&":
            out.append("\\" + char)
        else:
            out.append(char)
    shown = "".join(out)
    # A parser trims an info string: keep an edge space as an entity.
    stripped = shown.strip(" ")
    if not stripped:
        shown = "&#32;" * len(shown)
    elif stripped != shown:
        lead = len(shown) - len(shown.lstrip(" "))
        trail = len(shown) - len(shown.rstrip(" "))
        shown = "&#32;" * lead + stripped + "&#32;" * trail
    return shown


def code(text: str) -> str:
    """Repository text (a path, a heading, the question) as an inline code
    span whose content is exactly ``printable(text)``: one line (controls and
    line separators shown as escapes), delimited by one backtick more than its
    longest run, so nothing in it is markup and it cannot end the span, open
    or close a fence, or start a block."""
    shown = printable(text)
    if not shown:
        return "(empty)"
    ticks = "`" * (longest_run(shown, "`") + 1)
    # A span that begins and ends with a space loses one of each: pad so the
    # content is kept (all-space content is never stripped).
    pad = shown[0] in " `" or shown[-1] in " `"
    if pad and not shown.strip(" "):
        pad = False
    inner = f" {shown} " if pad else shown
    return f"{ticks}{inner}{ticks}"


def longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(run) for run in runs), default=0)


def fence_for(text: str) -> str:
    """The fence for ``text``: backtick or tilde, whichever can be shorter
    (backtick on a tie), at least three and one more than the longest run of
    that character anywhere in ``text``, so no line of it can close the fence."""
    backticks = max(3, longest_run(text, "`") + 1)
    tildes = max(3, longest_run(text, "~") + 1)
    return "`" * backticks if backticks <= tildes else "~" * tildes


def _fenced(text: str, locator: str) -> list[str]:
    fence = fence_for(text)
    # The closing fence needs a line of its own; a text without a final line
    # feed gets one here, and the view says so above the fence.
    body = text if text.endswith("\n") or not text else text + "\n"
    return [f"{fence} {escape_info(locator)}\n", body, f"{fence}\n"]


def _final_newline_note(text: str) -> list[str]:
    if text and not text.endswith("\n"):
        return [
            "- ends without a line feed: the line feed before the closing fence is not part of it\n"
        ]
    return []


def _whole(part: dict[str, Any], title: str) -> list[str]:
    text = part["text"]
    lines = [
        f"### {title}: {code(part['path'])}\n",
        "\n",
        f"- blob: {part['blob']}\n",
        f"- sha256: {part['sha256']}\n",
        *_final_newline_note(text),
        "\n",
        *_fenced(text, part["path"]),
    ]
    return lines


def _read(read: dict[str, Any], index: int) -> list[str]:
    text = read["text"]
    first, last = read["lines"]
    lines = [f"### read {index}: {code(read['locator'])}\n", "\n"]
    heading = read["heading"]
    selector = parse_locator(read["locator"])
    if heading is None and selector.lines is not None:
        # A range names positions: say so, so no one reads it as a section.
        lines.append(f"- selection: lines {first}-{last} (a line range)\n")
    elif heading is None and selector.symbol is not None:
        lines.append(f"- selection: the Python definition {code(selector.symbol)}\n")
    elif heading is None:
        lines.append("- selection: the whole file\n")
    else:
        lines.append(f"- heading (level {heading['level']}): {code(heading['text'])}\n")
    lines += [
        f"- lines: {first}-{last}\n",
        f"- blob: {read['blob']}\n",
        f"- source sha256: {read['source_sha256']}\n",
        f"- selected sha256: {read['selected_sha256']}\n",
        *_final_newline_note(text),
        "\n",
        *_fenced(text, read["locator"]),
    ]
    return lines


def render_markdown(capsule: CapsuleFile) -> str:
    """The deterministic Markdown view of a capsule that passed the reader's
    pre-checks. A view only: the JSON file, whose sha256 it names, stays the
    authority."""
    doc = capsule.document
    budget = doc["budget"]
    lines = [
        f"# Capsule {code(doc['id'])}\n",
        "\n",
        f"- packet: {code(doc['id'])} ({code(doc['packet']['path'])})\n",
        f"- commit: {doc['commit']}\n",
        f"- capsule sha256: {capsule.sha256} (the JSON file is the authority; this is a view)\n",
        f"- schema: {code(doc['schema'])}\n",
        f"- budget: {budget['bytes']} bytes, {budget['estimated_tokens']} estimated tokens "
        f"of {budget['target_tokens']} (hard limit {budget['hard_limit_tokens']}, "
        f"reserve {budget['reserve_tokens']})\n",
        "\n",
        "## Question\n",
        "\n",
        # Never a code span at a line start: three backticks there open a fence.
        f"- asked: {code(doc['question'])}\n",
        "\n",
        "## Trust\n",
        "\n",
        # capsule/1's fixed text, checked by the reader: not repository text.
        f"{doc['trust']}\n",
        "\n",
        "## Parts\n",
        "\n",
        "Cite a part by its locator, the text after `read N:` or the path.\n",
        "\n",
    ]
    lines += _whole(doc["packet"], "packet")
    lines.append("\n")
    lines += _whole(doc["context"], "context")
    for index, read in enumerate(doc["reads"], start=1):
        lines.append("\n")
        lines += _read(read, index)
    return "".join(lines)
