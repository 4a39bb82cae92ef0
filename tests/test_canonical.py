from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core import canonical
from governance.errors import MalformedInput

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(json_values)
def test_roundtrip_is_identity(value: object) -> None:
    data = canonical.dumps(value)
    assert canonical.loads(data) == value
    assert canonical.dumps(canonical.loads(data)) == data


@given(json_values)
def test_shape_of_canonical_bytes(value: object) -> None:
    data = canonical.dumps(value)
    assert data.endswith(b"\n")
    assert not data.endswith(b"\n\n")
    assert data.count(b"\n") == 1  # newlines inside strings are escaped
    data.decode("utf-8")


@given(st.dictionaries(st.text(), st.integers(), min_size=2))
def test_keys_are_sorted(value: dict[str, int]) -> None:
    parsed = json.loads(canonical.dumps(value), object_pairs_hook=list)
    keys = [k for k, _ in parsed]
    assert keys == sorted(keys)


def test_exact_bytes() -> None:
    assert canonical.dumps({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}\n'.encode()
    assert canonical.dumps("tab\tline\n\x01") == b'"tab\\tline\\n\\u0001"\n'


def test_floats_refused_on_write() -> None:
    with pytest.raises(ValueError, match="floats"):
        canonical.dumps({"x": 1.5})


@pytest.mark.parametrize(
    "data",
    [b'{"a":1.0}\n', b'{"a":NaN}\n', b'{"a":1,"a":2}\n', b"\xff\n", b"{"],
    ids=["float", "nan", "duplicate-key", "not-utf8", "truncated"],
)
def test_loads_is_strict(data: bytes) -> None:
    with pytest.raises(MalformedInput) as info:
        canonical.loads(data)
    assert info.value.code == "capsule_malformed"


def test_deeply_nested_input_is_malformed_not_a_crash() -> None:
    with pytest.raises(MalformedInput, match="nested too deeply") as info:
        canonical.loads(b"[" * 100_000 + b"]" * 100_000)
    assert info.value.code == "capsule_malformed"


class _Str(str):
    pass


class _Dict(dict):
    pass


_tainted = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3) | st.floats(allow_nan=False)
    | st.builds(_Str, st.text(max_size=3)),
    lambda children: st.lists(children, max_size=4)
    | st.lists(children, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=3) | st.integers(), children, max_size=4)
    | st.dictionaries(st.text(max_size=3), children, max_size=4).map(_Dict),
    max_leaves=15,
)  # fmt: skip


@settings(max_examples=300)
@given(_tainted)
def test_dumps_refuses_exactly_what_holds_a_float_or_a_key_that_is_no_string(
    value: object,
) -> None:
    # The recursive walk that words the refusal is the oracle of the fast check.
    expected = canonical._where_float(value)
    if expected is None:
        data = canonical.dumps(value)
        assert data.endswith(b"\n")
    else:
        with pytest.raises(ValueError, match=re.escape(expected)):
            canonical.dumps(value)


# Keys from a small alphabet collide in prefixes and sort around each other
# (a < a\x00 < ab; code point order, so U+FFFF sorts before an astral character
# although UTF-16 would sort it after); any text besides.
_keys = st.text(alphabet='ab\x00"\\\t\u00e9\uffff\U0001f600', max_size=3) | st.text(max_size=5)
_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(_keys, children, max_size=6)
    ),
    max_leaves=40,
)


def _oracle(value: object) -> bytes:
    # What capsules were always written as: json.dumps with these settings.
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def _composed(value: object, draw: Callable[[st.SearchStrategy[Any]], Any]) -> object:
    """``value`` with some of its values (the whole of it, any part, parts of
    parts) replaced by their fragments, as the builder places cached parts."""
    if isinstance(value, dict):
        value = {key: _composed(item, draw) for key, item in value.items()}
    elif isinstance(value, list | tuple):
        value = type(value)(_composed(item, draw) for item in value)
    return canonical.fragment(value) if draw(st.booleans()) else value


@settings(max_examples=500)
@given(_documents, st.data())
def test_a_document_holding_fragments_has_the_bytes_of_the_plain_document(
    value: object, data: st.DataObject
) -> None:
    composed = _composed(value, data.draw)
    assert canonical.dumps(composed) == canonical.dumps(value) == _oracle(value)
    assert canonical.fragment(composed).data + b"\n" == _oracle(value)


def test_fragments_compose_in_sorted_key_order_with_escapes() -> None:
    inner = canonical.fragment({"z": "é\n", "a": [1, None]})
    document = {"b": inner, "a\x00": "\t", "a": canonical.fragment('"q"'), "": [inner, {}, []]}
    expected = (
        '{"":[{"a":[1,null],"z":"é\\n"},{},[]],"a":"\\"q\\"","a\\u0000":"\\t",'
        '"b":{"a":[1,null],"z":"é\\n"}}\n'
    ).encode()
    assert canonical.dumps(document) == expected
    assert canonical.dumps(canonical.fragment(document)) == expected


@settings(max_examples=300)
@given(_tainted, st.data())
def test_a_document_holding_fragments_is_refused_exactly_as_the_plain_one(
    value: object, data: st.DataObject
) -> None:
    # Only parts that pass the checks can become fragments; the rest of the
    # document is checked when it is written, with the plain document's message.
    def composed(part: object) -> object:
        if isinstance(part, dict):
            part = type(part)({key: composed(item) for key, item in part.items()})
        elif isinstance(part, list | tuple):
            part = type(part)(composed(item) for item in part)
        if canonical._where_float(part) is None and data.draw(st.booleans()):
            return canonical.fragment(part)
        return part

    expected = canonical._where_float(value)
    mixed = composed(value)
    if expected is None:
        assert canonical.dumps(mixed) == _oracle(value)
    else:
        with pytest.raises(ValueError, match=re.escape(expected)):
            canonical.dumps(mixed)


def test_a_fragment_is_checked_when_it_is_made() -> None:
    refusal = "floats are not allowed in canonical JSON (at $.x[1])"
    with pytest.raises(ValueError, match=re.escape(refusal)):
        canonical.fragment({"x": [1, 2.5]})
    with pytest.raises(ValueError, match="object keys must be strings"):
        canonical.fragment({1: "one"})
    with pytest.raises(UnicodeEncodeError):
        canonical.fragment({"lone": "\ud800"})


def test_only_the_serialiser_makes_fragments() -> None:
    with pytest.raises(TypeError, match=re.escape("canonical.fragment")):
        canonical.Fragment(b'"forged"', object())
    made = canonical.fragment([1, "é"])
    assert made.data == '[1,"é"]'.encode()
    with pytest.raises(AttributeError):
        made.data = b'"changed"'
    assert canonical.dumps({"a": made}) == '{"a":[1,"é"]}\n'.encode()


def test_the_memo_of_written_keys_stays_bounded() -> None:
    # Keys of composed objects are remembered; any number of them holds at most
    # _MAX_KEYS, and a key written after the memo was cleared is written alike.
    document = {f"key {i}": canonical.fragment(i) for i in range(3 * canonical._MAX_KEYS)}
    plain = {key: int(part.data) for key, part in document.items()}
    assert canonical.dumps(document) == _oracle(plain)
    assert len(canonical._KEYS) <= canonical._MAX_KEYS
    assert canonical.dumps(document) == _oracle(plain)
