"""The generated validators (governance/core/validators.py) against jsonschema,
the reference: regenerated and compared like the golden capsule, and never
accepting a document jsonschema rejects, over real documents and mutations."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.core import validators
from governance.core.schema import load_schema, validate
from governance.core.yamlload import load_yaml
from governance.errors import MalformedInput

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = sorted(
    p.name[: -len(".schema.json")] for p in (ROOT / "governance/core/schemas").glob("*.schema.json")
)


def _generator() -> Any:
    path = ROOT / "scripts" / "generate_validators.py"
    spec = importlib.util.spec_from_file_location("generate_validators", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_module_matches_the_schemas() -> None:
    committed = (ROOT / "governance/core/validators.py").read_text(encoding="utf-8")
    assert _generator().render() == committed, "stale: run scripts/generate_validators.py"


def test_every_shipped_schema_has_a_generated_validator() -> None:
    assert sorted(validators.VALIDATORS) == SCHEMAS


def test_generator_refuses_a_keyword_it_does_not_know(tmp_path: Path) -> None:
    generator = _generator()
    unknown = generator._Generator("x", {"type": "string", "format": "email"})
    with pytest.raises(SystemExit, match="unsupported keywords"):
        unknown.function(unknown.root)


def _reference(name: str) -> Any:
    schema = load_schema(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _seeds() -> list[tuple[str, Any]]:
    """Real, valid documents of every kind this repository ships."""
    seeds: list[tuple[str, Any]] = [
        ("policy", load_yaml((ROOT / "policies/capsule.yml").read_text(), path="policy", code="x")),
    ]
    for packet in sorted((ROOT / "packets").glob("*/packet.yml")):
        seeds.append(("packet", load_yaml(packet.read_text(), path=str(packet), code="x")))
    capsules = [
        ROOT / "tests/golden/GOLD-1.capsule.json",
        *sorted(ROOT.glob("packets/*/capsules/*.json")),
    ]
    seeds.extend(("capsule-1", json.loads(path.read_bytes())) for path in capsules)
    seeds.append(
        (
            "continuation-result-1",
            {
                "schema": "continuation-result/1",
                "agent": {"id": "agent-a"},
                "prior_context": False,
                "capsule_sha256": "0" * 64,
                "decision": "continue",
                "rationale": "Described in full.",
                "next_action": "Start.",
                "citations": ["docs/roadmap.md#phase-2"],
            },
        )
    )
    seeds.append(
        (
            "continuation-result-2",
            {
                "schema": "continuation-result/2",
                "agent": {"id": "agent-a"},
                "prior_context": False,
                "capsule_sha256": "0" * 64,
                "decision": "blocked",
                "rationale": "Nobody owns phase 2.",
                "blockers": ["An owner for phase 2."],
                "citations": [
                    "packets/P-1/packet.yml",
                    {"locator": "docs/roadmap.md#phase-2", "lines": [11, 11], "quote": "Second"},
                ],
            },
        )
    )
    return seeds


SEEDS = _seeds()


def test_seeds_are_valid_and_answered_without_jsonschema() -> None:
    for name, document in SEEDS:
        assert _reference(name).is_valid(document), name
        assert validators.is_valid(name, document), name


def _agrees(name: str, document: Any) -> None:
    expected = _reference(name).is_valid(document)
    fast = validators.is_valid(name, document)
    # Sound: never accepts what the reference rejects. Exact on plain data.
    assert not (fast and not expected), (name, document)
    if validators._plain(document):
        assert fast == expected, (name, document)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=70000),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["", " ", "x", "\n", "capsule/1", "0" * 40, "0" * 64, "A-1", "a..b", "T-1."]),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def _mutants(draw: st.DrawFn) -> tuple[str, Any]:
    name, seed = draw(st.sampled_from(SEEDS))
    document = copy.deepcopy(seed)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_paths(document)))
        if not path:
            document = draw(_values) if draw(st.integers(0, 9)) == 0 else document
            continue
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = draw(st.sampled_from(["replace", "delete", "add", "duplicate", "tweak"]))
        if action == "replace":
            parent[last] = draw(_values)
        elif action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(_values)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        elif action == "tweak" and isinstance(parent[last], str):
            parent[last] = draw(
                st.sampled_from(["", parent[last] + "\n", parent[last].upper(), parent[last][:-1]])
            )
        elif action == "tweak" and type(parent[last]) is int:
            parent[last] = draw(
                st.sampled_from(
                    [parent[last] - 1, parent[last] + 1, -parent[last], True, float(parent[last])]
                )
            )
    return name, document


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutants())
def test_mutated_documents_agree_with_jsonschema(case: tuple[str, Any]) -> None:
    _agrees(*case)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SCHEMAS), _values)
def test_arbitrary_values_agree_with_jsonschema(name: str, value: Any) -> None:
    _agrees(name, value)


def test_a_float_is_left_to_jsonschema() -> None:
    # JSON Schema's integer admits 1.0; the generated code answers only plain data.
    policy = {"target_tokens": 100.0}
    assert not validators.is_valid("policy", policy)
    assert _reference("policy").is_valid(policy)
    validate(policy, "policy", what="policy", code="policy_malformed")


def test_a_rejection_is_still_worded_by_jsonschema() -> None:
    with pytest.raises(MalformedInput, match=r"\$\.target_tokens: 0 is less than the minimum of 1"):
        validate({"target_tokens": 0}, "policy", what="policy", code="policy_malformed")
