from __future__ import annotations

import pytest

from governance.core.cache import BlobCache


def test_values_are_computed_once_per_key() -> None:
    cache = BlobCache()
    calls: list[str] = []

    def compute(key: str) -> str:
        calls.append(key)
        return key.upper()

    for key in ["a", "b", "a", "a", "b"]:
        assert cache.get(key, lambda key=key: compute(key), weight=len) == key.upper()
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
        cache.get(key, lambda key=key: recomputed.append(key), weight=lambda _: 0)
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
