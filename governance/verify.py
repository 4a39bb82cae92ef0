"""Verify a capsule against a snapshot: per part, is what the agent was given
still what the repository says? Never rewrites anything."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from governance.errors import SourceError
from governance.excerpt import select
from governance.hashing import sha256_hex
from governance.locator import Selector
from governance.reader import CapsuleFile
from governance.snapshot import Snapshot

UNCHANGED = "unchanged"
STALE = "stale"
MISSING = "missing"

# code -> what it means, for text output and docs.
CODES = {
    "verified_unchanged": "same blob as recorded",
    "source_changed": "the file changed (it is included whole)",
    "source_changed_passage_intact": "the file changed; the section is byte-identical, same lines",
    "passage_moved": "the section is byte-identical but now at other lines",
    "passage_stale": "the section's bytes changed",
}


@dataclass(frozen=True)
class PartResult:
    part: str
    locator: str
    status: str
    code: str
    message: str
    current: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "locator": self.locator,
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "current": self.current,
        }


def _whole(snapshot: Snapshot, part: str, recorded: dict[str, Any]) -> PartResult:
    path = recorded["path"]
    try:
        source = snapshot.source(path)
    except SourceError as exc:
        return PartResult(part, path, MISSING, exc.code, exc.message)
    if source.blob_id == recorded["blob"]:
        return PartResult(
            part, path, UNCHANGED, "verified_unchanged", CODES["verified_unchanged"],
            {"blob": source.blob_id, "sha256": recorded["sha256"]},
        )  # fmt: skip
    current = {"blob": source.blob_id, "sha256": sha256_hex(snapshot.read(source))}
    return PartResult(part, path, STALE, "source_changed", CODES["source_changed"], current)


def _read(snapshot: Snapshot, part: str, recorded: dict[str, Any]) -> PartResult:
    locator = recorded["locator"]
    heading = recorded["heading"]
    selector = Selector(locator, recorded["path"], heading["slug"] if heading else None)
    try:
        source = snapshot.source(selector.path, locator=locator)
    except SourceError as exc:
        return PartResult(part, locator, MISSING, exc.code, exc.message)
    if source.blob_id == recorded["blob"]:
        current = {
            "blob": source.blob_id,
            "source_sha256": recorded["source_sha256"],
            "selected_sha256": recorded["selected_sha256"],
            "lines": recorded["lines"],
        }
        return PartResult(
            part, locator, UNCHANGED, "verified_unchanged", CODES["verified_unchanged"], current
        )
    data = snapshot.read(source)
    if selector.slug is None:
        sha = sha256_hex(data)
        current = {"blob": source.blob_id, "source_sha256": sha, "selected_sha256": sha}
        return PartResult(part, locator, STALE, "source_changed", CODES["source_changed"], current)
    try:
        excerpt = select(selector, source, data)
    except SourceError as exc:
        current = {"blob": source.blob_id, "source_sha256": sha256_hex(data)}
        return PartResult(part, locator, MISSING, exc.code, exc.message, current)
    current = {
        "blob": source.blob_id,
        "source_sha256": excerpt.source_sha256,
        "selected_sha256": excerpt.selected_sha256,
        "lines": [excerpt.first_line, excerpt.last_line],
    }
    if excerpt.selected_sha256 != recorded["selected_sha256"]:
        code = "passage_stale"
    elif current["lines"] != recorded["lines"]:
        code = "passage_moved"
    else:
        code = "source_changed_passage_intact"
    return PartResult(part, locator, STALE, code, CODES[code], current)


def verify_capsule(capsule: CapsuleFile, snapshot: Snapshot) -> list[PartResult]:
    document = capsule.document
    results = [
        _whole(snapshot, "packet", document["packet"]),
        _whole(snapshot, "context", document["context"]),
        _whole(snapshot, "policy", document["policy"]),
    ]
    results += [
        _read(snapshot, f"reads[{index}]", read) for index, read in enumerate(document["reads"])
    ]
    return results
