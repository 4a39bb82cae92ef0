"""``capsule verify``: is each part of a capsule still what the tree says?"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.output import err, out, print_json, printable

HELP = "check a capsule's parts against a commit (never rewrites it)"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "verify",
        HELP,
        (
            "Check CAPSULE first on its own (canonical bytes, schema, internal hashes, "
            "budget numbers; exit 2 when it is corrupt), then every part at the capsule's own "
            "commit, where any difference means it was altered (capsule_corrupt; a commit "
            "this repository lacks is said: commit_missing), then each part (packet, context, "
            "policy, every read) against the committed tree at --at: unchanged "
            "(verified_unchanged), intact (the file changed or the section moved but the "
            "selected bytes are identical: source_changed_passage_intact, passage_moved), "
            "stale (source_changed, passage_stale) or missing (source_missing, "
            "heading_missing, heading_ambiguous, ...). Exit 0 when every part is unchanged "
            "or intact, 1 when any is stale or missing; with --strict, 1 on any change. "
            "Reads committed objects only; the capsule file is never rewritten."
        ),
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule JSON file")
    parser.add_argument(
        "--at",
        metavar="REV",
        default="HEAD",
        help="commit to verify against: HEAD (default), a full commit id or a unique hex prefix",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any part changed at all, intact ones included",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.reader import read_capsule_file  # noqa: PLC0415 (defers json)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)
    from governance.core.verify import (  # noqa: PLC0415 (defers pygit2, json)
        UNCHANGED,
        counts,
        holds,
        verify_at_commit,
    )
    from governance.guards.check import one_line  # noqa: PLC0415 (defers pygit2)

    capsule = read_capsule_file(args.capsule)
    repo = open_repository()
    snapshot = Snapshot.at(repo, args.at, check_worktree=False)
    declared, results = verify_at_commit(capsule, snapshot)
    ok = holds(results, strict=args.strict)
    tally = counts(results)
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
                "declared_commit": declared.to_json(),
                "ok": ok,
                "strict": args.strict,
                "counts": tally,
                "parts": [r.to_json() for r in results],
            }
        )
    else:
        for r in results:
            out(f"{r.status:<9} {printable(r.locator)}")
            if r.status != UNCHANGED:
                # Said once, under its part: the table stays within 100 columns.
                for line in textwrap.wrap(f"{r.code}: {one_line(r.message)}", 90):
                    out(f"{'':<10}{line}")
        if not declared.checked:
            why = (
                "is not in this repository"
                if not declared.present
                else "has objects missing from this repository (a partial clone?)"
            )
            err(
                f"capsule: its commit {capsule.commit[:12]} {why} ({declared.code}); its parts "
                f"were checked at {snapshot.commit_id[:12]} only"
            )
        verdict = _verdict(tally, len(results), ok=ok, strict=args.strict)
        err(
            f"capsule: {capsule.document['id']} built at {capsule.commit[:12]}, verified at "
            f"{snapshot.commit_id[:12]}: {verdict}"
        )
    return 0 if ok else 1


def _verdict(tally: dict[str, int], total: int, *, ok: bool, strict: bool) -> str:
    if tally["unchanged"] == total:
        return "all parts unchanged"
    shown = ", ".join(f"{n} {status}" for status, n in tally.items() if n)
    if ok:
        return f"{shown}: every selected byte is as recorded"
    if strict and not tally["stale"] + tally["missing"]:
        return f"{shown}: every selected byte is as recorded, but --strict fails on any change"
    return f"{shown}: the evidence changed"
