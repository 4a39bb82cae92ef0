"""``capsule replay``: rebuild a capsule at its declared commit and compare bytes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from governance.commands._args import add_command, add_json_flag
from governance.errors import UsageError
from governance.history.records import is_record_path
from governance.output import err, out, print_json, printable

if TYPE_CHECKING:
    import pygit2

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

records:
  A CAPSULE at a record path of the working tree (packets/<ID>/capsules/*.json)
  is judged by the record rules, as capsule audit and the capsule-records hook
  judge it: also record_not_file (3, a link is not followed), record_too_large
  (2, over 16 MiB), record_misplaced (1, not where its id and commit say) and
  commit_unreachable (3, its commit is not in HEAD's history).

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "replay",
        HELP,
        (
            "Check CAPSULE on its own first (known schema, canonical bytes, internal "
            "hashes; exit 2), then rebuild it with the trusted capsule/1 builder from the "
            "packet, context, policy and sources of its declared commit, read straight from "
            "git objects: no checkout, no working tree, no filters, no hooks, and no file of "
            "that commit is ever imported or run. Compares the bytes and names every JSON "
            "path that differs (for example reads[2].text or budget.bytes)."
        ),
        epilog=EPILOG,
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule (or record) JSON file")
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the repository holding the declared commit (default: the one around the cwd)",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _record_path(repo: pygit2.Repository, given: str) -> str | None:
    """``given`` as a record path of ``repo``'s working tree, or None when it is
    not one (a capsule anywhere else is replayed as a plain capsule)."""
    from governance.core.paths import repo_relative  # noqa: PLC0415 (defers pygit2)

    if repo.workdir is None:
        return None
    try:
        relative = repo_relative(repo, given)
    except UsageError:
        return None
    return relative if is_record_path(relative) else None


def run(args: argparse.Namespace) -> int:
    from governance.core.reader import read_capsule_file  # noqa: PLC0415 (defers json)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.history.reachability import branch_tips  # noqa: PLC0415 (defers pygit2)
    from governance.history.record_rules import (  # noqa: PLC0415 (defers pygit2, PyYAML, json)
        Rule,
        judge,
        judge_blob,
        read_record_file,
    )
    from governance.history.replay import rebuild_failed  # noqa: PLC0415 (defers pygit2, PyYAML, json)

    try:
        repo: pygit2.Repository | None = open_repository(args.repo)
    except UsageError as exc:
        repo, unopened = None, exc
    record = _record_path(repo, args.capsule) if repo is not None else None
    if repo is None or record is None:
        # A plain capsule: its pre-checks come before the repository is needed.
        capsule = read_capsule_file(args.capsule)
        if repo is None:
            raise unopened
        outcome = judge_blob(repo, lambda: capsule.data)
        verdict = judge(repo, outcome, None, None)
    else:
        # A record: judged by the record rules, in their order, as audit and the
        # capsule-records hook judge it.
        outcome = judge_blob(repo, lambda: read_record_file(args.capsule))
        verdict = judge(repo, outcome, record, branch_tips(repo))
    if verdict.error is not None:
        if verdict.failed == Rule.REPLAY and outcome.declared is not None:
            raise rebuild_failed(verdict.error, outcome.declared)
        raise verdict.error
    assert outcome.declared is not None
    assert outcome.sha256 is not None
    identical = verdict.failed is None
    packet_id = outcome.packet_id
    if args.json:
        print_json(
            {
                "capsule": {
                    "path": args.capsule,
                    "sha256": outcome.sha256,
                    "id": packet_id,
                    "commit": outcome.declared,
                },
                "identical": identical,
                "rebuilt_sha256": outcome.rebuilt_sha256,
                "differences": [d.to_json() for d in outcome.differences],
            }
        )
    else:
        where = f"{packet_id} at {outcome.declared[:12]}"
        if identical:
            out(f"identical  {args.capsule}  ({where}, sha256 {outcome.sha256[:16]})")
        else:
            differences = outcome.differences
            out(f"different  {args.capsule}  ({where}): {len(differences)} fields")
            paths = [printable(d.path) for d in differences]
            width = max(map(len, paths), default=0)
            for d, path in zip(differences, paths, strict=True):
                out(
                    f"  {path:<{width}}  recorded {d.recorded_sha256[:16]}  "
                    f"rebuilt {d.rebuilt_sha256[:16]}"
                )
        verdict_text = "identical" if identical else "differs from its rebuild"
        err(f"capsule: replay of {where}: {verdict_text}")
    return 0 if identical else 1
