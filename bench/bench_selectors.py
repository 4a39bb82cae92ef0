"""How many headings of real Markdown have a selector, and whether each
selector builds to the lines outline reports.

    python bench/bench_selectors.py [GIT_DIR ...] [--paths PREFIX] [--smoke]

For every tracked ``*.md`` at HEAD of each repository (default: this one,
under ``tests/data/rfcs``, the vendored RFCs), ``outline`` names every
heading; each selector is then selected again as a build selects it and
its lines compared with the outline's. Prints, per repository, the files,
the headings, how many a selector names (by its form: a bare slug, a
qualified ``a/b``, a structural ``a>b`` or ``>a``, an ordinal ``a@2``), how
many none names, and how many selectors select other lines than outline
said (always 0 is the claim). Works on older trees too (their outline has
no structural forms): run it with ``PYTHONPATH`` at another checkout to
compare. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pygit2

from governance.authoring.outline import outline
from governance.core.excerpt import excerpt_of
from governance.core.locator import parse_locator
from governance.core.snapshot import Snapshot
from governance.errors import CapsuleError

ROOT = Path(__file__).resolve().parent.parent


def markdown_paths(repo: pygit2.Repository, prefix: str) -> list[str]:
    found = []

    def walk(tree: pygit2.Tree, base: str) -> None:
        for entry in tree:
            path = f"{base}{entry.name}"
            if entry.type_str == "tree":
                walk(repo[entry.id], f"{path}/")
            elif path.endswith(".md") and path.startswith(prefix):
                found.append(path)

    walk(repo.head.peel(pygit2.Commit).tree, "")
    return sorted(found)


def form(locator: str | None) -> str:
    if locator is None:
        return "none"
    fragment = locator.partition("#")[2]
    if "@" in fragment:
        return "ordinal"
    if ">" in fragment:
        return "structural"
    return "qualified" if "/" in fragment else "bare"


def measure(git_dir: str, prefix: str, most: int | None) -> None:
    repo = pygit2.Repository(git_dir)
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    paths = markdown_paths(repo, prefix)[:most]
    counts = dict.fromkeys(["bare", "qualified", "structural", "ordinal", "none"], 0)
    skipped = wrong = 0
    start = time.perf_counter()
    for path in paths:
        try:
            found = outline(snapshot, path)
        except CapsuleError:
            skipped += 1
            continue
        source = snapshot.source(path)
        for entry in found.entries:
            counts[form(entry.locator)] += 1
            if entry.locator is None:
                continue
            try:
                excerpt = excerpt_of(snapshot, parse_locator(entry.locator), source)
            except CapsuleError:
                wrong += 1
                continue
            if (excerpt.first_line, excerpt.last_line) != (entry.first_line, entry.last_line):
                wrong += 1
    seconds = time.perf_counter() - start
    total = sum(counts.values())
    named = total - counts["none"]
    print(
        f"{git_dir} {prefix or '.'}: {len(paths):,} files ({skipped:,} unreadable), "
        f"{total:,} headings, {named:,} with a selector ({counts['bare']:,} bare, "
        f"{counts['qualified']:,} qualified, {counts['structural']:,} structural, "
        f"{counts['ordinal']:,} ordinal), {counts['none']:,} with none; {wrong:,} selecting "
        f"other lines; {seconds:.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dirs", nargs="*", metavar="GIT_DIR")
    parser.add_argument("--paths", default=None, help="only files under this prefix")
    parser.add_argument("--smoke", action="store_true", help="ten vendored RFCs")
    args = parser.parse_args()
    if not args.git_dirs:
        prefix = args.paths if args.paths is not None else "tests/data/rfcs/"
        measure(str(ROOT), prefix, 10 if args.smoke else None)
        return 0
    for git_dir in args.git_dirs:
        measure(git_dir, args.paths or "", 10 if args.smoke else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
