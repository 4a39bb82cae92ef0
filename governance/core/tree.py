"""The heading tree of one file: which headings a slug path names, and the
shortest qualified selector (``parent/child``) that names each one alone.

A selector is a tuple of slugs, outermost first, its last slug the heading's
own. It names heading ``h`` when ``h``'s slug is the last one and the others
are slugs of ``h``'s enclosing headings in the same order (nearest last; not
necessarily adjacent). A slug ``base-N`` that can be GitHub's position number
for a repeated ``base`` (the file has more than N of them) matches those
headings too: such a selector depends on position, so it never names one.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from governance.core.headings import Heading, Section
from governance.core.slug import github_anchors

_REPEAT = re.compile(r"(.+)-([1-9][0-9]*)")
# Slugs are compared on at most this many characters (difflib is quadratic).
_COMPARED = 200


@dataclass(frozen=True)
class Match:
    """What a selector means in one file: every heading it could mean
    (``candidates``, in line order) and the one it names, if exactly one."""

    candidates: tuple[int, ...]
    named: int | None
    positional: bool  # some slug of it can be GitHub's position number


class Tree:
    def __init__(self, headings: Sequence[Heading], total_lines: int) -> None:
        self.headings = found = tuple(headings)
        count = len(found)
        parent: list[int | None] = [None] * count
        last_line = [total_lines] * count
        # The open headings, outermost first, and their levels beside them.
        open_: list[int] = []
        levels: list[int] = []
        by_slug: dict[str, list[int]] = {}
        for index, heading in enumerate(found):
            level = heading.level
            while levels and levels[-1] >= level:
                levels.pop()
                last_line[open_.pop()] = heading.line - 1
            parent[index] = open_[-1] if open_ else None
            open_.append(index)
            levels.append(level)
            slug = heading.slug
            if slug in by_slug:
                by_slug[slug].append(index)
            else:
                by_slug[slug] = [index]
        self.parent = parent
        self._last_line = last_line
        self.by_slug = by_slug
        self._subsequences: dict[str, Counter[tuple[str, ...]]] = {}
        self._qualifier_sets: dict[int, set[tuple[str, ...]]] = {}
        # Slug of a heading -> the base it repeats (None: not a repeat), as
        # repeat_of finds.
        self._repeats: dict[str, str | None] = {}
        # What core.structure computes from this tree, kept with it.
        self.memo: dict[object, object] = {}

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """Each heading's section, in line order (made when first asked for:
        an excerpt needs one, ``section``)."""
        found = self.headings
        # Positional arguments: a dataclass is made faster so than by keyword.
        return tuple(map(Section, found, [h.line for h in found], self._last_line))

    @cached_property
    def ordinals(self) -> tuple[int, ...]:
        """Each heading's place among its siblings of the same slug (the
        headings with its parent, or with none), from 1, in line order."""
        seen: Counter[tuple[int | None, str]] = Counter()
        found = []
        for index, heading in enumerate(self.headings):
            key = (self.parent[index], heading.slug)
            seen[key] += 1
            found.append(seen[key])
        return tuple(found)

    @cached_property
    def anchors(self) -> dict[str, int]:
        """GitHub's anchor of each heading (``notes``, ``notes-1``) -> its index."""
        found = github_anchors(h.slug for h in self.headings)
        return {anchor: index for index, anchor in enumerate(found)}

    def section(self, index: int) -> Section:
        """``sections[index]``, without making the others."""
        heading = self.headings[index]
        return Section(heading, heading.line, self._last_line[index])

    def ancestors(self, index: int) -> list[int]:
        """Enclosing headings, nearest first (at most five: levels are 1 to 6)."""
        found = []
        parent = self.parent[index]
        while parent is not None:
            found.append(parent)
            parent = self.parent[parent]
        return found

    def depth(self, index: int) -> int:
        return len(self.ancestors(index))

    def repeat_of(self, slug: str) -> str | None:
        # GitHub names the (n+1)-th heading `base` `base-n`. Once per slug of
        # this tree's headings (by_slug does not change); a slug no heading
        # has is a selector's, any number of any length: never remembered.
        try:
            return self._repeats[slug]
        except KeyError:
            pass
        repeat = _REPEAT.fullmatch(slug)
        base = None
        # A number of more digits than the count has cannot be below it (and
        # int() refuses strings of more than 4,300 digits).
        if repeat:
            count, number = len(self.by_slug.get(repeat.group(1), ())), repeat.group(2)
            if len(number) <= len(str(count)) and count > int(number):
                base = repeat.group(1)
        if slug in self.by_slug:
            self._repeats[slug] = base
        return base

    def meanings(self, slug: str) -> tuple[str, ...]:
        base = self.repeat_of(slug)
        return (slug,) if base is None else (slug, base)

    def group(self, slug: str) -> list[int]:
        members = list(self.by_slug.get(slug, ()))
        base = self.repeat_of(slug)
        if base is not None:
            members = sorted(members + self.by_slug[base])
        return members

    def _within(self, index: int, parents: Sequence[str], *, literal: bool) -> bool:
        # Greedy from the nearest: the nearest ancestor matching the last
        # parent is never a worse choice than a farther one.
        if not parents:
            return True  # nothing to find above
        wanted = len(parents) - 1
        for ancestor in self.ancestors(index):
            if wanted < 0:
                break
            slug = self.headings[ancestor].slug
            if slug == parents[wanted] or (not literal and slug in self.meanings(parents[wanted])):
                wanted -= 1
        return wanted < 0

    def match(self, slugs: Sequence[str]) -> Match:
        *parents, own = slugs
        candidates = tuple(i for i in self.group(own) if self._within(i, parents, literal=False))
        positional = any(self.repeat_of(slug) is not None for slug in slugs)
        named = None
        if len(candidates) == 1:
            only = candidates[0]
            if self.headings[only].slug == own and self._within(only, parents, literal=True):
                named = only
        return Match(candidates, named, positional)

    def _counts(self, slug: str) -> Counter[tuple[str, ...]]:
        # For every heading the bare slug could mean: each distinct tuple of
        # its enclosing slugs (nearest first) a qualification could use.
        counts = self._subsequences.get(slug)
        if counts is None:
            counts = Counter()
            for member in self.group(slug):
                counts.update(self._qualifiers(member))
            self._subsequences[slug] = counts
        return counts

    def _qualifiers(self, index: int) -> set[tuple[str, ...]]:
        found = self._qualifier_sets.get(index)
        if found is None:
            chain = [self.headings[a].slug for a in self.ancestors(index)]
            found = {
                tuple(chain[i] for i in picked)
                for size in range(len(chain) + 1)
                for picked in itertools.combinations(range(len(chain)), size)
            }
            self._qualifier_sets[index] = found
        return found

    def qualified(self, index: int) -> tuple[str, ...] | None:
        """The shortest selector naming heading ``index`` alone (outermost
        first), preferring nearer enclosing headings; None when none does
        (two headings with the same slug under the same headings)."""
        own = self.headings[index].slug
        if self.repeat_of(own) is not None:
            # Its own slug is position-numbered: no qualification makes the
            # other meaning go away for certain, so ask the resolver.
            return self._qualified_slow(index)
        if len(self.by_slug[own]) == 1:
            return (own,)  # the bare slug is unique
        counts = self._counts(own)
        mine = self._qualifiers(index)
        chain = [self.headings[a].slug for a in self.ancestors(index)]
        for size in range(len(chain) + 1):
            for picked in itertools.combinations(range(len(chain)), size):
                nearest_first = tuple(chain[i] for i in picked)
                if self._alone(nearest_first, counts, mine):
                    return (*reversed(nearest_first), own)
        return None

    def _alone(
        self,
        nearest_first: tuple[str, ...],
        counts: Counter[tuple[str, ...]],
        mine: set[tuple[str, ...]],
    ) -> bool:
        # Every literal tuple of slugs this qualification could match must be
        # had by this heading alone.
        for meaning in itertools.product(*(self.meanings(s) for s in nearest_first)):
            if counts[meaning] != (1 if meaning in mine else 0):
                return False
        return True

    def _qualified_slow(self, index: int) -> tuple[str, ...] | None:
        own = self.headings[index].slug
        chain = [self.headings[a].slug for a in self.ancestors(index)]
        for size in range(len(chain) + 1):
            for picked in itertools.combinations(range(len(chain)), size):
                slugs = (*(chain[i] for i in reversed(picked)), own)
                if self.match(slugs).named == index:
                    return slugs
        return None

    def nearest(self, slug: str, most: int = 3) -> list[int]:
        """Up to ``most`` headings whose slugs are most like ``slug``: difflib's
        ratio, compared exactly as a fraction (no float decides), ties by
        line; a slug under half alike is never offered."""
        # Only a selector that names no heading asks (the did-you-mean of its error).
        import difflib  # noqa: PLC0415 (defers difflib, off the build path)
        from fractions import Fraction  # noqa: PLC0415 (defers fractions, decimal, numbers)

        wanted = slug[:_COMPARED]
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(wanted)
        letters = Counter(wanted)
        scored: list[tuple[Fraction, int]] = []
        for candidate, indices in self.by_slug.items():
            matcher.set_seq1(candidate[:_COMPARED])
            total = len(wanted) + len(candidate[:_COMPARED])
            if not total:
                continue
            # Characters in common as multisets bound the ratio from above
            # (difflib's quick_ratio): skip what cannot qualify.
            common = sum((letters & Counter(candidate[:_COMPARED])).values())
            if Fraction(2 * common, total) < Fraction(1, 2):
                continue
            same = sum(block.size for block in matcher.get_matching_blocks())
            ratio = Fraction(2 * same, total)
            if ratio >= Fraction(1, 2):
                scored.extend((ratio, index) for index in indices)
        scored.sort(key=lambda item: (-item[0], self.headings[item[1]].line))
        return [index for _, index in scored[:most]]
