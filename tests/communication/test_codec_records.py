"""Lists of records in frames between workers: the common shapes travel by
the compiled tagged encoding (one raw segment, not pickled), any record of
another type inside them pickled alone, lists of other records pickled
whole; every list comes back equal, with its types."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timely.communication.codec import FrameError, Header, decode, encode
from timely.container.records import decode_records

LEAVES = (st.integers() | st.floats(allow_nan=False) | st.text() | st.binary() | st.none()
          | st.booleans())
RECORDS = st.recursive(LEAVES, lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


def round_trip(messages):
    return decode(b"".join(bytes(memoryview(p).cast("B")) for p in encode(messages)))


def typed(x):
    """x with the type of every part, so that 1 == 1.0 == True do not pass."""
    if isinstance(x, (tuple, list)):
        return (type(x), [typed(y) for y in x])
    if isinstance(x, dict):
        return (dict, [(typed(k), typed(v)) for k, v in x.items()])
    return (type(x), repr(x))


@given(st.lists(RECORDS, min_size=1, max_size=20), st.integers(0, 2**64 - 1))
def test_records_of_common_shapes_come_back_exactly(records, time):
    ((identifier, (t, back)),) = round_trip([(7, (time, records))])
    assert identifier == 7 and t == time
    assert typed(back) == typed(records)


def envelope(messages):
    header = Header(b"".join(bytes(p) for p in encode(messages)))
    if header.tagged:
        (entries,), _ = decode_records(header.envelope, 0, len(header.envelope), 1, False)
        return entries
    return pickle.loads(header.envelope, buffers=[bytearray(1 << 16)] * 64)


def test_common_shapes_travel_tagged_and_others_pickled():
    words = [("word", 1), ("other", 2)]
    odd = [Fraction(1, 3), "x"]
    entries = envelope([(1, (0, words)), (2, (0, odd)), (3, (0, []))])
    assert [e[0] for e in entries] == [2, 0, 0]      # tagged records, inline, inline
    assert entries[0][3] == 2


def test_a_record_of_another_type_inside_a_tagged_list_is_pickled_alone():
    records = ["x", Fraction(1, 3), (1, {2: Fraction(2, 3)})]
    ((_, (_, back)),) = round_trip([(1, (5, records))])
    assert back == records and type(back[1]) is Fraction


def test_corrupt_tagged_records_are_a_frame_error():
    parts = encode([(1, (0, ["abc", "def"]))])
    frame = bytearray(b"".join(bytes(p) for p in parts))
    at = frame.rindex(b"def")
    frame[at - 5] = 0xFF                      # the second record's tag
    with pytest.raises(FrameError, match="unknown record tag"):
        decode(frame)
