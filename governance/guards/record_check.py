"""The records hook's view of a record read from a snapshot (the index): the
record rules' verdict (``record_rules``), as failure lines with advice.

A record is ``packets/<ID>/capsules/<first 12 hex of its commit>.json``; its
declared commit must be in the history being committed onto (HEAD or an
ancestor of it, or, during a merge, of the commit being merged).
"""

from __future__ import annotations

import pygit2

from governance.core.snapshot import Snapshot
from governance.core.words import listed
from governance.errors import EXIT_DRIFT, REPLAY_DIFFERS, CapsuleError, record_advice
from governance.guards.check import Failure, one_line
from governance.history.reachability import Tips, branch_tips
from governance.history.record_rules import (
    DRIFT,
    Rule,
    Verdict,
    judge,
    judge_blob,
    read_record,
    record_source,
)
from governance.history.records import is_record_path

__all__ = ["check_record", "is_record_path"]

# A record is evidence: it is never repaired by hand, only restored or
# rebuilt at its commit (the registry's record advice says which).
# Any other code comes from the builder at the declared commit.
NOT_BUILDABLE = "no build at that commit gives this record: remove it, or rebuild it there"


def _failure(path: str, error: CapsuleError) -> Failure:
    details = dict(error.details)
    where = details.pop("field", None) or details.pop("where", None) or "$"
    return Failure(
        path,
        str(where),
        error.code,
        error.message,
        error.exit_code,
        record_advice(error.code),
        details,
    )


def _rebuild_failure(path: str, declared: str, error: CapsuleError) -> Failure:
    # The declared commit exists but the packet does not build there.
    locator = str(error.details.get("locator") or error.details.get("path") or "$")
    details = {k: v for k, v in error.details.items() if k not in ("locator", "path")}
    message = one_line(error.message).removeprefix(f"{locator}: ")
    return Failure(
        path,
        locator,
        error.code,
        f"cannot rebuild at its commit {declared[:12]}: {message}",
        error.exit_code,
        NOT_BUILDABLE,
        details,
    )


def _drift_failure(path: str, declared: str, verdict: Verdict) -> Failure:
    differences = verdict.outcome.differences
    fields = [d.path for d in differences]
    # Name the field that was changed, not the hashes and budget numbers that
    # had to follow it.
    named = (
        [f for f in fields if not f.startswith("budget.") and not f.endswith("sha256")]
        or [f for f in fields if not f.startswith("budget.")]
        or fields
        or ["$"]
    )
    return Failure(
        path,
        named[0],
        REPLAY_DIFFERS,
        f"rebuilding at {declared[:12]} gives other bytes (at {listed(fields)})",
        EXIT_DRIFT,
        record_advice(REPLAY_DIFFERS),
        {"differences": [d.to_json() for d in differences]},
    )


def check_record(
    repo: pygit2.Repository, snapshot: Snapshot, path: str, *, tips: Tips | None = None
) -> list[Failure]:
    """The record at ``path`` of ``snapshot``: no failure, or the first rule's.
    Its commit must be in the history of ``tips`` (default: the branch's, HEAD
    and any commit being merged; the pre-push hook gives the pushed tip)."""
    outcome = judge_blob(repo, lambda: read_record(snapshot, record_source(snapshot, path)))
    verdict = judge(repo, outcome, path, tips if tips is not None else branch_tips(repo))
    declared = outcome.declared or ""
    if verdict.result == DRIFT:
        return [_drift_failure(path, declared, verdict)]
    if verdict.error is None:
        return []
    if verdict.failed == Rule.REPLAY:
        return [_rebuild_failure(path, declared, verdict.error)]
    return [_failure(path, verdict.error)]
