"""Vectorized operators on columnar streams: map_batch, filter_batch and
aggregate at 1, 2 and 3 worker processes against answers computed here in
plain Python (the aggregation kernel is tested in tests/container)."""

from __future__ import annotations

import doctest
import importlib
from collections import Counter

import numpy as np
import pytest

import timely
from tests.container.helpers import object_array, oracle
from timely import Batch
from timely.capture.event import Messages
from timely.container.routing import route
from timely.dataflow.operators.columnar import AggregateError, ColumnarError

HOWS = ("count", "sum", "min", "max")


def test_docstring_examples():
    module = importlib.import_module("timely.dataflow.operators.columnar")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


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
