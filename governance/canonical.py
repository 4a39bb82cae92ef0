"""Canonical JSON, the only serialiser of capsules.

UTF-8, keys sorted by code point, no insignificant whitespace, no floats,
non-ASCII kept as UTF-8, exactly one trailing LF. ``loads`` is strict in the
same spirit: duplicate keys, floats and NaN are refused rather than silently
normalised, so a file that re-canonicalises to itself really is canonical.
"""

from __future__ import annotations

import json
from typing import Any

from governance.errors import MalformedInput


def _reject_floats(value: Any, where: str = "$") -> None:
    if isinstance(value, float):
        raise ValueError(f"floats are not allowed in canonical JSON (at {where})")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object keys must be strings (at {where})")
            _reject_floats(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _reject_floats(item, f"{where}[{index}]")


def dumps(value: Any) -> bytes:
    _reject_floats(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_float(text: str) -> Any:
    raise ValueError(f"floats are not allowed in canonical JSON ({text})")


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def loads(data: bytes, *, what: str = "capsule") -> Any:
    """Parse strictly; a failure is ``MalformedInput`` with code ``<what>_malformed``."""
    code = f"{what}_malformed"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInput(f"{what} is not valid UTF-8: {exc}", code=code) from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_float=_no_float,
            parse_constant=_no_constant,
        )
    except ValueError as exc:
        raise MalformedInput(f"{what} is not valid JSON: {exc}", code=code) from None
    except RecursionError:
        # A hostile file (thousands of nested brackets) must be an input error, not a crash.
        raise MalformedInput(f"{what} is nested too deeply to be a {what}", code=code) from None
