"""Vectorized operators on columnar streams: the hash-aggregation kernel
against a dict oracle, and map_batch, filter_batch and aggregate at 1, 2 and
3 worker processes against answers computed here in plain Python."""

from __future__ import annotations

import doctest
import importlib
import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from timely import Batch
from timely.capture.event import Messages
from timely.dataflow._columnar import route
from timely.dataflow.operators.columnar import AggregateError, ColumnarError, GroupBy

HOWS = ("count", "sum", "min", "max")


def object_array(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


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


def as_dict(group: GroupBy) -> dict:
    keys, columns = group.result()
    assert all(len(c) == len(keys) == len(group) for c in columns.values())
    values = list(keys) if keys.dtype == object else keys.tolist()
    return {k: {h: columns[h][i].item() for h in group.how} for i, k in enumerate(values)}


@pytest.mark.parametrize(
    "name", ["timely.dataflow._aggregate", "timely.dataflow.operators.columnar"]
)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- the kernel -------------------------------------------------------------------

INT_KEYS = st.integers(-(2**63), 2**63 - 1)
SMALL_INT_KEYS = st.integers(-5, 5)
TEXT_KEYS = st.sampled_from(["", "a", "b", "ab", "ключ", "鍵", "🦀", "a\x00b"])
HOW = st.lists(st.sampled_from(HOWS), min_size=1, max_size=4, unique=True).map(tuple)


@st.composite
def keyed_rows(draw):
    """``(kind, keys, values)``: keys of one kind, values int64 or float64."""
    kind = draw(st.sampled_from(["int64", "int32", "uint64", "bool", "str", "mixed", "S", "U"]))
    n = draw(st.integers(0, 60))
    if kind == "int64":
        keys = np.array(
            draw(st.lists(st.one_of(SMALL_INT_KEYS, INT_KEYS), min_size=n, max_size=n)),
            dtype=np.int64,
        )
    elif kind == "int32":
        keys = np.array(draw(st.lists(SMALL_INT_KEYS, min_size=n, max_size=n)), dtype=np.int32)
    elif kind == "uint64":
        keys = np.array(
            draw(st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1]), min_size=n, max_size=n)),
            dtype=np.uint64,
        )
    elif kind == "bool":
        keys = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "str":
        keys = object_array(draw(st.lists(TEXT_KEYS, min_size=n, max_size=n)))
    elif kind == "mixed":
        # Equal values of different types are one key, as in a dict: 1 == 1.0 == True.
        keys = object_array(
            draw(
                st.lists(
                    st.one_of(
                        TEXT_KEYS, SMALL_INT_KEYS, st.sampled_from([1.0, True, (1, "a"), None])
                    ),
                    min_size=n,
                    max_size=n,
                )
            )
        )
    elif kind == "S":
        keys = np.array(draw(st.lists(st.binary(max_size=3), min_size=n, max_size=n)), dtype="S3")
    else:
        keys = np.array(
            draw(st.lists(st.text("ab\x00é", max_size=3), min_size=n, max_size=n)), dtype="U3"
        )
    if draw(st.booleans()):
        values = np.array(
            draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)), dtype=np.int64
        )
    else:
        values = np.array(
            draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)), dtype=np.float64
        )
    return kind, keys, values


def python_keys(keys: np.ndarray) -> list:
    return list(keys) if keys.dtype == object else keys.tolist()


@given(keyed_rows(), HOW, st.lists(st.integers(0, 60), max_size=4))
@settings(max_examples=300, deadline=None)
def test_groupby_update_equals_a_dict(data, how, cuts):
    _, keys, values = data
    group = GroupBy(how)
    bounds = [0, *sorted(c for c in cuts if c <= len(keys)), len(keys)]
    for start, stop in itertools.pairwise(bounds):
        group.update(keys[start:stop], values[start:stop])
    want = oracle(zip(python_keys(keys), values.tolist()))
    got = as_dict(group)
    # Same keys in the same (first-arrival) order; values added in row order,
    # so float sums are equal to the last bit.
    assert list(got) == list(want)
    assert got == {k: {h: acc[h] for h in how} for k, acc in want.items()}
    result_keys, columns = group.result()
    assert columns.keys() == set(how)
    if len(keys):  # dtypes are known once rows have arrived
        assert result_keys.dtype == keys.dtype
        for h in how:
            assert columns[h].dtype == (np.int64 if h == "count" else values.dtype)


@given(keyed_rows(), HOW, st.lists(st.integers(0, 60), max_size=4), st.randoms())
@settings(max_examples=200, deadline=None)
def test_groupby_merge_of_partials_equals_a_dict(data, how, cuts, rnd):
    _, keys, values = data
    if values.dtype == np.float64:
        values = np.round(values)  # exact sums whatever the order
    bounds = [0, *sorted(c for c in cuts if c <= len(keys)), len(keys)]
    parts = []
    for start, stop in itertools.pairwise(bounds):
        part = GroupBy(how)
        part.update(keys[start:stop], values[start:stop])
        parts.append(part.result())
    rnd.shuffle(parts)
    total = GroupBy(how)
    for part_keys, columns in parts:
        total.merge(part_keys, columns)
    want = oracle(zip(python_keys(keys), values.tolist()))
    assert as_dict(total) == {k: {h: acc[h] for h in how} for k, acc in want.items()}


def test_groupby_many_keys_across_chunks_and_growth():
    rng = np.random.default_rng(7)
    n = 100_000
    ints = rng.integers(0, 60_000, n) * 1024  # multiples of a power of two
    values = rng.integers(-1000, 1000, n)
    group = GroupBy(HOWS)
    group.update(ints[:70_000], values[:70_000])
    group.update(ints[70_000:], values[70_000:])
    keys, columns = group.result()
    order = np.argsort(keys)
    unique, first, counts = np.unique(ints, return_index=True, return_counts=True)
    assert np.array_equal(keys, ints[np.sort(first)])  # first-arrival order
    assert np.array_equal(keys[order], unique)
    assert np.array_equal(columns["count"][order], counts)
    inverse = np.searchsorted(unique, ints)
    assert np.array_equal(columns["sum"][order], np.bincount(inverse, values).astype(np.int64))
    mins = np.full(len(unique), 10**9)
    np.minimum.at(mins, inverse, values)
    assert np.array_equal(columns["min"][order], mins)

    words = object_array([f"w{k}" for k in rng.integers(0, 30_000, n)])
    group = GroupBy("count")
    group.update(words)
    assert as_dict(group) == {k: {"count": c} for k, c in Counter(words.tolist()).items()}


def test_groupby_fixed_width_keys_of_several_widths():
    group = GroupBy(("count", "sum"))
    group.update(np.array(["a", "bb"], dtype="U2"), np.array([1, 2]))
    group.update(np.array(["bb", "cccc", "a"], dtype="U4"), np.array([10, 20, 30]))
    group.update(np.array(["a"], dtype=">U1"), np.array([100]))
    keys, columns = group.result()
    assert keys.dtype == np.dtype("U4")
    assert keys.tolist() == ["a", "bb", "cccc"]
    assert columns["sum"].tolist() == [131, 12, 20]
    assert columns["count"].tolist() == [3, 2, 1]

    group = GroupBy("count")
    group.update(np.array([b"x", b"x\x00"], dtype="S2"))
    group.update(np.array([b"x"], dtype="S1"))
    assert group.result()[0].tolist() == [b"x"] and group.result()[1]["count"].tolist() == [3]


def test_groupby_int_edge_cases():
    big = np.array([2**64 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    group = GroupBy("count")
    group.update(big)
    keys, columns = group.result()
    assert keys.dtype == np.uint64 and keys.tolist() == [2**64 - 1, 2**63]
    assert columns["count"].tolist() == [2, 1]

    group = GroupBy("sum")  # sums wrap modulo 2**64, as int64 arithmetic does in numpy
    group.update(np.array([1, 1]), np.array([2**63 - 1, 1]))
    assert group.result()[1]["sum"].tolist() == [-(2**63)]

    group = GroupBy(("sum", "min", "max"))
    group.update(np.array([1, 1, 2]), np.array([1.0, np.nan, 2.0]))
    _, columns = group.result()
    assert np.isnan(columns["sum"][0]) and np.isnan(columns["min"][0])
    assert np.isnan(columns["max"][0])
    assert columns["min"][1] == columns["max"][1] == 2.0


def test_groupby_empty_and_refusals():
    group = GroupBy(("count", "sum"))
    group.update(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    group.merge(
        np.array([], dtype=object),
        {"count": np.array([], dtype=np.int64), "sum": np.array([], dtype=np.int64)},
    )
    assert len(group) == 0
    keys, columns = group.result()
    assert len(keys) == 0 and all(len(c) == 0 for c in columns.values())

    with pytest.raises(AggregateError, match="unknown aggregate 'mean'"):
        GroupBy("mean")
    with pytest.raises(AggregateError, match="twice"):
        GroupBy(("sum", "sum"))
    with pytest.raises(AggregateError, match="need values"):
        GroupBy("sum").update(np.arange(3))
    with pytest.raises(AggregateError, match="3 rows"):
        GroupBy("sum").update(np.arange(3), np.arange(4))
    with pytest.raises(AggregateError, match="float64 are not supported"):
        GroupBy("count").update(np.array([1.5]))
    with pytest.raises(AggregateError, match="values are integer or float"):
        GroupBy("sum").update(np.arange(2), np.array(["a", "b"], dtype=object))
    with pytest.raises(AggregateError, match="no 'sum' column"):
        GroupBy("sum").merge(np.arange(2), {"count": np.arange(2)})
    mixed = GroupBy("count")
    mixed.update(np.arange(3))
    with pytest.raises(AggregateError, match="cannot join"):
        mixed.update(object_array(["a"]))
    floats = GroupBy("sum")
    floats.update(np.arange(3), np.arange(3))
    with pytest.raises(AggregateError, match="float values cannot join integer"):
        floats.update(np.arange(3), np.arange(3.0))
    with pytest.raises(TypeError, match="unhashable"):
        GroupBy("count").update(object_array([[1]]))
    assert issubclass(AggregateError, timely.TimelyError)
    assert issubclass(AggregateError, ValueError)


# -- dataflows ------------------------------------------------------------------------

EPOCHS = 4
WORDS = ["", "a", "timely", "dataflow", "ключ", "鍵", "🦀", *(f"w{i}" for i in range(25))]


def make_batches(kind: str):
    """``(epoch, Batch(key, value))`` pairs, the same at every worker count; some
    empty, some at one key only, epoch 2 has no rows at all."""
    rng = np.random.default_rng(11)
    batches = []
    for i in range(20):
        epoch = i % EPOCHS
        n = 0 if epoch == 2 else [0, 1, 9, 60, 250][i % 5]
        if kind == "int":
            keys = rng.integers(-30, 30, n)
            if n >= 2:
                keys[:2] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
        elif kind == "str":
            keys = object_array([WORDS[j] for j in rng.integers(0, len(WORDS), n)])
        else:
            words = [WORDS[j] for j in rng.integers(0, len(WORDS), n)]
            if kind.startswith("S"):
                words = [w.encode() for w in words]
            keys = np.array(words, dtype=kind)
        values = rng.integers(-1000, 1000, n)
        batches.append((epoch, Batch(key=keys, value=values)))
    return batches


def feed_epochs(worker, handle, batches) -> None:
    """Sends batch i from worker i % peers, stepping after every batch, so an
    operator that emitted before a time was complete would be caught."""
    for epoch in range(EPOCHS):
        for i, (t, batch) in enumerate(batches):
            if t == epoch and i % worker.peers == worker.index:
                handle.send_batch(batch)
                worker.step()
        handle.advance_to(epoch + 1)
        worker.step()
    handle.close()
    worker.drain()


def messages(capture) -> list:
    """``[(time, column names, [row, ...])]`` of every message a capture saw;
    each must be a non-empty Batch."""
    out = []
    for event in capture.events:
        if type(event) is Messages:
            assert type(event.data) is Batch
            assert len(event.data) > 0
            out.append((event.time, event.data.names, event.data.to_records()))
    return out


def input_rows(batches) -> list:
    return [(t, *row) for t, b in batches for row in b.to_records()]


def test_map_batch(workers):
    batches = make_batches("int")

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.map_batch(
                lambda b: Batch(key=b["key"], triple=b["value"] * 3 + 1)
            ).capture()
        feed_epochs(worker, handle, batches)
        return messages(capture)

    got = Counter()
    for result in timely.execute(work, workers=workers):
        for time, names, rows in result:
            assert names == ("key", "triple")
            got.update((time, *row) for row in rows)
    assert got == Counter((t, k, 3 * v + 1) for t, k, v in input_rows(batches))


def test_filter_batch_keeps_masked_rows_and_drops_empty_results(workers):
    batches = make_batches("str")

    def work(worker):
        passed_whole = []

        def remember(time, batch):
            passed_whole.append(any(batch is b for _, b in batches))

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            kept = stream.filter_batch(lambda b: b["value"] % 3 == 0).capture()
            nothing = stream.filter_batch(lambda b: np.zeros(len(b), dtype=bool)).capture()
            everything = stream.filter_batch(lambda b: np.ones(len(b), dtype=bool))
            everything.inspect_batch(remember)
        feed_epochs(worker, handle, batches)
        return messages(kept), messages(nothing), passed_whole

    got = Counter()
    for kept, nothing, passed_whole in timely.execute(work, workers=workers):
        assert nothing == []
        assert all(passed_whole)  # a batch whose rows all pass is not copied
        for time, _, rows in kept:
            got.update((time, *row) for row in rows)
    assert got == Counter(r for r in input_rows(batches) if r[2] % 3 == 0)


def test_filter_batch_refuses_records():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.filter_batch(lambda b: [True]).capture()
        handle.send_batch([1])
        handle.close()
        worker.drain()

    with pytest.raises(ColumnarError, match="filter_batch works on columnar Batches"):
        timely.execute_directly(work)


def expected_aggregates(batches, how) -> dict:
    """``{(time, key): (aggregates...)}`` in plain Python."""
    by_time: dict = {}
    for t, b in batches:
        by_time.setdefault(t, []).extend(b.to_records())
    out = {}
    for t, rows in by_time.items():
        for key, acc in oracle(rows).items():
            out[(t, key)] = tuple(acc[h] for h in how)
    return out


def run_aggregate(batches, workers, how, combine=True, value="value"):
    def work(worker):
        seen_at = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            totals = stream.aggregate("key", value, how=how, combine=combine)
            totals.inspect_batch(lambda t, b: seen_at.append((t, handle.time, handle.closed)))
            capture = totals.capture()
        feed_epochs(worker, handle, batches)
        return worker.index, messages(capture), seen_at

    return timely.execute(work, workers=workers)


def check_aggregates(results, batches, how, workers):
    got = {}
    for index, result, seen_at in results:
        times = [t for t, _, _ in result]
        # One batch per time on this worker, sent once its input had moved past it.
        assert len(times) == len(set(times))
        for t, handle_time, closed in seen_at:
            assert closed or handle_time > t
        for time, names, rows in result:
            assert names == ("key", *how)
            keys = [r[0] for r in rows]
            assert len(keys) == len(set(keys))
            # Every key lives on the worker its exchange routes it to ...
            assert set(route(object_array(keys), workers).tolist()) <= {index}
            for key, *aggregates in rows:
                # ... so no key of a time is reported by two workers.
                assert (time, key) not in got
                got[(time, key)] = tuple(aggregates)
    want = expected_aggregates(batches, how)
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v) if isinstance(v[-1], float) else got[k] == v


@pytest.mark.parametrize("combine", [True, False], ids=["combine", "raw"])
@pytest.mark.parametrize("kind", ["int", "str"])
def test_aggregate_all_at_once_equals_python(workers, kind, combine):
    batches = make_batches(kind)
    results = run_aggregate(batches, workers, HOWS, combine)
    check_aggregates(results, batches, HOWS, workers)
    assert not any(t == 2 for _, result, _ in results for t, _, _ in result)  # no rows, no batch


@pytest.mark.parametrize("how", ["count", "sum", "min", "max", ("max", "count")])
@pytest.mark.parametrize("kind", ["int", "str"])
def test_aggregate_one_at_a_time(workers, kind, how):
    hows = (how,) if isinstance(how, str) else how
    batches = make_batches(kind)
    value = None if hows == ("count",) else "value"
    check_aggregates(run_aggregate(batches, workers, hows, value=value), batches, hows, workers)


@pytest.mark.parametrize("kind", ["U8", "S12"])
def test_aggregate_fixed_width_keys(workers, kind):
    batches = make_batches(kind)
    results = run_aggregate(batches, workers, ("count", "sum"))
    decoded = []
    for index, result, seen_at in results:
        decoded.append(
            (
                index,
                [
                    (
                        t,
                        names,
                        [(k.decode() if isinstance(k, bytes) else k, *rest) for k, *rest in rows],
                    )
                    for t, names, rows in result
                ],
                seen_at,
            )
        )
    str_batches = [
        (
            t,
            Batch(
                key=object_array(
                    [k.decode() if isinstance(k, bytes) else k for k in b["key"].tolist()]
                ),
                value=b["value"],
            ),
        )
        for t, b in batches
    ]
    check_aggregates(decoded, str_batches, ("count", "sum"), workers)


def test_aggregate_float_values(workers):
    rng = np.random.default_rng(3)
    batches = [
        (i % EPOCHS, Batch(key=rng.integers(0, 5, 40), value=rng.normal(size=40))) for i in range(8)
    ]
    check_aggregates(run_aggregate(batches, workers, HOWS), batches, HOWS, workers)


def test_aggregate_results_do_not_depend_on_the_worker_count():
    batches = make_batches("str")
    answers = []
    for workers in (1, 2, 3):
        answer = {}
        for _, result, _ in run_aggregate(batches, workers, HOWS):
            for time, _, rows in result:
                answer.update({(time, r[0]): r[1:] for r in rows})
        answers.append(answer)
    assert answers[0] == answers[1] == answers[2]


def test_aggregate_refusals():
    def build(**kwargs):
        def work(worker):
            with worker.dataflow() as scope:
                _, stream = scope.new_input()
                stream.aggregate(**kwargs)

        timely.execute_directly(work)

    with pytest.raises(AggregateError, match="need a value column"):
        build(key="key")
    with pytest.raises(AggregateError, match="name of an aggregate"):
        build(key="count", how="count")
    with pytest.raises(AggregateError, match="unknown aggregate"):
        build(key="key", value="v", how="median")

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.aggregate("key", "missing").capture()
        handle.send_batch(Batch(key=np.arange(3), value=np.arange(3)))
        handle.close()
        worker.drain()

    with pytest.raises(AggregateError, match="no column 'missing'"):
        timely.execute_directly(work)

    def records(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.aggregate("key", how="count").capture()
        handle.send_batch([{"key": 1}])
        handle.close()
        worker.drain()

    # The exchange by a key column, or the operator, refuses them.
    with pytest.raises(TypeError, match="columnar [Bb]atches"):
        timely.execute_directly(records)


def test_aggregate_in_a_nested_scope():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            with scope.region() as inner:
                totals = stream.enter(inner).aggregate("key", "value", how=("sum",)).leave()
            capture = totals.capture()
        for epoch in range(3):
            handle.send_batch(Batch(key=np.array([1, 2, 1]), value=np.array([epoch, 1, 1])))
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return [(t, sorted(rows)) for t, _, rows in messages(capture)]

    assert timely.execute_directly(work) == [
        (0, [(1, 1), (2, 1)]),
        (1, [(1, 2), (2, 1)]),
        (2, [(1, 3), (2, 1)]),
    ]
