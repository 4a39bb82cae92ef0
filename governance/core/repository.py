"""A repository opened, a commit pinned and a blob read, from git's object
database alone: what every snapshot (core.snapshot) and every command that
names a commit share.

A commit is named exactly (HEAD, a full id, a unique hex prefix): branches,
tags and rev expressions move, and a capsule must name a snapshot. A tree or
blob the object database lacks (a partial clone) is ``object_missing``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pygit2

from governance.errors import (
    INVALID_REVISION,
    NOT_A_REPOSITORY,
    OBJECT_MISSING,
    SourceError,
    UsageError,
)

# A prefix of a SHA-1 id (4 to 40 hex) or a full SHA-256 id (64 hex).
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,40}|[0-9a-fA-F]{64}")


def open_repository(start: str | os.PathLike[str] | None = None) -> pygit2.Repository:
    where = os.fspath(start) if start is not None else os.getcwd()
    found = pygit2.discover_repository(where)
    if found is None:
        raise UsageError(f"{where}: not inside a git repository", code=NOT_A_REPOSITORY)
    return pygit2.Repository(found)


def resolve_commit(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    """``HEAD``, a full commit id or a unique hex prefix (>= 4); nothing else.

    Branches, tags and rev expressions move; a capsule must name a snapshot.
    """
    if rev == "HEAD":
        if repo.head_is_unborn:
            raise UsageError("HEAD has no commits yet", code=INVALID_REVISION, revision=rev)
        head = repo.head.peel(pygit2.Commit)
        assert isinstance(head, pygit2.Commit)
        return head
    if not _HEX_PREFIX.fullmatch(rev):
        raise UsageError(
            f"{rev!r}: use HEAD, a full commit id or a unique hex prefix of at least 4 "
            "characters (branch names, tags and rev expressions are refused)",
            code=INVALID_REVISION,
            revision=rev,
        )
    try:
        obj = repo.get(rev.lower())
    except pygit2.InvalidError:
        # A full id of the other object format (64 hex in a SHA-1 repository): no
        # object here can have it. (An ambiguous prefix is another ValueError.)
        obj = None
    except ValueError as exc:
        raise UsageError(
            f"{rev!r}: ambiguous commit prefix ({exc})", code=INVALID_REVISION, revision=rev
        ) from None
    except (KeyError, pygit2.GitError):
        obj = None
    if obj is None:
        raise UsageError(f"{rev!r}: no such commit", code=INVALID_REVISION, revision=rev)
    if not isinstance(obj, pygit2.Commit):
        raise UsageError(
            f"{rev!r} names a {obj.type_str}, not a commit", code=INVALID_REVISION, revision=rev
        )
    return obj


def commit_tree(commit: pygit2.Commit) -> pygit2.Tree:
    """``commit``'s tree, or SourceError ``object_missing`` when the object
    database lacks it (a treeless clone, ``--filter=tree:0``), as for a blob."""
    try:
        return commit.tree
    except (KeyError, pygit2.GitError):
        raise SourceError(
            f"the tree of commit {str(commit.id)[:12]} is not in this repository (a partial "
            "clone? clone without --filter)",
            code=OBJECT_MISSING,
            commit=str(commit.id),
        ) from None


@dataclass(frozen=True)
class Source:
    """A tracked regular blob at a path of the snapshot."""

    path: str
    blob_id: str
    mode: int


def commit_where(commit_id: str) -> str:
    """How messages name the commit a blob was read at."""
    return f"at commit {commit_id[:12]}"


def object_missing(source: Source, where: str) -> SourceError:
    """The tree names the blob but the object database does not hold it: a
    partial (blobless) clone, which pygit2 cannot fill in on demand."""
    return SourceError(
        f"{source.path}: blob {source.blob_id[:12]} {where} is not in "
        "this repository (a partial clone? clone without --filter)",
        code=OBJECT_MISSING,
        locator=source.path,
    )


def read_blob(repo: pygit2.Repository, source: Source, where: str) -> bytes:
    """The blob's bytes, read straight from the object database (no object is
    made of them, and they are not copied again); ``where`` words a failure."""
    try:
        kind, data = repo.odb.read(pygit2.Oid(hex=source.blob_id))
    except KeyError:
        raise object_missing(source, where) from None
    if kind != pygit2.enums.ObjectType.BLOB:
        raise pygit2.GitError(f"{source.path}: object {source.blob_id[:12]} {where} is not a blob")
    return bytes(data)
