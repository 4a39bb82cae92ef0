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
