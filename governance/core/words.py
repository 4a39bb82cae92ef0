"""Counting and listing in words, for messages and report lines: ``2 packets``,
``a, b, c and 4 more``."""

from __future__ import annotations

from collections.abc import Sequence


def plural(count: int, noun: str) -> str:
    """``1 packet``, ``2 packets``, ``1,024 packets``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def listed(items: Sequence[str], most: int = 5) -> str:
    """The first ``most`` items, comma-separated, then ``and K more``."""
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")
