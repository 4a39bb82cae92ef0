"""Audit waivers: the committed, reviewed list of known-bad record blobs
(``policies/audit-waivers.yml``) that an audit reports as ``waived``.

The file is read from the tip commit of the audited range, through git
objects, like everything an audit reads. Each waiver names a record blob
(optionally only at one path) and says why it is waived. A waiver that
matches no record version of the range, nor of the history before it, is
``waiver_unused``: a stale or mistyped waiver is an error, never silence.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from governance.core.schema import validate
from governance.core.snapshot import Snapshot
from governance.core.yamlload import load_yaml
from governance.errors import (
    SOURCE_MISSING,
    WAIVER_UNUSED,
    WAIVERS_MALFORMED,
    MalformedInput,
    SourceError,
)

__all__ = ["WAIVERS_PATH", "WAIVER_UNUSED", "Waiver", "parse_waivers", "read_waivers"]

WAIVERS_PATH = "policies/audit-waivers.yml"
# A waiver is a line or three; the size is checked from the object header.
MAX_WAIVERS_BYTES = 256 << 10

# What became of a waiver in one audit.
MATCHED = "matched"  # it names a record version of the range
BEFORE_RANGE = "before_range"  # A..B: it matched a version before A only
UNUSED = "unused"  # it matched nothing: waiver_unused


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
