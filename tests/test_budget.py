from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core import budget, canonical
from governance.errors import BudgetError


@pytest.mark.parametrize(("n", "tokens"), [(0, 0), (1, 1), (2, 1), (3, 1), (4, 2), (3001, 1001)])
def test_estimator_is_bytes_div_3_ceil(n: int, tokens: int) -> None:
    assert budget.estimate_tokens(n) == tokens


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=3000))
def test_fixpoint_describes_the_file_that_contains_it(text: str) -> None:
    document = {"text": text, "budget": {"bytes": 0, "estimated_tokens": 0}}
    data = budget.fixpoint(document, canonical.dumps)
    parsed = json.loads(data)
    assert parsed["budget"]["bytes"] == len(data)
    assert parsed["budget"]["estimated_tokens"] == -(-len(data) // 3)


def test_fixpoint_across_a_digit_boundary() -> None:
    # Sizes near 10**k make the numbers' own digits matter.
    for pad in range(900, 1100):
        document = {"text": "é" * pad, "budget": {"bytes": 0, "estimated_tokens": 0}}
        data = budget.fixpoint(document, canonical.dumps)
        assert json.loads(data)["budget"]["bytes"] == len(data)


def test_limits_check_target_and_hard_limit() -> None:
    limits = budget.Limits(100, "policy", 120, 30)
    assert limits.fits(90)
    assert not limits.fits(91)  # 91 + 30 > 120
    assert not budget.Limits(100, "policy", 1000, 0).fits(101)


def test_over_budget_lists_each_part() -> None:
    costs = [budget.Cost("docs/a.md", 3000), budget.Cost("docs/b.md#x", 30)]
    with pytest.raises(BudgetError) as info:
        budget.check(budget.Limits(100, "packet", 1000, 10), 1010, costs)
    assert info.value.code == "over_budget"
    assert "docs/a.md" in info.value.message
    assert "1,000 tok" in info.value.message
    assert info.value.details["parts"][1] == {
        "part": "docs/b.md#x",
        "bytes": 30,
        "estimated_tokens": 10,
    }


def _plain_climb(document: dict[str, object]) -> bytes:
    # The climb the fixpoint used to make, serialising at every step.
    budget_ = document["budget"]
    assert isinstance(budget_, dict)
    n_bytes = 0
    while True:
        budget_["bytes"] = n_bytes
        budget_["estimated_tokens"] = budget.estimate_tokens(n_bytes)
        plain = canonical.dumps(document)
        if len(plain) == n_bytes:
            return plain
        n_bytes = len(plain)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_fixpoint_with_another_serialiser_serialises_twice_and_agrees(text: str) -> None:
    calls: list[int] = []

    def counted(value: object) -> bytes:
        calls.append(1)
        return canonical.dumps(value)

    data = budget.fixpoint({"text": text, "budget": {}}, counted)
    assert len(calls) == 2
    assert data == _plain_climb({"text": text, "budget": {}})


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=3000),
    st.sampled_from(["a", "budgeT", "budget0", "c", "z"]),
    st.sampled_from([{}, {"estimator": "x"}, {"a": 1}, {"bytez": 2, "target_tokens": 9}]),
)
def test_fixpoint_writing_the_numbers_in_place_is_the_plain_climb(
    text: str, key: str, extra: dict[str, object]
) -> None:
    # Whether or not "budget" leads the file ("a" sorts before it) and its two
    # numbers lead it ("a" does not sort after "bytes"): the bytes are those
    # of serialising the document with the numbers the climb ends at.
    def document() -> dict[str, object]:
        return {key: text, "budget": {**extra, "bytes": 0, "estimated_tokens": 0}}

    built = document()
    data = budget.fixpoint(built, canonical.dumps)
    assert data == _plain_climb(document())
    assert canonical.dumps(built) == data


def test_fixpoint_in_place_across_digit_boundaries() -> None:
    for pad in [*range(0, 40), *range(280, 320), *range(2980, 3020)]:
        document = {"text": "x" * pad, "budget": {"bytes": 0, "estimated_tokens": 0}}
        data = budget.fixpoint(document, canonical.dumps)
        assert data == _plain_climb({"text": "x" * pad, "budget": {}})


def test_fixpoint_of_a_document_holding_its_budget_twice_is_the_plain_climb() -> None:
    # The same budget object at two places of the document: its numbers are
    # written at both, so writing them in place of the leading zeros alone
    # would give other bytes than serialising the document.
    shared: dict[str, object] = {"bytes": 0, "estimated_tokens": 0}
    document = {"budget": shared, "copy": shared, "text": "x" * 100}
    data = budget.fixpoint(document, canonical.dumps)
    assert data == canonical.dumps(document)
    plain: dict[str, object] = {}
    assert data == _plain_climb({"budget": plain, "copy": plain, "text": "x" * 100})
