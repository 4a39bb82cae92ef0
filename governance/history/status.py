"""``capsule status`` as a library call: the capsule records committed at HEAD,
each verified against HEAD's tree as ``capsule verify`` does.

A record is evidence of what an agent was given; it goes stale when the bytes
it holds stop being the repository's. By default only the newest record of
each packet is verified (the one a maintainer would hand over next), newest
meaning first met walking HEAD's history newest first (git log's order): a
record whose commit is not in that history comes after every one whose
commit is. Which records exist and where they live is ``history.records``;
what became of each part is ``core.verify``. A record that cannot be read or
verified (not a file, not canonical, corrupt, away from its path) is a row
of its own with its code, never the end of the listing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pygit2

from governance.core.cache import BlobCache
from governance.core.reader import read_capsule
from governance.core.snapshot import Snapshot
from governance.core.verify import (
    VERIFIED_AT_COMMIT,
    DeclaredCommit,
    PartResult,
    Status,
    counts,
    verify_at_commit,
)
from governance.core.words import plural
from governance.errors import CapsuleError, coded
from governance.history.record_rules import misplaced, read_record, record_source
from governance.history.records import COMMIT_PREFIX, RECORD_SUFFIX, records_in
from governance.output import printable

ERROR = "error"
# A record's status is its worst part's; a record that could not be judged is worse.
ORDER = (*(str(s) for s in Status), ERROR)
_PREFIX = re.compile(rf"[0-9a-f]{{{COMMIT_PREFIX}}}")


@dataclass(frozen=True)
class RecordStatus:
    """One record against HEAD: ``status`` its worst part's (unchanged, intact,
    stale, missing), or ``error`` with the code that stopped it."""

    path: str
    packet: str  # the folder it lives in: packets/<packet>/capsules/
    status: str
    blob: str | None = None
    sha256: str | None = None
    commit: str | None = None
    reachable: bool | None = None  # its commit is in HEAD's history; None: not read
    declared: DeclaredCommit | None = None
    parts: tuple[PartResult, ...] = ()
    error: CapsuleError | None = None

    @property
    def changed(self) -> list[PartResult]:
        """The parts whose evidence is not unchanged, in capsule order."""
        return [p for p in self.parts if p.status is not Status.UNCHANGED]

    def counts(self) -> dict[str, int] | None:
        """How many parts have each status (None: not verified)."""
        return counts(list(self.parts)) if self.parts else None

    @property
    def holds(self) -> bool:
        """Neither stale nor missing nor unjudged: ``--strict`` passes it."""
        return self.status in (str(Status.UNCHANGED), str(Status.INTACT))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "packet": self.packet,
            "status": self.status,
            "blob": self.blob,
            "sha256": self.sha256,
            "commit": self.commit,
            "reachable": self.reachable,
            "declared_commit": self.declared.to_json() if self.declared else None,
            "counts": self.counts(),
            "changed": [p.to_json() for p in self.changed],
            "code": self.error.code if self.error else None,
            "message": self.error.message if self.error else None,
        }


@dataclass(frozen=True)
class StatusReport:
    """The records at ``at`` (None: no commits yet): ``found`` in its tree,
    ``records`` the ones verified (every one with ``all``)."""

    at: str | None
    all: bool
    found: int
    records: list[RecordStatus] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No record is stale, missing or in error: ``--strict``'s exit 0."""
        return all(r.holds for r in self.records)

    def counts(self) -> dict[str, int]:
        shown = {name: sum(r.status == name for r in self.records) for name in ORDER}
        return {"found": self.found, "verified": len(self.records), **shown}

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "all": self.all,
            "ok": self.ok,
            "counts": self.counts(),
            "records": [r.to_json() for r in self.records],
        }


def worst(parts: Iterable[PartResult]) -> str:
    """The status of a record whose parts are ``parts``: the worst of theirs."""
    return max((str(p.status) for p in parts), key=ORDER.index, default=str(Status.UNCHANGED))


def _packet_of(path: str) -> str:
    return path.split("/")[1]


def _prefix_of(path: str) -> str | None:
    name = posixpath.basename(path).removesuffix(RECORD_SUFFIX)
    return name if _PREFIX.fullmatch(name) else None


def recency(repo: pygit2.Repository, head: str, paths: Iterable[str]) -> dict[str, int]:
    """For each commit prefix the record names of ``paths`` carry, the position
    of its commit in HEAD's history walked newest first (0 is HEAD); the walk
    stops once every one is met. A prefix that is not met is left out: its
    commit is not in that history (or not in this clone)."""
    wanted = {p for p in map(_prefix_of, paths) if p is not None}
    found: dict[str, int] = {}
    if not wanted:
        return found
    try:
        for position, commit in enumerate(repo.walk(head, pygit2.enums.SortMode.TIME)):
            prefix = str(commit.id)[:COMMIT_PREFIX]
            if prefix in wanted and prefix not in found:
                found[prefix] = position
                if len(found) == len(wanted):
                    break
    except pygit2.GitError:
        pass  # a commit of the history is not here (a shallow clone): no further
    return found


def _newest_first(paths: list[str], positions: dict[str, int]) -> list[str]:
    """``paths`` by packet, and within a packet newest first: those whose
    commit is in HEAD's history by its position there, then the others by name."""

    def key(path: str) -> tuple[str, bool, int, str]:
        position = positions.get(_prefix_of(path) or "")
        return (_packet_of(path), position is None, position or 0, path)

    return sorted(paths, key=key)


def _judge(snapshot: Snapshot, path: str, positions: dict[str, int]) -> RecordStatus:
    packet = _packet_of(path)
    blob = None
    try:
        source = record_source(snapshot, path)
        blob = source.blob_id
        capsule = read_capsule(read_record(snapshot, source))
        wrong = misplaced(path, str(capsule.document["id"]), capsule.commit)
        if wrong is not None:
            raise wrong
        declared, parts = verify_at_commit(capsule, snapshot)
    except (CapsuleError, pygit2.GitError) as exc:
        error = exc if isinstance(exc, CapsuleError) else coded(exc)
        assert error is not None
        return RecordStatus(path, packet, ERROR, blob=blob, error=error)
    return RecordStatus(
        path,
        packet,
        worst(parts),
        blob=blob,
        sha256=capsule.sha256,
        commit=capsule.commit,
        reachable=capsule.commit[:COMMIT_PREFIX] in positions,
        declared=declared,
        parts=tuple(parts),
    )


def status(
    repo: pygit2.Repository, *, all_records: bool = False, cache: BlobCache | None = None
) -> StatusReport:
    """The records committed at HEAD, the newest of each packet (every one with
    ``all_records``), each verified against HEAD's committed tree."""
    if repo.head_is_unborn:
        return StatusReport(None, all_records, 0)
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    snapshot.cache = cache if cache is not None else BlobCache()
    paths = records_in(snapshot.tree)
    rows = _rows(repo, snapshot, snapshot.commit_id, paths, all_records=all_records)
    return StatusReport(snapshot.commit_id, all_records, len(paths), rows)


def newest_records(
    repo: pygit2.Repository, snapshot: Snapshot, head: str | None, packets: Iterable[str]
) -> dict[str, RecordStatus]:
    """The newest record of each of ``packets`` (ids) in ``snapshot``'s tree,
    verified against that snapshot as ``status`` verifies HEAD; newest by
    ``head``'s history (None: by name only). A packet without a record is
    left out."""
    wanted = set(packets)
    paths = [path for path in records_in(snapshot.tree) if _packet_of(path) in wanted]
    rows = _rows(repo, snapshot, head, paths, all_records=False)
    return {row.packet: row for row in rows}


def _rows(
    repo: pygit2.Repository,
    snapshot: Snapshot,
    head: str | None,
    paths: list[str],
    *,
    all_records: bool,
) -> list[RecordStatus]:
    """The records of ``paths``, the newest of each packet (every one with
    ``all_records``), each verified against ``snapshot``."""
    positions = recency(repo, head, paths) if head is not None else {}
    ordered = _newest_first(paths, positions)
    if not all_records:
        newest: dict[str, str] = {}
        for path in ordered:
            newest.setdefault(_packet_of(path), path)
        ordered = list(newest.values())
    return [_judge(snapshot, path, positions) for path in ordered]


def packet_record(
    repo: pygit2.Repository,
    packet: str,
    *,
    record: str | None = None,
    cache: BlobCache | None = None,
) -> tuple[RecordStatus, bytes | None] | None:
    """The record at the path ``record`` of the packet folder ``packet`` at
    HEAD, or without it the packet's newest (as ``status`` picks it), judged
    as ``status`` judges it, and its bytes (None: not a readable file); None
    when there is no such record there."""
    if repo.head_is_unborn:
        return None
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    snapshot.cache = cache if cache is not None else BlobCache()
    paths = [path for path in records_in(snapshot.tree) if _packet_of(path) == packet]
    if record is not None:
        paths = [path for path in paths if path == record]
    if not paths:
        return None
    positions = recency(repo, snapshot.commit_id, paths)
    row = _judge(snapshot, _newest_first(paths, positions)[0], positions)
    try:
        data: bytes | None = read_record(snapshot, record_source(snapshot, row.path))
    except (CapsuleError, pygit2.GitError):
        data = None
    return row, data


# --- the report in words, for the command line and the MCP tool ---------------------


def row_lines(row: dict[str, Any]) -> list[str]:
    """A record's line (``RecordStatus.to_json``), then one indented line per
    part that changed; repository text made printable."""
    path = printable(row["path"])
    if row["code"] is not None:
        why = printable(row["message"].split("\n")[0])
        return [f"{row['status']:<9} {path}  {row['code']}: {why}"]
    line = f"{row['status']:<9} {path}  {printable(row['packet'])} built at {row['commit'][:12]}"
    tally = row["counts"]
    if row["changed"]:
        shown = ", ".join(f"{n} {name}" for name, n in tally.items() if n and name != "unchanged")
        line += f": {shown} of {plural(sum(tally.values()), 'part')}"
    declared = row["declared_commit"]
    if declared["code"] != VERIFIED_AT_COMMIT:
        line += f" ({declared['code']}: checked at HEAD only)"
    elif row["reachable"] is False:
        line += " (not in HEAD's history)"
    locators = [printable(p["locator"]) for p in row["changed"]]
    width = max(map(len, locators), default=0)
    return [line] + [
        f"  {p['status']:<9} {locator:<{width}}  {p['code']}"
        for p, locator in zip(row["changed"], locators, strict=True)
    ]


def summary(report: dict[str, Any]) -> str:
    """One line for a report (``StatusReport.to_json``): how many records,
    where, and how many of each status."""
    if report["at"] is None:
        return "no commits yet: no records"
    counts = report["counts"]
    found = f"{plural(counts['verified'], 'record')} verified at HEAD ({report['at'][:12]})"
    if not report["all"]:
        found += ", the newest of each packet"
        older = counts["found"] - counts["verified"]
        if older:
            found += f"; {plural(older, 'older record')} not listed (--all lists them)"
    if not counts["verified"]:
        return found
    shown = ", ".join(f"{counts[name]} {name}" for name in ORDER[:-1])
    if counts[ERROR]:
        shown += f", {counts[ERROR]} error"
    return f"{found}: {shown}"
