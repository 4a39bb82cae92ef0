"""``capsule suggest``: propose required_reads for a goal, with coverage and omissions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.authoring.template import Draft, quoted
from governance.commands._args import add_command, add_json_flag
from governance.core.words import plural
from governance.errors import USAGE, UsageError
from governance.output import err, out, print_json, printable

HELP = "propose required_reads for a goal (model-free, deterministic)"

DESCRIPTION = (
    "Propose required_reads for GOAL from the tracked Markdown at a commit (outside "
    "packets/ unless --paths says otherwise): every heading section and every small "
    "whole file is ranked by BM25 against the goal's facets (quoted phrases, both sides "
    "of 'X vs Y' and 'compare A and B', runs of capitalised words, hyphenated compounds, "
    "then the other content words), and reads are chosen by new facet coverage per "
    "byte, the best section of each file first, never two that overlap or repeat, "
    "within the read limit and the policy's budget as the builder computes it for the "
    "packet 'capsule new' would write. Prints the reads as YAML on stdout, then "
    "coverage (each unresolved facet with facet_not_found, budget_exhausted, read_limit "
    "or overlap) and omissions (why each other candidate was left out) on stderr. The "
    "same goal, commit and options give the same output on every machine. Nothing is "
    "written."
)


def register(sub: Any) -> None:
    parser = add_command(sub, "suggest", HELP, (DESCRIPTION))
    add_options(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def add_options(parser: argparse.ArgumentParser, *, goal_option: bool = False) -> None:
    """The options ``suggest`` and ``new`` share."""
    if goal_option:
        parser.add_argument("--goal", required=True, metavar="TEXT", help="what the work is for")
    else:
        parser.add_argument("goal", metavar="GOAL", help="what the work is for, in words")
    parser.add_argument(
        "--at",
        metavar="REV",
        default="HEAD",
        help="commit to read: HEAD (default), a full commit id or a unique hex prefix (>= 4)",
    )
    parser.add_argument(
        "--paths",
        nargs="+",
        metavar="PATHSPEC",
        default=[],
        help="only the Markdown files these git pathspecs match, as 'git ls-files -- "
        "PATHSPEC' at the top would: a folder names what is under it, '*' matches across "
        "'/', ':(glob)' gives '**', ':!' excludes, ':(icase)' and ':(literal)'; a pathspec "
        "that matches no file is an error (pathspec_no_match)",
    )
    parser.add_argument(
        "--max-reads",
        type=int,
        metavar="N",
        help="at most N reads (default and ceiling: the policy's max_required_reads)",
    )
    parser.add_argument(
        "--budget",
        type=int,
        metavar="TOKENS",
        help="the packet's budget.target_tokens (default: the policy's target_tokens)",
    )


def options(args: argparse.Namespace) -> Any:
    from governance.authoring.suggest import Options  # noqa: PLC0415 (defers pygit2, markdown-it)

    if args.budget is not None and args.budget < 1:
        raise UsageError("--budget must be at least 1 token", code=USAGE)
    return Options(paths=tuple(args.paths), max_reads=args.max_reads, budget=args.budget)


def run(args: argparse.Namespace) -> int:
    from governance.authoring.suggest import suggest  # noqa: PLC0415 (defers pygit2, markdown-it)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)

    opts = options(args)
    repo = open_repository()
    snapshot = Snapshot.at(repo, args.at, check_worktree=False)
    draft = Draft.make(args.goal, snapshot.commit_id, target_tokens=opts.budget)
    result = suggest(snapshot, draft, opts)
    for line in cap_warnings(result):
        err(line)
    if args.json:
        print_json(result)
        return 0
    lines, notes = report(result)
    for line in lines:
        out(line)
    sys.stdout.flush()
    for line in notes:
        err(line)
    return 0


# The corpus bound each skip reason stands for, as the files it left out.
CAPS = {
    "file_cap": "past the first {files:,} files",
    "byte_cap": "past {total_bytes:,} bytes in all",
    "file_too_large": "each over {file_bytes:,} bytes",
    "too_many_headings": "each over {file_headings:,} headings",
}


def cap_warnings(result: dict[str, Any]) -> list[str]:
    """A printable stderr line for each corpus bound that left files out: how
    many, and which bound (``--json`` counts them in ``corpus.skipped``)."""
    skipped, bounds = result["corpus"]["skipped"], result["corpus"]["bounds"]
    lines = []
    if skipped.get("tree_entry_cap"):
        lines.append(
            f"the walk of the tree stopped after {bounds['tree_entries']:,} tree entries "
            "(tree_entry_cap)"
        )
    for reason, why in CAPS.items():
        count = skipped.get(reason, 0)
        if count:
            were = "was" if count == 1 else "were"
            lines.append(
                f"{plural(count, 'Markdown file')} {were} not read, "
                f"{why.format(**bounds)} ({reason})"
            )
    return [
        printable(f"capsule: warning: {line}; narrow the corpus with --paths") for line in lines
    ]


def report(result: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Human lines: the reads as YAML (stdout), then the summary (stderr), each made
    printable (a heading or path from the repository never reaches a terminal raw)."""
    reads = result["reads"]
    out = ["required_reads:" + ("" if reads else " []")]
    for read in reads:
        first, last = read["lines"]
        out.append(
            f"  - {quoted(read['locator'])}  # lines {first}-{last}, {read['bytes']:,} B, "
            f"~{read['estimated_tokens']:,} tokens; covers {', '.join(read['facets'])}"
        )
    coverage = result["coverage"]
    n_facets = len(result["facets"])
    unresolved = coverage["unresolved"]
    err = [
        f"capsule: suggested {plural(len(reads), 'read')} at {result['commit'][:12]} for "
        f"{plural(len(result['facets']), 'facet')}: "
        + ", ".join(facet["facet"] for facet in result["facets"])
    ]
    if unresolved:
        err.append(
            f"coverage: incomplete, {n_facets - len(unresolved)} of {plural(n_facets, 'facet')} "
            "covered; "
            "unresolved: " + ", ".join(f"{u['facet']} ({u['gap']})" for u in unresolved)
        )
    else:
        every = "" if n_facets == 1 else "all "
        err.append(f"coverage: complete, {every}{plural(n_facets, 'facet')} covered")
    omissions = result["omissions"]
    reasons = ", ".join(f"{n} {why}" for why, n in omissions["reasons"].items() if n)
    err.append(
        f"omissions: {omissions['candidates']} candidates, {omissions['selected']} selected"
        + (f"; left out: {reasons}" if reasons else "")
    )
    corpus = result["corpus"]
    skipped = ", ".join(f"{n} {why}" for why, n in corpus["skipped"].items())
    err.append(
        f"corpus: {plural(corpus['files'], 'Markdown file')}, {plural(corpus['bytes'], 'byte')}, "
        f"{plural(corpus['sections'], 'section')}" + (f"; skipped: {skipped}" if skipped else "")
    )
    capsule = result["capsule"]
    if "error" in capsule:
        err.append(
            f"budget: {capsule['packet']} does not fit even without reads: "
            f"{capsule['error']['code']}"
        )
    else:
        err.append(
            f"budget: {capsule['packet']} with these reads builds to {capsule['bytes']:,} bytes, "
            f"{capsule['estimated_tokens']:,} estimated tokens of {capsule['target_tokens']:,} "
            f"(target from {capsule['target_source']})"
        )
    return [printable(line) for line in out], [printable(line) for line in err]
