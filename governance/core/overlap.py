"""Reads of one packet that select the same lines twice (``reads_overlap``): a
warning, never a failure; the capsule is built exactly as it would be.
(The same locator twice is refused by the packet schema.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from governance.core.excerpt import Excerpt
from governance.errors import READS_OVERLAP

CODE = READS_OVERLAP
# At most this many overlaps are reported for one packet.
MOST = 100


@dataclass(frozen=True)
class Overlap:
    path: str
    first: str  # locators, in packet order
    second: str
    first_lines: tuple[int, int]
    second_lines: tuple[int, int]

    @property
    def lines(self) -> tuple[int, int]:
        return max(self.first_lines[0], self.second_lines[0]), min(
            self.first_lines[1], self.second_lines[1]
        )

    @property
    def message(self) -> str:
        low, high = self.lines
        if self.first_lines == self.second_lines:
            return (
                f"{self.first} and {self.second} select the same lines ({_span(self.lines)}) of "
                f"{self.path}: they are in the capsule twice; drop one of them"
            )
        where = f"line {low}" if low == high else f"lines {low}-{high}"
        return (
            f"{self.first} (lines {_span(self.first_lines)}) and {self.second} (lines "
            f"{_span(self.second_lines)}) overlap: {where} of {self.path} are in the "
            "capsule twice; drop the inner read, or replace the outer one by its other "
            "subsections"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "code": CODE,
            "message": self.message,
            "path": self.path,
            "locators": [self.first, self.second],
            "lines": [list(self.first_lines), list(self.second_lines)],
        }


def _span(lines: tuple[int, int]) -> str:
    return f"{lines[0]}-{lines[1]}"


def overlaps(excerpts: Sequence[Excerpt], most: int = MOST) -> list[Overlap]:
    """Pairs of reads of one file whose lines meet (a section and its own
    subsection, or one heading named by two selectors), in packet order; at
    most ``most`` of them (many reads of one file must not make a quadratic
    report)."""
    pairs: list[tuple[int, int]] = []
    by_path: dict[str, list[int]] = {}
    for index, excerpt in enumerate(excerpts):
        by_path.setdefault(excerpt.path, []).append(index)
    for indices in by_path.values():
        if len(pairs) >= most:
            break
        # A sweep over the reads sorted by first line: each meets the ones
        # after it that start before it ends.
        ordered = sorted(indices, key=lambda i: (excerpts[i].first_line, i))
        for at, i in enumerate(ordered):
            a = excerpts[i]
            for j in ordered[at + 1 :]:
                # An empty file's one read ([1, 0]) meets nothing: the
                # schema refuses the same locator twice.
                if excerpts[j].first_line > a.last_line:
                    break
                pairs.append((min(i, j), max(i, j)))
                if len(pairs) >= most:
                    break
            if len(pairs) >= most:
                break
    return [_pair(excerpts[i], excerpts[j]) for i, j in sorted(pairs)]


def _pair(a: Excerpt, b: Excerpt) -> Overlap:
    return Overlap(
        path=a.path,
        first=a.locator,
        second=b.locator,
        first_lines=(a.first_line, a.last_line),
        second_lines=(b.first_line, b.last_line),
    )
