from __future__ import annotations

import json
import re

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


class _Dict(dict):  # type: ignore[type-arg]
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
