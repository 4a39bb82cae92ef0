from __future__ import annotations

from importlib import resources

import jsonschema
import pytest

from governance.core.schema import load_schema

NAMES = sorted(
    p.name.removesuffix(".schema.json")
    for p in resources.files("governance.core").joinpath("schemas").iterdir()
    if p.name.endswith(".schema.json")
)


def test_schemas_ship_with_the_package() -> None:
    assert {"packet", "policy", "capsule-1"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_shipped_schema_is_valid_and_closed(name: str) -> None:
    schema = load_schema(name)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema.get("additionalProperties") is False
