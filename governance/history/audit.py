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
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from governance.core.globs import PathGlobs
from governance.core.secret_waivers import SecretWaivers, read_secret_waivers_at
from governance.core.secretscan import DISTRIBUTION, SHOWN, Finding, detector
from governance.errors import RECORD_SECRET, WAIVER_AT_TIP, WAIVER_UNUSED
from governance.history.pool import (
    Item,
    auto_jobs,
    regular,
    replay_items,
    shard,
    work_items,
)
from governance.history.ranges import Range, parse_range
from governance.history.reachability import introduced_by
from governance.history.record_rules import (
    DRIFT,
    ERROR,
    IDENTICAL,
    BlobOutcome,
    Rule,
    Verdict,
    judge,
)
from governance.history.records import RECORDS_GLOB
from governance.history.replay import Difference, rebuild_failed
from governance.history.waivers import (
    AT_TIP,
    BEFORE_RANGE,
    MATCHED,
    UNUSED,
    Waiver,
    blob_at,
    read_waivers,
    waivers_commit,
)
from governance.history.walk import Version, find_records, limit_git_memory

# A drift or error row that a committed waiver names: known bad, not a failure.
WAIVED = "waived"
RESULTS = (IDENTICAL, DRIFT, ERROR, WAIVED)


@dataclass(frozen=True)
class Row:
    """A line of the audit table: one record version and its result. A new
    column is a new field here (with a default) and a key in ``to_json``."""

    path: str
    blob_id: str
    introduced: str
    declared: str | None
    result: str
    code: str | None
    message: str
    differences: tuple[Difference, ...]
    waiver: str | None = None  # the reason, when a waiver turned drift or error into WAIVED
    # record_secret: what today's secret scan refuses in the record's parts.
    secrets: tuple[Finding, ...] = ()

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
            "waiver": self.waiver,
            "secrets": [finding.to_json() for finding in self.secrets],
        }


def secret_row(found: Row, findings: Sequence[Finding], waivers: SecretWaivers) -> Row:
    """``found`` (a record that replays identically) as an error,
    ``record_secret``, when the scan finds what no secret waiver accepts in
    its parts: it would be refused if it were built today."""
    refused = tuple(f for f in findings if waivers.find(f.path, f.blob, f.line) is None)
    if found.result != IDENTICAL or not refused:
        return found
    parts = list(dict.fromkeys(f"{f.part} line {f.line} ({f.kind})" for f in refused))
    shown = ", ".join(parts[:SHOWN])
    if len(parts) > SHOWN:
        shown += f" and {len(parts) - SHOWN:,} more"
    message = (
        f"replays identically, but {DISTRIBUTION} reports "
        f"{'a secret' if len(refused) == 1 else 'secrets'} in it: {shown}; a build would be "
        "refused today (source_secret)"
    )
    return replace(found, result=ERROR, code=RECORD_SECRET, message=message, secrets=refused)


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
    secret_waivers: SecretWaivers | None = None,
) -> list[Row]:
    """The table, in the order versions were found; versions whose item is not
    among ``items`` (another shard's) are left out. Each version is judged by
    the record rules with the commit that introduced it as its history, and a
    record that passes them by what the secret scan finds in it
    (``secret_row``, with ``secret_waivers``)."""
    by_item = {
        (item.blob_id, item.regular): outcome for item, outcome in zip(items, outcomes, strict=True)
    }
    out = []
    for version in versions:
        outcome = by_item.get((version.blob_id, regular(version.mode)))
        if outcome is None:
            continue
        verdict = judge(repo, outcome, version.path, introduced_by(version.introduced))
        found = row(version, verdict)
        if outcome.secrets:
            found = secret_row(found, outcome.secrets, secret_waivers or SecretWaivers())
        out.append(found)
    return out


def waive(row: Row, waivers: Sequence[Waiver]) -> Row:
    """``row`` as WAIVED when it is drift or an error and a waiver names its blob."""
    if row.result not in (DRIFT, ERROR):
        return row
    for waiver in waivers:
        if waiver.matches(row.path, row.blob_id):
            return replace(row, result=WAIVED, waiver=waiver.reason)
    return row


@dataclass(frozen=True)
class WaiverUse:
    """What became of one waiver: MATCHED (it names a record version of the
    range), BEFORE_RANGE (A..B: only of the history before A), UNUSED, or
    AT_TIP (it names a record still at the range's tip, and waives nothing)."""

    waiver: Waiver
    status: str

    @property
    def code(self) -> str | None:
        return {UNUSED: WAIVER_UNUSED, AT_TIP: WAIVER_AT_TIP}.get(self.status)

    def to_json(self) -> dict[str, Any]:
        return {**self.waiver.to_json(), "status": self.status, "code": self.code}


def at_tip(
    repo: pygit2.Repository, waivers: Sequence[Waiver], versions: Sequence[Version], tip: str
) -> frozenset[int]:
    """The indices of the waivers that name a record version (every shard's)
    whose blob is still at its path in ``tip``: a forged record there is to
    be deleted, not excused."""
    found: dict[str, str | None] = {}

    def there(version: Version) -> bool:
        if version.path not in found:
            found[version.path] = blob_at(repo, tip, version.path)
        return found[version.path] == version.blob_id

    return frozenset(
        waiver.index
        for waiver in waivers
        if any(waiver.matches(v.path, v.blob_id) and there(v) for v in versions)
    )


def waiver_uses(
    repo: pygit2.Repository,
    waivers: Sequence[Waiver],
    versions: Sequence[Version],
    where: Range,
    globs: PathGlobs,
    *,
    refused: frozenset[int] = frozenset(),
) -> list[WaiverUse]:
    """Each waiver, and whether a record version of the range (every shard's)
    matches it; for A..B, one that matches none is looked for before A too,
    so a range audit does not call an old waiver unused. The ``refused``
    ones (``at_tip``) are AT_TIP."""

    def used(waiver: Waiver, among: Sequence[Version]) -> bool:
        return any(waiver.matches(v.path, v.blob_id) for v in among)

    status = {
        w.index: AT_TIP if w.index in refused else MATCHED if used(w, versions) else UNUSED
        for w in waivers
    }
    if UNUSED in status.values() and where.hidden is not None:
        before = find_records(repo, Range(where.spec, where.hidden, None), globs).versions
        for waiver in waivers:
            if status[waiver.index] == UNUSED and used(waiver, before):
                status[waiver.index] = BEFORE_RANGE
    return [WaiverUse(waiver, status[waiver.index]) for waiver in waivers]


@dataclass(frozen=True)
class AuditReport:
    """What an audit found: the range, the shard, and one row per record version."""

    range: Range
    paths: tuple[str, ...]
    shard: tuple[int, int]
    blobs_in_range: int  # distinct record blobs of all shards together
    jobs: int  # the processes the replays ran on
    commits: int
    blobs: int  # distinct record blobs of this shard
    rows: tuple[Row, ...]
    waivers: tuple[WaiverUse, ...] = ()
    # The secret scan's detector (``Detector.status`` without waived hits).
    secret_scan: dict[str, Any] | None = None

    @property
    def unused_waivers(self) -> list[WaiverUse]:
        return [use for use in self.waivers if use.status == UNUSED]

    @property
    def refused_waivers(self) -> list[WaiverUse]:
        """The waivers of records still at the tip (``waiver_at_tip``)."""
        return [use for use in self.waivers if use.status == AT_TIP]

    @property
    def counts(self) -> dict[str, int]:
        return {
            "commits": self.commits,
            "records": len(self.rows),
            "blobs": self.blobs,
            **{result: sum(r.result == result for r in self.rows) for result in RESULTS},
            "waivers_unused": len(self.unused_waivers),
            "waivers_at_tip": len(self.refused_waivers),
        }

    @property
    def ok(self) -> bool:
        """No drift, no error, no unused or refused waiver (waived rows are
        known, not failures)."""
        rows_ok = all(r.result in (IDENTICAL, WAIVED) for r in self.rows)
        return rows_ok and not self.unused_waivers and not self.refused_waivers

    def to_json(self) -> dict[str, Any]:
        index, count = self.shard
        return {
            "range": {
                "spec": self.range.spec,
                "tip": self.range.tip,
                "hidden": self.range.hidden,
                "ends": [end.to_json() for end in self.range.ends],
            },
            "paths": list(self.paths),
            "shard": {"index": index, "count": count, "blobs_in_range": self.blobs_in_range},
            "jobs": self.jobs,
            "counts": self.counts,
            "ok": self.ok,
            "results": [r.to_json() for r in self.rows],
            "waivers": [use.to_json() for use in self.waivers],
            "secret_scan": self.secret_scan,
        }


def audit(
    repo: pygit2.Repository,
    spec: str | None = None,
    *,
    paths: Sequence[str] = (RECORDS_GLOB,),
    jobs: int | None = 1,
    shard_of: tuple[int, int] = (1, 1),
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Audit the records of ``spec`` (``REV`` or ``A..B``; default ``HEAD``) at
    ``paths`` (globs): each distinct record blob of shard ``shard_of`` (I, N)
    judged once, on ``jobs`` processes (None: as many as the CPUs this process
    may use, where each has a full share of work; the report says how many
    ran). ``progress(done, total)`` is called as
    blobs are judged. Raises ``invalid_revision``, ``invalid_range``,
    ``invalid_glob`` (exit 2) and ``object_missing`` when history cannot be walked.

    It bounds libgit2's object cache and pack windows for this process
    (``limit_git_memory``), for memory flat in the length of history.
    """
    limit_git_memory()
    globs = PathGlobs(list(paths))
    where = parse_range(repo, spec)
    found = find_records(repo, where, globs)
    # Before any replay: a malformed waiver file stops the audit early. For
    # A..B they are the base's: a pull request cannot waive its own records.
    waivers = read_waivers(repo, waivers_commit(where.tip, where.hidden))
    secret_waivers = read_secret_waivers_at(repo, waivers_commit(where.tip, where.hidden))
    # Loaded before any fork, so every replay process has the detector.
    scan = detector()
    refused = at_tip(repo, waivers, found.versions, where.tip) if where.tip else frozenset()
    everything = work_items(found.versions)
    index, count = shard_of
    items = shard(everything, index, count)

    def done(n: int) -> None:
        if progress is not None:
            progress(n, len(items))

    if jobs is None:
        from governance.history.cpus import usable_cpus  # noqa: PLC0415 (only for auto)

        jobs = auto_jobs(items, usable_cpus())
    done(0)
    ran: list[int] = []
    outcomes = replay_items(repo, items, jobs=jobs, progress=done, started=ran.append)
    usable = [waiver for waiver in waivers if waiver.index not in refused]
    found_rows = rows(repo, found.versions, items, outcomes, secret_waivers)
    table = [waive(row, usable) for row in found_rows]
    uses = waiver_uses(repo, waivers, found.versions, where, globs, refused=refused)
    return AuditReport(
        where,
        tuple(globs.patterns),
        (index, count),
        len(everything),
        ran[-1],
        found.commits,
        len(items),
        tuple(table),
        tuple(uses),
        {k: v for k, v in scan.status().items() if k != "waived"},
    )
