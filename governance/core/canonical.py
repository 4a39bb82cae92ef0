"""Canonical JSON, the only serialiser of capsules.

UTF-8, keys sorted by code point, no insignificant whitespace, no floats,
non-ASCII kept as UTF-8, exactly one trailing LF. ``loads`` is strict in the
same spirit: duplicate keys, floats and NaN are refused rather than silently
normalised, so a file that re-canonicalises to itself really is canonical.

A part that repeats across documents can be serialised once: ``fragment``
checks and encodes it, and ``dumps`` writes a document holding fragments by
joining their bytes in the order the encoder itself would write them, so the
bytes are those of the same document holding the plain values.
"""

from __future__ import annotations

import json
from itertools import repeat
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


# The one setting of the serialiser: plain values and fragments alike are
# written by this encoder (what ``json.dumps`` with these arguments builds).
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
# Only ``fragment`` holds this, so no other code can make a Fragment by mistake.
_MINT = object()


class Fragment:
    """A JSON value already written by this module (``fragment``): its canonical
    bytes, without the final LF. A document may hold fragments wherever it holds
    values; ``dumps`` writes their bytes where the value's would be, so a part
    that repeats across documents (an excerpt, a whole file) is checked and
    encoded once."""

    __slots__ = ("data",)
    data: bytes

    def __init__(self, data: bytes, mint: object) -> None:
        if mint is not _MINT:
            raise TypeError("a Fragment is made by canonical.fragment alone")
        object.__setattr__(self, "data", data)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Fragment cannot be changed")

    def __repr__(self) -> str:
        return f"Fragment({self.data!r})"


def _check(value: Any) -> bool:
    """Refuse a float or a key that is no string anywhere in ``value``; True when
    ``value`` holds a Fragment. One iterative pass with no path bookkeeping (a
    capsule has thousands of values and is dumped three times a build); the
    path is found only to word a refusal. A fragment was checked when made."""
    stack = [value]
    composed = False
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int:
            continue
        if kind is Fragment:
            composed = True
        elif isinstance(item, float):
            break
        elif isinstance(item, dict):
            if not all(map(isinstance, item, repeat(str))):
                break
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    else:
        return composed
    raise ValueError(_where_float(value) or "floats are not allowed in canonical JSON")


# The encoder's bytes of each key of a composed object (a capsule's few keys,
# again and again), with its ":"; cleared when full, so any keys stay bounded.
_KEYS: dict[str, bytes] = {}
_MAX_KEYS = 1024


def _write(value: Any, out: list[bytes]) -> None:
    # ``value`` passed ``_check`` and holds a fragment: write its containers as
    # the encoder would (items in sorted key order, no whitespace) down to the
    # fragments, every other value and every key with the encoder itself.
    if isinstance(value, dict):
        out.append(b"{")
        for key, item in sorted(value.items()):
            written = _KEYS.get(key)
            if written is None:
                if len(_KEYS) >= _MAX_KEYS:
                    _KEYS.clear()
                written = _KEYS[key] = _ENCODE(key).encode("utf-8") + b":"
            out.append(written)
            _write_item(item, out)
            out.append(b",")
        close = b"}"
    else:
        out.append(b"[")
        for item in value:
            _write_item(item, out)
            out.append(b",")
        close = b"]"
    # The last item's separator becomes the closing bracket.
    if value:
        out[-1] = close
    else:
        out.append(close)


def _write_item(item: Any, out: list[bytes]) -> None:
    kind = type(item)
    if kind is Fragment:
        out.append(item.data)
    elif kind is not str and isinstance(item, dict | list | tuple) and _check(item):
        _write(item, out)
    else:
        out.append(_ENCODE(item).encode("utf-8"))


def _serialise(value: Any, end: bytes) -> bytes:
    if not _check(value):
        return _ENCODE(value).encode("utf-8") + end
    if type(value) is Fragment:
        return value.data + end
    out: list[bytes] = []
    _write(value, out)
    out.append(end)
    return b"".join(out)


def dumps(value: Any) -> bytes:
    """The canonical bytes of ``value``, which may hold fragments."""
    return _serialise(value, b"\n")


def fragment(value: Any) -> Fragment:
    """``value`` checked and serialised once, to be placed in documents that
    ``dumps`` writes: the bytes are exactly those ``value`` has there."""
    return Fragment(_serialise(value, b""), _MINT)


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
