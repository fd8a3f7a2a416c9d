"""``aggregate`` by several key columns (Spark's ``groupBy(a, b)``): random
rows of sparse 64-bit integers, text and nulls in the key columns, sent by
one worker in several messages and times, against a plain dict oracle at 1,
2 and 3 workers, with and without the combiner; and misuse named."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely import AggregateError, Batch

INTS = st.sampled_from([-2**63, -1, 0, 7, 2**63 - 1, 123456789012345])
TEXT = st.sampled_from(["", "a", "zé", "日本"])
ROWS = st.lists(st.tuples(st.one_of(st.none(), INTS), TEXT, st.integers(-50, 50)),
                max_size=40)


def run(times: list, workers: int, combine: bool) -> list:
    def work(worker):
        out: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            (stream.aggregate(["a", "b"], "v", how=("count", "sum", "min"), combine=combine)
             .inspect_batch(lambda t, b: out.extend(
                 (t, a, k, c, s, m) for a, k, c, s, m in zip(
                     b["a"].tolist(), b["b"].tolist(), b["count"].tolist(),
                     b["sum"].tolist(), b["min"].tolist()))))
        if worker.index == 0:                     # every row arrives at one worker
            for epoch, rows in enumerate(times):
                for lo in range(0, len(rows), 7):
                    part = rows[lo:lo + 7]
                    a = np.ma.masked_array([0 if r[0] is None else r[0] for r in part],
                                           mask=[r[0] is None for r in part], dtype=np.int64)
                    handle.send_batch(Batch(a=a, b=np.array([r[1] for r in part], dtype=object),
                                            v=np.array([r[2] for r in part], dtype=np.int64)))
                handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return out

    return [row for part in timely.execute(work, workers=workers) for row in part]


def oracle(times: list) -> list:
    groups: dict = collections.defaultdict(list)
    for epoch, rows in enumerate(times):
        for a, b, v in rows:
            groups[(epoch, a, b)].append(v)
    return sorted(((*k, len(vs), sum(vs), min(vs)) for k, vs in groups.items()), key=repr)


@settings(max_examples=capped(10), deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=3), st.sampled_from([1, 2, 3]), st.booleans())
def test_several_key_columns_follow_the_oracle(times, workers, combine):
    got = run(times, workers, combine)
    assert sorted(got, key=repr) == oracle(times)
    assert len({row[:3] for row in got}) == len(got)        # one row per group and time


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_several_key_columns_keep_their_types(workers):
    def work(worker):
        out: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.aggregate(("day", "user"), how="count").inspect_batch(
                lambda t, b: out.append(b))
        if worker.index == 0:
            handle.send_batch(Batch(day=np.array(["2024-01-01", "2024-01-01", "2024-01-02"],
                                                 dtype="datetime64[D]"),
                                    user=np.array(["ann", "bob", "ann"], dtype=object)))
        handle.close()
        worker.drain()
        return [(b.names, str(b.column("day").dtype), sorted(b.to_records())) for b in out]

    parts = [p for w in timely.execute(work, workers=workers) for p in w]
    rows = sorted(r for _, _, records in parts for r in records)
    assert [str(d) for d, _, _ in rows] == ["2024-01-01", "2024-01-01", "2024-01-02"]
    assert [(u, c) for _, u, c in rows] == [("ann", 1), ("bob", 1), ("ann", 1)]
    assert all(names == ("day", "user", "count") and dtype == "datetime64[D]"
               for names, dtype, _ in parts)


def test_misuse_of_several_keys_is_named():
    def build(keys, value="v", how="sum"):
        def work(worker):
            with worker.dataflow() as scope:
                _, stream = scope.new_input()
                stream.aggregate(keys, value, how=how)
        timely.execute_directly(work)

    with pytest.raises(AggregateError, match="name a column twice"):
        build(["a", "a"])
    with pytest.raises(AggregateError, match="a column name or a list of them"):
        build(["a", 3])
    with pytest.raises(AggregateError, match="'sum' has the name of an aggregate"):
        build(["a", "sum"])
    with pytest.raises(AggregateError, match="need a value column"):
        build(["a", "b"], value=None)
