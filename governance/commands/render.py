"""``capsule render``: the Markdown view of a capsule for a model."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.commands._args import add_command
from governance.output import out, write_atomic

HELP = "print a capsule as Markdown for a model (a view; the JSON stays the authority)"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "render",
        HELP,
        (
            "Check CAPSULE with verify's pre-checks (canonical bytes, schema, internal "
            "hashes, budget numbers; exit 2 when it fails them), then print a deterministic "
            "Markdown view: packet id, commit, the capsule's sha256, the question, the trust "
            "statement, and each part under its locator with lines and hashes, its exact "
            "bytes inside a fence no content can close (backtick or tilde, one longer than "
            "the longest run of it in the content; the info string names the locator). "
            "Paths, headings and the question are shown in code spans, so repository text "
            "cannot open a fence or inject markup. On a terminal every line is shown with "
            "control characters escaped; a pipe or --output gets the exact bytes."
        ),
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule (or record) JSON file")
    parser.add_argument(
        "--format",
        choices=("markdown",),
        default="markdown",
        help="the view's format (markdown, the default and only one)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", help="write the view to FILE (atomically)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.agents.render import render_markdown  # noqa: PLC0415 (defers json)
    from governance.core.reader import read_capsule_file  # noqa: PLC0415 (defers json)

    capsule = read_capsule_file(args.capsule)
    view = render_markdown(capsule)
    if args.output:
        write_atomic(args.output, view.encode("utf-8"))
    elif sys.stdout.isatty():
        for line in view.splitlines():
            out(line)
    else:
        sys.stdout.buffer.write(view.encode("utf-8"))
        sys.stdout.flush()
    return 0
