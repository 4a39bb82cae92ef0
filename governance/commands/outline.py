"""``capsule outline``: every heading of a Markdown file, or every definition of
a Python file, with its selector and cost."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from governance.commands._args import add_command, add_json_flag
from governance.core.words import plural
from governance.errors import USAGE, UsageError
from governance.output import err, out, print_json, printable

if TYPE_CHECKING:
    from governance.core.snapshot import Snapshot

HELP = "list every heading or Python definition of a file: selector, lines, cost"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "outline",
        HELP,
        (
            "Print every heading of PATH, a tracked Markdown file, at an exact commit, as a "
            "tree: its lines, what its section costs (bytes of the section, estimated tokens "
            "= ceil(bytes / 3)), the heading, and the locator that names it in "
            "required_reads: path#slug; path#parent-slug/child-slug where the slug repeats; "
            "path#parent>child (directly under) or path#>slug (under no heading) where that "
            "is not enough; path#slug@2 (the second of its siblings with that slug) only "
            "where siblings share the slug and every enclosing heading. With --resolve "
            "PATH#ANCHOR, the one heading a locator names and its selector: GitHub's anchor "
            "of a repeated heading (#notes-1, copied from the rendered page) is read as "
            "GitHub numbers it. The file is read as a build reads it: a "
            "missing, untracked, symlinked, non-UTF-8, too large or (at HEAD) dirty file "
            "fails closed. With --json, the same as a list, each heading with its depth and "
            "parent index. A PATH ending in .py is outlined as Python instead: every def, "
            "async def and class, nested ones indented, each with its path#py:Class.method "
            "selector (its lines, path#L10-L40, where the name is defined twice); --json "
            "lists them as definitions."
        ),
    )
    parser.add_argument(
        "path", metavar="PATH", nargs="?", help="the Markdown (or .py) file, as typed from the cwd"
    )
    parser.add_argument(
        "--resolve",
        metavar="PATH#ANCHOR",
        help=(
            "print the selector of the heading this names instead (path from the repository "
            "root): GitHub's anchor, #notes-1 included, or any selector"
        ),
    )
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
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)

    if (args.path is None) == (args.resolve is None):
        raise UsageError(
            "capsule outline: give PATH, or --resolve PATH#ANCHOR, not both",
            code=USAGE,
        )
    repo = open_repository()
    snapshot = Snapshot.at(repo, args.at)
    if args.resolve is not None:
        return _resolve(snapshot, args.resolve, as_json=args.json)
    path = repo_relative(repo, args.path)
    if path.endswith(".py"):
        return _python(snapshot, path, as_json=args.json)
    found = outline(snapshot, path)
    if args.json:
        print_json(found.to_json())
        return 0
    rows = [
        (
            f"{e.first_line}-{e.last_line}",
            f"{e.n_bytes:,}",
            f"{e.estimated_tokens:,}",
            printable(f"{'  ' * e.depth}{'#' * e.level} {e.text}"),
            printable(e.locator),
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


def _python(snapshot: Snapshot, path: str, *, as_json: bool) -> int:
    from governance.authoring.outline import python_outline  # noqa: PLC0415 (defers pygit2, ast)

    found = python_outline(snapshot, path)
    if as_json:
        print_json(found.to_json())
        return 0
    rows = [
        (
            f"{d.first_line}-{d.last_line}",
            f"{d.n_bytes:,}",
            f"{d.estimated_tokens:,}",
            printable(f"{'  ' * d.depth}{d.kind} {d.name.rpartition('.')[2]}"),
            printable(d.locator),
        )
        for d in found.definitions
    ]
    header = ("LINES", "BYTES", "TOKENS", "DEFINITION", "SELECTOR")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        out(
            f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  "
            f"{row[3]:<{widths[3]}}  {row[4]}".rstrip()
        )
    err(
        f"capsule: {found.path} at {found.commit[:12]}: "
        f"{plural(len(found.definitions), 'definition')}, {plural(found.line_count, 'line')}, "
        f"{plural(found.n_bytes, 'byte')} (whole file "
        f"{found.to_json()['estimated_tokens']:,} estimated tokens)"
    )
    return 0


def _resolve(snapshot: Snapshot, locator: str, *, as_json: bool) -> int:
    from governance.authoring.outline import resolve  # noqa: PLC0415 (defers pygit2, PyYAML, json)

    found = resolve(snapshot, locator)
    if as_json:
        print_json(found.to_json())
        return 0
    entry = found.entry
    out(printable(entry.locator))
    read_as = "GitHub's anchor" if found.github_anchor else "the selector"
    err(
        printable(
            f"capsule: {read_as} {locator} is {'#' * entry.level} {entry.text}, lines "
            f"{entry.first_line}-{entry.last_line} at {found.outline.commit[:12]}"
        )
    )
    return 0
