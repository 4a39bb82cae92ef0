"""``capsule audit --require-signatures``: the signature of every record an
audit found that is still at the range's tip, checked against the allowed
signers of a trusted revision.

The trusted revision is ``--signers-at`` when given; else, for ``A..B``, the
base A (the branch being merged into: a pull request cannot add the key that
signs it); else the tip. On top of that, a key must already be listed in the
parent of the commit that brought the signature in, and key lifetimes are
judged at that commit's committer time, which may not be earlier than the
committer time of the record's declared commit (``signature_backdated``: a
record cannot be signed before it was built).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2

from governance.core.globs import PathGlobs
from governance.core.snapshot import Snapshot
from governance.errors import SIGNATURE_WITHOUT_RECORD, SourceError
from governance.history.ranges import Range, parse_range
from governance.history.records import RECORDS_GLOB, signature_path, signed_record
from governance.history.signatures import (
    SIGNED,
    SignatureCheck,
    Signers,
    check_signature,
    load_signers,
)
from governance.history.walk import find_records


@dataclass(frozen=True)
class SignatureRow:
    """One record at the tip and its signature's result (or a ``.sig`` there
    without its record: ``status`` ``signature_without_record``)."""

    path: str
    status: str
    message: str
    principal: str | None
    key: str | None
    introduced: str | None  # the commit that brought the .sig in

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "principal": self.principal,
            "key": self.key,
            "signature_introduced": self.introduced,
        }


@dataclass(frozen=True)
class SignatureReport:
    trusted: str | None  # the commit the allowed signers were read from
    rows: tuple[SignatureRow, ...]

    @property
    def ok(self) -> bool:
        return all(row.status == SIGNED for row in self.rows)

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for row in self.rows:
            found[row.status] = found.get(row.status, 0) + 1
        return dict(sorted(found.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "trusted": self.trusted,
            "ok": self.ok,
            "counts": self.counts(),
            "results": [row.to_json() for row in self.rows],
        }


def _blob(snapshot: Snapshot, path: str) -> tuple[str, bytes] | None:
    try:
        source = snapshot.source(path)
    except SourceError:
        return None
    return source.blob_id, snapshot.read(source)


def trusted_revision(repo: pygit2.Repository, where: Range, signers_at: str | None) -> str | None:
    if signers_at is not None:
        return parse_range(repo, signers_at).tip
    return where.hidden or where.tip


class _Before:
    """The keys listed in the parent of a commit, once per parent."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.cache: dict[str, frozenset[str]] = {}

    def keys(self, commit: pygit2.Commit) -> frozenset[str]:
        if not commit.parent_ids:
            return frozenset()  # a root commit: nothing was trusted before it
        parent = str(commit.parent_ids[0])
        if parent not in self.cache:
            self.cache[parent] = load_signers(
                Snapshot.at(self.repo, parent, check_worktree=False)
            ).keys()
        return self.cache[parent]


def _committed(repo: pygit2.Repository, commit_id: str | None) -> tuple[str, datetime] | None:
    """``commit_id`` and its committer time; None when it names no commit here
    (the audit's own row says why)."""
    if commit_id is None:
        return None
    try:
        found = repo.get(commit_id)
    except (ValueError, pygit2.GitError):
        return None
    if not isinstance(found, pygit2.Commit):
        return None
    return commit_id, datetime.fromtimestamp(found.commit_time, tz=UTC)


def audit_signatures(
    repo: pygit2.Repository,
    where: Range,
    records: list[tuple[str, str, str | None]],
    *,
    signers_at: str | None = None,
    paths: tuple[str, ...] = (RECORDS_GLOB,),
) -> SignatureReport:
    """Check the signature of each ``(path, blob, declared commit)`` of
    ``records`` (the record versions an audit found at ``paths``) that is
    still at ``where``'s tip."""
    if where.tip is None:
        return SignatureReport(None, ())
    trusted_id = trusted_revision(repo, where, signers_at)
    assert trusted_id is not None
    signers: Signers = load_signers(Snapshot.at(repo, trusted_id, check_worktree=False))
    tip = Snapshot.at(repo, where.tip, check_worktree=False)
    # Which commit brought in each .sig: the tip's whole history, not just the range.
    # A record's signature is its path and ".sig": so are the globs that find them.
    globs = PathGlobs([signature_path(pattern) for pattern in paths])
    found = find_records(repo, parse_range(repo, where.tip), globs)
    introduced = {(v.path, v.blob_id): v.introduced for v in found.versions}
    before = _Before(repo)
    rows: list[SignatureRow] = []
    at_tip = set()
    for path, blob_id, declared in dict.fromkeys(records):
        current = _blob(tip, path)
        if current is None or current[0] != blob_id:
            continue  # changed or removed since: not a record of the tip
        at_tip.add(path)
        signature = _blob(tip, signature_path(path))
        commit_id = introduced.get((signature_path(path), signature[0])) if signature else None
        if signature is None:
            result = check_signature(current[1], None, signers, when=datetime.now(UTC))
        elif commit_id is None:
            # Not found by the walk (cannot happen for a .sig at the tip): no commit
            # shows the key was trusted before it, so it is not.
            result = check_signature(
                current[1], signature[1], signers, when=datetime.now(UTC), listed_before=frozenset()
            )
        else:
            commit = repo[commit_id]
            assert isinstance(commit, pygit2.Commit)
            result = check_signature(
                current[1],
                signature[1],
                signers,
                when=datetime.fromtimestamp(commit.commit_time, tz=UTC),
                listed_before=before.keys(commit),
                built=_committed(repo, declared),
            )
        rows.append(_row(path, result, commit_id))
    for version in found.versions:
        record = signed_record(version.path)
        if record is None or record in at_tip or _blob(tip, version.path) is None:
            continue
        if _blob(tip, record) is None:
            message = f"{version.path} signs {record}, which is not at the tip"
            rows.append(
                SignatureRow(version.path, SIGNATURE_WITHOUT_RECORD, message, None, None, None)
            )
            at_tip.add(record)
    return SignatureReport(trusted_id, tuple(rows))


def _row(path: str, result: SignatureCheck, introduced: str | None) -> SignatureRow:
    return SignatureRow(
        path, result.status, result.message, result.principal, result.key, introduced
    )
