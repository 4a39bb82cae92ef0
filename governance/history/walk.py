"""The history walk: every version of every record a range of commits introduces.

History is walked oldest first with pygit2. At each commit only what differs
from its parents is looked at: a folder whose tree id a parent also has holds
nothing new, so it is skipped whole, and of a folder that changed only the
bytes it does not share with the first parent's are parsed. Trees are read
as raw bytes (``core.trees``), and what is kept of them and of the commits
passed is bounded, so memory follows the number of record versions found,
not the length of history. Git objects only: no checkout, no working tree,
no filters, no hooks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import pygit2

from governance.core.globs import PathGlobs, State
from governance.core.snapshot import MODE_TREE
from governance.core.trees import Entries, Trees, entry_mode, mode_and_id
from governance.errors import OBJECT_MISSING, SourceError
from governance.history.ranges import Range

# libgit2's cache of commits and trees (each at most 4 KiB; blobs are never
# kept), for the whole process.
GIT_CACHE_BYTES = 16 << 20


def limit_git_memory() -> None:
    """Keep libgit2's process-wide memory flat over a walk through all of history.

    Its cache of objects keeps every commit and tree read (up to 256 MiB by
    default), and it maps pack files in windows of up to 1 GiB that stay
    mapped: both would grow with the length of history. The cache is kept, as
    it spares the second read of each commit the walk yields and of the trees a
    replay reads at a commit just walked, but bounded (``GIT_CACHE_BYTES``;
    libgit2 evicts entries once it is full); pack windows are small and few (the
    least recently used are unmapped).
    """
    pygit2.settings.enable_caching(True)
    pygit2.settings.cache_max_size(GIT_CACHE_BYTES)
    pygit2.settings.mwindow_size = 1 << 20
    pygit2.settings.mwindow_mapped_limit = 8 << 20


@dataclass(frozen=True)
class Version:
    """One version of a record: a blob at a path, and the commit that introduced it."""

    path: str
    blob_id: str
    mode: int
    introduced: str


class _Move(NamedTuple):
    """Entering a named entry in a glob state: the state after it, the name
    as text, and whether a folder there may hold matches below it, or a file
    there matches."""

    after: State
    name: str
    descends: bool
    matches: bool


@dataclass
class Found:
    versions: list[Version] = field(default_factory=list)
    commits: int = 0


class _Walk:
    """What one walk keeps: the trees it has parsed and the tree of each
    commit it has passed, both bounded (so memory stays flat over history)."""

    # A parent is almost always a commit walked just before its child.
    MAX_COMMITS = 4096
    # Folder and file names met on the way to records, with where each leads;
    # only names a file system could hold (255 bytes) are kept, since a git
    # name may be 64 KiB and 65,536 of those would be gigabytes.
    MAX_STEPS = 1 << 16
    MAX_STEP_NAME = 255

    def __init__(self, repo: pygit2.Repository, globs: PathGlobs, id_size: int) -> None:
        self.repo = repo
        self.globs = globs
        self.trees = Trees(repo, id_size)
        self._commit_trees: OrderedDict[bytes, bytes] = OrderedDict()
        self._literal_names: dict[State, list[bytes] | None] = {}
        self._moves: dict[tuple[State, bytes], _Move] = {}
        self._ends: dict[State, tuple[bool, bool]] = {}

    def _literals(self, state: State) -> list[bytes] | None:
        # The same few states come back at every commit.
        if state not in self._literal_names:
            names = self.globs.literals(state)
            self._literal_names[state] = (
                None
                if names is None
                else [name.encode("utf-8", "surrogateescape") for name in sorted(names)]
            )
        return self._literal_names[state]

    def _move(self, state: State, name: bytes) -> _Move:
        """Where entering an entry called ``name`` in ``state`` leads."""
        key = (state, name)
        move = self._moves.get(key)
        if move is None:
            text = name.decode("utf-8", "surrogateescape")
            after = self.globs.step(state, text)
            ends = self._ends.get(after)
            if ends is None:
                # Whether a state descends or matches: a few states, met by
                # every name not met before (most names of records).
                ends = (
                    bool(after) and self.globs.descends(after),
                    bool(after) and self.globs.matches(after),
                )
                if len(self._ends) < self.MAX_STEPS:
                    self._ends[after] = ends
            move = _Move(after, text, *ends)
            if len(self._moves) < self.MAX_STEPS and len(name) <= self.MAX_STEP_NAME:
                self._moves[key] = move
        return move

    def saw(self, commit: bytes, tree: bytes) -> None:
        """Remember the (raw) tree of a (raw) commit walked, for its children."""
        self._commit_trees[commit] = tree
        if len(self._commit_trees) > self.MAX_COMMITS:
            self._commit_trees.popitem(last=False)

    def parent_trees(self, commit: pygit2.Commit) -> list[bytes | None]:
        trees: list[bytes | None] = []
        for parent_id in commit.parent_ids:
            tree = self._commit_trees.get(parent_id.raw)
            if tree is None:
                # The parent of a shallow clone's boundary commit is not here:
                # compare with nothing.
                parent = self.repo.get(parent_id)
                tree = parent.tree_id.raw if isinstance(parent, pygit2.Commit) else None
            trees.append(tree)
        return trees

    def new_matches(
        self,
        tree: bytes,
        parents: Sequence[bytes | None],
        state: State,
        prefix: str,
        found: list[tuple[str, int, bytes]],
    ) -> None:
        """Add to ``found`` (path, mode, raw id) of each matching entry below
        ``tree`` that no parent has at the same path with the same id (so it
        is new here), in the tree's order. Folders are entered from a stack,
        not by recursion: a tree may nest deeper than Python's recursion limit."""
        size = self.trees.id_size
        stack = [self._folder(tree, parents, state, prefix)]
        while stack:
            candidates, olds, only, state, prefix = stack[-1]
            for name, entry in candidates:
                oid = entry[-size:]
                # Same id as in a parent (whatever the mode): nothing below it is new.
                # Checked before the glob, which is the dearer test.
                if only is not None:
                    if only.get(name, b"")[-size:] == oid:
                        continue
                elif any(old.get(name, b"")[-size:] == oid for old in olds):
                    continue
                move = self._move(state, name)
                if not (move.descends or move.matches):
                    continue
                mode = entry_mode(entry)
                if mode == MODE_TREE:
                    if move.descends:
                        below = [self._subtree(old.get(name)) for old in olds]
                        # Everything below it first, then this folder's next entry.
                        stack.append(self._folder(oid, below, move.after, f"{prefix}{move.name}/"))
                        break
                elif move.matches:
                    found.append((f"{prefix}{move.name}", mode, oid))
            else:
                stack.pop()

    def _folder(
        self, tree: bytes, parents: Sequence[bytes | None], state: State, prefix: str
    ) -> tuple[Iterator[tuple[bytes, bytes]], list[Entries], Entries | None, State, str]:
        """The entries of ``tree`` that may hold something new (an iterator, so
        the walk resumes after a folder it entered), its parents' entries at
        the same path (and the one parent's alone), the glob state and the
        path there."""
        trees = self.trees
        olds = [trees.entries(parent) for parent in parents if parent is not None]
        wanted = self._literals(state)
        candidates: Iterable[tuple[bytes, bytes]]
        if wanted is not None:
            # Only literal names can match here: look them up, never walk the folder.
            entries = trees.entries(tree)
            candidates = [(name, entries[name]) for name in wanted if name in entries]
        elif olds:
            # The entries that differ from every parent's (most of a folder is
            # unchanged), in the tree's order: told from the first parent's
            # bytes, or found by set operations.
            entries, changed = trees.changes(tree, olds[0])
            if changed is not None:
                candidates = changed
                for old in olds[1:]:
                    candidates = [item for item in candidates if old.get(item[0]) != item[1]]
            else:
                differ = entries.items() - olds[0].items()
                for old in olds[1:]:
                    differ &= entries.items() - old.items()
                if len(differ) > 1:
                    candidates = [item for item in entries.items() if item in differ]
                else:
                    candidates = differ
        else:
            candidates = trees.entries(tree).items()
        return iter(candidates), olds, olds[0] if len(olds) == 1 else None, state, prefix

    def _subtree(self, entry: bytes | None) -> bytes | None:
        if entry is None:
            return None
        mode, oid = mode_and_id(entry, self.trees.id_size)
        return oid if mode == MODE_TREE else None


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
    walk: _Walk | None = None
    for commit in walker:
        found.commits += 1
        commit_id = commit.id.raw
        if walk is None:
            walk = _Walk(repo, globs, len(commit_id))
        try:
            tree = commit.tree_id.raw
            parents = walk.parent_trees(commit)
            walk.saw(commit_id, tree)
            if tree in parents:
                continue
            matches: list[tuple[str, int, bytes]] = []
            walk.new_matches(tree, parents, globs.start, "", matches)
        except pygit2.GitError as exc:
            raise _walk_failed(repo, commit, exc) from None
        for path, mode, oid in matches:
            key = (path, oid.hex())
            if key in seen:
                continue
            seen.add(key)
            found.versions.append(Version(path, key[1], mode, str(commit.id)))
    return found
