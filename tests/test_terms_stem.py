"""Light, deterministic stemming of suggest's terms (issue 21, item 3): a goal's
"dropped" finds a section about "drop", in the goal and in the corpus alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governance.authoring.terms import content_terms, probe, stem
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
