"""Plain git hooks running the same checks as the pre-commit hooks, for
repositories that do not use the pre-commit framework: ``pre-commit``,
``pre-merge-commit`` for the merges git commits on its own (a merge without
conflicts never runs the pre-commit hook), and ``pre-push`` for what a push
sends (a rebase, an amend or a cherry-pick the commit hooks never saw)."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pygit2

from governance.errors import OUTPUT_NOT_FILE, UsageError
from governance.output import write_atomic

# The hooks written, one script for both.
HOOKS = ("pre-commit", "pre-merge-commit", "pre-push")

MARKER = "# git-capsule hook, written by `capsule install-hook`."
# In every hook any version of install-hook wrote, this one's included.
_OURS = b"written by `capsule install-hook`"

# Runs both hooks with no paths, so each takes what is staged. Prefers the
# interpreter that installed it; falls back to the console scripts on PATH.
# git runs hooks from the top of the work tree: -P (safe path, Python 3.11)
# keeps that folder off sys.path, so a yaml.py or pygit2.py of the repository
# being checked is never imported in place of the real library. The console
# scripts put their own folder first, never the current one.
_TEMPLATE = """\
#!/bin/sh
{marker}
# As pre-commit and pre-merge-commit, against the index (the staged tree): every
# packet a staged change affects must still build (capsule-packets), and every
# staged capsule record must replay identically (capsule-records). As pre-push,
# against what is pushed (capsule-push, reading git's lines on stdin).
# Skip once with: git commit --no-verify (git merge --no-verify, git push --no-verify)
INSTALL_PYTHON={python}
if [ -x "$INSTALL_PYTHON" ]; then
    packets() {{ "$INSTALL_PYTHON" -P -m capsule_hooks.packets; }}
    records() {{ "$INSTALL_PYTHON" -P -m capsule_hooks.records; }}
    push() {{ "$INSTALL_PYTHON" -P -m capsule_hooks.push "$@"; }}
elif command -v capsule-packets >/dev/null 2>&1; then
    packets() {{ capsule-packets; }}
    records() {{ capsule-records; }}
    push() {{ capsule-push "$@"; }}
else
    echo "capsule hook: git-capsule not found (was $INSTALL_PYTHON); install it and run" \\
        "capsule install-hook --force" >&2
    exit 1
fi
case "${{0##*/}}" in
    pre-push) push "$@"; exit $? ;;
esac
status=0
packets || status=1
records || status=1
exit $status
"""


def hook_script(python: str | None = None) -> str:
    return _TEMPLATE.format(marker=MARKER, python=shlex.quote(python or sys.executable))


def _common_dir(repo: pygit2.Repository) -> Path:
    # A linked worktree's git dir names the shared one in its ``commondir``
    # file; hooks live in the shared one.
    git_dir = Path(repo.path)
    pointer = git_dir / "commondir"
    if pointer.is_file():
        return (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def hooks_dir(repo: pygit2.Repository) -> Path:
    """Where git looks for hooks: core.hooksPath when set (relative to the top of
    the work tree, where hooks run; ``~`` expanded), else ``hooks`` in the
    repository's common git dir."""
    try:
        configured = repo.config["core.hooksPath"]
    except KeyError:
        configured = None
    if configured:
        path = Path(os.path.expanduser(str(configured)))
        if not path.is_absolute():
            path = Path(repo.workdir if repo.workdir is not None else repo.path) / path
        return path
    return _common_dir(repo) / "hooks"


def _read_regular(path: Path) -> bytes | None:
    """A regular file's bytes; None for a link, a folder or anything unreadable."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


@dataclass(frozen=True)
class Installed:
    hook: str  # "pre-commit" or "pre-merge-commit"
    path: Path
    action: str  # "installed", "unchanged" or "replaced"


def _action(target: Path, script: bytes, force: bool) -> str:
    """What installing ``script`` at ``target`` does, or UsageError ``hook_exists``."""
    if not os.path.lexists(target):
        return "installed"
    if not stat.S_ISREG(os.lstat(target).st_mode):
        # Never replaced, not even with --force: a link may be another tool's
        # hook manager, and a rename over it would silently drop it.
        raise UsageError(
            f"{target} is not a regular file (a symbolic link, a folder or a device); it is "
            "never replaced: remove it yourself if it should go",
            code=OUTPUT_NOT_FILE,
            path=str(target),
        )
    current = _read_regular(target)
    if current == script:
        # Ours, word for word; rewritten only when git would skip it.
        return "unchanged" if os.access(target, os.X_OK) else "installed"
    if force:
        return "replaced"
    ours = current is not None and _OURS in current
    what = (
        "a git-capsule hook written for another interpreter or version"
        if ours
        else "a different hook"
    )
    raise UsageError(
        f"{target} already holds {what}; keep it, or replace it with capsule install-hook --force",
        code="hook_exists",
        path=str(target),
    )


def _make_executable(target: Path) -> None:
    """u+rwx, and x wherever the umask left r: git skips a hook it cannot run,
    without a word. Verified, not assumed (a noexec mount, an odd ACL)."""
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        mode |= stat.S_IRWXU
        mode |= stat.S_IXGRP if mode & stat.S_IRGRP else 0
        mode |= stat.S_IXOTH if mode & stat.S_IROTH else 0
        target.chmod(mode)
    except OSError as exc:
        raise UsageError(
            f"{target}: cannot make the hook executable: {exc.strerror}", code="output_failed"
        ) from None
    if not os.access(target, os.X_OK):
        raise UsageError(
            f"{target}: the hook was written but cannot be executed here (a noexec file "
            "system?); git would skip it",
            code="hook_not_executable",
            path=str(target),
        )


def install_hook(repo: pygit2.Repository, *, force: bool = False) -> list[Installed]:
    """Write every hook of HOOKS, or none: a different hook already in place is
    refused (``hook_exists``) before anything is written, unless ``force``."""
    folder = hooks_dir(repo)
    script = hook_script().encode("utf-8")
    plan = [Installed(name, folder / name, _action(folder / name, script, force)) for name in HOOKS]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{folder}: cannot create the hooks folder: {exc.strerror}", code="output_failed"
        ) from None
    for hook in plan:
        if hook.action != "unchanged":
            write_atomic(str(hook.path), script, mode=0o777)
            _make_executable(hook.path)
    return plan
