"""Writing results: atomic files, clean stdout, and every human-readable line
made printable. The one place the commands' output goes through; library code
returns values and never writes to a terminal."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

from governance.core import canonical
from governance.errors import UsageError


def write_atomic(path: str, data: bytes, *, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and a
    rename: readers see the old file or the new one, never a partial one.
    ``mode`` is filtered by the umask, as ``open`` would. An existing path that
    is not a regular file (a device, a FIFO) is opened and written instead."""
    # Imported here: every command loads this module, few write a file (tempfile
    # pulls in random and shutil, about 3 ms).
    import stat
    import tempfile

    try:
        existing = os.stat(path)
    except OSError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        # A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written to, never
        # renamed over: run as root, a rename would replace /dev/null itself.
        try:
            with open(path, "wb") as handle:
                handle.write(data)
        except OSError as exc:
            raise UsageError(
                f"{path}: cannot write: {exc.strerror}", code="output_failed"
            ) from None
        return
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


_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str) -> str:
    """``text`` as any output can carry it: a byte that is not UTF-8 in a path or
    an argument (which Python holds as a lone surrogate) becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


# Control (Cc), format (Cf: bidi overrides such as U+202E), line and paragraph
# separators, and surrogates (an undecodable byte held by surrogateescape).
_UNPRINTABLE = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def _escape(char: str) -> str:
    point = ord(char)
    if 0xDC80 <= point <= 0xDCFF:
        # surrogateescape's stand-in for the byte point - 0xDC00.
        return f"\\x{point - 0xDC00:02x}"
    if point <= 0xFF:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}"


def printable(text: str) -> str:
    """``text`` as one line any terminal shows literally: every control, format
    or separator character and every lone surrogate becomes an escape
    (``\\x1b``, ``\\u202e``), so repository text (a path, a heading, a record
    name from history) can neither move the cursor, recolour nor reorder a
    line. Used for every human-readable line; ``--json`` stays exact."""
    if text.isprintable():
        return text
    return "".join(
        _escape(char) if unicodedata.category(char) in _UNPRINTABLE else char for char in text
    )


def plural(count: int, noun: str) -> str:
    """``1 packet``, ``2 packets``, ``1,024 packets``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def listed(items: Sequence[str], most: int = 5) -> str:
    """The first ``most`` items, comma-separated, then ``and K more``."""
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _shown_json(value: Any) -> Any:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(key): _shown_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shown_json(item) for item in value]
    return value


def print_json(value: Any) -> None:
    """``value`` as canonical JSON on stdout. Every string in it (a path from
    history, a --paths pattern, a message quoting one) is shown with U+FFFD for
    what is not UTF-8, rather than failing to print at all."""
    try:
        data = canonical.dumps(value)
    except UnicodeEncodeError:
        data = canonical.dumps(_shown_json(value))
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def message(text: str) -> str:
    """A message that may run over several lines (over_budget's cost table) as
    printable lines: the first as it is, each further one indented, so text
    quoted in it (a path with a newline) can never start a line of its own
    that looks like another report."""
    first, *rest = text.split("\n")
    indented = (line if line.startswith(" ") else f"  {line}" for line in rest)
    return "\n".join([printable(first), *map(printable, indented)])


def out(line: str = "") -> None:
    """One human-readable line on stdout, made printable."""
    sys.stdout.write(printable(line) + "\n")


def err(line: str) -> None:
    """One human-readable line on stderr, made printable, flushed."""
    sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()


def warn(line: str) -> None:
    err(line)
