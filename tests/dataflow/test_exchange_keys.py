"""The record exchange's key forms at 1, 2 and 3 workers: ``exchange(key=0)``,
``exchange(key="name")``, ``exchange(route)``, ``exchange(route, key=...)``,
``exchange()`` and ``exchange_batch(fn)`` each deliver a record to worker
``stable_hash(key) % peers`` (the oracle's), so every form agrees; misuse
raises RouteError at every worker count; the record aggregate and state
machine route by the key itself without a route."""

from __future__ import annotations

import types

import numpy as np
import pytest

import timely
from tests.dataflow.helpers import run_epochs
from tests.reference import routing as ref
from timely import Batch, RouteError, WorkerFailed

PAIRS = [("apple", 1), ("pear", 2), ("fig", 3), (7, 4), (-3, 5), (2.5, 6), (None, 7),
         (("t", 1), 8), (b"raw", 9), (True, 10)]
EPOCHS = [PAIRS[:4], PAIRS[4:], [], PAIRS[:2]]


def placed(build, workers, epochs=EPOCHS):
    """``[(time, worker, repr of record)]`` after ``build(stream)``: where every record landed."""
    def tagged(scope, stream):
        return build(stream).map(lambda r, i=scope.index: (i, repr(r))).capture()

    return sorted((t, i, r) for t, records in run_epochs(tagged, epochs, workers)
                  for i, r in records)


def oracle(key_of, workers, epochs=EPOCHS):
    return sorted((t, ref.stable_hash(key_of(r)) % workers, repr(r))
                  for t, records in enumerate(epochs) for r in records)


FORMS = {
    "key=0": lambda s: s.exchange(key=0),
    "route": lambda s: s.exchange(lambda r: r[0]),
    "route of key=0": lambda s: s.exchange(lambda k: k, key=0),
    "key=-2": lambda s: s.exchange(key=-2),
    # 720720 is a multiple of 1, 2 and 3: the hash modulo it routes as the hash.
    "batch": lambda s: s.exchange_batch(
        lambda rs: np.array([ref.stable_hash(r[0]) % 720720 for r in rs], dtype=np.int64)),
    "batch-uint": lambda s: s.exchange_batch(
        lambda rs: np.array([ref.stable_hash(r[0]) % 720720 for r in rs], dtype=np.uint64)),
}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_routes_the_first_field_as_its_hash(form, workers):
    assert placed(FORMS[form], workers) == oracle(lambda r: r[0], workers)


def test_names_route_dicts_and_attributes(workers):
    epochs = [[{"k": k, "v": v} for k, v in e] for e in EPOCHS]
    assert placed(lambda s: s.exchange(key="k"), workers, epochs) == oracle(
        lambda r: r["k"], workers, epochs)
    objects = [[types.SimpleNamespace(k=k) for k, _ in e] for e in EPOCHS]
    assert placed(lambda s: s.exchange(key="k"), workers, objects) == oracle(
        lambda r: r.k, workers, objects)


def test_a_record_is_its_own_key_without_a_route(workers):
    epochs = [[k for k, _ in e] for e in EPOCHS]
    assert placed(lambda s: s.exchange(), workers, epochs) == oracle(lambda r: r, workers,
                                                                     epochs)


def failure(build, workers, records):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            build(stream).capture()
        handle.send_batch(list(records))
        handle.close()
        worker.drain()

    with pytest.raises((RouteError, WorkerFailed)) as info:
        timely.execute(work, workers=workers)
    if isinstance(info.value, WorkerFailed):
        assert "RouteError" in str(info.value), str(info.value)
    return str(info.value)


@pytest.mark.parametrize("build, records, words", [
    (lambda s: s.exchange(key=2), [(1, 2)], ["key 2", "IndexError"]),
    (lambda s: s.exchange(key="name"), [{"other": 1}], ["'name'", "KeyError"]),
    (lambda s: s.exchange(key="name"), [(1,)], ["'name'", "AttributeError"]),
    (lambda s: s.exchange(key=0), [([1], 2)], ["key=0", "list"]),
    (lambda s: s.exchange_batch(lambda rs: np.zeros(len(rs) + 1, dtype=np.int64)), [1, 2],
     ["shape (3,)", "2 records"]),
    (lambda s: s.exchange_batch(lambda rs: np.zeros(len(rs))), [1, 2], ["float64"]),
    (lambda s: s.exchange_batch(lambda rs: [0] * len(rs)), [1, 2], ["list", "numpy"]),
    (lambda s: s.exchange_batch(lambda rs: np.zeros((len(rs), 1), dtype=np.int64)), [1, 2],
     ["shape (2, 1)"]),
    (lambda s: s.exchange_batch(lambda rs: 1 / 0), [1], ["ZeroDivisionError"]),
    (lambda s: s.exchange(key=0), [Batch({"a": np.arange(3)})], ["key=0", "Batch"]),
], ids=["index", "dict", "attribute", "unhashable", "length", "dtype", "not-array", "2-D",
        "raises", "index-of-batch"])
def test_misuse_fails_alike_at_every_worker_count(build, records, words, workers):
    if records and type(records[0]) is Batch:
        def work(worker):
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                build(stream).capture()
            handle.send_batch(records[0])
            handle.close()
            worker.drain()

        with pytest.raises((RouteError, WorkerFailed)) as info:
            timely.execute(work, workers=workers)
        message = str(info.value)
    else:
        message = failure(build, workers, records)
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("make", [
    lambda: timely.Exchange(key=1.5),
    lambda: timely.Exchange(key=True),
    lambda: timely.Exchange(3),
    lambda: timely.Exchange("col", key=0),
    lambda: timely.Exchange(lambda r: r, batch=lambda rs: rs),
    lambda: timely.Exchange(batch=5),
])
def test_a_pact_that_cannot_route_is_refused_when_made(make):
    with pytest.raises(RouteError):
        make()


def test_a_batch_route_routes_columns_by_hash(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange_batch(lambda b: b["k"] * 3).inspect_batch(
                lambda t, b: keys.extend(b["k"].tolist()))
        keys: list = []
        if worker.index == 0:
            handle.send_batch(Batch({"k": np.arange(10)}))
        handle.close()
        worker.drain()
        return worker.index, keys

    for index, keys in timely.execute(work, workers=workers):
        assert keys == [k for k in range(10) if (3 * k) % workers == index]


def test_record_aggregates_route_by_the_key_without_a_route(workers):
    records = [[(w, 1) for w in ["a", "b", "a", ("t", 2), 3.5]], [("b", 5)]]
    got = run_epochs(lambda scope, s: s.aggregate(lambda k, v, acc: acc + v,
                                                   lambda k, acc: repr((k, acc))).capture(),
                     records, workers)
    assert got == [(0, sorted(repr(x) for x in [("a", 2), ("b", 1), (("t", 2), 1), (3.5, 1)])),
                   (1, [repr(("b", 5))])]

    def running(key, value, state):
        return state + value, False, [(key, state + value)]

    got = run_epochs(lambda scope, s: s.state_machine(running).capture(),
                     [[("x", 1), ("y", 2)], [("x", 3)]], workers)
    assert got == [(0, [("x", 1), ("y", 2)]), (1, [("x", 4)])]


def test_a_record_aggregate_route_that_is_not_callable_is_refused():
    with pytest.raises(RouteError, match="function or None"):
        timely.example(lambda s: s.to_stream([(1, 1)]).state_machine(
            lambda k, v, s: (s, False, []), route=0))
