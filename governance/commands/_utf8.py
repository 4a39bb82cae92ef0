"""One encoding for paths on every machine: a command started under a locale
that is not UTF-8 runs again in Python's UTF-8 mode before it does anything.

git stores paths as bytes, and a packet names them in UTF-8. Python decodes
file names and pygit2 encodes the ``str`` paths it is handed with the file
system encoding, which follows the locale: under ``LC_ALL=C`` with UTF-8 mode
and locale coercion off it is ASCII (pygit2 refuses ``docs/ré.md``), under
ISO-8859-1 it is Latin-1 (``docs/ré.md`` becomes other bytes and is not
found). In UTF-8 mode both are UTF-8, so a build gives the same bytes under
every locale. Human-readable output keeps the locale's encoding, with
characters it cannot encode written as escapes (``PYTHONIOENCODING``), so
nothing crashes printing a line; ``--json`` and capsules are written as UTF-8
bytes whatever the locale.
"""

from __future__ import annotations

import codecs
import locale
import os
import sys

# Set in the environment of the re-run, so it happens once.
_MARK = "_GIT_CAPSULE_UTF8_MODE"


def _is_utf8(name: str) -> bool:
    try:
        return codecs.lookup(name).name == "utf-8"
    except LookupError:
        return False


def ensure_utf8_mode() -> None:
    """Re-run the current command (``sys.orig_argv``) in UTF-8 mode when the
    file system encoding is not UTF-8. Only command entry points call this,
    never library code: it replaces the process."""
    if sys.flags.utf8_mode or _is_utf8(sys.getfilesystemencoding()) or os.environ.get(_MARK):
        return
    env = dict(os.environ)
    env[_MARK] = "1"
    env["PYTHONUTF8"] = "1"
    if "PYTHONIOENCODING" not in env:
        env["PYTHONIOENCODING"] = f"{locale.getpreferredencoding(False)}:backslashreplace"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
