"""Verify a capsule against a snapshot: per part, is what the agent was given
still what the repository says? Never rewrites anything.

Every part is recomputed from the current blob, also when its blob id is
unchanged: a capsule whose excerpt disagrees with the very blob it names was
altered after it was built, and is refused as corrupt rather than reported
as unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import pygit2

from governance.core.excerpt import (
    Excerpt,
    check_heading_count,
    check_heading_source,
    excerpt_of,
)
from governance.core.hashing import sha256_hex
from governance.core.headings import line_count
from governance.core.locator import parse_locator
from governance.core.reader import CapsuleFile
from governance.core.repository import Source
from governance.core.snapshot import Snapshot
from governance.errors import (
    CAPSULE_CORRUPT,
    COMMIT_MISSING,
    OBJECT_MISSING,
    MalformedInput,
    SourceError,
)

if TYPE_CHECKING:
    from governance.core.policy import HeadingLimits


class Status(StrEnum):
    """What became of one part's evidence. ``holds()`` says whether the agent's
    bytes are still the repository's: by default, unchanged or intact."""

    UNCHANGED = "unchanged"  # same blob, same bytes
    INTACT = "intact"  # the file changed or the section moved; its selected bytes did not
    STALE = "stale"  # the selected bytes changed
    MISSING = "missing"  # the file or the heading cannot be found any more

    def holds(self, *, strict: bool = False) -> bool:
        if strict:
            return self is Status.UNCHANGED
        return self in (Status.UNCHANGED, Status.INTACT)


UNCHANGED = Status.UNCHANGED
INTACT = Status.INTACT
STALE = Status.STALE
MISSING = Status.MISSING

# code -> what it means, for text output and docs.
CODES = {
    "verified_unchanged": "same blob and same bytes as recorded",
    "source_changed": "the file changed (it is included whole)",
    "source_changed_passage_intact": "the file changed; the section is byte-identical, same lines",
    "passage_moved": "the section is byte-identical but now at other lines",
    "passage_stale": "the section's bytes changed",
}


@dataclass(frozen=True)
class PartResult:
    part: str
    locator: str
    status: Status
    code: str
    message: str
    current: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "locator": self.locator,
            "status": str(self.status),
            "code": self.code,
            "message": self.message,
            "current": self.current,
        }


def _forged(part: str, what: str) -> MalformedInput:
    return MalformedInput(
        f"capsule is corrupt: {part} names the blob it was built from, but its {what} does not "
        "match that blob; the capsule was altered after it was built",
        code=CAPSULE_CORRUPT,
        field=part,
    )


def _unchanged(part: str, locator: str, current: dict[str, Any]) -> PartResult:
    return PartResult(
        part, locator, UNCHANGED, "verified_unchanged", CODES["verified_unchanged"], current
    )


def _whole(snapshot: Snapshot, part: str, recorded: dict[str, Any]) -> PartResult:
    path = recorded["path"]
    try:
        source = snapshot.source(path)
    except SourceError as exc:
        return PartResult(part, path, MISSING, exc.code, exc.message)
    current = {"blob": source.blob_id, "sha256": sha256_hex(snapshot.read(source))}
    if source.blob_id != recorded["blob"]:
        return PartResult(part, path, STALE, "source_changed", CODES["source_changed"], current)
    if current["sha256"] != recorded["sha256"]:
        raise _forged(part, "sha256")
    return _unchanged(part, path, current)


def _policy(snapshot: Snapshot, recorded: dict[str, Any]) -> PartResult:
    result = _whole(snapshot, "policy", recorded)
    if result.status == UNCHANGED:
        from governance.core.policy import parse_policy  # noqa: PLC0415 (defers PyYAML)

        source = snapshot.source(recorded["path"])
        # Parsed once a blob: status verifies many records of one policy.
        values = snapshot.memo(
            "policy-values",
            source,
            lambda: parse_policy(snapshot.read(source).decode("utf-8"), path=source.path).values(),
        )
        if any(recorded[key] != value for key, value in values.items()):
            raise _forged("policy", "values")
    return result


def _excerpt_json(excerpt: Excerpt) -> dict[str, Any]:
    return {
        "blob": excerpt.blob_id,
        "source_sha256": excerpt.source_sha256,
        "selected_sha256": excerpt.selected_sha256,
        "lines": [excerpt.first_line, excerpt.last_line],
    }


def _heading_limits(snapshot: Snapshot) -> HeadingLimits:
    from governance.core.policy import heading_limits  # noqa: PLC0415 (defers PyYAML)

    return heading_limits(snapshot)


def _read(
    snapshot: Snapshot, part: str, recorded: dict[str, Any], limits: HeadingLimits
) -> PartResult:
    locator = recorded["locator"]
    # The reader already refused a locator that does not parse or disagrees
    # with its path and heading.
    selector = parse_locator(locator)
    try:
        source: Source = snapshot.source(selector.path, locator=locator)
        check_heading_source(snapshot, selector, source, limits.source_bytes)
        check_heading_count(snapshot, selector, source, limits.headings)
    except SourceError as exc:
        return PartResult(part, locator, MISSING, exc.code, exc.message)
    data = snapshot.read(source)
    same_blob = source.blob_id == recorded["blob"]
    try:
        excerpt = excerpt_of(snapshot, selector, source)
    except SourceError as exc:
        if same_blob:
            raise _forged(part, "selection") from None
        current = {"blob": source.blob_id, "source_sha256": sha256_hex(data)}
        return PartResult(part, locator, MISSING, exc.code, exc.message, current)
    current = _excerpt_json(excerpt)
    if same_blob:
        if excerpt.to_json() != recorded:
            raise _forged(part, "text, lines, heading or hashes")
        return _unchanged(part, locator, current)
    if selector.whole:
        return PartResult(part, locator, STALE, "source_changed", CODES["source_changed"], current)
    if excerpt.selected_sha256 != recorded["selected_sha256"]:
        message = CODES["passage_stale"]
        if selector.lines is not None:
            message += _found_at(selector.path, data, recorded["text"].encode("utf-8"))
        return PartResult(part, locator, STALE, "passage_stale", message, current)
    code = (
        "passage_moved"
        if current["lines"] != recorded["lines"]
        else "source_changed_passage_intact"
    )
    return PartResult(part, locator, INTACT, code, CODES[code], current)


def _found_at(path: str, data: bytes, text: bytes) -> str:
    """Where the recorded lines of a range now are, when they are whole lines
    of ``data`` exactly once: a range names lines, so it is stale, but the
    message can give the locator that names them now."""
    found: list[int] = []
    start = data.find(text)
    while start >= 0 and len(found) < 2:
        end = start + len(text)
        begins = (
            start == 0
            or data[start - 1 : start] == b"\n"
            or (data[start - 1 : start] == b"\r" and data[start : start + 1] != b"\n")
        )
        ends = end == len(data) or (
            text.endswith((b"\n", b"\r"))
            and not (text.endswith(b"\r") and data[end : end + 1] == b"\n")
        )
        if begins and ends:
            found.append(start)
        start = data.find(text, start + 1)
    if len(found) != 1:
        return ""
    first = line_count(data[: found[0]]) + 1
    last = first + line_count(text) - 1
    anchor = f"L{first}" if first == last else f"L{first}-L{last}"
    return f"; the recorded lines are now lines {first}-{last}: {path}#{anchor}"


def holds(results: list[PartResult], *, strict: bool = False) -> bool:
    """Whether every part's evidence still holds (``verify``'s exit 0)."""
    return all(r.status.holds(strict=strict) for r in results)


def counts(results: list[PartResult]) -> dict[str, int]:
    """How many parts have each status, every status named."""
    return {str(s): sum(r.status is s for r in results) for s in Status}


def _parts(capsule: CapsuleFile, snapshot: Snapshot) -> list[PartResult]:
    document = capsule.document
    results = [
        _whole(snapshot, "packet", document["packet"]),
        _whole(snapshot, "context", document["context"]),
        _policy(snapshot, document["policy"]),
    ]
    limits = _heading_limits(snapshot)
    results += [
        _read(snapshot, f"reads[{index}]", read, limits)
        for index, read in enumerate(document["reads"])
    ]
    return results


# Not an error: what verify says of a capsule's own commit when it checked every part there.
VERIFIED_AT_COMMIT = "verified_at_commit"


@dataclass(frozen=True)
class DeclaredCommit:
    """What became of the capsule's own ``commit``: every part checked there
    (``verified_at_commit``), or not in this repository (``commit_missing``),
    or its objects are not (``object_missing``, a partial clone)."""

    commit: str
    present: bool
    code: str

    @property
    def checked(self) -> bool:
        """Every part was checked at the capsule's own commit."""
        return self.code == VERIFIED_AT_COMMIT

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "present": self.present, "code": self.code}


def _declared_snapshot(capsule: CapsuleFile, snapshot: Snapshot) -> Snapshot | DeclaredCommit:
    repo = snapshot.repo
    try:
        commit = repo.get(capsule.commit)
    except (ValueError, KeyError, pygit2.GitError):
        commit = None
    if not isinstance(commit, pygit2.Commit):
        return DeclaredCommit(capsule.commit, False, COMMIT_MISSING)
    if str(commit.id) == snapshot.commit_id and snapshot.workdir is None:
        return snapshot
    try:
        tree = commit.tree
    except (KeyError, pygit2.GitError):
        return DeclaredCommit(capsule.commit, True, OBJECT_MISSING)
    return Snapshot(repo=repo, tree=tree, commit_id=str(commit.id), cache=snapshot.cache)


def verify_at_commit(
    capsule: CapsuleFile, snapshot: Snapshot
) -> tuple[DeclaredCommit, list[PartResult]]:
    """``verify_capsule``, with what became of the capsule's own commit.

    Every byte of a capsule is read from its declared commit, so there every
    part must be unchanged: any difference at that commit (a forged excerpt
    with every hash recomputed, another commit id written in) means the
    capsule was altered after it was built, ``capsule_corrupt``.
    """
    declared = _declared_snapshot(capsule, snapshot)
    if isinstance(declared, DeclaredCommit):
        return declared, _parts(capsule, snapshot)
    at_own = _parts(capsule, declared)
    for result in at_own:
        if result.status is UNCHANGED:
            continue
        if result.code == OBJECT_MISSING:
            return DeclaredCommit(capsule.commit, True, OBJECT_MISSING), _parts(capsule, snapshot)
        raise MalformedInput(
            f"capsule is corrupt: at its own commit {capsule.commit[:12]}, {result.part} "
            f"({result.locator}) is {result.status} ({result.code}); every byte of a capsule is "
            "read from that commit, so it was altered after it was built",
            code=CAPSULE_CORRUPT,
            field=result.part,
        )
    checked = DeclaredCommit(capsule.commit, True, VERIFIED_AT_COMMIT)
    if declared is snapshot:
        return checked, at_own
    return checked, _parts(capsule, snapshot)


def verify_capsule(capsule: CapsuleFile, snapshot: Snapshot) -> list[PartResult]:
    """Each part against ``snapshot``, after checking every part at the
    capsule's own commit (see ``verify_at_commit``)."""
    return verify_at_commit(capsule, snapshot)[1]
