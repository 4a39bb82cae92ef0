"""Replay: rebuild a capsule at its declared commit with the trusted builder
and compare bytes, and the shortcut that does so before a record is read field
by field (``rebuilds_identically``). Git objects only: no checkout, no
filters, no hooks, and no file of that commit is ever imported or run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from governance.core import canonical
from governance.core.builder import build_capsule
from governance.core.capsule import FULL_COMMIT, SCHEMA_V1
from governance.core.hashing import sha256_hex
from governance.core.repository import commit_tree
from governance.core.snapshot import Snapshot
from governance.errors import COMMIT_MISSING, CapsuleError, SourceError
from governance.history.pre_adr import predates_adr_limits

if TYPE_CHECKING:
    from governance.core.builder import Built
    from governance.core.cache import BlobCache
    from governance.core.reader import CapsuleFile


@dataclass(frozen=True)
class Difference:
    path: str  # JSON path, e.g. reads[2].text
    recorded_sha256: str
    rebuilt_sha256: str

    def to_json(self) -> dict[str, str]:
        return {
            "path": self.path,
            "recorded_sha256": self.recorded_sha256,
            "rebuilt_sha256": self.rebuilt_sha256,
        }


@dataclass(frozen=True)
class ReplayResult:
    capsule: CapsuleFile
    rebuilt: bytes
    differences: tuple[Difference, ...]
    built: Built | None = field(default=None, repr=False, compare=False)

    @property
    def identical(self) -> bool:
        return self.rebuilt == self.capsule.data


def _value_hash(value: Any) -> str:
    return sha256_hex(canonical.dumps(value))


def diff_paths(recorded: Any, rebuilt: Any, where: str = "") -> list[Difference]:
    """The JSON paths whose values differ, as deep as both sides share shape."""
    if isinstance(recorded, dict) and isinstance(rebuilt, dict):
        out: list[Difference] = []
        for key in sorted(recorded.keys() | rebuilt.keys()):
            out += diff_paths(
                recorded.get(key), rebuilt.get(key), f"{where}.{key}" if where else key
            )
        return out
    if isinstance(recorded, list) and isinstance(rebuilt, list) and len(recorded) == len(rebuilt):
        out = []
        for index, (a, b) in enumerate(zip(recorded, rebuilt, strict=True)):
            out += diff_paths(a, b, f"{where}[{index}]")
        return out
    if recorded == rebuilt and type(recorded) is type(rebuilt):
        return []
    return [Difference(where or "$", _value_hash(recorded), _value_hash(rebuilt))]


def declared_commit(repo: pygit2.Repository, commit: str) -> pygit2.Commit:
    """The commit a capsule declares, or SourceError ``commit_missing``."""
    try:
        obj = repo.get(commit)
    except (ValueError, KeyError):
        obj = None
    if not isinstance(obj, pygit2.Commit):
        shallow = " (this clone is shallow: fetch its full history)" if repo.is_shallow else ""
        raise SourceError(
            f"commit {commit} declared by the capsule is not in this repository{shallow}",
            code=COMMIT_MISSING,
            commit=commit,
            shallow=repo.is_shallow,
        )
    return obj


def replay_capsule(
    repo: pygit2.Repository, capsule: CapsuleFile, *, cache: BlobCache | None = None
) -> ReplayResult:
    """Rebuild ``capsule`` at its declared commit with the trusted builder.

    Raises SourceError ``commit_missing`` when the commit is not in ``repo``,
    and the builder's own error, unchanged, when the rebuild fails closed
    there (see ``rebuild_failed`` to report it). ``cache`` shares blob reads
    and parses with other replays of the same run.
    """
    obj = declared_commit(repo, capsule.commit)
    # No working tree: the snapshot reads git objects of that commit and nothing else.
    snapshot = Snapshot(repo=repo, tree=commit_tree(obj), commit_id=str(obj.id), cache=cache)
    # No secret scan: a record's bytes are history (audit reports what today's
    # scan would refuse, record_rules.secret_findings).
    # A record that predates the ADR's limits rebuilds by the rules it was built under.
    built = build_capsule(
        snapshot,
        capsule.document["packet"]["path"],
        scan_secrets=False,
        adr_limits=not predates_adr_limits(obj),
    )
    differences: tuple[Difference, ...] = ()
    if built.data != capsule.data:
        differences = tuple(diff_paths(capsule.document, built.document))
    return ReplayResult(capsule=capsule, rebuilt=built.data, differences=differences, built=built)


def rebuilds_identically(
    repo: pygit2.Repository, data: bytes, cache: BlobCache | None
) -> tuple[str, Built] | None:
    """The declared commit and the rebuild when ``data`` is byte for byte what
    the trusted capsule/1 builder makes from that commit; None otherwise.

    Such a record passes every pre-check by construction (the builder only
    emits capsules the reader accepts, and these are its bytes), so for it the
    pre-checks can be skipped: they cost as much as the rebuild itself. Only
    the two fields the rebuild needs are read first (``rebuild_hint``).
    """
    hint = rebuild_hint(data)
    if hint is None:
        return None
    commit, packet_path = hint
    if canonical.has_surrogate(packet_path):
        # The plain parse takes a lone surrogate escape, no git path holds one,
        # and the strict parse refuses it (capsule_malformed).
        return None
    try:
        # Replay's own lookup: an id this repository's object format cannot hold
        # (64 hex in a SHA-1 repository) is a missing commit too.
        found = declared_commit(repo, commit)
    except (CapsuleError, pygit2.GitError):
        return None
    try:
        # commit_tree: a treeless clone lacks it; the full rules then say object_missing.
        snapshot = Snapshot(repo=repo, tree=commit_tree(found), commit_id=commit, cache=cache)
        built = build_capsule(
            snapshot, packet_path, scan_secrets=False, adr_limits=not predates_adr_limits(found)
        )
    except (CapsuleError, pygit2.GitError):
        # Not the builder's bytes: the rules decide, in their order (git's error
        # in the rebuild comes after a pre-check that fails).
        return None
    return (commit, built) if built.data == data else None


# Where a canonical capsule has its commit and packet path: "budget" (a flat
# object) is its first key and "commit" the second; the packet object's first
# keys are "blob" and "path". Inside a JSON string every '"' is escaped, so
# neither pattern can match within one. The path string itself is read by
# JSON's scanner: a regular expression for a string with escapes keeps state
# per character (over 2 GiB for a record of 16 MiB).
_COMMIT_AT = re.compile(rb'\{"budget":\{[^{}]*\},"commit":"([0-9a-f]{40}|[0-9a-f]{64})"')
_PACKET_PATH = re.compile(rb'"packet":\{"blob":"[0-9a-f]+","path":(?=")')
_STRING = json.JSONDecoder()


def rebuild_hint(data: bytes) -> tuple[str, str] | None:
    """The commit and the packet path a rebuild of ``data`` would start from,
    read where a canonical capsule has them, else with the plain JSON parser;
    None when neither finds them. A hint only: should the rebuild equal
    ``data`` byte for byte, ``data`` is the canonical capsule of that commit
    and packet (the builder's bytes are), whatever else it might have said."""
    commit, path = _COMMIT_AT.match(data), _PACKET_PATH.search(data)
    if commit is not None and path is not None:
        try:
            # Bytes that are not UTF-8 become lone surrogates, which no path
            # the rebuild takes holds.
            tail = data[path.end() :].decode("utf-8", "surrogateescape")
            packet_path, _ = _STRING.raw_decode(tail)
        except ValueError:
            packet_path = None
        if isinstance(packet_path, str):
            return commit.group(1).decode("ascii"), packet_path
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA_V1:
        return None
    commit_id, packet = document.get("commit"), document.get("packet")
    if not (isinstance(commit_id, str) and FULL_COMMIT.fullmatch(commit_id)):
        return None
    if not (isinstance(packet, dict) and isinstance(packet.get("path"), str)):
        return None
    return commit_id, packet["path"]


def rebuild_failed(error: CapsuleError, commit: str) -> CapsuleError:
    """The builder's ``error`` from a replay at ``commit``, said as such: same class,
    code and exit code, with ``stage: rebuild`` and the commit in its details."""
    return type(error)(
        f"the rebuild at {commit[:12]} failed closed: {error.message}",
        code=error.code,
        **{**error.details, "stage": "rebuild", "commit": commit},
    )
