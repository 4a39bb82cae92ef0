"""JSON Schema validation for every shipped schema (``governance/core/schemas``)."""

from __future__ import annotations

import functools
import json
from typing import Any

from governance.core import validators
from governance.errors import CapsuleError, MalformedInput


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    # Imported here: the success path validates with the generated validators
    # and never reads a schema file (importlib.resources costs about 3 ms).
    from importlib import resources  # noqa: PLC0415 (defers importlib.resources)

    text = resources.files("governance.core").joinpath("schemas", f"{name}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator(name: str) -> Any:
    # jsonschema costs ~90 ms to import: only pay for it when validating.
    import jsonschema  # noqa: PLC0415 (defers jsonschema, tempfile, importlib.resources)

    schema = load_schema(name)
    # The shipped schemas are checked against their metaschema by the tests,
    # not on every run.
    return jsonschema.validators.validator_for(schema)(schema)


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to about ``limit`` characters: an error message quotes input,
    and the validator quotes a value whole, however large."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def _where(path: Any) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate(
    instance: Any,
    name: str,
    *,
    what: str,
    code: str,
    error: type[CapsuleError] = MalformedInput,
) -> None:
    """Raise ``error`` naming the first (best) schema violation, with its JSON path.

    The generated validators answer a valid document without importing
    jsonschema (about 75 ms); jsonschema, the reference, judges and words
    everything else."""
    if validators.is_valid(name, instance):
        return
    # The rejection path alone pays for jsonschema.
    import jsonschema.exceptions  # noqa: PLC0415 (defers jsonschema, tempfile, importlib.resources)

    errors = list(_validator(name).iter_errors(instance))
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors)
    where = clip(_where(best.absolute_path), 100)
    raise error(
        f"{what}: {where}: {clip(best.message)}",
        code=code,
        where=where,
        violations=len(errors),
    )
