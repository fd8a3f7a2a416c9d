"""The compiled tagged encoding of records against its oracle
(``tests/reference/records.py``): the same bytes for every record, exact
round trips, and checked decoding of bad bytes (ValueError with an offset,
never a crash, no pickle loaded unless allowed)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference import records as ref
from timely.container.records import MAX_DEPTH, decode_records, encode_records

LEAVES = (st.integers() | st.floats() | st.text() | st.binary() | st.none() | st.booleans())
RECORDS = st.recursive(
    LEAVES, lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3), max_leaves=10)


def same(a, b) -> bool:
    """Equal with equal types, NaN equal to NaN bit for bit."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@given(st.lists(RECORDS, max_size=10))
def test_bytes_are_the_oracles_and_records_come_back(records):
    out = bytearray(b"head")
    encode_records(records, out, False)
    assert bytes(out) == b"head" + b"".join(ref.encode(r) for r in records)
    back, end = decode_records(out, 4, len(out), len(records), False)
    assert end == len(out) and same(back, records)


@given(st.binary(max_size=64), st.integers(0, 8), st.booleans())
def test_any_bytes_decode_or_fail_with_an_offset(data, n, allow_pickle):
    try:
        records, end = decode_records(data, 0, len(data), n, False)
    except ValueError as error:
        message, offset = error.args
        assert isinstance(message, str) and 0 <= offset <= len(data)
    else:
        assert len(records) == n and end <= len(data)


def test_pickles_only_when_allowed():
    out = bytearray()
    with pytest.raises(TypeError, match="Fraction"):
        encode_records(["a", Fraction(1, 2)], out, False)
    assert out == b""                           # nothing of a failed call is kept
    encode_records([Fraction(1, 2)], out, True)
    assert decode_records(out, 0, len(out), 1, True)[0] == [Fraction(1, 2)]
    with pytest.raises(ValueError, match="will not load") as info:
        decode_records(out, 0, len(out), 1, False)
    assert info.value.args[1] == 0


def test_nesting_is_bounded_both_ways():
    deep = 0
    for _ in range(MAX_DEPTH):
        deep = [deep]
    with pytest.raises(TypeError, match="nests deeper"):
        encode_records([deep], bytearray(), False)
    data = b"l\x01\x00\x00\x00" * (MAX_DEPTH + 1) + b"N"
    with pytest.raises(ValueError, match="nest deeper"):
        decode_records(data, 0, len(data), 1, False)


@pytest.mark.parametrize("data, words", [
    (b"s\x05\x00\x00\x00ab", "a str of 5 bytes runs past"),
    (b"s\x02\x00\x00\x00\xff\xfe", "not UTF-8"),
    (b"i\x01\x02", "an int runs past"),
    (b"t\xff\xff\xff\xff", "a container of 4294967295 items runs past"),
    (b"d\x01\x00\x00\x00l\x00\x00\x00\x00N", "unhashable type list"),
    (b"Z", "unknown record tag 0x5a"),
])
def test_malformed_records_name_the_problem(data, words):
    with pytest.raises(ValueError, match=words):
        decode_records(data, 0, len(data), 1, False)


def test_a_count_the_bytes_cannot_hold_is_refused_first():
    with pytest.raises(ValueError, match="cannot fit"):
        decode_records(b"NN", 0, 2, 3, False)
