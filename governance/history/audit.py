"""Audit as a library call: find every capsule record in a range of history,
judge each distinct record blob once, and return a report.

The walk (``walk``), the pool (``pool``) and the record rules
(``record_rules``) do the work; this module puts their results together as
one row per record version. Like replay, an audit reads git objects only: no
checkout, no working tree, no filters, no hooks, and no file of any commit is
imported or run. Nothing here prints: progress is a callback the caller gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pygit2

from governance.history.globs import PathGlobs
from governance.history.pool import Item, regular, replay_items, shard, work_items
from governance.history.ranges import Range, parse_range
from governance.history.record_rules import (
    DRIFT,
    ERROR,
    IDENTICAL,
    BlobOutcome,
    Rule,
    Verdict,
    introduced_by,
    judge,
)
from governance.history.records import RECORDS_GLOB
from governance.history.replay import Difference, rebuild_failed
from governance.history.walk import Version, find_records, limit_git_memory

RESULTS = (IDENTICAL, DRIFT, ERROR)


@dataclass(frozen=True)
class Row:
    """A line of the audit table: one record version and its result. A new
    column is a new field here and a key in ``to_json``."""

    path: str
    blob_id: str
    introduced: str
    declared: str | None
    result: str
    code: str | None
    message: str
    differences: tuple[Difference, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "blob": self.blob_id,
            "introduced": self.introduced,
            "commit": self.declared,
            "result": self.result,
            "code": self.code,
            "message": self.message,
            "differences": [d.to_json() for d in self.differences],
        }


def row(version: Version, verdict: Verdict) -> Row:
    """The row of one record version, from its verdict."""
    outcome = verdict.outcome
    error = verdict.error
    if error is not None and verdict.failed == Rule.REPLAY and outcome.declared is not None:
        error = rebuild_failed(error, outcome.declared)
    drift = verdict.result == DRIFT
    if error is not None:
        message = error.message
    elif drift:
        message = ", ".join(d.path for d in outcome.differences)
    else:
        message = ""
    return Row(
        version.path,
        version.blob_id,
        version.introduced,
        outcome.declared,
        verdict.result,
        verdict.code,
        message,
        outcome.differences if drift else (),
    )


def rows(
    repo: pygit2.Repository,
    versions: Sequence[Version],
    items: Sequence[Item],
    outcomes: Sequence[BlobOutcome],
) -> list[Row]:
    """The table, in the order versions were found; versions whose item is not
    among ``items`` (another shard's) are left out. Each version is judged by
    the record rules with the commit that introduced it as its history."""
    by_item = {
        (item.blob_id, item.regular): outcome for item, outcome in zip(items, outcomes, strict=True)
    }
    out = []
    for version in versions:
        outcome = by_item.get((version.blob_id, regular(version.mode)))
        if outcome is None:
            continue
        verdict = judge(repo, outcome, version.path, introduced_by(version.introduced))
        out.append(row(version, verdict))
    return out


@dataclass(frozen=True)
class AuditReport:
    """What an audit found: the range, the shard, and one row per record version."""

    range: Range
    paths: tuple[str, ...]
    shard: tuple[int, int]
    blobs_in_range: int  # distinct record blobs of all shards together
    jobs: int
    commits: int
    blobs: int  # distinct record blobs of this shard
    rows: tuple[Row, ...]

    @property
    def counts(self) -> dict[str, int]:
        return {
            "commits": self.commits,
            "records": len(self.rows),
            "blobs": self.blobs,
            **{result: sum(r.result == result for r in self.rows) for result in RESULTS},
        }

    @property
    def ok(self) -> bool:
        return all(r.result == IDENTICAL for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        index, count = self.shard
        return {
            "range": {"spec": self.range.spec, "tip": self.range.tip, "hidden": self.range.hidden},
            "paths": list(self.paths),
            "shard": {"index": index, "count": count, "blobs_in_range": self.blobs_in_range},
            "jobs": self.jobs,
            "counts": self.counts,
            "ok": self.ok,
            "results": [r.to_json() for r in self.rows],
        }


def audit(
    repo: pygit2.Repository,
    spec: str | None = None,
    *,
    paths: Sequence[str] = (RECORDS_GLOB,),
    jobs: int = 1,
    shard_of: tuple[int, int] = (1, 1),
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Audit the records of ``spec`` (``REV`` or ``A..B``; default ``HEAD``) at
    ``paths`` (globs): each distinct record blob of shard ``shard_of`` (I, N)
    judged once, on ``jobs`` processes. ``progress(done, total)`` is called as
    blobs are judged. Raises ``invalid_revision``, ``invalid_range``,
    ``invalid_glob`` (exit 2) and ``object_missing`` when history cannot be walked.

    It turns libgit2's object cache off for this process (``limit_git_memory``),
    for memory flat in the length of history.
    """
    limit_git_memory()
    globs = PathGlobs(list(paths))
    where = parse_range(repo, spec)
    found = find_records(repo, where, globs)
    everything = work_items(found.versions)
    index, count = shard_of
    items = shard(everything, index, count)

    def done(n: int) -> None:
        if progress is not None:
            progress(n, len(items))

    done(0)
    outcomes = replay_items(repo, items, jobs=jobs, progress=done)
    table = rows(repo, found.versions, items, outcomes)
    return AuditReport(
        where,
        tuple(globs.patterns),
        (index, count),
        len(everything),
        jobs,
        found.commits,
        len(items),
        tuple(table),
    )
