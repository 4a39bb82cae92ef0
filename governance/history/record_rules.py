"""The record rules, in order: whether a record's blob may be read, its
pre-checks, where it belongs, whether its commit exists and is reachable from
given tips, and whether it replays.

``capsule audit``, the ``capsule-records`` hook and ``capsule replay`` of a
file at a record path all judge a record here, so the same record gets the
same code from each of them. The first rule that fails decides:

1. read: a regular blob (``record_not_file``), in the object database
   (``object_missing``), at most ``MAX_RECORD_BYTES`` (``record_too_large``);
2. pre-checks: the reader's (``unsupported_schema``, ``capsule_malformed``,
   ``non_canonical``, ``capsule_corrupt``);
3. placement: at the path its own id and commit give (``record_misplaced``:
   a copy or a rename is not evidence);
4. commit: its declared commit is in the repository (``commit_missing``);
5. reachable: that commit is in the history of the given tips
   (``commit_unreachable``: a squash-merged or rebased branch);
6. replay: the trusted builder gives the same bytes there (``replay_differs``,
   or the builder's own code when the rebuild fails closed).

Rules 1, 2, 4 and 6 concern a blob and are computed once for it
(``judge_blob``, which audit runs in worker processes); rules 3 and 5 concern
one version of it, a path in a history, and are applied to that outcome
(``judge``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

import pygit2

from governance.core import canonical
from governance.core.hashing import sha256_hex
from governance.core.repository import Source, object_missing, read_blob
from governance.core.secretscan import Finding, built_findings
from governance.core.snapshot import MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_LINK, Snapshot
from governance.errors import (
    RECORD_NOT_FILE,
    RECORD_TOO_LARGE,
    RECORD_UNREADABLE,
    REPLAY_DIFFERS,
    SOURCE_NOT_FILE,
    SOURCE_SUBMODULE,
    SOURCE_SYMLINK,
    CapsuleError,
    MalformedInput,
    RecordMisplaced,
    SourceError,
    coded,
)
from governance.history.reachability import Tips, unreachable
from governance.history.records import expected_path
from governance.history.replay import (
    Difference,
    declared_commit,
    rebuilds_identically,
    replay_capsule,
)

if TYPE_CHECKING:
    from governance.core.builder import Built
    from governance.core.cache import BlobCache

# A record larger than this is refused unread, ``record_too_large``. capsule/1
# counts the whole file against the budget, ceil(bytes / 3) estimated tokens
# within the hard limit less the reserve: under the default policy (16,000 and
# 1,500) a record is at most 43,500 bytes. 16 MiB is over 5.5 million estimated
# tokens, some 385 times that and beyond any context window an agent is given,
# so no real record comes near it; refusing larger blobs before reading them
# keeps one record from costing hundreds of MB (a 150 MB blob took 620 MB to
# parse).
MAX_RECORD_BYTES = 16 << 20

IDENTICAL = "identical"
DRIFT = "drift"
ERROR = "error"


class Rule(IntEnum):
    """The rules in the order they are applied."""

    READ = 1
    PRECHECK = 2
    PLACEMENT = 3
    COMMIT = 4
    REACHABLE = 5
    REPLAY = 6


_NOT_A_FILE = {
    SOURCE_SYMLINK: "is a symbolic link",
    SOURCE_SUBMODULE: "is a submodule",
    SOURCE_NOT_FILE: "is not a regular file",
}


def _not_a_file(path: str, what: str) -> SourceError:
    return SourceError(f"{path} {what}, not a record file", code=RECORD_NOT_FILE)


def _too_large(size: int) -> MalformedInput:
    return MalformedInput(
        f"the record is {size:,} bytes; records over {MAX_RECORD_BYTES >> 20} MiB are refused "
        "unread (that is over 5.5 million estimated tokens: no capsule given to an agent is "
        "that large)",
        code=RECORD_TOO_LARGE,
        bytes=size,
    )


# --- rule 1: may the blob be read -------------------------------------------------


def record_source(snapshot: Snapshot, path: str) -> Source:
    """The record at ``path`` of the snapshot; a link, a submodule or anything
    but a regular file there is ``record_not_file``."""
    try:
        return snapshot.source(path)
    except SourceError as exc:
        if exc.code in _NOT_A_FILE:
            raise _not_a_file(path, f"{_NOT_A_FILE[exc.code]} {snapshot.where}") from None
        raise


def read_record(snapshot: Snapshot, source: Source) -> bytes:
    """The record blob's bytes: its size comes from the object header first, so a
    huge blob is never inflated; a blob the object database lacks (a blobless
    partial clone) is ``object_missing``, as for any source."""
    return read_record_blob(snapshot.repo, source, snapshot.where)


def read_record_blob(repo: pygit2.Repository, source: Source, where: str) -> bytes:
    """``read_record`` of a record blob found in a tree ``where`` names (audit
    knows each blob's id, path and mode from its walk): no commit is looked
    up and no snapshot made to read it."""
    if source.mode not in (MODE_FILE, MODE_EXEC):
        what = {MODE_LINK: "is a symbolic link", MODE_GITLINK: "is a submodule"}.get(
            source.mode, "is not a regular file"
        )
        raise _not_a_file(source.path, f"{what} {where}")
    try:
        _, size = repo.odb.read_header(pygit2.Oid(hex=source.blob_id))
    except KeyError:
        raise object_missing(source, where) from None
    if size > MAX_RECORD_BYTES:
        raise _too_large(size)
    return read_blob(repo, source, where)


def read_record_file(path: str) -> bytes:
    """A record file of a working tree, by the same rules: a regular file, at
    most ``MAX_RECORD_BYTES``; links are not followed."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            kind = "is a symbolic link" if stat.S_ISLNK(st.st_mode) else "is not a regular file"
            raise _not_a_file(path, f"{kind} in the working tree")
        if st.st_size > MAX_RECORD_BYTES:
            raise _too_large(st.st_size)
        with open(path, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        raise CapsuleError(
            f"{path}: cannot read the record: {exc.strerror}", code=RECORD_UNREADABLE
        ) from None
    if len(data) > MAX_RECORD_BYTES:
        raise _too_large(len(data))
    return data


# --- rule 3: where it belongs -------------------------------------------------------


def misplaced(path: str, packet_id: str, declared: str) -> RecordMisplaced | None:
    """None when ``path`` is where the record of ``packet_id`` at ``declared`` belongs."""
    expected = expected_path(packet_id, declared)
    if path == expected:
        return None
    return RecordMisplaced(
        f"a record of {packet_id} built at {declared[:12]} belongs at {expected}, not at this "
        "path; move it there",
        expected=expected,
    )


# --- rules 1, 2, 4, 6: one blob -----------------------------------------------------


@dataclass(frozen=True)
class BlobOutcome:
    """What the blob rules gave: the rule that failed (None: it replays
    identically) and why; the declared commit and packet id once known."""

    failed: Rule | None = None
    error: CapsuleError | None = None  # None with failed == REPLAY: drift
    declared: str | None = None
    packet_id: str | None = None
    differences: tuple[Difference, ...] = ()
    sha256: str | None = None
    rebuilt_sha256: str | None = None
    # Audit only, of a record that replays identically: what the secret scan
    # finds in its parts today, before any waiver (never the secrets).
    secrets: tuple[Finding, ...] = ()


def _judge_blob(
    repo: pygit2.Repository, read: Callable[[], bytes], cache: BlobCache | None, scan: bool
) -> BlobOutcome:
    try:
        data = read()
    except CapsuleError as exc:
        return BlobOutcome(Rule.READ, exc)
    digest = sha256_hex(data)
    # Should the rebuild equal the record byte for byte, the record is canonical
    # (the builder's bytes are), so the strict parse has nothing left to refuse.
    shortcut = rebuilds_identically(repo, data, cache)
    if shortcut is not None:
        declared, built = shortcut
        return BlobOutcome(
            None,
            None,
            declared,
            built.packet.id,
            sha256=digest,
            rebuilt_sha256=digest,
            secrets=_scanned(built, cache) if scan else (),
        )
    try:
        document = canonical.loads(data, what="capsule")
    except CapsuleError as exc:
        return BlobOutcome(Rule.PRECHECK, exc, sha256=digest)
    # Only a record that is not its rebuild byte for byte is read field by field.
    from governance.core.reader import read_parsed  # noqa: PLC0415 (the shortcut decides most)

    try:
        capsule = read_parsed(data, document)
    except CapsuleError as exc:
        return BlobOutcome(Rule.PRECHECK, exc, sha256=digest)
    declared, packet_id = capsule.commit, str(capsule.document["id"])
    try:
        declared_commit(repo, declared)
    except CapsuleError as exc:
        return BlobOutcome(Rule.COMMIT, exc, declared, packet_id, sha256=digest)
    try:
        replayed = replay_capsule(repo, capsule, cache=cache)
    except CapsuleError as exc:
        return BlobOutcome(Rule.REPLAY, exc, declared, packet_id, sha256=digest)
    rebuilt = sha256_hex(replayed.rebuilt)
    if replayed.identical:
        assert replayed.built is not None
        found = _scanned(replayed.built, cache) if scan else ()
        return BlobOutcome(None, None, declared, packet_id, (), digest, rebuilt, found)
    return BlobOutcome(
        Rule.REPLAY, None, declared, packet_id, replayed.differences, digest, rebuilt
    )


def _scanned(built: Built, cache: BlobCache | None) -> tuple[Finding, ...]:
    from governance.core.cache import BlobCache  # noqa: PLC0415 (only without a cache)

    return built_findings(built, cache if cache is not None else BlobCache())


def judge_blob(
    repo: pygit2.Repository,
    read: Callable[[], bytes],
    *,
    cache: BlobCache | None = None,
    scan: bool = False,
) -> BlobOutcome:
    """Rules 1, 2, 4 and 6 for the blob ``read`` returns; with ``scan`` (audit),
    the secret scan's findings in a record that replays identically. Whatever
    git says while judging it (a corrupt object, an id this repository cannot
    hold) is that record's ``git_error``, never the end of an audit or a hook."""
    try:
        return _judge_blob(repo, read, cache, scan)
    except pygit2.GitError as exc:
        error = coded(exc)
        assert error is not None
        return BlobOutcome(Rule.READ, error)


# --- all six, for one version -------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A record version's result: ``failed`` the first rule that failed (None
    when it replays identically), ``error`` why (None for drift)."""

    failed: Rule | None
    error: CapsuleError | None
    outcome: BlobOutcome

    @property
    def result(self) -> str:
        if self.failed is None:
            return IDENTICAL
        return DRIFT if self.error is None else ERROR

    @property
    def code(self) -> str | None:
        if self.error is not None:
            return self.error.code
        return REPLAY_DIFFERS if self.failed is not None else None


def judge(
    repo: pygit2.Repository, outcome: BlobOutcome, path: str | None, tips: Tips | None
) -> Verdict:
    """The first rule that fails for the record blob of ``outcome`` at ``path``
    with ``tips`` as its history. ``path`` and ``tips`` None leave out rules 3
    and 5 (a capsule that is not a record: ``capsule replay`` of any file)."""
    if outcome.failed is not None and outcome.failed < Rule.PLACEMENT:
        return Verdict(outcome.failed, outcome.error, outcome)
    assert outcome.declared is not None
    assert outcome.packet_id is not None
    if path is not None:
        wrong = misplaced(path, outcome.packet_id, outcome.declared)
        if wrong is not None:
            return Verdict(Rule.PLACEMENT, wrong, outcome)
    if outcome.failed == Rule.COMMIT:
        return Verdict(outcome.failed, outcome.error, outcome)
    if tips is not None:
        refused = unreachable(repo, outcome.declared, tips)
        if refused is not None:
            return Verdict(Rule.REACHABLE, refused, outcome)
    return Verdict(outcome.failed, outcome.error, outcome)
