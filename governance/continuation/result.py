"""Reading one agent's result: exactly one strict JSON object, and a bound on
how much of it is ever read or kept."""

from __future__ import annotations

import json
from typing import Any

from governance.core.canonical import has_surrogate, no_constant, no_duplicate_keys

# A result is a few kilobytes; nothing larger is read (files) or kept (agent output).
MAX_RESULT_BYTES = 1 << 20
MAX_RESULT_TEXT = "1 MiB"


def parse_result(data: bytes) -> dict[str, Any]:
    """Exactly one JSON object, strictly: a duplicate key could make two
    readers see two different results. Numbers are left to the schema. The
    same refusals as ``canonical.loads`` otherwise: a lone surrogate escape
    (no UTF-8 output could carry it) and nesting too deep to walk. Raises
    ``ValueError`` saying why."""
    if not data.strip():
        raise ValueError("the output is empty" if not data else "the output is only whitespace")
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=no_constant)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("not valid JSON: nested too deeply") from None
    if "\\u" in text and has_surrogate(value):
        raise ValueError("not valid JSON: it holds a lone surrogate escape (not UTF-8)")
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", int: "a number"}
        raise ValueError(f"{kind.get(type(value), 'a number or null')} in JSON, not an object")
    return value
