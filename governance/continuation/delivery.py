"""What each agent is handed besides its workspace: the capsule bytes on
stdin, and the instruction prompt in a read-only file that the environment
variable CAPSULE_PROMPT_FILE names; the hashes of both, and whether the prompt
file was still the same bytes after the agent ended."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from typing import Any

from governance.core.hashing import sha256_hex

PROMPT_VARIABLE = "CAPSULE_PROMPT_FILE"
PROMPT_NAME = "prompt.txt"
INPUT_MODE = 0o555
PROMPT_MODE = 0o444
# The prompt is a few kilobytes: reading it back never needs more than this.
_MAX_READ_BACK = 1 << 20


@dataclass(frozen=True)
class Delivery:
    """One agent's input: the prompt file the runner wrote and the stdin bytes."""

    folder: str
    prompt_path: str
    prompt_sha256: str
    prompt_bytes: int
    stdin_sha256: str
    stdin_bytes: int

    def to_json(self, prompt_after: str | None, agent_path: str) -> dict[str, Any]:
        return {
            "stdin_sha256": self.stdin_sha256,
            "stdin_bytes": self.stdin_bytes,
            "prompt_file": agent_path,
            "prompt_sha256": self.prompt_sha256,
            "prompt_bytes": self.prompt_bytes,
            "prompt_unchanged": prompt_after == self.prompt_sha256,
        }


def prepare(slot: str, capsule: bytes, prompt: bytes) -> Delivery:
    """A new folder holding only the prompt file, both read-only (the folder
    0555, the file 0444, owned by the runner): with a dedicated uid the agent
    can neither change nor replace it."""
    folder = tempfile.mkdtemp(prefix=f"capsule-input-{slot}-")
    path = os.path.join(folder, PROMPT_NAME)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(prompt)
        os.chmod(path, PROMPT_MODE)
        os.chmod(folder, INPUT_MODE)
    except BaseException:
        remove(folder)
        raise
    return Delivery(
        folder=folder,
        prompt_path=path,
        prompt_sha256=sha256_hex(prompt),
        prompt_bytes=len(prompt),
        stdin_sha256=sha256_hex(capsule),
        stdin_bytes=len(capsule),
    )


def read_back(delivery: Delivery) -> str | None:
    """The SHA-256 of the prompt file as it is now (not following a symlink put
    in its place), or None when it is gone or is no longer a file."""
    try:
        fd = os.open(delivery.prompt_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return sha256_hex(handle.read(_MAX_READ_BACK + 1))


def remove(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    shutil.rmtree(folder, ignore_errors=True)
