"""Nulls through the columnar operators at 1, 2 and 3 workers, against a
pure-Python reference: a null key routes to worker 0 and is a group of its
own in ``aggregate``; null values are skipped by count/sum/min/max (a group
without values has null ones); ``filter_batch`` drops rows whose mask is
null and keeps the nulls of the rows it keeps; a nested key column raises a
typed error naming it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely import Batch
from timely.capture.event import Messages
from timely.container import ArrowColumn, GroupBy
from timely.container.routing import route, route_nullable, stable_hash
from timely.errors import ColumnarError, RouteError, WorkerFailed

HOW = ("count", "sum", "min", "max")
KEYS = {
    "int": st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2**62, -(2**63)])),
    "str": st.one_of(st.none(), st.sampled_from(["", "a", "ключ", "鍵", "x" * 20])),
    "masked": st.one_of(st.none(), st.integers(-3, 3)),
}
ROWS = st.sampled_from(sorted(KEYS)).flatmap(lambda kind: st.tuples(st.just(kind), st.lists(
    st.tuples(KEYS[kind], st.one_of(st.none(), st.integers(-100, 100)),
              st.one_of(st.none(), st.booleans())), max_size=30)))


def key_column(kind: str, keys: list):
    if kind == "masked":
        return np.ma.masked_array([0 if k is None else k for k in keys],
                                  mask=[k is None for k in keys], dtype=np.int64)
    return ArrowColumn(pa.array(keys, type=pa.int64() if kind == "int" else pa.string()))


def batch_of(kind: str, rows: list) -> Batch:
    keys, values, flags = zip(*rows) if rows else ((), (), ())
    return Batch(key=key_column(kind, list(keys)),
                 value=ArrowColumn(pa.array(list(values), type=pa.int64())),
                 flag=ArrowColumn(pa.array(list(flags), type=pa.bool_())))


def reference(rows: list) -> dict:
    """Spark's ``filter(flag).groupBy(key).agg(count(value), sum, min, max)``."""
    groups: dict = {}
    for key, value, flag in rows:
        if flag:                                    # a null flag keeps no row
            groups.setdefault(key, []).append(value)
    out = {}
    for key, values in groups.items():
        present = [v for v in values if v is not None]
        out[key] = (len(present), sum(present) if present else None,
                    min(present) if present else None, max(present) if present else None)
    return out


def run(kind: str, rows: list, workers: int, combine: bool):
    half = len(rows) // 2

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            kept = stream.filter_batch(lambda b: b["flag"])
            routed = kept.exchange("key").capture()
            totals = kept.aggregate("key", "value", how=HOW, combine=combine).capture()
        if worker.index == 0 and half:
            handle.send_batch(batch_of(kind, rows[:half]))
        if worker.index == worker.peers - 1 and len(rows) > half:
            handle.send_batch(batch_of(kind, rows[half:]))
        handle.close()
        worker.drain()
        batches = [[e.data for e in c.events if type(e) is Messages] for c in (routed, totals)]
        return worker.index, batches

    return timely.execute(work, workers=workers)


@settings(max_examples=capped(20), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.function_scoped_fixture])
@given(data=ROWS, combine=st.booleans())
def test_null_keys_and_values_match_the_reference(workers, data, combine):
    kind, rows = data
    got_rows, got_groups = [], {}
    for index, (routed, totals) in run(kind, rows, workers, combine):
        for batch in routed:
            keys = batch["key"]
            records = batch.to_records()
            for key, _value, flag in records:
                assert flag is True
                # a null key on worker 0; every other where route() sends it
                want = 0 if key is None else int(route(np.array([key], dtype=object),
                                                        workers)[0])
                assert want == index, (key, index)
            got_rows += records
            assert len(keys) == len(batch)
        for batch in totals:
            for key, *aggregates in batch.to_records():
                assert key not in got_groups, f"the group {key!r} came twice"
                got_groups[key] = tuple(aggregates)
    kept = [r for r in rows if r[2]]
    assert sorted(got_rows, key=repr) == sorted(kept, key=repr)
    assert got_groups == reference(rows)


def test_a_null_key_routes_to_worker_zero_on_every_path():
    assert stable_hash(None) == 0
    arrow = ArrowColumn(pa.array([None, 5, None, -7, 2**40], type=pa.int64()))
    masked = np.ma.masked_array([9, 5, 9, -7, 2**40], mask=[1, 0, 1, 0, 0])
    plain = route(np.array([0, 5, 0, -7, 2**40]), 3)
    for keys in (arrow, masked):
        assert route_nullable(keys, 3).tolist() == [0, *plain[1:2], 0, *plain[3:]]
    text = ArrowColumn(pa.array(["a", None, "鍵"]))
    assert route_nullable(text, 5).tolist() == [
        stable_hash("a") % 5, 0, stable_hash("鍵") % 5]
    assert route_nullable(ArrowColumn(pa.nulls(3, pa.int64())), 4).tolist() == [0, 0, 0]


def test_groupby_treats_a_null_key_as_a_group_and_skips_null_values():
    g = GroupBy(HOW)
    g.update(ArrowColumn(pa.array([1, None, 1, 2, None])),
             ArrowColumn(pa.array([5, 6, None, None, None])))
    keys, columns = g.result()
    got = Batch({"key": keys, **columns}).to_records()
    assert got == [(1, 1, 5, 5, 5), (2, 0, None, None, None), (None, 1, 6, 6, 6)]
    # the partials merge to the same answer, also without a count column
    total = GroupBy(("sum", "max"))
    total.merge(keys, {"sum": columns["sum"], "max": columns["max"]})
    total.merge(keys, {"sum": columns["sum"], "max": columns["max"]})
    got = Batch(dict(zip(("key", "sum", "max"), (total.result()[0], *total.result()[1].values()))))
    assert got.to_records() == [(1, 10, 5), (2, None, None), (None, 12, 6)]
    only_nulls = GroupBy(("count",))
    only_nulls.update(ArrowColumn(pa.array([None, None], type=pa.string())))
    keys, columns = only_nulls.result()
    assert keys.type == pa.string() and keys.tolist() == [None]
    assert columns["count"].tolist() == [2]


def test_filter_batch_keeps_nulls_with_the_rows_it_keeps():
    batch = Batch(n=np.arange(4), x=np.ma.masked_array([1.5, 0, -1, 2], mask=[0, 1, 0, 0]),
                  t=ArrowColumn(pa.array(["a", "b", None, "d"])))

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.filter_batch(lambda b: b["n"] != 0).capture()
        handle.send_batch(batch)
        handle.close()
        worker.drain()
        return [e.data for e in capture.events if type(e) is Messages]

    (out,) = timely.execute_directly(work)
    assert out.to_records() == [(1, None, "b"), (2, -1.0, None), (3, 2.0, "d")]
    # a null in the mask keeps no row
    assert batch.filter(batch["x"] > 0)["n"].tolist() == [0, 3]
    assert batch.filter(ArrowColumn(pa.array([True, None, True, False])))["n"].tolist() == [0, 2]


NESTED = {
    "struct": pa.array([{"a": 1}, None, {"a": 2}]),
    "list": pa.array([[1], None, [2, 3]]),
    "map": pa.array([[("k", 1)], None, []], type=pa.map_(pa.string(), pa.int64())),
}


@pytest.mark.parametrize("kind", NESTED)
def test_a_nested_key_column_raises_a_typed_error_naming_it(kind, workers):
    batch = Batch(pair=ArrowColumn(NESTED[kind]), value=np.arange(3))

    def exchange(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange("pair")
        handle.send_batch(batch)
        handle.close()
        worker.drain()

    with pytest.raises((RouteError, WorkerFailed), match="'pair'") as info:
        timely.execute(exchange, workers=workers)
    assert "RouteError" in repr(info.value) or isinstance(info.value, RouteError)

    def aggregate(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.aggregate("pair", "value")
        handle.send_batch(batch)
        handle.close()
        worker.drain()

    with pytest.raises((ColumnarError, RouteError, WorkerFailed), match="'pair'"):
        timely.execute(aggregate, workers=workers)
