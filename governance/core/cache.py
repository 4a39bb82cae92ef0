"""A per-run memo of pure functions of git blobs, keyed by blob id.

A blob id names its bytes, so anything computed from a blob alone (its bytes,
its parsed Markdown headings, the packet or policy it parses to) can be reused
by every later build that reads the same blob: records that share sources are
cheap to replay. The memo is bounded by an approximate byte weight and evicts
the least recently used entries, so a long audit stays flat in memory however
many blob versions its history holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

# Enough for the sources of the records around any point of a walk through history.
DEFAULT_MAX_WEIGHT = 8 << 20
# Blob sizes remembered at most (an id and an int, some 200 bytes each): a
# replay asks for the size of every source several times.
MAX_SIZES = 16384


class BlobCache:
    """Least-recently-used memo; ``weight`` approximates each entry's bytes."""

    def __init__(self, max_weight: int = DEFAULT_MAX_WEIGHT) -> None:
        self.max_weight = max_weight
        self.weight = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        # Blob id -> size from the object header: a pure function of the id,
        # kept apart from the weighted entries (a plain dict is the cheapest
        # lookup); the oldest goes first past MAX_SIZES.
        self.sizes: dict[str, int] = {}

    def remember_size(self, blob_id: str, size: int) -> None:
        sizes = self.sizes
        if len(sizes) >= MAX_SIZES:
            del sizes[next(iter(sizes))]
        sizes[blob_id] = size

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, compute: Callable[[], T], *, weight: Callable[[T], int]) -> T:
        """``compute()`` once per key while it stays cached; ``weight(value)`` sizes it.
        Exceptions are not cached: a failure is raised again every time it is asked for."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            value: T = found[0]
            return value
        value = compute()
        # The key and the entry's bookkeeping cost something even for a tiny value.
        cost = max(weight(value), 0) + 128
        if cost > self.max_weight:
            return value
        self._entries[key] = (value, cost)
        self.weight += cost
        while self.weight > self.max_weight:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.weight -= dropped
        return value
