"""Helpers of the container tests (and of the tests of what carries
containers): object arrays, Hypothesis strategies for columns of every kind,
and a dict oracle of per-key aggregates."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from timely.container import StringColumn

RAW_DTYPES = [
    np.dtype(d)
    for d in ["i1", "i2", "i4", "i8", ">i4", "u1", "u2", "u4", "u8", ">u8", "?", "f2", "f4",
              "f8", ">f8", "c8", "c16", "M8[ns]", "M8[D]", ">M8[s]", "m8[ms]", "S1", "S7",
              "U1", "U5", ">U3"]
]


def object_array(values) -> np.ndarray:
    """A 1-D object array holding ``values`` as they are (tuples stay elements)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


@st.composite
def raw_columns(draw, n):
    """A numpy column of ``n`` rows of any dtype the serializer writes raw."""
    return draw(hnp.arrays(draw(st.sampled_from(RAW_DTYPES)), n))


@st.composite
def string_columns(draw, n):
    """A StringColumn of ``n`` rows: int32 or int64 offsets, a slice of a
    larger column (offsets that do not start at 0), maybe decoded already."""
    words = draw(st.lists(st.text(max_size=6), min_size=n + 2, max_size=n + 2))
    column = StringColumn.from_strings(words)
    if draw(st.booleans()):
        column = StringColumn(column.offsets.astype(np.int64), column.data)
    if draw(st.booleans()):
        column.to_numpy()
    return column[1 : n + 1]


@st.composite
def object_columns(draw, n):
    """An object column of ``n`` rows mixing str, int and None."""
    values = draw(st.lists(st.one_of(st.text(max_size=5), st.integers(), st.none()),
                           min_size=n, max_size=n))
    return object_array(values)


def oracle(rows) -> dict:
    """``{key: {"count", "sum", "min", "max"}}`` over ``(key, value)`` rows, keys in
    first-arrival order (a dict's own equality and order)."""
    out: dict = {}
    for key, value in rows:
        acc = out.get(key)
        if acc is None:
            out[key] = {"count": 1, "sum": value, "min": value, "max": value}
        else:
            acc["count"] += 1
            acc["sum"] += value
            acc["min"] = min(acc["min"], value)
            acc["max"] = max(acc["max"], value)
    return out
