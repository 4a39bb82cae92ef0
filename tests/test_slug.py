from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.core.slug import github_slug

_FIXTURES: list[dict[str, str]] = json.loads(
    (Path(__file__).parent / "data" / "github-slugger-fixtures.json").read_text(encoding="utf-8")
)

# Pinned so a broken classification cannot quietly shrink the parametrized test below.
_FIRST_OCCURRENCES = 64
_REPEATS = 14


def _counted(entries: list[dict[str, str]]) -> list[tuple[dict[str, str], str, bool]]:
    # The fixtures were produced by one stateful GithubSlugger, so repeated slugs carry
    # "-1", "-2", ... This replays its occurrence counting over our stateless github_slug.
    occurrences: dict[str, int] = {}
    replayed: list[tuple[dict[str, str], str, bool]] = []
    for entry in entries:
        base = github_slug(entry["input"])
        result = base
        while result in occurrences:
            occurrences[base] += 1
            result = f"{base}-{occurrences[base]}"
        occurrences[result] = 0
        replayed.append((entry, result, result == base))
    return replayed


_REPLAYED = _counted(_FIXTURES)
_FIRSTS = [entry for entry, _, first in _REPLAYED if first]


def test_fixture_file_is_complete() -> None:
    assert len(_FIXTURES) == 78


def test_replaying_the_counter_reproduces_every_fixture() -> None:
    mismatches = [
        (entry["name"], produced, entry["expected"])
        for entry, produced, _ in _REPLAYED
        if produced != entry["expected"]
    ]
    assert mismatches == []


@pytest.mark.parametrize("entry", _FIRSTS, ids=[entry["name"] for entry in _FIRSTS])
def test_first_occurrence_matches_github_slugger(entry: dict[str, str]) -> None:
    assert github_slug(entry["input"]) == entry["expected"]


def test_repeats_are_exactly_the_suffixed_fixtures() -> None:
    repeats = {entry["name"] for entry, _, first in _REPLAYED if not first}
    differing = {
        entry["name"] for entry in _FIXTURES if github_slug(entry["input"]) != entry["expected"]
    }
    assert repeats == differing
    assert len(_FIRSTS) == _FIRST_OCCURRENCES
    assert len(repeats) == _REPEATS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("C++ & Rust", "c--rust"),
        ("  spaced  out  ", "--spaced--out--"),
        ("snake_case and kebab-case", "snake_case-and-kebab-case"),
        ("en\u2013dash", "endash"),
        ("tab\there\nnewline", "tabherenewline"),
        ("no\u00a0break", "nobreak"),
        ("zero\u200dwidth", "zerowidth"),
        # Connector punctuation is kept as a whole category, not only "_".
        ("tie\u203fbar \uff3f", "tie\u203fbar-\uff3f"),
        # Other_Number is deleted while decimal digits and letter numbers stay.
        ("x\u00b2 \u00bd \u2460 7 \u2163", "x---7-\u2173"),
        # Alphabetic symbols survive although their category is Other_Symbol.
        ("\u24b6\u24d1 \U0001f130", "\u24d0\u24d1-\U0001f130"),
        ("\U0001f604 emoji", "-emoji"),
        ("private\ue000use", "privateuse"),
        ("never\u0378\uffff\U0010ffffassigned", "neverassigned"),
        ("lone\ud800surrogate", "lone\ud800surrogate"),
        ("\u0130stanbul", "i\u0307stanbul"),
        ("\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2"),
    ],
)
def test_category_rules(text: str, expected: str) -> None:
    assert github_slug(text) == expected


@given(st.text())
def test_output_is_already_lowercase(text: str) -> None:
    slug = github_slug(text)
    assert slug.lower() == slug


@given(st.text())
def test_output_has_no_space(text: str) -> None:
    assert " " not in github_slug(text)


@given(st.text())
def test_idempotent(text: str) -> None:
    slug = github_slug(text)
    assert github_slug(slug) == slug


@given(st.text())
def test_never_longer_than_lowercased_input(text: str) -> None:
    assert len(github_slug(text)) <= len(text.lower())


@given(st.text(alphabet=st.characters(codec="ascii")))
def test_ascii_matches_the_simple_rule(text: str) -> None:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789_-")
    expected = "".join(
        "-" if ch == " " else ch for ch in text.lower() if ch in allowed or ch == " "
    )
    assert github_slug(text) == expected
