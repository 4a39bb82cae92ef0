"""Capsule records: capsules committed as evidence of what an agent was given.

A record lives at ``packets/<ID>/capsules/<first 12 hex of its commit>.json``.
Once written it is never replaced: building the same packet at the same commit
again must give the same bytes, and anything else is a conflict to look at,
not a file to overwrite.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from governance.core.capsule import PACKETS_DIR, packet_path
from governance.core.hashing import sha256_hex
from governance.core.paths import refuse_linked_folders
from governance.errors import (
    NO_WORKING_TREE,
    OUTPUT_FAILED,
    RecordConflict,
    UsageError,
)
from governance.output import write_atomic

if TYPE_CHECKING:
    import pygit2

RECORDS_FOLDER = "capsules"
RECORDS_GLOB = "packets/*/capsules/*.json"
COMMIT_PREFIX = 12
RECORD_SUFFIX = ".json"
# ``capsule sign`` writes ``<record>.json.sig`` beside the record it signs; the
# records folder holds records and their signatures and nothing else.
SIGNATURE_SUFFIX = ".sig"
SIGNATURES_GLOB = "packets/*/capsules/*.json.sig"

WRITTEN = "written"
UNCHANGED = "unchanged"


@dataclass(frozen=True)
class RecordWrite:
    path: str  # repository-relative, POSIX
    status: str  # WRITTEN or UNCHANGED


def record_path(packet_path: str, commit: str) -> str:
    """``packets/<ID>/packet.yml`` at ``commit`` -> its record's repository path."""
    folder = posixpath.dirname(packet_path)
    return posixpath.join(folder, RECORDS_FOLDER, f"{commit[:COMMIT_PREFIX]}.json")


def signature_path(record: str) -> str:
    """Where the signature of the record at ``record`` lives: beside it."""
    return record + SIGNATURE_SUFFIX


def signed_record(path: str) -> str | None:
    """The record a signature path signs (``X.json.sig`` -> ``X.json``), else None."""
    if path.endswith(RECORD_SUFFIX + SIGNATURE_SUFFIX):
        return path.removesuffix(SIGNATURE_SUFFIX)
    return None


# Exactly the names ``build --record`` and ``capsule sign`` write.
_ALLOWED_NAME = re.compile(r"[0-9a-f]{12}\.json(?:\.sig)?")


def allowed_in_records_folder(name: str) -> bool:
    """The file names a ``capsules/`` folder may hold: ``<12 hex>.json`` records
    and their ``<12 hex>.json.sig`` signatures; nothing else (a temp file left
    by a killed writer, notes, a sub-folder) is committed there."""
    return _ALLOWED_NAME.fullmatch(name) is not None


def in_records_folder(path: str) -> bool:
    """``packets/<ID>/capsules/...``, at any depth below the folder."""
    parts = path.split("/")
    return len(parts) >= 4 and parts[0] == PACKETS_DIR and parts[2] == RECORDS_FOLDER


def stray_in_records_folder(path: str) -> bool:
    """A path in a records folder that is neither a record path (checked as a
    record) nor an allowed name: the records hook refuses it (``not_a_record``)."""
    return (
        in_records_folder(path)
        and not is_record_path(path)
        and not (len(path.split("/")) == 4 and allowed_in_records_folder(path.split("/")[3]))
    )


def expected_path(packet_id: str, commit: str) -> str:
    """Where the record of packet ``packet_id`` built at ``commit`` belongs."""
    return record_path(packet_path(packet_id), commit)


def is_record_path(path: str) -> bool:
    """``packets/<ID>/capsules/<name>.json``: a path the records hook checks."""
    parts = path.split("/")
    return (
        len(parts) == 4
        and parts[0] == PACKETS_DIR
        and parts[2] == RECORDS_FOLDER
        and parts[3].endswith(RECORD_SUFFIX)
    )


def records_in(tree: pygit2.Tree) -> list[str]:
    """The record paths of ``tree`` (``packets/<ID>/capsules/<name>.json``,
    whatever the entry is: a link or a folder there is judged as a record, and
    refused), sorted."""
    found: list[str] = []
    try:
        packets = tree[PACKETS_DIR]
    except KeyError:
        return found
    for folder in _subtrees(packets):
        try:
            records = folder[RECORDS_FOLDER]
        except KeyError:
            continue
        for entry in _subtrees(records, folders_only=False):
            path = f"{PACKETS_DIR}/{folder.name}/{RECORDS_FOLDER}/{entry.name}"
            if is_record_path(path):
                found.append(path)
    return sorted(found)


def _subtrees(obj: object, *, folders_only: bool = True) -> list[Any]:
    # The entries of a folder of the tree (nothing when it is not one).
    import pygit2  # noqa: PLC0415 (a tree is given: pygit2 is loaded already)

    if not isinstance(obj, pygit2.Tree):
        return []
    return [e for e in obj if not folders_only or isinstance(e, pygit2.Tree)]


def _folder(root: Path, relative: str) -> Path:
    # Create the record's folder one component at a time, refusing anything
    # but a folder on the way (a link is refuse_linked_folders's to refuse).
    here = root
    for part in relative.split("/"):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            try:
                os.mkdir(here)
            except OSError as exc:
                raise UsageError(
                    f"{relative}: cannot create the record folder: {exc.strerror}",
                    code=OUTPUT_FAILED,
                ) from None
            continue
        if not stat.S_ISDIR(mode):
            raise RecordConflict(
                f"{relative}: {here.relative_to(root).as_posix()} is not a plain folder in the "
                "working tree (a symbolic link or a file); records are never written through it",
                path=relative,
            )
    return here


def write_record(
    repo: pygit2.Repository, packet_path: str, commit: str, data: bytes
) -> RecordWrite:
    """Write ``data`` as the record of ``packet_path`` at ``commit``, atomically.

    An existing record must already hold exactly these bytes; otherwise
    ``record_conflict`` and the file is left as it is.
    """
    if repo.workdir is None:
        raise UsageError(
            "--record writes into the working tree; this repository has none (bare)",
            code=NO_WORKING_TREE,
        )
    root = Path(repo.workdir)
    relative = record_path(packet_path, commit)
    refuse_linked_folders(relative, base=os.fspath(root))
    target = _folder(root, posixpath.dirname(relative)) / posixpath.basename(relative)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        write_atomic(os.fspath(target), data)
        return RecordWrite(relative, WRITTEN)
    if not stat.S_ISREG(st.st_mode):
        raise RecordConflict(
            f"{relative}: exists and is not a regular file; records are never written through it",
            path=relative,
        )
    existing = target.read_bytes()
    if existing != data:
        raise RecordConflict(
            f"{relative}: a different record already exists for commit {commit[:COMMIT_PREFIX]} "
            f"(sha256 {sha256_hex(existing)[:12]}, this build {sha256_hex(data)[:12]}); it is "
            "never overwritten: run `capsule replay` on it to see which fields differ",
            path=relative,
            existing_sha256=sha256_hex(existing),
            built_sha256=sha256_hex(data),
        )
    return RecordWrite(relative, UNCHANGED)
