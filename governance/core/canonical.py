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


def _where_float(value: Any, where: str = "$") -> str | None:
    # The path of the first float or non-string key, for the message alone.
    if isinstance(value, float):
        return f"floats are not allowed in canonical JSON (at {where})"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"object keys must be strings (at {where})"
            found = _where_float(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _where_float(item, f"{where}[{index}]")
            if found:
                return found
    return None


def _reject_floats(value: Any) -> None:
    # One iterative pass with no path bookkeeping (a capsule has thousands of
    # values and is dumped three times a build); the path is found only to
    # word a refusal.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int:
            continue
        if isinstance(item, float):
            break
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                break
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    else:
        return
    raise ValueError(_where_float(value) or "floats are not allowed in canonical JSON")


def dumps(value: Any) -> bytes:
    _reject_floats(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_float(text: str) -> Any:
    raise ValueError(f"floats are not allowed in canonical JSON ({text})")


def no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def has_surrogate(value: Any) -> bool:
    """True when any string (key or value) holds a lone surrogate, which no
    UTF-8 file can carry. Iterative, and each container is visited once:
    hostile nesting must not recurse, and YAML aliases must not loop."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return True
        elif isinstance(item, dict | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(item.keys() if isinstance(item, dict) else ())
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False


def loads(data: bytes, *, what: str = "capsule") -> Any:
    """Parse strictly; a failure is ``MalformedInput`` with code ``<what>_malformed``."""
    code = f"{what}_malformed"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInput(f"{what} is not valid UTF-8: {exc}", code=code) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=no_duplicate_keys,
            parse_float=_no_float,
            parse_constant=no_constant,
        )
    except ValueError as exc:
        raise MalformedInput(f"{what} is not valid JSON: {exc}", code=code) from None
    except RecursionError:
        raise MalformedInput(f"{what} is nested too deeply", code=code) from None
    # Only an escape can smuggle a lone surrogate into the parsed text.
    if "\\u" in text and has_surrogate(value):
        raise MalformedInput(f"{what} holds a lone surrogate escape (not UTF-8)", code=code)
    return value
