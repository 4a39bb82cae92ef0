"""Replay: rebuild a capsule at its declared commit with the trusted builder
and compare bytes. Git objects only: no checkout, no filters, no hooks, and no
file of that commit is ever imported or run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from governance.core import canonical
from governance.core.builder import build_capsule
from governance.core.hashing import sha256_hex
from governance.core.snapshot import Snapshot, commit_tree
from governance.errors import CapsuleError, SourceError

if TYPE_CHECKING:
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
            code="commit_missing",
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
    built = build_capsule(snapshot, capsule.document["packet"]["path"])
    differences: tuple[Difference, ...] = ()
    if built.data != capsule.data:
        differences = tuple(diff_paths(capsule.document, built.document))
    return ReplayResult(capsule=capsule, rebuilt=built.data, differences=differences)


def rebuild_failed(error: CapsuleError, commit: str) -> CapsuleError:
    """The builder's ``error`` from a replay at ``commit``, said as such: same class,
    code and exit code, with ``stage: rebuild`` and the commit in its details."""
    return type(error)(
        f"the rebuild at {commit[:12]} failed closed: {error.message}",
        code=error.code,
        **{**error.details, "stage": "rebuild", "commit": commit},
    )
