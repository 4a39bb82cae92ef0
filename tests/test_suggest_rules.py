"""The rules under ``capsule suggest``: terms, integer BM25, facets."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.authoring import bm25
from governance.authoring.facets import MAX_FACETS, goal_facets
from governance.authoring.terms import STOPWORDS, STOPWORDS_VERSION, content_terms, tokens


def test_terms_are_nfc_casefolded_runs_of_letters_and_digits() -> None:
    # Casefolded "strasse" is ASCII, so the suffix rule drops its final e.
    assert tokens("Straße e\u0301t\u00e9 snake_case v2.0 日本語") == [
        "strass",
        "\u00e9t\u00e9",
        "snak",
        "case",
        "v2",
        "0",
        "日本語",
    ]
    assert content_terms("What is the budget of a capsule?") == ["budget", "capsul"]
    assert STOPWORDS_VERSION == "en-2"
    assert "the" in STOPWORDS
    assert "budget" not in STOPWORDS


@given(st.integers(1, 10**12), st.integers(1, 10**6))
def test_log2_fixed_is_the_floor_of_the_true_value(a: int, b: int) -> None:
    num, den = max(a, b), min(a, b)
    got = bm25.log2_fixed(num, den)
    # 2**(got / SCALE) <= num/den < 2**((got + 2) / SCALE): floor, give or take the last bit
    # the squaring truncates.
    true = math.log2(Fraction(num, den)) * bm25.SCALE if num != den else 0.0
    assert got <= true + 1e-6
    assert true < got + 2


def test_log2_fixed_exact_powers() -> None:
    assert bm25.log2_fixed(1, 1) == 0
    assert bm25.log2_fixed(8, 1) == 3 * bm25.SCALE
    assert bm25.log2_fixed(3, 3) == 0
    with pytest.raises(ValueError, match="num >= den"):
        bm25.log2_fixed(1, 2)


def test_bm25_term_score_is_the_formula_floored() -> None:
    n_docs, total, doc_len = 120, 24_000, 150
    idf = bm25.idf(n_docs, 7)
    assert abs(idf / bm25.SCALE - math.log(1 + (n_docs - 7 + 0.5) / (7 + 0.5))) < 1e-5
    for tf in (1, 2, 5, 40):
        got = bm25.term_score(idf, tf, doc_len, n_docs, total)
        avgdl = total / n_docs
        want = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * doc_len / avgdl))
        assert abs(got - want) <= 1
    assert bm25.term_score(idf, 0, doc_len, n_docs, total) == 0
    # Rarer terms weigh more; longer documents less.
    assert bm25.idf(n_docs, 1) > bm25.idf(n_docs, 50)
    assert bm25.term_score(idf, 2, 50, n_docs, total) > bm25.term_score(idf, 2, 500, n_docs, total)


@pytest.mark.parametrize(
    ("goal", "want"),
    [
        ('Why does "partial clone" fail?', [("phrase", "partial clone"), ("word", "fail")]),
        ("BM25 vs TF-IDF", [("side", "bm25"), ("side", "tf idf")]),
        ("compare pygit2 and libgit2", [("side", "pygit2"), ("side", "libgit2")]),
        (
            "How do Kubernetes Enhancement Proposals name owners",
            [("name", "kubernetes enhancement proposals"), ("word", "name"), ("word", "owners")],
        ),
        ("Budget checks", [("word", "budget"), ("word", "checks")]),
        (
            "How does the pre-commit hook stop an 8-read build",
            [
                ("compound", "pre commit"),
                ("compound", "8 read"),
                ("word", "hook"),
                ("word", "stop"),
                ("word", "build"),
            ],
        ),
        ("the audit of the audit", [("word", "audit")]),
    ],
)
def test_facets_by_rule(goal: str, want: list[tuple[str, str]]) -> None:
    assert [(f.kind, f.text) for f in goal_facets(goal)] == want


def test_facets_are_bounded() -> None:
    goal = " ".join(f"word{n}" for n in range(100))
    assert len(goal_facets(goal)) == MAX_FACETS


@pytest.mark.parametrize(
    ("goal", "want"),
    [
        # A lone capital letter is a name of no content term: it used to be
        # indexed as one (IndexError, issue 21).
        ("X vs Y", []),
        ("skew of N-1", [("word", "skew")]),
        ("Is A better than B", [("word", "better")]),
    ],
)
def test_a_name_without_content_terms_is_no_facet(goal: str, want: list[tuple[str, str]]) -> None:
    assert [(f.kind, f.text) for f in goal_facets(goal)] == want


@given(st.text(max_size=300))
def test_every_goal_gets_facets_without_an_exception(goal: str) -> None:
    facets = goal_facets(goal)
    assert len(facets) <= MAX_FACETS
    assert len({facet.sequence for facet in facets}) == len(facets)
    for facet in facets:
        assert facet.terms
        assert all(len(term) > 1 and term not in STOPWORDS for term in facet.terms)
