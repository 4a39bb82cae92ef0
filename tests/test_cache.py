from __future__ import annotations

import functools
from pathlib import Path

import pygit2
import pytest

from governance.core.cache import MAX_SIZES, BlobCache
from governance.core.snapshot import Snapshot
from governance.errors import SourceError
from support.gitrepo import Repo


def test_values_are_computed_once_per_key() -> None:
    cache = BlobCache()
    calls: list[str] = []

    def compute(key: str) -> str:
        calls.append(key)
        return key.upper()

    for key in ["a", "b", "a", "a", "b"]:
        assert cache.get(key, functools.partial(compute, key), weight=len) == key.upper()
    assert calls == ["a", "b"]


def test_weight_is_bounded_and_least_recently_used_goes_first() -> None:
    cache = BlobCache(max_weight=3 * (1000 + 128))
    for key in "abc":
        cache.get(key, lambda: b"x" * 1000, weight=len)
    cache.get("a", lambda: b"", weight=len)  # touch a: b is now the oldest
    cache.get("d", lambda: b"x" * 1000, weight=len)
    assert len(cache) == 3
    assert cache.weight <= cache.max_weight
    recomputed: list[str] = []
    for key in "acd":
        cache.get(key, functools.partial(recomputed.append, key), weight=lambda _: 0)
    assert recomputed == []
    cache.get("b", lambda: recomputed.append("b"), weight=lambda _: 0)
    assert recomputed == ["b"]


def test_an_entry_larger_than_the_bound_is_not_kept() -> None:
    cache = BlobCache(max_weight=100)
    assert cache.get("big", lambda: b"x" * 1000, weight=len) == b"x" * 1000
    assert len(cache) == 0
    assert cache.weight == 0


def test_failures_are_not_cached() -> None:
    cache = BlobCache()
    attempts: list[int] = []

    def fail() -> str:
        attempts.append(1)
        raise ValueError("no")

    for _ in range(2):
        with pytest.raises(ValueError, match="no"):
            cache.get("k", fail, weight=len)
    assert len(attempts) == 2
    assert len(cache) == 0


def _loose_object(repo: Repo, blob_id: str) -> Path:
    return repo.path / ".git" / "objects" / blob_id[:2] / blob_id[2:]


def test_a_blob_size_is_read_once_for_every_snapshot_sharing_the_cache(repo: Repo) -> None:
    # A size is a function of the blob id: a second snapshot (another commit)
    # sharing the cache does not ask the object database again. Shown by
    # deleting the (loose) blob after the first read.
    repo.write("docs/size.md", "# Size\n\n" + "x" * 500 + "\n")
    first = repo.commit("size")
    repo.write("docs/other.md", "another commit\n")
    second = repo.commit("other")
    git = pygit2.Repository(str(repo.path))
    cache = BlobCache()
    at_first = Snapshot.at(git, first, check_worktree=False)
    at_first.cache = cache
    source = at_first.source("docs/size.md")
    assert at_first.size(source) == 509
    _loose_object(repo, source.blob_id).unlink()
    at_second = Snapshot.at(git, second, check_worktree=False)
    at_second.cache = cache
    assert at_second.size(at_second.source("docs/size.md")) == 509
    # Without the shared cache the header is read, and the blob is gone.
    alone = Snapshot.at(pygit2.Repository(str(repo.path)), second, check_worktree=False)
    with pytest.raises(SourceError) as missing:
        alone.size(source)
    assert missing.value.code == "object_missing"


def test_remembered_sizes_are_bounded_oldest_first() -> None:
    cache = BlobCache()
    for n in range(MAX_SIZES + 10):
        cache.remember_size(f"{n:040x}", n)
    assert len(cache.sizes) == MAX_SIZES
    assert f"{9:040x}" not in cache.sizes
    assert cache.sizes[f"{10:040x}"] == 10
    assert cache.sizes[f"{MAX_SIZES + 9:040x}"] == MAX_SIZES + 9
