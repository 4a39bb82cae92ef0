"""The agent's workspace: made new, empty and read-only, observed before and
after, compared, and removed."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from typing import Any

from governance.core.words import listed

WORKSPACE_MODE = 0o555
MAX_LISTED_ENTRIES = 20


@dataclass(frozen=True)
class Observation:
    """What the runner saw of a workspace at one moment."""

    kind: str
    mode: int | None = None
    owner_uid: int | None = None
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    entries: tuple[str, ...] | None = None

    @property
    def fresh(self) -> bool:
        """An empty directory with the mode the runner gave it."""
        return self.kind == "directory" and self.entries == () and self.mode == WORKSPACE_MODE

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": None if self.mode is None else f"{self.mode:04o}",
            "owner_uid": self.owner_uid,
            "mtime_ns": self.mtime_ns,
            "ctime_ns": self.ctime_ns,
            "entry_count": None if self.entries is None else len(self.entries),
            "entries": None if self.entries is None else list(self.entries[:MAX_LISTED_ENTRIES]),
        }


def observe(path: str) -> Observation:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Observation("missing")
    if not stat.S_ISDIR(st.st_mode):
        return Observation("not_a_directory", mode=stat.S_IMODE(st.st_mode), owner_uid=st.st_uid)
    try:
        entries: tuple[str, ...] | None = tuple(
            os.fsencode(name).decode("utf-8", errors="replace") for name in sorted(os.listdir(path))
        )
    except OSError:
        entries = None
    return Observation(
        "directory",
        mode=stat.S_IMODE(st.st_mode),
        owner_uid=st.st_uid,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        entries=entries,
    )


def workspace_change(before: Observation, after: Observation) -> str | None:
    """How the workspace differs from the empty, read-only one the agent got."""
    if after.kind != "directory":
        return "it was removed or replaced"
    if after.entries is None:
        return "it can no longer be listed"
    if after.entries:
        count = len(after.entries)
        shown = listed([repr(name) for name in after.entries], MAX_LISTED_ENTRIES)
        return f"it holds {count} {'entry' if count == 1 else 'entries'}: {shown}"
    if after.mode != before.mode:
        return f"its mode changed from {before.mode or 0:04o} to {after.mode or 0:04o}"
    if after.owner_uid != before.owner_uid:
        return "its owner changed"
    if (after.mtime_ns, after.ctime_ns) != (before.mtime_ns, before.ctime_ns):
        return "it was modified (entries were created and removed)"
    return None


def make_workspace(slot: str) -> str:
    path = tempfile.mkdtemp(prefix=f"capsule-agent-{slot}-")
    os.chmod(path, WORKSPACE_MODE)
    return path


def remove_workspace(path: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)
