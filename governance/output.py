"""Writing results: atomic files and clean stdout."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Any

from governance import canonical
from governance.errors import UsageError


def write_atomic(path: str, data: bytes, *, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and a
    rename: readers see the old file or the new one, never a partial one.
    ``mode`` is filtered by the umask, as ``open`` would."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".capsule-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror}", code="output_failed") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(
                f"{path}: cannot write: {exc.strerror}", code="output_failed"
            ) from None
        raise


def print_json(value: Any) -> None:
    sys.stdout.buffer.write(canonical.dumps(value))
    sys.stdout.flush()


def warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
