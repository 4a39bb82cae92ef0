"""Mapping command-line paths to repository-relative POSIX paths."""

from __future__ import annotations

import os

import pygit2

from governance.errors import UsageError


def repo_relative(repo: pygit2.Repository, given: str) -> str:
    """``given`` as typed (relative to the cwd) -> its path in the repository,
    so the same capsule comes out from the root or from a subfolder."""
    if repo.workdir is None:
        # Bare repository: paths are already repository-relative.
        return given.replace(os.sep, "/")
    root = os.path.realpath(repo.workdir)
    absolute = os.path.abspath(given)
    # Resolve the folders but not the file itself: a symlinked packet must
    # still be seen (and refused) as a symlink in the commit.
    parent = os.path.realpath(os.path.dirname(absolute))
    relative = os.path.relpath(os.path.join(parent, os.path.basename(absolute)), root)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise UsageError(
            f"{given}: outside the repository at {root}", code="path_outside_repository"
        )
    return relative.replace(os.sep, "/")
