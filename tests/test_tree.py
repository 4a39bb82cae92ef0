"""The heading tree's structure: each heading's parent and section, and the
headings of each slug, held to the plain definition on generated outlines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from governance.core.headings import Heading, Section
from governance.core.tree import Tree

_SLUGS = st.sampled_from(["a", "b", "summary", "a-1", ""])


@st.composite
def outlines(draw: st.DrawFn) -> tuple[list[Heading], int]:
    rows = draw(st.lists(st.tuples(st.integers(1, 6), _SLUGS, st.integers(1, 3)), max_size=14))
    headings, line = [], 1
    for level, slug, gap in rows:
        headings.append(Heading(line, line, level, slug, slug))
        line += gap
    return headings, line + draw(st.integers(0, 2))


def _parent(headings: list[Heading], index: int) -> int | None:
    # The nearest heading above of a lower level.
    for above in range(index - 1, -1, -1):
        if headings[above].level < headings[index].level:
            return above
    return None


def _last_line(headings: list[Heading], index: int, total: int) -> int:
    # The line before the next heading of the same or a lower level.
    for below in headings[index + 1 :]:
        if below.level <= headings[index].level:
            return below.line - 1
    return total


@given(outlines())
def test_parents_sections_and_slugs_are_those_the_outline_defines(
    outline: tuple[list[Heading], int],
) -> None:
    headings, total = outline
    tree = Tree(headings, total)
    count = len(headings)
    assert tree.headings == tuple(headings)
    assert tree.parent == [_parent(headings, i) for i in range(count)]
    expected = tuple(
        Section(heading=h, first_line=h.line, last_line=_last_line(headings, i, total))
        for i, h in enumerate(headings)
    )
    assert [tree.section(i) for i in range(count)] == list(expected)
    assert tree.sections == expected
    assert all(tree.sections[i].heading is headings[i] for i in range(count))
    slugs: dict[str, list[int]] = {}
    for i, h in enumerate(headings):
        slugs.setdefault(h.slug, []).append(i)
    assert tree.by_slug == slugs
    assert list(tree.by_slug) == list(slugs)


def _reference_match(
    tree: Tree, slugs: tuple[str, ...]
) -> tuple[tuple[int, ...], int | None, bool]:
    """The module docstring's meaning, spelled out slowly: which headings a
    selector could mean, the one it names, and whether it is positional."""
    headings = tree.headings
    counts: dict[str, int] = {}
    for h in headings:
        counts[h.slug] = counts.get(h.slug, 0) + 1

    def base_of(slug: str) -> str | None:
        head, _, number = slug.rpartition("-")
        repeat = head and "\n" not in head and number.isascii() and number.isdigit()
        if repeat and number[0] != "0" and counts.get(head, 0) > int(number):
            return head
        return None

    def means(slug: str, wanted: str, literal: bool) -> bool:
        return slug == wanted or (not literal and slug == base_of(wanted))

    def chain(index: int) -> list[int]:
        found, parent = [], tree.parent[index]
        while parent is not None:
            found.append(parent)
            parent = tree.parent[parent]
        return found

    def within(index: int, parents: tuple[str, ...], literal: bool) -> bool:
        wanted = len(parents) - 1
        for ancestor in chain(index):
            if wanted >= 0 and means(headings[ancestor].slug, parents[wanted], literal):
                wanted -= 1
        return wanted < 0

    *parents, own = slugs
    candidates = tuple(
        i
        for i, h in enumerate(headings)
        if means(h.slug, own, False) and within(i, tuple(parents), False)
    )
    named = None
    only = candidates[0] if len(candidates) == 1 else None
    if only is not None and headings[only].slug == own and within(only, tuple(parents), True):
        named = only
    return candidates, named, any(base_of(s) is not None for s in slugs)


@given(outlines(), st.lists(st.lists(_SLUGS | st.just("a-2"), min_size=1, max_size=3), max_size=4))
def test_match_means_what_the_module_says(
    outline: tuple[list[Heading], int], selectors: list[list[str]]
) -> None:
    headings, total = outline
    tree = Tree(headings, total)
    for _ in range(2):  # again, with what the tree remembered
        for slugs in selectors:
            found = tree.match(tuple(slugs))
            assert (found.candidates, found.named, found.positional) == _reference_match(
                tree, tuple(slugs)
            )


def test_slugs_asked_for_that_no_heading_has_are_not_remembered() -> None:
    # A tree stays cached while its blob is read again, and selectors are the
    # packets' (any number, any length): what it remembers of the slugs it was
    # asked for is bounded by its own headings, however many names miss.
    headings = [Heading(1, 1, 1, "Notes", "notes"), Heading(3, 3, 2, "Notes", "notes")]
    tree = Tree(headings, 4)
    for n in range(2000):
        missing = tree.match((f"gone-{n}-" + "x" * 1000,))
        assert missing.candidates == ()
        assert tree.match((f"notes-{n + 1}", f"notes-{n}")).named is None
    assert tree.match(("notes", "notes")).named == 1
    assert set(tree._repeats) <= set(tree.by_slug)
