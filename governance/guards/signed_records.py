"""The records hook's signature rules: a ``.sig`` in a ``capsules/`` folder needs
its record beside it, and, when ``policies/signing.yml`` at HEAD says
``require_signatures: true``, every staged record needs a good signature by a
signer HEAD's ``policies/allowed_signers`` trusts.

HEAD is the trusted revision: what is being committed (the index) can neither
add the key that signs it nor switch the check off.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pygit2

from governance.core.snapshot import Snapshot
from governance.errors import (
    EXIT_DRIFT,
    EXIT_SOURCE,
    SIGNATURE_WITHOUT_RECORD,
    SourceError,
    record_advice,
)
from governance.guards.check import Failure
from governance.history.records import is_record_path, signature_path, signed_record


def _present(snapshot: Snapshot, path: str) -> bytes | None:
    try:
        return snapshot.read(snapshot.source(path))
    except SourceError:
        return None


def signature_failures(
    repo: pygit2.Repository,
    snapshot: Snapshot,
    changed: Iterable[str],
    *,
    now: datetime | None = None,
) -> tuple[list[str], list[Failure]]:
    """The records whose signatures were checked, and the failures, for the
    staged ``changed`` paths read from ``snapshot`` (the index)."""
    changed = set(changed)
    failures: list[Failure] = []
    # 1. A staged signature must sit beside a record (any policy).
    for path in sorted(changed):
        record = signed_record(path)
        if record is None or not is_record_path(record) or _present(snapshot, path) is None:
            continue
        if _present(snapshot, record) is None:
            failures.append(
                Failure(
                    path,
                    "$",
                    SIGNATURE_WITHOUT_RECORD,
                    f"{path} signs {record}, which is not staged",
                    EXIT_SOURCE,
                    record_advice(SIGNATURE_WITHOUT_RECORD),
                )
            )
    # 2. With the policy on at HEAD, each staged record (or record whose
    # signature changed) has a good signature by a signer HEAD trusts.
    if repo.head_is_unborn:
        return [], failures
    from governance.history.signatures import (  # noqa: PLC0415 (defers tempfile, subprocess)
        SIGNED,
        check_signature,
        load_signers,
        signatures_required,
    )

    trusted = Snapshot.at(repo, "HEAD", check_worktree=False)
    if not signatures_required(trusted):
        return [], failures
    signers = load_signers(trusted)
    records = {p for p in changed if is_record_path(p)}
    records |= {r for p in changed if (r := signed_record(p)) is not None and is_record_path(r)}
    checked = []
    for record in sorted(records):
        data = _present(snapshot, record)
        if data is None:
            continue  # deleted, or not a file: the record rules say so
        checked.append(record)
        result = check_signature(
            data,
            _present(snapshot, signature_path(record)),
            signers,
            when=now or datetime.now(UTC),
            listed_before=signers.keys(),
        )
        if result.status != SIGNED:
            failures.append(
                Failure(
                    record,
                    signature_path(record),
                    result.status,
                    result.message,
                    EXIT_DRIFT,
                    record_advice(result.status),
                    {"signature": result.to_json()},
                )
            )
    return checked, failures
