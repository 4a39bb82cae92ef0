"""Checking a capsule record read from a snapshot (the index, for the hook).

A record is ``packets/<ID>/capsules/<first 12 hex of its commit>.json``. It
passes when (1) it is in the snapshot, (2) its bytes pass the reader's
pre-checks (known schema, shape, canonical bytes, internal consistency),
(3) it sits where its own id and commit say it belongs, (4) its declared commit
is in the repository and in the history being committed onto (HEAD or an
ancestor of it, or, during a merge, of MERGE_HEAD), and (5) rebuilding it there
gives the same bytes.
"""

from __future__ import annotations

import os
import posixpath
import re

import pygit2

from governance.core.capsule import PACKET_FILE, PACKETS_DIR
from governance.core.snapshot import Snapshot
from governance.errors import EXIT_DRIFT, CapsuleError, SourceError
from governance.guards.check import Failure, one_line
from governance.history.records import RECORDS_FOLDER, record_path
from governance.output import listed


def is_record_path(path: str) -> bool:
    parts = path.split("/")
    return (
        len(parts) == 4
        and parts[0] == PACKETS_DIR
        and parts[2] == RECORDS_FOLDER
        and parts[3].endswith(".json")
    )


def expected_path(packet_id: str, commit: str) -> str:
    return record_path(posixpath.join(PACKETS_DIR, packet_id, PACKET_FILE), commit)


# What to do about a record's failure. A record is evidence: it is never
# repaired by hand, only restored or rebuilt at its commit.
ADVICE = {
    "source_missing": "stage the record, or leave it out",
    "record_not_file": "stage the record itself, as capsule build wrote it",
    "capsule_malformed": "restore the record as capsule build wrote it",
    "non_canonical": "restore the record as capsule build wrote it",
    "capsule_corrupt": "restore the record, or rebuild it at its commit",
    "commit_missing": "commit records only where their commit is in the history (fetch it, "
    "or rebuild the record at a commit of this branch)",
    "commit_unreachable": "rebuild the record at a commit of this branch (HEAD or an "
    "ancestor), or leave it out: a fresh clone would not have its commit",
    "replay_differs": "the record is not what the builder gives at its commit: restore it, or "
    "rebuild it there",
}
_NOT_A_FILE = {
    "source_symlink": "is a symbolic link",
    "source_submodule": "is a submodule",
    "source_not_file": "is not a regular file",
}
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
        ADVICE.get(error.code, ""),
        details,
    )


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _merge_heads(repo: pygit2.Repository) -> list[pygit2.Oid]:
    """The commits being merged, while a merge is in progress.

    A merge stopped for conflicts (committed later with ``git commit``, which
    runs pre-commit) names them in MERGE_HEAD, one per line. While ``git
    merge`` runs the pre-merge-commit hook, MERGE_HEAD is not written yet; git
    names each merged commit in its environment instead, as ``GITHEAD_<id>``
    (the label merge strategies show for it).
    """
    names: list[str] = [
        key.removeprefix("GITHEAD_") for key in os.environ if key.startswith("GITHEAD_")
    ]
    try:
        with open(os.path.join(repo.path, "MERGE_HEAD"), encoding="ascii") as file:
            names += file.read().split()
    except (OSError, UnicodeDecodeError):
        pass
    return [pygit2.Oid(hex=name) for name in names if _FULL_ID.fullmatch(name)]


def unreachable(repo: pygit2.Repository, commit: pygit2.Commit) -> SourceError | None:
    """None when ``commit`` is HEAD or one of its ancestors, or one of a commit
    being merged (MERGE_HEAD) or its ancestors: the history the next commit
    extends. Else ``commit_unreachable``, the code audit gives such a record."""
    if repo.head_is_unborn:
        where = "HEAD (there are no commits yet)"
        tips: list[pygit2.Oid] = []
    else:
        head = repo.head.target
        assert isinstance(head, pygit2.Oid)
        tips = [head, *_merge_heads(repo)]
        where = f"HEAD ({str(head)[:12]})" + (
            " or of the commit being merged" if len(tips) > 1 else ""
        )
    for tip in tips:
        try:
            if commit.id == tip or repo.descendant_of(tip, commit.id):
                return None
        except pygit2.GitError:
            continue  # not a commit of this repository: no history to be in
    return SourceError(
        f"declared commit {str(commit.id)[:12]} is not in the history of {where}: "
        "amended, rebased away, or from another branch",
        code="commit_unreachable",
        commit=str(commit.id),
    )


def check_record(repo: pygit2.Repository, snapshot: Snapshot, path: str) -> list[Failure]:
    from governance.core.reader import read_capsule
    from governance.history.replay import declared_commit, replay_capsule

    # 1. In the snapshot, as a regular blob.
    try:
        data = snapshot.read(snapshot.source(path))
    except CapsuleError as exc:
        if exc.code in _NOT_A_FILE:
            # As audit says of such a path: not a record at all.
            exc = SourceError(
                f"{path} {_NOT_A_FILE[exc.code]} {snapshot.where}, not a record file",
                code="record_not_file",
            )
        return [_failure(path, exc)]
    # 2. The reader's pre-checks, before any source is read.
    try:
        capsule = read_capsule(data)
    except CapsuleError as exc:
        return [_failure(path, exc)]
    # 3. Where it belongs.
    expected = expected_path(capsule.document["id"], capsule.commit)
    if path != expected:
        return [
            Failure(
                path,
                "$",
                "record_misplaced",
                f"a record of {capsule.document['id']} built at {capsule.commit[:12]} belongs "
                f"at {expected}; move it there",
                EXIT_DRIFT,
                "",
                {"expected": expected},
            )
        ]
    # 4. Its commit exists, and is in the history this commit extends.
    try:
        commit = declared_commit(repo, capsule.commit)
    except CapsuleError as exc:
        return [_failure(path, exc)]
    refused = unreachable(repo, commit)
    if refused is not None:
        return [_failure(path, refused)]
    # 5. The trusted builder gives the same bytes there.
    try:
        result = replay_capsule(repo, capsule)
    except CapsuleError as exc:
        # The declared commit exists but the packet does not build there.
        locator = str(exc.details.get("locator") or exc.details.get("path") or "$")
        details = {k: v for k, v in exc.details.items() if k not in ("locator", "path")}
        message = one_line(exc.message).removeprefix(f"{locator}: ")
        return [
            Failure(
                path,
                locator,
                exc.code,
                f"cannot rebuild at its commit {capsule.commit[:12]}: {message}",
                exc.exit_code,
                NOT_BUILDABLE,
                details,
            )
        ]
    if not result.identical:
        fields = [d.path for d in result.differences]
        # Name the field that was changed, not the hashes and budget numbers
        # that had to follow it.
        named = (
            [f for f in fields if not f.startswith("budget.") and not f.endswith("sha256")]
            or [f for f in fields if not f.startswith("budget.")]
            or fields
            or ["$"]
        )
        return [
            Failure(
                path,
                named[0],
                "replay_differs",
                f"rebuilding at {capsule.commit[:12]} gives other bytes (at {listed(fields)})",
                EXIT_DRIFT,
                ADVICE["replay_differs"],
                {"differences": [d.to_json() for d in result.differences]},
            )
        ]
    return []
