"""The index (the staged tree) as a Snapshot, and what is staged.

Hooks and ``capsule check --staged`` read every byte from the index, never the
working tree: under ``pre-commit run --all-files`` or ``git add -p`` the two
differ, and what gets committed is the index. Nothing is ever emitted from it:
it has no commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pygit2

from governance.core.snapshot import Snapshot
from governance.core.words import listed
from governance.errors import INDEX_CONFLICTED, INDEX_UNREADABLE, UsageError

# The index has no commit. A capsule is never emitted from it; the placeholder
# only has to be as long as a real id, so sizes and budgets come out the same.
PLACEHOLDER_COMMIT = "0" * 40
INDEX_LABEL = "in the index"


def open_index(repo: pygit2.Repository) -> pygit2.Index:
    """The index git itself would commit from.

    ``git commit -a`` and ``git commit PATH`` stage into a temporary index and
    point GIT_INDEX_FILE at it while hooks run; libgit2 does not read that
    variable, so honour it here. A relative value is relative to the top of the
    work tree, where git runs hooks.
    """
    override = os.environ.get("GIT_INDEX_FILE")
    if override:
        base = repo.workdir if repo.workdir is not None else repo.path
        path = os.path.join(base, override)
        if not os.path.isfile(path):
            raise UsageError(
                f"GIT_INDEX_FILE names {override}, which does not exist",
                code=INDEX_UNREADABLE,
                path=override,
            )
        try:
            return pygit2.Index(path)
        except pygit2.GitError as exc:
            raise UsageError(
                f"cannot read the index {override}: {exc}", code=INDEX_UNREADABLE, path=override
            ) from None
    if repo.is_bare:
        raise UsageError("a bare repository has no index to check", code=INDEX_UNREADABLE)
    try:
        index: pygit2.Index = repo.index
    except pygit2.GitError as exc:
        raise UsageError(f"cannot read the index: {exc}", code=INDEX_UNREADABLE) from None
    return index


def index_tree(repo: pygit2.Repository, index: pygit2.Index) -> pygit2.Tree:
    """The staged tree. Writes its tree objects into the object database, as
    ``git write-tree`` (and the commit that follows) would."""
    conflicts = index.conflicts
    if conflicts is not None:
        paths = sorted({e.path for entries in conflicts for e in entries if e is not None})
        raise UsageError(
            f"the index has unresolved merge conflicts ({listed(paths)}); resolve them and stage "
            "the result before checking",
            code=INDEX_CONFLICTED,
            paths=paths,
        )
    try:
        tree_id = index.write_tree(repo)
    except pygit2.GitError as exc:
        # Trees are written to the object database, as git write-tree does.
        raise UsageError(
            f"cannot write the staged tree's objects: {exc}", code=INDEX_UNREADABLE
        ) from None
    tree = repo[tree_id]
    assert isinstance(tree, pygit2.Tree)
    return tree


def staged_snapshot(repo: pygit2.Repository, tree: pygit2.Tree | None = None) -> Snapshot:
    if tree is None:
        tree = index_tree(repo, open_index(repo))
    return Snapshot(repo=repo, tree=tree, commit_id=PLACEHOLDER_COMMIT, label=INDEX_LABEL)


@dataclass(frozen=True)
class StagedChanges:
    """Paths that differ between HEAD and the index. ``deleted`` are in HEAD but
    not staged: pre-commit never passes those to a hook."""

    changed: frozenset[str]
    deleted: frozenset[str]


def staged_changes(repo: pygit2.Repository, tree: pygit2.Tree) -> StagedChanges:
    if repo.head_is_unborn:
        # The first commit: everything in the index is new.
        return StagedChanges(frozenset(_walk(tree)), frozenset())
    head = repo.head.peel(pygit2.Commit)
    assert isinstance(head, pygit2.Commit)
    changed: set[str] = set()
    deleted: set[str] = set()
    for delta in head.tree.diff_to_tree(tree).deltas:
        changed.add(delta.old_file.path)
        changed.add(delta.new_file.path)
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            deleted.add(delta.old_file.path)
    return StagedChanges(frozenset(changed), frozenset(deleted))


def _walk(tree: pygit2.Tree) -> list[str]:
    """Every path below ``tree`` that is no folder, in the tree's order. Folders
    are entered from a stack, not by recursion: a tree may nest deeper than
    Python's recursion limit."""
    out: list[str] = []
    stack: list[tuple[Iterator[pygit2.Object], str]] = [(iter(tree), "")]
    while stack:
        entries, prefix = stack[-1]
        for entry in entries:
            path = f"{prefix}{entry.name}"
            if isinstance(entry, pygit2.Tree):
                # Everything below it first, then this folder's next entry.
                stack.append((iter(entry), f"{path}/"))
                break
            out.append(path)
        else:
            stack.pop()
    return out
