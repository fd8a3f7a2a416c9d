"""The exchange route is called and checked at every worker count: a route
that raises, gives a key that does not route, or names a missing column
fails the same way at 1, 2 and 3 workers (RouteError naming the route and the
key), and every key that routes at 2 workers is accepted at 1."""

from __future__ import annotations

import numpy as np
import pytest

import timely
from tests.dataflow.helpers import run_epochs
from timely import Batch, RouteError, WorkerFailed

EPOCHS = [[1, 2, 3], [4, 5], [], [6]]


def failure(work, workers: int) -> str:
    """The message of the error the dataflow fails with: the RouteError itself
    in-process, or the failed worker's report naming it."""
    with pytest.raises((RouteError, WorkerFailed)) as info:
        timely.execute(work, workers=workers)
    if isinstance(info.value, WorkerFailed):
        assert "RouteError" in str(info.value), str(info.value)
    return str(info.value)


def run_route(route, workers: int, epochs=EPOCHS):
    return run_epochs(lambda scope, stream: stream.exchange(route).capture(), epochs, workers)


def records_work(route):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange(route).capture()
        handle.send_batch([1, 2, 3])
        handle.close()
        worker.drain()
    return work


def raising_route(record):
    # At one worker the route is checked once per batch (on its first record),
    # so a route that cannot work is caught there as at any worker count.
    raise ValueError(f"no route for {record!r}")


def list_route(record):
    return [record]


def object_route(record):
    return object()


@pytest.mark.parametrize("route, words", [
    (raising_route, ["raising_route", "ValueError", "no route for"]),
    (list_route, ["list_route", "[1]", "list"]),
    (object_route, ["object_route", "object"]),
])
def test_a_route_that_fails_fails_at_every_worker_count(route, words, workers):
    message = failure(records_work(route), workers)
    for word in words:
        assert word in message, message


def test_a_raising_route_is_chained():
    with pytest.raises(RouteError) as info:
        timely.execute_directly(records_work(raising_route))
    assert isinstance(info.value.__cause__, ValueError)
    assert issubclass(RouteError, timely.TimelyError) and issubclass(RouteError, TypeError)


@pytest.mark.parametrize("route", [
    lambda x: str(x), lambda x: x + 0.5, lambda x: None, lambda x: -x, lambda x: 2**200 + x,
    lambda x: -(2**70) * x, lambda x: (x, "k"), lambda x: bytes([x]), lambda x: x % 2 == 0,
    lambda x: np.int64(x), lambda x: float(x),
], ids=["str", "float", "None", "negative", "huge", "huge-negative", "tuple", "bytes", "bool",
        "numpy", "integral-float"])
def test_keys_that_hash_are_accepted_at_every_worker_count(route, workers):
    expected = [(t, sorted(r)) for t, r in enumerate(EPOCHS) if r]
    assert run_route(route, workers) == expected


def batch_work(route, batch):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange(route).capture()
        handle.send_batch(batch)
        handle.close()
        worker.drain()
    return work


BATCH = Batch({"k": np.arange(4), "s": np.array(["a", "b", "c", "d"], dtype=object)})


def test_a_column_route_naming_a_missing_column(workers):
    message = failure(batch_work("missing", BATCH), workers)
    assert "'missing'" in message and "'k'" in message


def test_a_column_route_given_records(workers):
    message = failure(records_work("k"), workers)
    assert "'k'" in message and "columnar" in message


def short_keys(batch):
    return batch["k"][:2]


def unroutable_keys(batch):
    return np.array([[1], None, 2, 3], dtype=object)


def raising_keys(batch):
    raise KeyError("nope")


@pytest.mark.parametrize("route, words", [
    (short_keys, ["short_keys", "2 keys", "4 rows"]),
    (unroutable_keys, ["unroutable_keys", "list"]),
    (raising_keys, ["raising_keys", "KeyError"]),
])
def test_a_vectorized_route_that_fails_fails_at_every_worker_count(route, words, workers):
    message = failure(batch_work(route, BATCH), workers)
    for word in words:
        assert word in message, message
