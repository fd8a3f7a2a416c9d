"""Columns across workers at 1, 2 and 3 workers: Arrow strings through an
exchange come back as the same strings without a Python str made on the way,
and keys of every dtype reach the worker their records reach."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import timely
from timely import Batch
from timely.capture.event import Messages
from timely.container import StringColumn
from timely.container.routing import route

WORDS = ["", "a", "timely", "dataflow", "ключ", "鍵", "emoji 🦀", "a\x00b",
         *(f"w{i}" * (1 + i % 4) for i in range(200))]


def arrow_input() -> pa.RecordBatch:
    return pa.record_batch({
        "word": pa.array(WORDS, type=pa.string()),
        "long": pa.array([w[::-1] for w in WORDS], type=pa.large_string()),
        "n": pa.array(range(len(WORDS)), type=pa.int64()),
    })


def test_arrow_strings_round_trip_through_an_exchange(workers):
    source = arrow_input()

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.exchange("word").capture()
        if worker.index == 0:
            handle.send_batch(Batch.from_arrow(source.slice(0, 100)))
        if worker.index == worker.peers - 1:
            handle.send_batch(Batch.from_arrow(source.slice(100)))
        handle.close()
        worker.drain()
        out = []
        for event in capture.events:
            if type(event) is Messages:
                columns = [event.data.column(n) for n in ("word", "long")]
                assert all(isinstance(c, StringColumn) and not c.decoded for c in columns)
                out.append(event.data.to_arrow())
        return worker.index, out

    rows = []
    for index, batches in timely.execute(work, workers=workers):
        for record_batch in batches:
            assert record_batch.schema == source.schema
            record_batch.validate(full=True)
            words = record_batch.column(0)
            assert set(route(StringColumn.from_arrow(words), workers).tolist()) <= {index}
            rows += zip(record_batch.column(2).to_pylist(), words.to_pylist(),
                        record_batch.column(1).to_pylist())
    assert sorted(rows) == [(n, w, w[::-1]) for n, w in enumerate(WORDS)]


def key_columns() -> dict:
    """A key column of every kind, 60 rows each, with the record each row carries."""
    rng = np.random.default_rng(9)
    ints = rng.integers(-(2**40), 2**40, 60)
    floats = np.concatenate([rng.normal(size=30) * 1e3, np.round(rng.normal(size=30) * 50)])
    floats[:3] = [np.nan, np.inf, 2.0**70]
    words = [WORDS[i] for i in rng.integers(0, len(WORDS), 60)]
    return {
        "int": ints,
        "uint": ints.astype(np.uint64),
        "float": floats,
        "float32": floats.astype(np.float32),
        "bool": ints % 2 == 0,
        "time": ints.astype("M8[ms]"),
        "bytes": np.array([w.encode() for w in words], dtype="S40"),
        "fixed": np.array([w.rstrip("\x00") for w in words], dtype="U12"),
        "string": StringColumn.from_strings(words),
    }


def records_of(column) -> list:
    if isinstance(column, np.ndarray) and column.dtype.kind in "mM":
        return list(column)
    return column.tolist()


def test_every_key_kind_goes_where_its_records_go(workers):
    keys = key_columns()

    def work(worker):
        with worker.dataflow() as scope:
            inputs = {}
            captures = {}
            for name in keys:
                batch_handle, batches = scope.new_input()
                record_handle, records = scope.new_input()
                inputs[name] = (batch_handle, record_handle)
                captures[name] = (batches.exchange("key").capture(),
                                  records.exchange(lambda r: r[0]).capture())
        if worker.index == 0:
            for name, column in keys.items():
                batch_handle, record_handle = inputs[name]
                batch_handle.send_batch(Batch(key=column, row=np.arange(len(column))))
                record_handle.send_batch([(k, i) for i, k in enumerate(records_of(column))])
        for batch_handle, record_handle in inputs.values():
            batch_handle.close()
            record_handle.close()
        worker.drain()
        got = {}
        for name, (by_column, by_record) in captures.items():
            rows = sorted(r for e in by_column.events if type(e) is Messages
                          for r in e.data["row"].tolist())
            records = sorted(i for _, data in by_record.extract() for _, i in data)
            got[name] = (rows, records)
        return got

    seen = {name: [] for name in keys}
    for got in timely.execute(work, workers=workers):
        for name, (rows, records) in got.items():
            assert rows == records, name
            seen[name] += rows
    for name, column in keys.items():
        assert sorted(seen[name]) == list(range(len(column))), name


def test_aggregate_by_a_string_column_never_decodes_it(workers):
    words = StringColumn.from_strings(WORDS * 3)
    plain = StringColumn(words.offsets, words.data)          # no cached str

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.aggregate("word", "n", how=("count", "sum")).capture()
        if worker.index == 0:
            handle.send_batch(Batch(word=plain, n=np.arange(len(plain))))
        handle.close()
        worker.drain()
        out = []
        for event in capture.events:
            if type(event) is Messages:
                column = event.data.column("word")
                assert isinstance(column, StringColumn) and not column.decoded
                out += event.data.to_records()
        return out

    results = [row for rows in timely.execute(work, workers=workers) for row in rows]
    n = len(WORDS)
    expected = {w: (3, 3 * i + 3 * n) for i, w in enumerate(WORDS)}
    assert {w: (c, s) for w, c, s in results} == expected
    assert len(results) == len(expected)
