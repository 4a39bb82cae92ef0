"""Mapping command-line paths to repository-relative POSIX paths, and the
one check every writer makes of the folders on the way to a file."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

from governance.errors import PATH_OUTSIDE_REPOSITORY, PATH_THROUGH_LINK, UsageError

if TYPE_CHECKING:
    # Only for the annotation: the writers that import this module (records,
    # via audit's --help) need not load pygit2.
    import pygit2


def repo_relative(repo: pygit2.Repository, given: str) -> str:
    """``given`` as typed (relative to the cwd) -> its path in the repository,
    so the same capsule comes out from the root or from a subfolder."""
    if repo.workdir is None:
        # Bare repository: paths are already repository-relative.
        return given.replace(os.sep, "/")
    # Resolve the repository root only: a symlink inside the path must reach
    # the tree walk, which refuses it (the cwd is already a physical path).
    absolute = os.path.abspath(given)
    relative = os.path.relpath(absolute, os.path.realpath(repo.workdir))
    if relative.split(os.sep)[0] == os.pardir:
        relative = os.path.relpath(absolute, os.path.abspath(repo.workdir))
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise UsageError(
            f"{given}: outside the repository at {repo.workdir}", code=PATH_OUTSIDE_REPOSITORY
        )
    return relative.replace(os.sep, "/")


def _in_repository(folder: str, roots: Sequence[str], seen: dict[str, bool]) -> bool:
    """Whether ``folder`` lies in a repository: where it physically is, it or
    a folder above it holds ``.git`` (the top of a work tree), or it is one
    of ``roots`` (real paths: a git dir, a work tree) or below one."""
    here = os.path.realpath(folder or os.curdir)
    if here in seen:
        return seen[here]
    walked = []
    found = False
    while True:
        if here in seen:
            found = seen[here]
            break
        walked.append(here)
        if any(here == root or here.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
            found = True
            break
        if os.path.lexists(os.path.join(here, ".git")):
            found = True
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for folder_seen in walked:
        seen[folder_seen] = found
    return found


def linked_folder(path: str, *, base: str | None = None, roots: Sequence[str] = ()) -> str | None:
    """The first folder on the way to the file ``path`` that is a symbolic
    link inside a repository, as ``path`` writes it (relative to ``base``, or
    to the cwd, when it is not absolute); None when there is none.

    Each folder is looked at as written, so ``..`` means what it will mean
    to the write. A link counts once the folder that holds it lies in a
    repository (see ``_in_repository``): a link above a work tree (a system's
    ``/home`` -> ``/var/home``) is the user's own, one a repository can commit
    (``packets/`` -> anywhere) is not followed."""
    real_roots = [os.path.realpath(root) for root in roots]
    seen: dict[str, bool] = {}
    folders = path.split("/")[:-1]
    written = "/" if path.startswith("/") else ""
    inside = False
    for part in folders:
        if not part:
            continue
        on_disk = os.path.join(base, written) if base is not None else written
        inside = inside or _in_repository(on_disk, real_roots, seen)
        written = os.path.join(written, part)
        try:
            mode = os.lstat(os.path.join(base, written) if base is not None else written).st_mode
        except OSError:
            return None  # not there (yet): nothing on the way is a link so far
        if stat.S_ISLNK(mode) and inside:
            return written
    return None


def refuse_linked_folders(path: str, *, base: str | None = None, roots: Sequence[str] = ()) -> None:
    """``path_through_link`` (exit 2) when a folder on the way to the file
    ``path`` is a symbolic link inside a repository (``linked_folder``):
    nothing is ever written through one. Every writer calls it before it
    creates a folder or a file."""
    found = linked_folder(path, base=base, roots=roots)
    if found is not None:
        raise UsageError(
            f"{path}: {found} is a symbolic link inside the repository; nothing is written "
            "through a link (write to the folder it points at by that folder's own path)",
            code=PATH_THROUGH_LINK,
            path=path,
            link=found,
        )
