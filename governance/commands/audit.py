"""``capsule audit``: replay every capsule record of a range of history."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from governance.commands._args import add_json_flag
from governance.output import err, out, plural, printable

if TYPE_CHECKING:
    from governance.history.audit import Row

HELP = "replay every capsule record found in history (each distinct blob once)"

EPILOG = """\
REV_RANGE:
  REV     every commit reachable from REV (default HEAD: all of HEAD's history)
  A..B    the commits reachable from B and not from A: the records they add
  Each end is HEAD, a full commit id or a unique hex prefix (>= 4), as for --at.

sharding a CI matrix:
  N jobs that run the same command with --shard 1/N ... --shard N/N on the same
  commit replay every record blob exactly once between them.

exit codes:
  0  every record replays byte for byte at its declared commit (or none found,
     a repository without commits included)
  1  at least one record drifted or could not be replayed (its error code is in
     the table: commit_missing, commit_unreachable, record_misplaced, ...)
  2  bad usage (range, --paths, --jobs, --shard) or not a repository
  3  history cannot be walked: object_missing, a partial clone without its
     trees (--filter=tree:0); clone without --filter

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


# Processes of one machine: more than this is a typo, not a machine.
MAX_JOBS = 256


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_JOBS}")
    return value


def _shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if slash and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return int(index), int(count)
    raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 1 <= I <= N (for example 2/4)")


def register(sub: Any) -> None:
    from governance.history.records import RECORDS_GLOB

    parser = sub.add_parser(
        "audit",
        help=HELP,
        description=(
            "Walk the commits of REV_RANGE with pygit2, find every version of every capsule "
            "record (files matching --paths), and replay each distinct record blob once at "
            "its declared commit, as `capsule replay` does: git objects only, no checkout, no "
            "filters, no hooks, nothing from the repository run. Prints a table on stdout: "
            "result, path, the commit that introduced that version, its declared build "
            "commit, and the differing fields or the error. A record must sit at the path its "
            "own id and commit give (record_misplaced otherwise), and its declared commit "
            "must be in the history of the commit that introduced it (commit_unreachable "
            "otherwise). Progress goes to stderr when it is a terminal."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("range", metavar="REV_RANGE", nargs="?", help="REV or A..B (default: HEAD)")
    parser.add_argument(
        "--paths",
        metavar="GLOB",
        nargs="+",
        action="extend",
        help=(
            f"where records live (default: {RECORDS_GLOB}); '*', '?' and '[...]' stay "
            "within one path segment, a whole '**' segment spans folders. Give REV_RANGE "
            "before --paths."
        ),
    )
    parser.add_argument(
        "--jobs",
        "-j",
        metavar="N",
        type=_jobs,
        default=1,
        help=(
            f"replay on up to N processes of this machine (default 1, at most {MAX_JOBS}; "
            "never more than there are chunks of work)"
        ),
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        type=_shard,
        help="replay only the I-th of N deterministic slices of the records found",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.snapshot import open_repository
    from governance.history import audit
    from governance.history.globs import PathGlobs
    from governance.history.records import RECORDS_GLOB
    from governance.output import print_json

    globs = PathGlobs(args.paths or [RECORDS_GLOB])
    audit.limit_git_memory()
    repo = open_repository()
    where = audit.parse_range(repo, args.range)
    found = audit.find_records(repo, where, globs)
    everything = audit.work_items(found.versions)
    index, count = args.shard or (1, 1)
    items = audit.shard(everything, index, count)
    progress = audit.Progress(len(items))
    outcomes = audit.replay_items(repo, items, jobs=args.jobs, progress=progress.update)
    progress.finish()
    table = audit.rows(found.versions, items, outcomes)

    counts = {
        "commits": found.commits,
        "records": len(table),
        "blobs": len(items),
        audit.IDENTICAL: sum(row.result == audit.IDENTICAL for row in table),
        audit.DRIFT: sum(row.result == audit.DRIFT for row in table),
        audit.ERROR: sum(row.result == audit.ERROR for row in table),
    }
    ok = counts[audit.IDENTICAL] == len(table)
    if args.json:
        print_json(
            {
                "range": {"spec": where.spec, "tip": where.tip, "hidden": where.hidden},
                "paths": globs.patterns,
                "shard": {"index": index, "count": count, "blobs_in_range": len(everything)},
                "jobs": args.jobs,
                "counts": counts,
                "ok": ok,
                "results": [row.to_json() for row in table],
            }
        )
    else:
        _print_table(table)
    if where.tip is None:
        err("capsule: no commits, no records: HEAD has no commits yet")
        return 0
    scope = f" (shard {index}/{count} of {len(everything)} record blobs)" if count > 1 else ""
    err(
        f"capsule: audited {plural(counts['records'], 'record version')} "
        f"({plural(counts['blobs'], 'distinct blob')}) in {plural(found.commits, 'commit')} of "
        f"{where.spec} at {where.tip[:12]}{scope}: "
        f"{counts[audit.IDENTICAL]} identical, {counts[audit.DRIFT]} drift, "
        f"{counts[audit.ERROR]} error"
    )
    return 0 if ok else 1


def _print_table(table: list[Row]) -> None:
    from governance.history.audit import DRIFT, ERROR

    lines = [("RESULT", "PATH", "INTRODUCED", "BUILT AT", "DETAIL")]
    for row in table:
        if row.result == DRIFT:
            detail = "differs in " + ", ".join(d.path for d in row.differences)
        elif row.result == ERROR:
            # The first line only: an over-budget message goes on to list every part.
            detail = f"{row.code}: {row.message.splitlines()[0] if row.message else ''}"
        else:
            detail = ""
        declared = row.declared[:12] if row.declared else "-"
        # Every cell printable before the widths are measured: a record's path
        # is repository text, and may hold escape codes.
        lines.append(
            (row.result, printable(row.path), row.introduced[:12], declared, printable(detail))
        )
    widths = [max(len(line[column]) for line in lines) for column in range(4)]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line[:4], widths, strict=True)]
        out("  ".join([*cells, line[4]]).rstrip())
