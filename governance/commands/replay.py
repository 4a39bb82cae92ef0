"""``capsule replay``: rebuild a capsule at its declared commit and compare bytes."""

from __future__ import annotations

import argparse
from typing import Any

from governance.commands._args import add_json_flag
from governance.errors import CapsuleError

HELP = "rebuild a capsule at its declared commit and compare it byte for byte"

EPILOG = """\
exit codes:
  0  identical: the rebuild gives exactly the capsule's bytes
  1  different: each differing JSON path is listed with both hashes
  2  the capsule failed its pre-checks (unsupported_schema, capsule_malformed,
     non_canonical, capsule_corrupt, ...), or bad usage
  3  commit_missing: the declared commit is not in the repository (the
     message says when the clone is shallow)
  2, 3 or 4  the rebuild itself failed closed at the declared commit; the error
     keeps the builder's code (source_missing, heading_missing, packet_malformed,
     over_budget, ...) and carries "stage": "rebuild"

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "replay",
        help=HELP,
        description=(
            "Check CAPSULE on its own first (known schema, canonical bytes, internal "
            "hashes; exit 2), then rebuild it with the trusted capsule/1 builder from the "
            "packet, context, policy and sources of its declared commit, read straight from "
            "git objects: no checkout, no working tree, no filters, no hooks, and no file of "
            "that commit is ever imported or run. Compares the bytes and names every JSON "
            "path that differs (for example reads[2].text or budget.bytes)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule (or record) JSON file")
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the repository holding the declared commit (default: the one around the cwd)",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.hashing import sha256_hex
    from governance.core.reader import read_capsule_file
    from governance.core.snapshot import open_repository
    from governance.history.replay import declared_commit, rebuild_failed, replay_capsule
    from governance.output import err, out, print_json, printable

    capsule = read_capsule_file(args.capsule)
    repo = open_repository(args.repo)
    declared_commit(repo, capsule.commit)  # commit_missing, before any rebuild
    try:
        result = replay_capsule(repo, capsule)
    except CapsuleError as exc:
        raise rebuild_failed(exc, capsule.commit) from None
    packet_id = capsule.document["id"]
    if args.json:
        print_json(
            {
                "capsule": {
                    "path": args.capsule,
                    "sha256": capsule.sha256,
                    "id": packet_id,
                    "commit": capsule.commit,
                },
                "identical": result.identical,
                "rebuilt_sha256": sha256_hex(result.rebuilt),
                "differences": [d.to_json() for d in result.differences],
            }
        )
    else:
        where = f"{packet_id} at {capsule.commit[:12]}"
        if result.identical:
            out(f"identical  {args.capsule}  ({where}, sha256 {capsule.sha256[:16]})")
        else:
            out(f"different  {args.capsule}  ({where}): {len(result.differences)} fields")
            paths = [printable(d.path) for d in result.differences]
            width = max(map(len, paths), default=0)
            for d, path in zip(result.differences, paths, strict=True):
                out(
                    f"  {path:<{width}}  recorded {d.recorded_sha256[:16]}  "
                    f"rebuilt {d.rebuilt_sha256[:16]}"
                )
        verdict = "identical" if result.identical else "differs from its rebuild"
        err(f"capsule: replay of {where}: {verdict}")
    return 0 if result.identical else 1
