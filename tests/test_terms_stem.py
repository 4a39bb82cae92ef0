"""Light, deterministic stemming of suggest's terms (issue 21, item 3): a goal's
"dropped" finds a section about "drop", in the goal and in the corpus alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.authoring.terms import (
    TermCounter,
    content_terms,
    normalise,
    probe,
    runs,
    stem,
)
from support.gitrepo import POLICY, Repo


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("dropped drops drop", "drop"),
        ("headings heading", "head"),
        ("caching caches cached cache", "cach"),
        ("policies policy", "polici"),
        ("running runs run", "run"),
        ("speed speeds", "speed"),
    ],
)
def test_forms_of_a_word_share_one_stem(words: str, expected: str) -> None:
    for word in words.split():
        assert stem(word) == expected, word
        # The corpus's substring pre-test: every form holds the stem's probe.
        assert probe(expected) in word, word


# Words and their neighbours: ASCII forms, a y that stems to i, letters of
# other scripts (an astral one, a combining mark, an unassigned code point),
# digits and separators.
_PIECES = st.sampled_from(
    [
        "drop", "dropped", "drops", "policy", "policies", "node", "nodes", "nod",
        "cache", "caching", "i", "x", "9", "é", "e\u0301", "\U0001d400", "\U00011f04",
        "ß", "İ", " ", "-", "_", "\n", ".", "'",
    ]
)  # fmt: skip


def _naive(terms: set[str], folded: str) -> dict[str, int]:
    stems = [stem(word) for word in runs(folded)]
    return {term: stems.count(term) for term in terms}


@settings(max_examples=400)
@given(
    st.lists(_PIECES, max_size=30).map("".join),
    st.sets(st.lists(_PIECES, min_size=1, max_size=3).map("".join), max_size=4),
)
def test_the_term_counter_counts_what_tokenising_every_word_does(text: str, goal: set[str]) -> None:
    folded = normalise(text)
    terms = {stem(word) for part in goal for word in runs(normalise(part))}
    assert TermCounter(terms).count(folded) == _naive(terms, folded)


@settings(max_examples=400)
@given(
    st.lists(st.lists(_PIECES, max_size=12).map("".join), max_size=6),
    st.sets(st.lists(_PIECES, min_size=1, max_size=3).map("".join), max_size=4),
)
def test_running_counts_over_blocks_are_each_blocks_counts_summed(
    texts: list[str], goal: set[str]
) -> None:
    # Blocks as the corpus makes them: whole lines, so no word spans two.
    blocks = [normalise(text) + "\n" for text in texts]
    terms = {stem(word) for part in goal for word in runs(normalise(part))}
    running = TermCounter(terms).running(blocks)
    assert set(running) == terms
    for term in terms:
        expected = [0]
        for block in blocks:
            expected.append(expected[-1] + _naive({term}, block)[term])
        assert running[term] == expected, term


def test_a_word_is_counted_once_where_one_probe_holds_another() -> None:
    # "nod" and "node" both find "nodes": it is counted under its own stem only.
    blocks = ["nodes nod\n", "node\n"]
    assert TermCounter({"nod", "node"}).running(blocks) == {"nod": [0, 1, 1], "node": [0, 1, 2]}


def test_the_term_counter_skips_words_of_no_term_and_counts_every_form() -> None:
    counter = TermCounter({"drop", "polici"})
    text = normalise("Dropped drops; a dropdown, policy POLICIES airdrop.")
    assert counter.count(text) == {"drop": 2, "polici": 2}
    assert counter.count("nothing here") == {"drop": 0, "polici": 0}
    assert TermCounter(()).count("drop") == {}


def test_short_non_ascii_and_mixed_terms_are_themselves() -> None:
    for word in ("use", "bus", "status", "class", "caf\u00e9s", "v2ed", "http2"):
        assert stem(word) == word
    assert content_terms("The dropped Headings") == ["drop", "head"]


DOCS = """\
# Operations

Notes kept by the team.

## Drop

To drop a table, name it and confirm twice.

## Cache

The cache keeps each heading of a file once.

## Retention

Old records are pruned nightly by the scheduler.
"""


@pytest.mark.parametrize(
    ("goal", "locator"),
    [
        ("which tables were dropped", "docs/ops.md#drop"),
        ("caching headings", "docs/ops.md#cache"),
    ],
)
def test_a_goal_finds_a_section_by_another_form_of_its_word(
    cli, tmp_path: Path, goal: str, locator: str
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    repo.write("docs/ops.md", DOCS)
    repo.commit("ops")
    result = cli(["suggest", goal, "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert found["stopwords"] == "en-2"
    assert found["reads"][0]["locator"] == locator
