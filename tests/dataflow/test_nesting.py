"""Nested regions and iterative scopes with pass-through edges, against a
plain reference (``tests/reference/nesting.py``).

Each program is built with the engine's scopes, loops and operators and fed
some epochs; after each epoch the probe must pass it within a few seconds
(progress is made), and at that moment everything at that epoch must have
arrived, equal to the reference (the probe did not pass too early).
"""

from __future__ import annotations

import threading
import time as _time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from tests.reference.nesting import evaluate, scopes

STALL_SECONDS = 60.0


def build(scope, stream, stages):
    """The engine's version of ``stages`` applied to ``stream``."""
    for stage in stages:
        stream = _build_stage(scope, stream, stage)
    return stream


def _build_stage(scope, stream, stage):
    kind = stage[0]
    if kind == "add":
        k = stage[1]
        return stream.map(lambda x: x + k)
    if kind == "exchange":
        return stream.exchange(lambda x: x)
    if kind == "region":
        with scope.region() as inner:
            out = build(inner, stream.enter(inner), stage[1]).leave()
        return out
    if kind == "scoped":
        with scope.scoped() as inner:
            out = build(inner, stream.enter(inner), stage[1]).leave()
        return out
    if kind == "iterate":
        rounds = stage[2]
        with scope.iterative() as inner:
            handle, looped = inner.feedback(1)
            body = build(inner, stream.enter(inner).concat(looped), stage[1])
            again, done = body.branch_when(lambda t: t[-1] >= rounds)
            again.connect_loop(handle)
            out = done.leave()
        return out
    if kind == "fork":
        first = build(scope, stream, stage[1])
        second = build(scope, stream, stage[2])
        return first.concat(second)
    raise ValueError(f"unknown stage {stage!r}")


def run(stages, epochs, workers: int = 1, mode: str = "threads"):
    """Runs ``stages`` on ``epochs`` (record lists, sent by worker 0); returns
    per epoch what had arrived when the probe first passed it, and the
    whole output. Raises AssertionError naming the epoch if it stalls."""
    lock = threading.Lock()
    seen: list = []

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = build(scope, stream, stages)

            def record(t, x):
                with lock:
                    seen.append((t, x))

            probe = out.inspect_time(record).probe()
        at_pass = []
        for epoch, records in enumerate(epochs):
            if worker.index == 0:
                handle.send_batch(list(records))
            handle.advance_to(epoch + 1)
            deadline = _time.monotonic() + STALL_SECONDS
            while probe.less_than(epoch + 1):
                worker.step_or_park(0.001)
                assert _time.monotonic() < deadline, (
                    f"no progress past epoch {epoch}: probe at {probe.frontier().elements()}")
            with lock:
                at_pass.append(sorted(x for t, x in seen if t == epoch))
        handle.close()
        worker.drain(timeout=STALL_SECONDS)
        assert probe.done()
        return at_pass

    results = timely.execute(work, workers=workers, mode=mode)
    return results, sorted(seen)


def expected(stages, epochs):
    return [sorted(evaluate(stages, records)) for records in epochs]


def check(stages, epochs, workers: int = 1):
    results, seen = run(stages, epochs, workers)
    want = expected(stages, epochs)
    for per_worker in results:
        assert per_worker == want
    assert seen == sorted((t, x) for t, xs in enumerate(want) for x in xs)


# -- the reported shapes --------------------------------------------------------

PASS_THROUGH = [
    # region inside a region, the stream passing through both
    [("region", [("region", [])])],
    # one region, pass-through
    [("region", [])],
    # three deep
    [("region", [("region", [("region", [])])])],
    # an iterative scope passed through, inside a region, and vice versa
    [("region", [("scoped", [])])],
    [("scoped", [("region", [])])],
    # a pass-through next to an operator path in the same scope
    [("region", [("fork", [], [("add", 1)])])],
    # a loop whose body passes through a nested region
    [("iterate", [("region", [("region", [])])], 2)],
]


@pytest.mark.parametrize("stages", PASS_THROUGH, ids=repr)
def test_pass_through_edges_make_progress(stages, workers):
    check(stages, [[1, 2], [3], [], [4]], workers)


def test_nested_regions_pass_through_in_processes():
    """The reported program, as worker processes."""
    stages = [("region", [("region", [])])]

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = build(scope, stream, stages)
            probe = out.probe()
            captured = out.capture()
        for epoch in range(5):
            if worker.index == 0:
                handle.send(epoch)
            handle.advance_to(epoch + 1)
            deadline = _time.monotonic() + STALL_SECONDS
            while probe.less_than(epoch + 1):
                worker.step_or_park(0.001)
                assert _time.monotonic() < deadline, f"stuck at {probe.frontier().elements()}"
        handle.close()
        worker.drain(timeout=STALL_SECONDS)
        return captured.extract()

    results = timely.execute(work, workers=2)
    merged = sorted((t, x) for result in results for t, xs in result for x in xs)
    assert merged == [(e, e) for e in range(5)]


# -- random nestings ------------------------------------------------------------

leaf = st.one_of(
    st.tuples(st.just("add"), st.integers(-3, 3)),
    st.just(("exchange",)),
    st.just(("region", [])),                  # a pass-through edge
    st.just(("scoped", [])),
)


def _nested(children):
    lists = st.lists(children, max_size=3)
    return st.one_of(
        st.tuples(st.just("region"), lists),
        st.tuples(st.just("scoped"), lists),
        st.tuples(st.just("iterate"), lists, st.integers(0, 2)),
        st.tuples(st.just("fork"), lists, lists),
    )


programs = st.lists(st.recursive(leaf, _nested, max_leaves=8), min_size=1, max_size=3).filter(
    lambda p: scopes(p) <= 8)
epoch_lists = st.lists(st.lists(st.integers(0, 20), max_size=3), min_size=1, max_size=3)


@settings(max_examples=capped(60))
@given(programs, epoch_lists)
def test_random_nestings_one_worker(stages, epochs):
    check(stages, epochs, workers=1)


@settings(max_examples=capped(25))
@given(programs, epoch_lists)
def test_random_nestings_two_workers(stages, epochs):
    check(stages, epochs, workers=2)
