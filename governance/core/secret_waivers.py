"""``policies/secret-waivers.yml``: reviewed false positives of the secret
scan, each waived by the blob and line it is on, with a reason.

The file is read through the snapshot a build reads (so from the build
commit, or the index for the hooks; at HEAD it must be clean in the working
tree like any source), under the same fail-closed rules, and validated
against a closed schema before any hit is judged: a malformed file stops the
build (``secret_waivers_malformed``), whether or not anything was found. A
waiver names a blob, not a path: when the file changes, its blob changes,
and the waiver no longer applies to it: the new bytes are reviewed again.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from governance.core.schema import validate
from governance.core.snapshot import Snapshot
from governance.core.yamlload import load_yaml
from governance.errors import (
    SECRET_WAIVERS_MALFORMED,
    SOURCE_MISSING,
    MalformedInput,
    SourceError,
)

SECRET_WAIVERS_PATH = "policies/secret-waivers.yml"
# A waiver is three or four lines; the size is judged from the object header.
MAX_SECRET_WAIVERS_BYTES = 256 << 10


@dataclass(frozen=True)
class SecretWaiver:
    index: int  # 1-based, in the file's order
    blob: str
    line: int
    path: str | None
    reason: str

    def matches(self, path: str, blob: str, line: int) -> bool:
        return blob == self.blob and line == self.line and (self.path is None or path == self.path)

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "blob": self.blob,
            "line": self.line,
            "path": self.path,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SecretWaivers:
    """The waivers of one file (none when there is no file)."""

    waivers: tuple[SecretWaiver, ...] = ()

    def find(self, path: str, blob: str, line: int) -> SecretWaiver | None:
        for waiver in self.waivers:
            if waiver.matches(path, blob, line):
                return waiver
        return None


def _malformed(message: str) -> MalformedInput:
    return MalformedInput(
        f"{SECRET_WAIVERS_PATH}: {message}",
        code=SECRET_WAIVERS_MALFORMED,
        path=SECRET_WAIVERS_PATH,
    )


def parse_secret_waivers(text: str) -> SecretWaivers:
    """The waivers of the file's ``text``; ``secret_waivers_malformed`` for
    anything the closed schema refuses, or one blob, path and line waived twice."""
    data = load_yaml(text, path=SECRET_WAIVERS_PATH, code=SECRET_WAIVERS_MALFORMED)
    validate(data, "secret-waivers", what=SECRET_WAIVERS_PATH, code=SECRET_WAIVERS_MALFORMED)
    found = []
    seen: dict[tuple[str, str | None, int], int] = {}
    for index, entry in enumerate(data["waivers"], start=1):
        waiver = SecretWaiver(
            index, entry["blob"], entry["line"], entry.get("path"), entry["reason"].strip()
        )
        key = (waiver.blob, waiver.path, waiver.line)
        if key in seen:
            raise _malformed(
                f"waiver {index} repeats waiver {seen[key]} ({waiver.blob[:12]}, line "
                f"{waiver.line})"
            )
        seen[key] = index
        found.append(waiver)
    return SecretWaivers(tuple(found))


def read_secret_waivers(snapshot: Snapshot) -> SecretWaivers:
    """The waivers of ``snapshot`` (none when it has no waiver file), parsed
    once per blob while the snapshot's cache holds it. A waiver file that is
    not a regular committed blob, too large or not UTF-8 is malformed; one
    that differs in the working tree is ``source_dirty``, as any source."""
    try:
        source = snapshot.source(SECRET_WAIVERS_PATH)
    except SourceError as exc:
        if exc.code == SOURCE_MISSING:
            return SecretWaivers()
        raise _malformed(exc.message) from None
    size = snapshot.size(source)
    if size > MAX_SECRET_WAIVERS_BYTES:
        raise _malformed(
            f"{size:,} bytes; a waiver file is at most {MAX_SECRET_WAIVERS_BYTES >> 10} KiB"
        )
    snapshot.check_worktree(source)

    def parse() -> SecretWaivers:
        try:
            text = snapshot.read(source).decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed("not UTF-8") from None
        return parse_secret_waivers(text)

    return snapshot.memo("secret-waivers", source, parse)


def read_secret_waivers_at(repo: pygit2.Repository, commit: str | None) -> SecretWaivers:
    """The waivers committed at ``commit`` (none for None): what audit judges
    the records' findings by, from the commit its own waivers come from."""
    if commit is None:
        return SecretWaivers()
    found = repo[commit]
    assert isinstance(found, pygit2.Commit)
    return read_secret_waivers(Snapshot(repo=repo, tree=found.tree, commit_id=commit))
