"""Every read of a source goes through here: a commit's tree (or the index)
read by path with the fail-closed source rules, each blob's bytes once.

Bytes are raw blob bytes from the object database: no checkout, no
smudge/clean/textconv filters, no hooks. The working tree is only ever read to
compare it with the commit. Opening the repository and naming the commit
exactly are core.repository's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pygit2

from governance.core import trees
from governance.core.cache import BlobCache
from governance.core.locator import check_path
from governance.core.repository import (
    Source,
    commit_tree,
    commit_where,
    object_missing,
    read_blob,
    resolve_commit,
)
from governance.core.trees import Entries, entry_mode, read_entries
from governance.errors import (
    OBJECT_MISSING,
    SOURCE_DIRTY,
    SOURCE_MISSING,
    SOURCE_NOT_FILE,
    SOURCE_SUBMODULE,
    SOURCE_SYMLINK,
    SOURCE_UNTRACKED,
    SourceError,
)

T = TypeVar("T")

# The file modes of git's tree format (core.trees), for every reader of a snapshot.
MODE_FILE = trees.MODE_FILE
MODE_EXEC = trees.MODE_EXEC
MODE_LINK = trees.MODE_LINK
MODE_GITLINK = trees.MODE_GITLINK
MODE_TREE = trees.MODE_TREE


# The working tree's bytes are compared with a blob's this much at a time.
_CHUNK = 1 << 20


@dataclass
class Snapshot:
    """A tree to read from. ``workdir`` set means: every source read must equal
    the working tree's bytes (building at HEAD in a work tree). ``label`` names
    a tree that is not a commit's (the index) in messages. ``cache`` set
    means: blob bytes and whatever is computed from them alone are shared with
    every other snapshot using that cache (replay, audit)."""

    repo: pygit2.Repository
    tree: pygit2.Tree
    commit_id: str
    workdir: Path | None = None
    label: str | None = None
    cache: BlobCache | None = field(default=None, repr=False)
    _clean: set[tuple[str, str, int]] = field(default_factory=set, repr=False)
    _index: dict[str, tuple[str, int]] | None = field(default=None, repr=False)
    # Each folder walked to a source, by path ("" is the top): its entries.
    _folders: dict[str, Entries] = field(default_factory=dict, repr=False)

    def _cache(self) -> BlobCache:
        if self.cache is None:
            self.cache = BlobCache()
        return self.cache

    @property
    def where(self) -> str:
        return self.label if self.label is not None else commit_where(self.commit_id)

    @classmethod
    def at(
        cls, repo: pygit2.Repository, rev: str = "HEAD", *, check_worktree: bool | None = None
    ) -> Snapshot:
        commit = resolve_commit(repo, rev)
        if check_worktree is None:
            check_worktree = rev == "HEAD"
        workdir = Path(repo.workdir) if check_worktree and repo.workdir else None
        return cls(repo=repo, tree=commit_tree(commit), commit_id=str(commit.id), workdir=workdir)

    def source(self, path: str, *, locator: str | None = None) -> Source:
        """Resolve ``path`` to a regular tracked blob, or fail closed.

        The tree objects on the way are read from their bytes (``core.trees``)
        and looked up there: pygit2 would keep every name it is asked for
        alive for good, and a history names as many as it likes. Names are
        bytes as git stores them; a path's text maps back to them as pygit2's
        own lookups do (UTF-8, surrogate escapes for bytes that are not)."""
        shown = locator if locator is not None else path
        check_path(path, locator=shown)
        folder, _, name = path.rpartition("/")
        entries = self._folders.get(folder)
        if entries is None:
            entries = self._folder(path, folder, shown)
        entry = entries.get(name.encode("utf-8", "surrogateescape"))
        if entry is None:
            raise self._absent(path, shown)
        mode = entry_mode(entry)
        if mode in (MODE_FILE, MODE_EXEC):
            return Source(path=path, blob_id=entry[-self._id_size :].hex(), mode=mode)
        self._refuse(path, path, mode, shown)
        raise SourceError(
            f"{shown}: {path} is not a regular file {self.where}",
            code=SOURCE_NOT_FILE,
            locator=shown,
        )

    @property
    def _id_size(self) -> int:
        return len(self.tree.id.raw)

    def _folder(self, path: str, folder: str, shown: str) -> Entries:
        """The entries of ``folder`` on the way to ``path``, walked from the
        deepest folder already walked and kept with every folder passed;
        ``path``'s refusal where an entry on the way is no folder."""
        parts = folder.split("/") if folder else []
        start = len(parts)
        while start and "/".join(parts[:start]) not in self._folders:
            start -= 1
        walked = "/".join(parts[:start])
        if start:
            entries = self._folders[walked]
        else:
            entries = self._tree_entries(self.tree.id.raw, path, shown)
            self._folders[""] = entries
        for depth in range(start, len(parts)):
            walked = "/".join(parts[: depth + 1])
            entry = entries.get(parts[depth].encode("utf-8", "surrogateescape"))
            if entry is None:
                raise self._absent(path, shown)
            mode = entry_mode(entry)
            self._refuse(path, walked, mode, shown)
            if mode != MODE_TREE:
                raise self._absent(path, shown)
            entries = self._folders[walked] = self._tree_entries(
                entry[-self._id_size :], path, shown
            )
        return entries

    def _tree_entries(self, tree_id: bytes, path: str, shown: str) -> Entries:
        """A tree's entries, parsed once while the process's memo of trees
        holds them (a folder recurs in every commit that leaves it alone, and
        the walk of an audit has read most of them); ``object_missing`` when
        the object database lacks it (a partial clone)."""
        try:
            found, _ = read_entries(self.repo, tree_id)
        except KeyError:
            raise SourceError(
                f"{shown}: a tree on the way to {path} {self.where} is not in this "
                "repository (a partial clone? clone without --filter)",
                code=OBJECT_MISSING,
                locator=shown,
            ) from None
        return found

    def _refuse(self, path: str, walked: str, mode: int, shown: str) -> None:
        """Fail closed where the entry at ``walked`` is a link or a submodule."""
        if mode == MODE_LINK:
            raise SourceError(
                f"{shown}: {walked} is a symbolic link {self.where}; capsules never follow links",
                code=SOURCE_SYMLINK,
                locator=shown,
            )
        if mode == MODE_GITLINK:
            raise SourceError(
                f"{shown}: {walked} is a submodule (gitlink); its contents are not in this "
                "repository",
                code=SOURCE_SUBMODULE,
                locator=shown,
            )

    def _absent(self, path: str, shown: str) -> SourceError:
        if self.workdir is not None and os.path.lexists(self.workdir / path):
            return SourceError(
                f"{shown}: {path} exists in the working tree but is not committed; "
                "commit it before building",
                code=SOURCE_UNTRACKED,
                locator=shown,
            )
        return SourceError(
            f"{shown}: {path} does not exist {self.where}",
            code=SOURCE_MISSING,
            locator=shown,
        )

    def size(self, source: Source) -> int:
        """The blob's size from the object header, without inflating it where
        possible; once per blob id for every snapshot sharing the cache (a size
        is a function of the id alone)."""
        cache = self._cache()
        size = cache.sizes.get(source.blob_id)
        if size is None:
            try:
                _, size = self.repo.odb.read_header(pygit2.Oid(hex=source.blob_id))
            except KeyError:
                raise self._object_missing(source) from None
            cache.remember_size(source.blob_id, size)
        return size

    def blob_bytes(self, source: Source) -> bytes:
        """The blob's bytes, read straight from the object database (no
        object is made of them, and they are not copied again)."""
        return read_blob(self.repo, source, self.where)

    def _index_entry(self, path: str) -> tuple[str, int] | None:
        if self._index is None:
            self._index = {}
            for entry in self.repo.index:
                self._index[entry.path] = (str(entry.id), entry.mode)
        return self._index.get(path)

    def _object_missing(self, source: Source) -> SourceError:
        return object_missing(source, self.where)

    def check_worktree(self, source: Source, *, locator: str | None = None) -> None:
        """Fail closed when the index or the working tree differs from the blob."""
        if self.workdir is None:
            return
        key = (source.path, source.blob_id, source.mode)
        if key in self._clean:
            # Eight reads of one file compare it with the working tree once.
            return
        shown = locator if locator is not None else source.path

        def dirty(why: str, fix: str = "commit or restore it before building") -> SourceError:
            return SourceError(
                f"{shown}: {source.path} {why} (commit {self.commit_id[:12]}); {fix}",
                code=SOURCE_DIRTY,
                locator=shown,
            )

        if self._index_entry(source.path) != (source.blob_id, source.mode):
            raise dirty("is staged differently from the commit")
        parts = source.path.split("/")
        for depth in range(1, len(parts)):
            # lstat of the file alone would follow a symlinked parent folder, which
            # git sees as a type change: every folder on the way must be a folder.
            folder = "/".join(parts[:depth])
            try:
                mode = os.lstat(self.workdir / folder).st_mode
            except FileNotFoundError:
                raise dirty("is deleted in the working tree") from None
            if not stat.S_ISDIR(mode):
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
                raise dirty(f"is under {folder}, which is {kind} in the working tree")
        on_disk = self.workdir / source.path
        try:
            st = os.lstat(on_disk)
        except FileNotFoundError:
            raise dirty("is deleted in the working tree") from None
        if not stat.S_ISREG(st.st_mode) or st.st_size != self.size(source):
            raise self._differs(source, dirty)
        # Compare in chunks: a large source is never held twice.
        view = memoryview(self.read(source))
        with open(on_disk, "rb") as handle:
            offset = 0
            while chunk := handle.read(_CHUNK):
                if view[offset : offset + len(chunk)] != chunk:
                    raise self._differs(source, dirty)
                offset += len(chunk)
        if offset != len(view):
            raise self._differs(source, dirty)
        self._clean.add(key)

    def _differs(self, source: Source, dirty: Callable[..., SourceError]) -> SourceError:
        try:
            clean_to_git = self.repo.status_file(source.path) == 0
        except (KeyError, pygit2.GitError):
            clean_to_git = False
        if clean_to_git:
            # git sees no change because a checkout filter or line-ending
            # conversion rewrote the bytes; capsules hold raw blob bytes.
            return dirty(
                "differs from its blob only through checkout filters or line-ending "
                "conversion (.gitattributes, core.autocrlf)",
                "build with --at <commit id> to use the committed bytes, or turn the "
                "conversion off for this path",
            )
        return dirty("differs in the working tree")

    def read(self, source: Source) -> bytes:
        return self._cache().get(
            ("bytes", source.blob_id), lambda: self.blob_bytes(source), weight=len
        )

    def memo(
        self,
        kind: str,
        source: Source,
        compute: Callable[[], T],
        *,
        weight: Callable[[T], int] | None = None,
    ) -> T:
        """``compute()``, a pure function of ``source``'s bytes that ``kind`` names,
        once per blob id while it stays cached. ``weight`` sizes the result
        (default: the blob's size)."""
        sized = weight if weight is not None else (lambda _: self.size(source))
        return self._cache().get((kind, source.blob_id), compute, weight=sized)
