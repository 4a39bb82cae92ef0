"""Writing results: atomic files, clean stdout, and every human-readable line
made printable. The one place the commands' output goes through; library code
returns values and never writes to a terminal."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import unicodedata
from typing import Any

from governance.core.paths import refuse_linked_folders
from governance.errors import OUTPUT_FAILED, OUTPUT_NOT_FILE, UsageError


def _not_a_file(path: str) -> UsageError | None:
    """Why ``path`` may not be replaced: anything but a regular file or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return UsageError(f"{path}: cannot write: {exc.strerror}", code=OUTPUT_FAILED)
    if stat.S_ISREG(mode):
        return None
    kinds = [
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return UsageError(
        f"{path}: is {kind}; only a regular file (or nothing) is ever replaced, and it is "
        "left untouched",
        code=OUTPUT_NOT_FILE,
        path=path,
    )


def _temp_folder(folder: str) -> str:
    """Where the temp file of a write into ``folder`` goes: inside a git work
    tree, that repository's git dir (``git add -A`` never stages it, even when
    the writer is killed before it can clean up), if it is on the same file
    system (a rename cannot cross one); else ``folder`` itself."""
    try:
        import pygit2  # noqa: PLC0415 (defers pygit2)

        # Bytes: a str path pygit2 would encode by the locale, not the file system.
        git_dir = pygit2.discover_repository(os.fsencode(folder))  # type: ignore[arg-type]
    except (ImportError, pygit2.GitError, OSError, ValueError):
        git_dir = None
    if git_dir:
        git_dir = os.fsdecode(git_dir) if isinstance(git_dir, bytes) else git_dir
        try:
            if os.stat(git_dir).st_dev == os.stat(folder).st_dev:
                return git_dir
        except OSError:
            pass
    return folder


def write_atomic(path: str, data: bytes, *, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` through a temp file and a rename: readers see
    the old file or the new one, never a partial one. ``mode`` is filtered by
    the umask, as ``open`` would. Only a regular file (or nothing) at ``path``
    is ever replaced: a link, a folder, a FIFO or a device is refused
    (``output_not_file``) and left as it is; a folder on the way that is a
    symbolic link inside a repository is refused too (``path_through_link``)."""
    # Imported here: every command loads this module, few write a file (tempfile
    # pulls in random and shutil, about 3 ms).
    import tempfile  # noqa: PLC0415 (defers tempfile)

    refuse_linked_folders(path)

    # Run as root, a rename over /dev/null replaced it for the whole machine;
    # writing into a device or a FIFO instead would follow it just the same.
    refused = _not_a_file(path)
    if refused is not None:
        raise refused
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".capsule-", suffix=".tmp", dir=_temp_folder(folder))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror}", code=OUTPUT_FAILED) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
        # Checked again just before the rename, which never follows a link.
        refused = _not_a_file(path)
        if refused is not None:
            raise refused
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"{path}: cannot write: {exc.strerror}", code=OUTPUT_FAILED) from None
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


def shown_json(value: Any) -> Any:
    """``value`` with every string in it ``shown``."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(key): shown_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shown_json(item) for item in value]
    return value


def print_json(value: Any) -> None:
    """``value`` as canonical JSON on stdout. Every string in it (a path from
    history, a --paths pattern, a message quoting one) is shown with U+FFFD for
    what is not UTF-8, rather than failing to print at all."""
    # Imported here: a --help or a plain-text command never pays for json.
    from governance.core import canonical  # noqa: PLC0415 (defers json)

    try:
        data = canonical.dumps(value)
    except UnicodeEncodeError:
        data = canonical.dumps(shown_json(value))
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
