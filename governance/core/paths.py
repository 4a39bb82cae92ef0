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
    # Resolve the repository root only: a symlink inside the path must reach
    # the tree walk, which refuses it (the cwd is already a physical path).
    absolute = os.path.abspath(given)
    relative = os.path.relpath(absolute, os.path.realpath(repo.workdir))
    if relative.split(os.sep)[0] == os.pardir:
        relative = os.path.relpath(absolute, os.path.abspath(repo.workdir))
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise UsageError(
            f"{given}: outside the repository at {repo.workdir}", code="path_outside_repository"
        )
    return relative.replace(os.sep, "/")
