"""``capsule verify``: is each part of a capsule still what the tree says?"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.cli import EXIT_CODES, add_json_flag

HELP = "check a capsule's parts against a commit (never rewrites it)"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "verify",
        help=HELP,
        description=(
            "Check CAPSULE first on its own (canonical bytes, schema, internal hashes, "
            "budget numbers; exit 2 when it is corrupt), then each part (packet, context, "
            "policy, every read) against the committed tree at --at: unchanged, stale "
            "(source_changed, source_changed_passage_intact, passage_moved, passage_stale) "
            "or missing (source_missing, heading_missing, heading_ambiguous, ...). Reads "
            "committed objects only; the capsule file is never rewritten."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule JSON file")
    parser.add_argument(
        "--at",
        metavar="REV",
        default="HEAD",
        help="commit to verify against: HEAD (default), a full commit id or a unique hex prefix",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.reader import read_capsule_file
    from governance.core.snapshot import Snapshot, open_repository
    from governance.core.verify import UNCHANGED, verify_capsule
    from governance.output import print_json

    capsule = read_capsule_file(args.capsule)
    repo = open_repository()
    snapshot = Snapshot.at(repo, args.at, check_worktree=False)
    results = verify_capsule(capsule, snapshot)
    ok = all(r.status == UNCHANGED for r in results)
    if args.json:
        print_json(
            {
                "capsule": {
                    "path": args.capsule,
                    "sha256": capsule.sha256,
                    "id": capsule.document["id"],
                    "commit": capsule.commit,
                },
                "at": snapshot.commit_id,
                "ok": ok,
                "parts": [r.to_json() for r in results],
            }
        )
    else:
        width = max(len(r.locator) for r in results)
        for r in results:
            print(f"{r.status:<9} {r.locator:<{width}}  {r.code}: {r.message}")
        stale = sum(r.status != UNCHANGED for r in results)
        verdict = "all parts unchanged" if ok else f"{stale} of {len(results)} parts drifted"
        print(
            f"capsule: {capsule.document['id']} built at {capsule.commit[:12]}, verified at "
            f"{snapshot.commit_id[:12]}: {verdict}",
            file=sys.stderr,
        )
    return 0 if ok else 1
