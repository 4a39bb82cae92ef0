"""``capsule outline``: every heading of a Markdown file with its selector and cost."""

from __future__ import annotations

import argparse
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.core.words import plural
from governance.output import err, out, print_json, printable

HELP = "list every heading of a Markdown file with its selector, lines and cost"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "outline",
        HELP,
        (
            "Print every heading of PATH, a tracked Markdown file, at an exact commit, as a "
            "tree: its lines, what its section costs (bytes of the section, estimated tokens "
            "= ceil(bytes / 3)), the heading, and the locator that names it in "
            "required_reads: path#slug, or path#parent-slug/child-slug where the slug "
            "repeats, or '(no unique selector: #slug)' when every heading enclosing it also "
            "encloses another with its slug. The file is read as a build reads it: a "
            "missing, untracked, symlinked, non-UTF-8, too large or (at HEAD) dirty file "
            "fails closed. With --json, the same as a list, each heading with its depth and "
            "parent index."
        ),
    )
    parser.add_argument("path", metavar="PATH", help="the Markdown file, as typed from the cwd")
    parser.add_argument(
        "--at",
        metavar="REV",
        default="HEAD",
        help=(
            "commit to read: HEAD (default; the file must also be clean in the working "
            "tree), a full commit id or a unique hex prefix"
        ),
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.authoring.outline import outline  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.core.paths import repo_relative  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot, open_repository  # noqa: PLC0415 (defers pygit2)

    repo = open_repository()
    found = outline(Snapshot.at(repo, args.at), repo_relative(repo, args.path))
    if args.json:
        print_json(found.to_json())
        return 0
    rows = [
        (
            f"{e.first_line}-{e.last_line}",
            f"{e.n_bytes:,}",
            f"{e.estimated_tokens:,}",
            printable(f"{'  ' * e.depth}{'#' * e.level} {e.text}"),
            printable(e.locator if e.locator is not None else f"(no unique selector: #{e.slug})"),
        )
        for e in found.entries
    ]
    header = ("LINES", "BYTES", "TOKENS", "HEADING", "SELECTOR")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        out(
            f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  "
            f"{row[3]:<{widths[3]}}  {row[4]}".rstrip()
        )
    err(
        f"capsule: {found.path} at {found.commit[:12]}: {plural(len(found.entries), 'heading')}, "
        f"{plural(found.line_count, 'line')}, {plural(found.n_bytes, 'byte')} (whole file "
        f"{found.to_json()['estimated_tokens']:,} estimated tokens)"
    )
    return 0
