"""check_path remembers the paths it found safe, and parse_locator the
locators it parsed: the same verdict and wording every time, whatever was
checked before, within bounded memos."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.core import locator
from governance.core.locator import Selector, check_path, parse_locator
from governance.errors import SourceError

_PARTS = st.sampled_from(
    ["docs", "a.md", "..", ".", ".git", ".GIT", "", "x\\y", "a\x00b", "c\x1fd", "é", "/"]
)
_PATHS = st.lists(_PARTS, max_size=5).map("/".join) | st.text(max_size=12)


def _verdict(path: str, shown: str) -> str:
    try:
        return check_path(path, locator=shown)
    except SourceError as exc:
        return f"refused: {exc.code}: {exc.message} ({exc.details})"


@given(_PATHS, st.booleans())
def test_a_second_check_says_what_the_first_said(path: str, forget: bool) -> None:
    first = _verdict(path, "first.md")
    if forget:
        locator._SAFE.clear()
    second = _verdict(path, "first.md")
    assert first == second
    # A refusal names the locator of the call that made it, never an earlier one.
    if first.startswith("refused"):
        assert first.startswith("refused: unsafe_path: ")
        assert "again.md: unsafe path" in _verdict(path, "again.md")


def test_a_safe_path_checked_before_is_still_safe_and_an_unsafe_one_still_refused() -> None:
    assert check_path("docs/notes.md") == "docs/notes.md"
    assert check_path("docs/notes.md", locator="docs/notes.md#x") == "docs/notes.md"
    for _ in range(2):
        with pytest.raises(SourceError, match=r"^\.\./x\.md#y: unsafe path: '\.\.' component"):
            check_path("../x.md", locator="../x.md#y")


class _PosingAs(str):
    """A string that hashes and compares as a safe path it is not."""

    def __hash__(self) -> int:
        return hash("docs/notes.md")

    def __eq__(self, other: object) -> bool:
        return True


def test_a_string_posing_as_a_checked_path_is_checked_itself() -> None:
    check_path("docs/notes.md")
    with pytest.raises(SourceError) as info:
        check_path(_PosingAs("../escape.md"))
    assert info.value.code == "unsafe_path"


def test_the_memo_is_bounded_in_count_and_in_path_length() -> None:
    for n in range(locator._SAFE_MAX + 50):
        check_path(f"docs/{n}.md")
    assert len(locator._SAFE) <= locator._SAFE_MAX
    long = "d/" * locator._SAFE_LONGEST + "x.md"
    assert check_path(long) == long
    assert long not in locator._SAFE


_LOCATORS = st.tuples(_PATHS, st.sampled_from(["", "#", "#a", "#a/b", "#/b", "#a/", "#a//b"])).map(
    "".join
)


def _parsed(text: str) -> Selector | str:
    try:
        return parse_locator(text)
    except SourceError as exc:
        return f"refused: {exc.code}: {exc.message} ({exc.details})"


@given(_LOCATORS, st.booleans())
def test_a_second_parse_gives_what_the_first_gave(text: str, forget: bool) -> None:
    first = _parsed(text)
    if forget:
        locator._PARSED.clear()
        locator._SAFE.clear()
    assert _parsed(text) == first
    if isinstance(first, Selector):
        assert first.locator == text
        assert first.path == text.partition("#")[0]


def test_a_string_posing_as_a_parsed_locator_is_parsed_itself() -> None:
    parse_locator("docs/notes.md")
    with pytest.raises(SourceError) as info:
        parse_locator(_PosingAs("../escape.md"))
    assert info.value.code == "unsafe_path"


def test_the_parsed_memo_is_bounded_in_count_and_in_length() -> None:
    for n in range(locator._SAFE_MAX + 50):
        parse_locator(f"docs/{n}.md#s")
    assert len(locator._PARSED) <= locator._SAFE_MAX
    long = "d/" * locator._SAFE_LONGEST + "x.md#s"
    assert parse_locator(long).slug == "s"
    assert long not in locator._PARSED
