"""The history walk: every version of every record a range of commits introduces.

History is walked oldest first with pygit2. At each commit only what differs
from its parents is looked at: a folder whose tree id a parent also has holds
nothing new, so it is skipped whole. Nothing is kept per commit, so memory
follows the number of record versions found, not the length of history. Git
objects only: no checkout, no working tree, no filters, no hooks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pygit2

from governance.core.snapshot import MODE_TREE
from governance.errors import OBJECT_MISSING, SourceError
from governance.history.globs import PathGlobs, State
from governance.history.ranges import Range


def limit_git_memory() -> None:
    """Keep libgit2's process-wide memory flat over a walk through all of history.

    Its cache of parsed objects keeps every commit and tree a walk parses (up to
    256 MiB by default), and it maps pack files in windows of up to 1 GiB that
    stay mapped: both grow with the length of history. An audit never comes back
    to an old commit, and what a replay reads is cached by blob id in our own
    bounded cache, so the object cache is turned off and pack windows are small
    and few (the least recently used are unmapped).
    """
    pygit2.settings.enable_caching(False)
    pygit2.settings.mwindow_size = 1 << 20
    pygit2.settings.mwindow_mapped_limit = 8 << 20


@dataclass(frozen=True)
class Version:
    """One version of a record: a blob at a path, and the commit that introduced it."""

    path: str
    blob_id: str
    mode: int
    introduced: str


@dataclass
class Found:
    versions: list[Version] = field(default_factory=list)
    commits: int = 0


def _lookup(tree: pygit2.Tree | None, name: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        # Interned: pygit2 (1.21) keeps a reference to every key it is given, and
        # entry names are fresh strings; without this the walk would grow by a
        # string per lookup, for the whole history.
        return tree[sys.intern(name)]
    except KeyError:
        return None


def _candidates(
    globs: PathGlobs, tree: pygit2.Tree, parents: Sequence[pygit2.Tree | None], state: State
) -> Iterator[tuple[pygit2.Object, list[pygit2.Object | None]]]:
    """Each entry of ``tree`` that may lead to a match, with the entries of the same
    name in the parents (None where a parent has none)."""
    names = globs.literals(state)
    if names is not None:
        # Only literal names can match here: look them up, never list the folder.
        for name in sorted(names):
            entry = _lookup(tree, name)
            if entry is not None:
                yield entry, [_lookup(parent, name) for parent in parents]
        return
    # A wildcard: list the folder, and each parent's once (listing is cheap; a
    # lookup per entry per parent is not).
    olds = [{e.name: e for e in parent} if parent is not None else {} for parent in parents]
    for entry in tree:
        yield entry, [old.get(entry.name) for old in olds]


def _new_matches(
    globs: PathGlobs,
    tree: pygit2.Tree,
    parents: Sequence[pygit2.Tree | None],
    state: State,
    prefix: str,
) -> Iterator[tuple[str, pygit2.Object]]:
    """Matching entries below ``tree`` that no parent has at the same path with the
    same id (so they are new in this commit)."""
    for entry, olds in _candidates(globs, tree, parents, state):
        # Same id as in a parent: nothing below it is new. Checked before the glob,
        # which is the dearer test, since most entries are unchanged.
        if any(old is not None and old.id == entry.id for old in olds):
            continue
        assert entry.name is not None
        after = globs.step(state, entry.name)
        if not after:
            continue
        path = f"{prefix}{entry.name}"
        if entry.filemode == MODE_TREE:
            if globs.descends(after):
                assert isinstance(entry, pygit2.Tree)
                below = [old if isinstance(old, pygit2.Tree) else None for old in olds]
                yield from _new_matches(globs, entry, below, after, f"{path}/")
        elif globs.matches(after):
            yield path, entry


def _parents(repo: pygit2.Repository, commit: pygit2.Commit) -> list[pygit2.Tree | None]:
    trees: list[pygit2.Tree | None] = []
    for parent_id in commit.parent_ids:
        # The parent of a shallow clone's boundary commit is not here: compare with nothing.
        parent = repo.get(parent_id)
        trees.append(parent.tree if isinstance(parent, pygit2.Commit) else None)
    return trees


def _partial_clone_filter(repo: pygit2.Repository) -> str | None:
    """The object filter of a partial clone (``tree:0``, ``blob:none``...), ``""``
    when it is one whose filter is not named, None when it is a full clone."""
    partial, named = False, ""
    for entry in repo.config:
        name = entry.name.lower()
        if name == "extensions.partialclone":
            partial = True
        elif name.startswith("remote.") and name.endswith(".promisor"):
            partial = partial or str(entry.value).lower() in ("true", "yes", "on", "1")
        elif name.startswith("remote.") and name.endswith(".partialclonefilter"):
            named = str(entry.value)
    return named if partial or named else None


def _walk_failed(repo: pygit2.Repository, commit: pygit2.Commit, exc: pygit2.GitError) -> Exception:
    """What to raise when git fails to read the trees of ``commit``: in a partial
    clone whose trees were filtered out (``--filter=tree:0``), ``object_missing``,
    since pygit2 cannot fetch them; anything else is git's own error."""
    how = _partial_clone_filter(repo)
    if how is None:
        return exc
    return SourceError(
        f"commit {str(commit.id)[:12]}: {exc}: this is a partial clone"
        f"{f' (--filter={how})' if how else ''}, whose missing objects pygit2 cannot "
        "fetch, and the audit walks every tree of the range: clone without --filter",
        code=OBJECT_MISSING,
        commit=str(commit.id),
    )


def find_records(repo: pygit2.Repository, where: Range, globs: PathGlobs) -> Found:
    """Every record version the commits of ``where`` introduce, oldest first.

    A version is introduced by a commit whose tree has that blob at that path
    while none of its parents does. The first commit (in topological order,
    parents first) to introduce a version is the one reported.
    """
    found = Found()
    if where.tip is None:
        return found
    seen: set[tuple[str, str]] = set()
    walker = repo.walk(
        pygit2.Oid(hex=where.tip),
        pygit2.enums.SortMode.TOPOLOGICAL
        | pygit2.enums.SortMode.TIME
        | pygit2.enums.SortMode.REVERSE,
    )
    if where.hidden is not None:
        walker.hide(pygit2.Oid(hex=where.hidden))
    for commit in walker:
        found.commits += 1
        try:
            tree = commit.tree
            parents = _parents(repo, commit)
            if any(parent is not None and parent.id == tree.id for parent in parents):
                continue
            matches = list(_new_matches(globs, tree, parents, globs.start, ""))
        except pygit2.GitError as exc:
            raise _walk_failed(repo, commit, exc) from None
        for path, entry in matches:
            key = (path, str(entry.id))
            if key in seen:
                continue
            seen.add(key)
            found.versions.append(Version(path, str(entry.id), entry.filemode, str(commit.id)))
    return found
