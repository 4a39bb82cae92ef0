"""``capsule status``: which recorded capsules no longer match HEAD."""

from __future__ import annotations

import argparse
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.output import err, out, print_json

HELP = "verify the newest record of each packet against HEAD: which went stale"

EPILOG = """\
statuses (a record's is its worst part's, as capsule verify gives them):
  unchanged  every part is the same blob at HEAD
  intact     a file changed or a section moved, but every selected byte is the same
  stale      a part's selected bytes changed (source_changed, passage_stale)
  missing    a part's file or heading is gone or now ambiguous
  error      the record could not be verified: its code says why (record_not_file,
             non_canonical, capsule_corrupt, record_misplaced, ...)

exit codes:
  0  listed (records go stale as their sources move on: that is expected)
  1  --strict, and a record listed is stale, missing or in error
  2  bad usage, or not a repository

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "status",
        HELP,
        (
            "List the capsule records committed at HEAD (packets/<ID>/capsules/*.json): the "
            "newest of each packet, the first met walking HEAD's history newest first, or "
            "every one with --all. Each is verified as `capsule verify` does: first at its own "
            "commit (any difference there is capsule_corrupt), then against HEAD's committed "
            "tree, and listed with its status and each part that changed. Reads committed "
            "objects only; nothing is rebuilt (`capsule audit` replays) and nothing written."
        ),
        epilog=EPILOG,
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="verify every record at HEAD, not only each packet's newest",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a record listed is stale, missing or could not be verified",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.history.status import row_lines, status, summary  # noqa: PLC0415 (defers pygit2)

    report = status(open_repository(), all_records=args.all).to_json()
    if args.json:
        print_json({**report, "strict": args.strict})
    else:
        for row in report["records"]:
            for line in row_lines(row):
                out(line)
        err(f"capsule: {summary(report)}")
    return 1 if args.strict and not report["ok"] else 0
