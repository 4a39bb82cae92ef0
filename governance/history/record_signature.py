"""The signature status of a capsule's exact bytes as the record committed at
HEAD, for the agents' verify and replay: audit's rules, HEAD trusted.

A capsule an agent holds is vouched for only when it is, byte for byte, the
record at ``packets/<ID>/capsules/<commit>.json`` at HEAD and that record's
``.sig`` passes ``capsule audit HEAD --require-signatures`` (the signers of
HEAD, the key listed before the commit that brought the signature in, its
lifetime judged at that commit's time). Other bytes are not that record, so
its signature is not theirs. Without ``policies/allowed_signers`` at HEAD
there is nothing to judge by, and no status.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pygit2

from governance.core.hashing import sha256_hex
from governance.core.snapshot import Snapshot
from governance.errors import SOURCE_MISSING, UNSIGNED, CapsuleError, SourceError
from governance.history.ranges import parse_range
from governance.history.records import expected_path, signature_path
from governance.history.signatures import ALLOWED_SIGNERS_PATH, check_signature, load_signers
from governance.history.signed_audit import audit_signatures

ERROR = "error"  # the signers or ssh-keygen stopped the check: ``code`` says which


@dataclass(frozen=True)
class RecordSignature:
    """``status`` one of ``signatures.RESULTS``, or ``error`` with its code."""

    record: str  # where the record of these bytes belongs
    trusted: str  # HEAD: the commit the allowed signers were read from
    status: str
    message: str
    principal: str | None = None
    key: str | None = None
    introduced: str | None = None  # the commit that brought the .sig in
    code: str | None = None
    signature_sha256: str | None = None  # of the .sig at HEAD, when there is one

    def to_json(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "principal": self.principal,
            "key": self.key,
            "signature_introduced": self.introduced,
            "trusted": self.trusted,
        }


def _committed(snapshot: Snapshot, path: str) -> tuple[str, bytes] | None:
    try:
        source = snapshot.source(path)
    except SourceError:
        return None
    return source.blob_id, snapshot.read(source)


def lists_signers(snapshot: Snapshot) -> bool:
    """``policies/allowed_signers`` is in the snapshot's tree (in any shape:
    one that is no file is the signers' own error)."""
    try:
        snapshot.source(ALLOWED_SIGNERS_PATH)
    except SourceError as exc:
        return exc.code != SOURCE_MISSING
    return True


def _judge(
    repo: pygit2.Repository, head: Snapshot, path: str, data: bytes, commit: str | None
) -> RecordSignature:
    at = head.commit_id
    record = _committed(head, path)
    if record is not None and record[0] == str(pygit2.hash(data)):
        report = audit_signatures(
            repo, parse_range(repo, at), [(path, record[0], commit)], paths=(path,)
        )
        (row,) = [r for r in report.rows if r.path == path]
        return RecordSignature(
            path, at, row.status, row.message, row.principal, row.key, row.introduced
        )
    if record is None:
        message = f"no record {path} at HEAD: these bytes were never signed as one"
        return RecordSignature(path, at, UNSIGNED, message)
    signature = _committed(head, signature_path(path))
    found = check_signature(
        data,
        None if signature is None else signature[1],
        load_signers(head),
        when=datetime.now(UTC),
    )
    message = f"these bytes are not the record {path} at HEAD: {found.message}"
    return RecordSignature(path, at, found.status, message, found.principal, found.key)


def record_signature(
    repo: pygit2.Repository, data: bytes, packet_id: str, commit: str
) -> RecordSignature | None:
    """The signature status of ``data`` (a capsule of ``packet_id`` built at
    ``commit``) as the record at HEAD; None when HEAD lists no signers."""
    return signature_at(repo, data, expected_path(packet_id, commit), commit)


def signature_at(
    repo: pygit2.Repository, data: bytes, path: str, commit: str | None
) -> RecordSignature | None:
    """The signature status of ``data`` as the record at ``path`` at HEAD,
    built at ``commit`` (None: not known, as for a record that cannot be
    read); None when HEAD lists no signers."""
    if repo.head_is_unborn:
        return None
    head = Snapshot.at(repo, "HEAD", check_worktree=False)
    try:
        if not lists_signers(head):
            return None
        found = _judge(repo, head, path, data, commit)
        signature = _committed(head, signature_path(path))
    except CapsuleError as exc:
        return RecordSignature(path, head.commit_id, ERROR, exc.message, code=exc.code)
    if signature is None:
        return found
    return replace(found, signature_sha256=sha256_hex(signature[1]))
