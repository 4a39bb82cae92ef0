"""Audit waivers: the committed, reviewed list of known-bad record blobs
(``policies/audit-waivers.yml``) that an audit reports as ``waived``.

The file is read through git objects, like everything an audit reads, from
the range's base (A of ``A..B``: a pull request cannot waive what it brings
in), else from its tip. Each waiver names a record blob (optionally only at
one path) and says why it is waived. A waiver that matches no record version
of the range, nor of the history before it, is ``waiver_unused``: a stale or
mistyped waiver is an error, never silence. A waiver for a blob that is still
a record at the range's tip is ``waiver_at_tip`` and waives nothing: a forged
record there must be deleted, not excused.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from governance.core.schema import validate
from governance.core.snapshot import Snapshot
from governance.core.trees import MODE_TREE, mode_and_id, read_entries
from governance.core.yamlload import load_yaml
from governance.errors import (
    OBJECT_MISSING,
    SOURCE_MISSING,
    WAIVER_AT_TIP,
    WAIVER_UNUSED,
    WAIVERS_MALFORMED,
    MalformedInput,
    SourceError,
)

__all__ = [
    "WAIVERS_PATH",
    "WAIVER_AT_TIP",
    "WAIVER_UNUSED",
    "Waiver",
    "blob_at",
    "parse_waivers",
    "read_waivers",
    "waivers_commit",
]

WAIVERS_PATH = "policies/audit-waivers.yml"
# A waiver is a line or three; the size is checked from the object header.
MAX_WAIVERS_BYTES = 256 << 10

# What became of a waiver in one audit.
MATCHED = "matched"  # it names a record version of the range
BEFORE_RANGE = "before_range"  # A..B: it matched a version before A only
UNUSED = "unused"  # it matched nothing: waiver_unused
AT_TIP = "at_tip"  # it names a record still at the range's tip: waiver_at_tip


@dataclass(frozen=True)
class Waiver:
    index: int  # 1-based, in the file's order
    blob: str
    path: str | None
    reason: str

    def matches(self, path: str, blob: str) -> bool:
        return blob == self.blob and (self.path is None or path == self.path)

    def to_json(self) -> dict[str, object]:
        return {"index": self.index, "blob": self.blob, "path": self.path, "reason": self.reason}


def _malformed(message: str) -> MalformedInput:
    return MalformedInput(f"{WAIVERS_PATH}: {message}", code=WAIVERS_MALFORMED, path=WAIVERS_PATH)


def parse_waivers(text: str) -> tuple[Waiver, ...]:
    """The waivers of the file's ``text``; ``waivers_malformed`` for anything
    the closed schema refuses, or the same blob and path waived twice."""
    data = load_yaml(text, path=WAIVERS_PATH, code=WAIVERS_MALFORMED)
    validate(data, "audit-waivers", what=WAIVERS_PATH, code=WAIVERS_MALFORMED)
    waivers = []
    seen: dict[tuple[str, str | None], int] = {}
    for index, entry in enumerate(data["waivers"], start=1):
        waiver = Waiver(index, entry["blob"], entry.get("path"), entry["reason"].strip())
        key = (waiver.blob, waiver.path)
        if key in seen:
            raise _malformed(f"waiver {index} repeats waiver {seen[key]} ({waiver.blob[:12]})")
        seen[key] = index
        waivers.append(waiver)
    return tuple(waivers)


def waivers_commit(tip: str | None, hidden: str | None) -> str | None:
    """The commit the waivers of a range are read from: its base A for
    ``A..B`` (the branch a pull request merges into), else its tip."""
    return hidden if hidden is not None else tip


def blob_at(repo: pygit2.Repository, commit: str, path: str) -> str | None:
    """The id of the entry at ``path`` in ``commit``'s tree (whatever its mode
    but a folder), or None where there is none."""
    found = repo[commit]
    assert isinstance(found, pygit2.Commit)
    tree_id = found.tree_id.raw
    size = len(tree_id)
    *folders, name = path.split("/")
    try:
        entries, _ = read_entries(repo, tree_id)
        for folder in folders:
            entry = entries.get(folder.encode("utf-8", "surrogateescape"))
            if entry is None:
                return None
            mode, entry_id = mode_and_id(entry, size)
            if mode != MODE_TREE:
                return None
            entries, _ = read_entries(repo, entry_id)
    except KeyError:
        raise SourceError(
            f"a tree on the way to {path} at commit {commit[:12]} is not in this repository "
            "(a partial clone? clone without --filter)",
            code=OBJECT_MISSING,
        ) from None
    entry = entries.get(name.encode("utf-8", "surrogateescape"))
    if entry is None:
        return None
    mode, entry_id = mode_and_id(entry, size)
    return None if mode == MODE_TREE else entry_id.hex()


def read_waivers(repo: pygit2.Repository, commit: str | None) -> tuple[Waiver, ...]:
    """The waivers committed at ``commit`` (none when it has no waiver file)."""
    if commit is None:
        return ()
    found = repo[commit]
    assert isinstance(found, pygit2.Commit)
    snapshot = Snapshot(repo=repo, tree=found.tree, commit_id=commit)
    try:
        source = snapshot.source(WAIVERS_PATH)
    except SourceError as exc:
        if exc.code == SOURCE_MISSING:
            return ()
        raise _malformed(f"{exc.message}") from None
    size = snapshot.size(source)
    if size > MAX_WAIVERS_BYTES:
        raise _malformed(f"{size:,} bytes; a waiver file is at most {MAX_WAIVERS_BYTES >> 10} KiB")
    try:
        text = snapshot.read(source).decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("not UTF-8") from None
    return parse_waivers(text)
