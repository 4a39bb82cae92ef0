"""What the pre-commit hooks run (``hooks/``), against the staged tree only.

Each hook takes what is staged (the difference between HEAD and the index)
together with the paths pre-commit passes it: a consumer's ``exclude:`` or
``pre-commit run --files`` can leave a staged change out of those paths, and it
is committed all the same. Failures are printed one per line
on stdout, ``path: locator: code: what to do``; a summary goes to stderr
(``governance.commands._hooks`` prints them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pygit2

from governance.core.paths import repo_relative
from governance.errors import EXIT_USAGE, NOT_A_RECORD, record_advice
from governance.guards.check import Failure, ReverseIndex, check_packets
from governance.guards.signed_records import signature_failures
from governance.guards.staged import index_tree, open_index, staged_changes, staged_snapshot
from governance.history.records import is_record_path, stray_in_records_folder


@dataclass(frozen=True)
class GuardReport:
    what: str  # "packet" or "record"
    checked: tuple[str, ...]
    failures: tuple[Failure, ...]
    # What the guard read: the index, or the commits a push sends.
    against: str = "the index"


def _paths(repo: pygit2.Repository, filenames: Sequence[str]) -> list[str]:
    return [repo_relative(repo, name) for name in filenames]


def packets_guard(repo: pygit2.Repository, filenames: Sequence[str] = ()) -> GuardReport:
    """Every packet that a staged change or a path in ``filenames`` can affect
    must build against the index."""
    tree = index_tree(repo, open_index(repo))
    staged = staged_changes(repo, tree)
    # Staged deletions included: pre-commit never passes a deleted path, and
    # deleting a file a packet reads is exactly what must be caught.
    changed = set(staged.changed) | set(_paths(repo, filenames))
    if not changed:
        return GuardReport("packet", (), ())
    snapshot = staged_snapshot(repo, tree)
    affected = ReverseIndex(repo, tree).affected(changed)
    results = check_packets(snapshot, affected)
    failures = tuple(f for packet in affected for f in results[packet])
    return GuardReport("packet", tuple(affected), failures)


def records_guard(repo: pygit2.Repository, filenames: Sequence[str] = ()) -> GuardReport:
    """Every staged record, and every record among ``filenames``, must be read
    from the index, pass the pre-checks and replay identically."""
    from governance.guards.record_check import check_record  # noqa: PLC0415 (defers PyYAML, json)

    tree = index_tree(repo, open_index(repo))
    staged = staged_changes(repo, tree)
    candidates = set(staged.changed - staged.deleted) | set(_paths(repo, filenames))
    records = sorted(p for p in candidates if is_record_path(p))
    snapshot = staged_snapshot(repo, tree)
    failures = tuple(f for record in records for f in check_record(repo, snapshot, record))
    # Staged changes only: what pre-commit passes is never a way to add a file.
    strays = tuple(_stray(path) for path in sorted(staged.changed - staged.deleted))
    # Signatures: a .sig needs its record; with policies/signing.yml at HEAD on,
    # every staged record (or one whose .sig changed) a trusted signature.

    signed, unsigned = signature_failures(repo, snapshot, candidates | set(staged.deleted))
    return GuardReport(
        "record",
        tuple(sorted({*records, *signed, *(f.path for f in strays if f)})),
        tuple(f for f in strays if f) + failures + tuple(unsigned),
    )


def _stray(path: str) -> Failure | None:
    return stray_failure(path) if stray_in_records_folder(path) else None


def stray_failure(path: str) -> Failure:
    """A file in a records folder that is not a record: ``not_a_record``."""
    return Failure(
        path=path,
        locator=path,
        code=NOT_A_RECORD,
        message=(
            f"{path} is in a records folder but is not a record (<12 hex>.json) or a "
            "record's signature (<12 hex>.json.sig)"
        ),
        exit_code=EXIT_USAGE,
        advice=record_advice(NOT_A_RECORD),
    )
