"""Columnar batches: construction, errors, row operations, string columns,
Arrow and pickle."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

import timely
from timely import Batch, BatchError
from timely.container import StringColumn


def sample() -> Batch:
    return Batch(
        {
            "key": np.array([3, 1, 2, 5], dtype=np.int64),
            "value": np.array([0.5, 1.5, 2.5, 3.5]),
            "name": np.array(["c", "a", "b", "e"], dtype=object),
        }
    )


def same(a: Batch, b: Batch) -> bool:
    """Equal names, dtypes and values (``==`` does not compare dtypes)."""
    return a == b and all(a[n].dtype == b[n].dtype for n in a.names)


# -- construction and access ---------------------------------------------------


def test_exported_from_the_package():
    assert timely.Batch is Batch
    assert timely.BatchError is BatchError
    assert issubclass(BatchError, timely.TimelyError)
    assert issubclass(BatchError, ValueError)


def test_access():
    b = sample()
    assert len(b) == 4
    assert b.names == ("key", "value", "name")
    assert list(b.columns) == ["key", "value", "name"]
    assert b["key"].tolist() == [3, 1, 2, 5]
    assert "value" in b and "missing" not in b
    assert b.nbytes == sum(c.nbytes for c in b.columns.values())
    assert repr(b) == "Batch(4 rows; key: int64, value: float64, name: object)"
    with pytest.raises(TypeError):
        hash(b)


def test_columns_come_from_a_mapping_and_keywords():
    b = Batch({"a": [1, 2]}, b=np.array([True, False]))
    assert b.names == ("a", "b")
    assert b["a"].dtype.kind == "i"
    assert b["b"].dtype == np.bool_
    column = np.arange(3)
    assert Batch(x=column)["x"] is column  # an ndarray is taken, not copied


def test_empty_batches():
    assert len(Batch()) == 0 and Batch().names == ()
    assert len(Batch(x=np.zeros(0))) == 0
    assert not Batch(x=np.zeros(0))
    assert Batch() == Batch()


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(BatchError, match=r"'b' has 3 rows, the others 2"):
        Batch(a=[1, 2], b=[1, 2, 3])


def test_columns_are_one_dimensional():
    with pytest.raises(BatchError, match=r"'m'.*1-D"):
        Batch(m=np.zeros((2, 2)))
    with pytest.raises(BatchError, match=r"'s'.*1-D"):
        Batch(s=np.int64(5))


def test_column_names_are_str():
    with pytest.raises(BatchError, match="str"):
        Batch({1: [1, 2]})


def test_a_missing_column_is_named():
    b = sample()
    with pytest.raises(BatchError, match=r"no column 'nope'.*'key', 'value', 'name'"):
        b["nope"]
    with pytest.raises(BatchError, match="'gone'"):
        b.select(["key", "gone"])


# -- rows -------------------------------------------------------------------------


def test_filter():
    b = sample()
    got = b.filter(b["key"] > 1)
    assert got.to_records() == [(3, 0.5, "c"), (2, 2.5, "b"), (5, 3.5, "e")]
    assert len(b.filter(np.zeros(4, dtype=bool))) == 0
    assert b.filter([True, False, False, False]).to_records() == [(3, 0.5, "c")]


@pytest.mark.parametrize(
    "mask",
    [
        np.array([1, 0, 1, 0]),  # not bool
        np.array([True, False]),  # too short
        np.ones((4, 1), dtype=bool),  # not 1-D
    ],
)
def test_a_bad_mask_is_refused(mask):
    with pytest.raises(BatchError, match="mask"):
        sample().filter(mask)


def test_take_reorders_and_repeats():
    b = sample()
    got = b.take(np.array([3, 0, 0]))
    assert got.to_records() == [(5, 3.5, "e"), (3, 0.5, "c"), (3, 0.5, "c")]
    assert len(b.take(np.array([], dtype=np.int64))) == 0
    assert b.select([]).take([0, 1, 2]).names == ()
    assert len(b.select([]).take([0, 1, 2])) == 3


def test_slice_is_a_view():
    b = sample()
    part = b.slice(1, 3)
    assert part.to_records() == [(1, 1.5, "a"), (2, 2.5, "b")]
    for name in b.names:
        assert np.shares_memory(part[name], b[name])
    assert b.slice(-2, 100).to_records() == b.take([2, 3]).to_records()
    assert len(b.slice(3, 1)) == 0
    assert len(b.slice(0, 0)) == 0


def test_concat():
    b = sample()
    whole = Batch.concat([b.slice(0, 1), b.slice(1, 1), b.slice(1, 4)])
    assert same(whole, b)
    assert Batch.concat([b]) is b
    assert Batch.concat([]) == Batch()
    assert Batch.concat(iter([b, b]))["key"].tolist() == [3, 1, 2, 5] * 2
    with pytest.raises(BatchError, match="concatenate"):
        Batch.concat([b, b.select(["value", "key", "name"])])


def test_select_rename_with_columns():
    b = sample()
    assert b.select(["value", "key"]).names == ("value", "key")
    assert b.select(["value"])["value"] is b["value"]
    renamed = b.rename({"key": "k"})
    assert renamed.names == ("k", "value", "name")
    assert renamed["k"] is b["key"]
    swapped = b.rename({"key": "value", "value": "key"})
    assert swapped["key"] is b["value"] and swapped["value"] is b["key"]
    more = b.with_columns(double=b["key"] * 2)
    assert more["double"].tolist() == [6, 2, 4, 10]
    assert b.names == ("key", "value", "name")  # the original is unchanged
    replaced = b.with_columns({"key": np.zeros(4, dtype=np.int64)})
    assert replaced.names == b.names and replaced["key"].tolist() == [0] * 4
    with pytest.raises(BatchError, match="rows"):
        b.with_columns(short=[1, 2])


def test_rename_onto_an_existing_name_is_refused():
    b = Batch(a=[1], b=[2])
    with pytest.raises(BatchError, match="'b'"):
        b.rename({"a": "b"})


def test_equality():
    b = sample()
    assert b == sample() and b.equals(sample())
    assert b != b.select(["value", "key", "name"])
    assert b != b.slice(0, 3)
    assert b != b.with_columns(key=np.array([3, 1, 2, 6]))
    assert b != [(3, 0.5, "c")]
    assert not b.equals(None)


def test_to_records():
    assert sample().to_records()[0] == (3, 0.5, "c")
    assert type(sample().to_records()[0][0]) is int
    assert Batch().to_records() == []


# -- Arrow -----------------------------------------------------------------------


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_from_arrow_views_numeric_and_string_columns():
    record_batch = pa.RecordBatch.from_arrays(
        [
            pa.array([1, 2, 3], type=pa.int64()),
            pa.array([0.5, 1.5, 2.5], type=pa.float32()),
            pa.array(["x", "yy", "z"]),
            pa.array([True, False, True]),
        ],
        names=["i", "f", "s", "b"],
    )
    b = Batch.from_arrow(record_batch)
    assert b.names == ("i", "f", "s", "b")
    assert len(b) == 3
    for k, name in enumerate(["i", "f"]):
        column = b[name]
        assert not column.flags.writeable  # a view of Arrow's buffer
        assert address(column) == record_batch.column(k).buffers()[1].address
    assert b["i"].dtype == np.int64 and b["f"].dtype == np.float32
    strings = b.column("s")
    assert isinstance(strings, StringColumn) and not strings.decoded
    _, offsets, data = record_batch.column(2).buffers()
    assert address(strings.offsets) == offsets.address  # Arrow's buffers, not copies
    assert address(strings.data) == data.address
    assert b["s"].dtype == object and b["s"].tolist() == ["x", "yy", "z"]
    assert strings.decoded and b["s"] is b["s"]  # decoded once, then cached
    assert b["b"].dtype == np.bool_ and b["b"].tolist() == [True, False, True]


def test_from_arrow_of_a_table_of_several_chunks():
    chunk = pa.RecordBatch.from_arrays([pa.array([1, 2]), pa.array(["a", "b"])], names=["k", "s"])
    table = pa.Table.from_batches([chunk, chunk, chunk])
    b = Batch.from_arrow(table)
    assert b.to_records() == [(1, "a"), (2, "b")] * 3


def test_from_arrow_with_nulls():
    record_batch = pa.RecordBatch.from_arrays(
        [pa.array([1.0, None]), pa.array(["a", None])], names=["f", "s"]
    )
    b = Batch.from_arrow(record_batch)
    # a null stays a null: masked in numpy, null again in Arrow (never NaN)
    assert b["f"].mask.tolist() == [False, True] and b["f"][0] == 1.0
    assert b["s"].tolist() == ["a", None]
    assert b.to_arrow().to_pylist() == [{"f": 1.0, "s": "a"}, {"f": None, "s": None}]
    taken = Batch.concat([b.take(np.array([1])), Batch({"f": [2.0], "s": ["b"]})])
    assert taken.to_arrow().column("f").to_pylist() == [None, 2.0]


def test_arrow_columns_cross_processes_as_arrow():
    import pickle

    from timely.container import ArrowColumn
    from timely.container.serialize import column_parts

    kinds = [pa.array([[1, 2], None]), pa.array([{"a": 1}, None]),
             pa.array([b"x", None]), pa.array([1, None], pa.int64())]
    b = Batch.from_arrow(pa.RecordBatch.from_arrays(kinds, names=["l", "s", "b", "i"]))
    assert all(type(c) is ArrowColumn for c in b.columns.values())
    assert column_parts(b.column("l")) is None          # the wire pickles it whole
    assert pickle.loads(pickle.dumps(b)).equals(b)
    assert b.slice(1, 2).to_arrow().to_pylist() == [{"l": None, "s": None, "b": None, "i": None}]


def test_to_arrow_shares_numeric_buffers():
    b = Batch(
        x=np.arange(5, dtype=np.int32),
        f=np.linspace(0, 1, 5),
        s=np.array(["a", "b", "c", "d", "e"], dtype=object),
    )
    record_batch = b.to_arrow()
    assert record_batch.schema.names == ["x", "f", "s"]
    assert record_batch.schema.field("x").type == pa.int32()
    assert record_batch.schema.field("s").type == pa.string()
    assert record_batch.column(0).buffers()[1].address == address(b["x"])
    assert record_batch.column(1).buffers()[1].address == address(b["f"])
    assert record_batch.column(2).to_pylist() == ["a", "b", "c", "d", "e"]
    strings = Batch(s=["a", "bc"]).to_arrow().column(0)
    assert strings.type == pa.string() and strings.to_pylist() == ["a", "bc"]


def test_to_arrow_casts_to_a_schema():
    b = Batch(
        x=np.arange(3, dtype=np.int32),
        s=np.array(["a", "b", "c"], dtype=object),
        dropped=np.zeros(3),
    )
    schema = pa.schema([("s", pa.large_string()), ("x", pa.int64())])
    record_batch = b.to_arrow(schema)
    assert record_batch.schema == schema
    assert record_batch.column(0).to_pylist() == ["a", "b", "c"]
    assert record_batch.column(1).to_pylist() == [0, 1, 2]


def test_arrow_round_trip():
    b = Batch(
        k=np.array([5, -1, 7], dtype=np.int64),
        v=np.array([1.0, 2.0, 3.0]),
        u=np.array([1, 2, 3], dtype=np.uint16),
        s=np.array(["p", "q", "r"], dtype=object),
    )
    assert same(Batch.from_arrow(b.to_arrow()), b)


# -- pickling ------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_round_trip(protocol):
    b = sample().with_columns(
        when=np.array(["2024-01-01"] * 4, dtype="M8[s]"),
        raw=np.array([b"a", b"bc", b"", b"d"], dtype="S2"),
    )
    back = pickle.loads(pickle.dumps(b, protocol=protocol))
    assert type(back) is Batch
    assert same(back, b)
    assert back.names == b.names


def test_pickle_keeps_the_length_of_a_batch_without_columns():
    rows = sample().select([])
    back = pickle.loads(pickle.dumps(rows))
    assert len(back) == 4 and back.names == ()


def test_pickle_protocol_5_sends_columns_out_of_band():
    b = Batch(x=np.arange(1000, dtype=np.int64))
    buffers = []
    data = pickle.dumps(b, protocol=5, buffer_callback=buffers.append)
    assert buffers and len(data) < b.nbytes
    back = pickle.loads(data, buffers=buffers)
    assert same(back, b)


# -- string columns -------------------------------------------------------------------


def test_a_list_of_text_is_stored_as_a_string_column():
    words = np.array(["é", "", "abc"], dtype=object)
    b = Batch(o=words, listed=["x", "yy", "z"], fixed=np.array(["p", "q", "r"]))
    assert isinstance(b.column("listed"), StringColumn)
    assert b["listed"].tolist() == ["x", "yy", "z"] and b["listed"].dtype == object
    assert b.column("o") is words and b["o"] is words  # an ndarray is taken as it is
    assert b.column("fixed").dtype == np.dtype("<U1")
    assert b.columns["listed"] is b.column("listed")
    assert b.nbytes == 3 * 8 + (4 * 4 + 4) + 3 * 4  # pointers; offsets and UTF-8; UCS-4
    assert isinstance(Batch(t=("a", "b")).column("t"), StringColumn)
    assert Batch(s=["a", "\ud800"]).column("s").dtype.kind == "U"  # no UTF-8: numpy's U


@pytest.mark.parametrize(
    "values",
    [
        np.array(["a", "b"], dtype=object),
        np.array(["a", None], dtype=object),
        np.array(["a", 1], dtype=object),
        np.array(["a", "\ud800"], dtype=object),  # a lone surrogate has no UTF-8
        np.array([b"a"], dtype=object),
        np.zeros(0, dtype=object),
    ],
)
def test_other_object_columns_stay_objects(values):
    b = Batch(o=values)
    assert b.column("o") is values and b["o"] is values


def test_string_column_rows():
    b = Batch(k=np.arange(5), s=["a", "bb", "", "dddd", "é"])
    assert b.take([4, 0, 0]).to_records() == [(4, "é"), (0, "a"), (0, "a")]
    assert b.filter(b["k"] % 2 == 0).to_records() == [(0, "a"), (2, ""), (4, "é")]
    part = b.slice(1, 4)
    assert part.to_records() == [(1, "bb"), (2, ""), (3, "dddd")]
    assert np.shares_memory(part.column("s").data, b.column("s").data)
    whole = Batch.concat([b.slice(0, 2), b.slice(2, 5)])
    assert whole == b and isinstance(whole.column("s"), StringColumn)
    assert not Batch(s=StringColumn([0, 1], b"x")).take([0, 0]).column("s").decoded


def test_concat_of_string_and_object_columns():
    strings = Batch(s=["a", "b"])
    objects = Batch(s=np.array(["c", None], dtype=object))
    empty = Batch(s=np.zeros(0))
    both = Batch.concat([strings, objects])
    assert both.column("s").dtype == object and both["s"].tolist() == ["a", "b", "c", None]
    assert isinstance(Batch.concat([strings, empty, strings]).column("s"), StringColumn)
    assert Batch.concat([strings, empty])["s"].tolist() == ["a", "b"]


def test_equality_of_string_columns():
    a = Batch(s=["x", "y"])
    assert a == Batch(s=np.array(["x", "y"], dtype=object))
    assert a == Batch(s=StringColumn(np.array([0, 1, 2]), b"xy"))  # int64 offsets
    assert a != Batch(s=["x", "z"])
    assert a == Batch(s=["w", "x", "y"]).slice(1, 3)


def test_arrow_round_trip_of_strings():
    table = pa.table({"s": pa.array(["a", "bc", "", "ключ"]),
                      "l": pa.array(["x", "y", "z", "w"], type=pa.large_string())})
    b = Batch.from_arrow(table.slice(1))
    assert b.column("s").type == "string" and b.column("l").type == "large_string"
    back = b.to_arrow()
    assert back.schema == table.schema
    back.validate(full=True)
    assert back.to_pydict() == {"s": ["bc", "", "ключ"], "l": ["y", "z", "w"]}
    assert not b.column("s").decoded and not b.column("l").decoded
    schema = pa.schema([("s", pa.large_string()), ("l", pa.string())])
    assert b.to_arrow(schema).schema == schema


def test_pickle_of_a_sliced_string_column_sends_its_rows_only():
    b = Batch(s=["x" * 1000, "a", "b", "y" * 1000]).slice(1, 3)
    data = pickle.dumps(b, protocol=5)
    assert len(data) < 500
    back = pickle.loads(data)
    assert back == b and back.column("s").offsets.tolist() == [0, 1, 2]
