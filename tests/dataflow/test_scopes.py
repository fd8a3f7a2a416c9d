"""Scopes and loops: iterative and nested scopes, regions, feedback."""

from __future__ import annotations

import pytest

import timely
import timely.progress
from timely import Pipeline

from .helpers import run_epochs


def collatz_steps(x):
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def test_records_leave_a_loop_at_different_iterations(workers):
    """Each record circulates until it reaches 1; it leaves with its iteration count."""

    def build(scope, stream):
        with scope.iterative() as inner:
            handle, loop = inner.feedback(1)
            state = stream.map(lambda x: (x, x)).enter(inner).concat(loop)
            step = state.map(lambda p: (p[0], p[1] // 2 if p[1] % 2 == 0 else 3 * p[1] + 1))
            step.filter(lambda p: p[1] != 1).connect_loop(handle)
            finished = step.filter(lambda p: p[1] == 1)
            inside = finished.map(lambda p: p[0]).capture()
            done = finished.leave()
        return done.map(lambda p: p[0]).capture(), inside

    epochs = [[6, 7], [1 + 1, 27], [3]]
    got, inside = run_epochs(build, epochs, workers)
    assert got == [(t, sorted(r)) for t, r in enumerate(epochs)]
    # inside the loop, each record's iteration coordinate is its number of steps - 1
    assert sorted(start for _, starts in inside for start in starts) == sorted(sum(epochs, []))
    for (epoch, iteration), starts in inside:
        for start in starts:
            assert iteration == collatz_steps(start) - 1
            assert start in epochs[epoch]


def test_loops_nested_two_deep(workers):
    """An outer loop of two rounds; in each, an inner loop doubles a value until
    it reaches 100. Times inside are (epoch, outer round, inner iteration)."""

    def build(scope, stream):
        with scope.iterative("Outer") as outer:
            oh, oloop = outer.feedback(1)
            o_in = stream.map(lambda x: (x, 0)).enter(outer).concat(oloop)
            with outer.iterative("Inner") as inner:
                ih, iloop = inner.feedback(1)
                i_in = o_in.enter(inner).concat(iloop)
                doubled = i_in.map(lambda p: (p[0] * 2, p[1]))
                doubled.filter(lambda p: p[0] < 100).connect_loop(ih)
                reached = doubled.filter(lambda p: p[0] >= 100)
                observed = reached.capture()
                big = reached.leave()
            shrunk = big.map(lambda p: (p[0] // 64, p[1] + 1))
            shrunk.filter(lambda p: p[1] < 2).connect_loop(oh)
            out = shrunk.filter(lambda p: p[1] >= 2).leave()
        return out.map(lambda p: p[0]).capture(), observed

    got, observed = run_epochs(build, [[1, 3], [50]], workers)
    observed = [(t, p) for t, ps in observed for p in ps]
    # 1 -> 128 (7 doublings) -> 2 -> 128 (6) -> 2;  3 -> 192 (6) -> 3 -> 192 (6) -> 3;
    # 50 -> 100 (1) -> 1 -> 128 (7) -> 2
    assert got == [(0, [2, 3]), (1, [2])]
    assert sorted(observed) == sorted([
        ((0, 0, 6), (128, 0)), ((0, 1, 5), (128, 1)),
        ((0, 0, 5), (192, 0)), ((0, 1, 5), (192, 1)),
        ((1, 0, 0), (100, 0)), ((1, 1, 6), (128, 1)),
    ])


def test_region_keeps_timestamps(workers):
    def build(scope, stream):
        with scope.region() as region:
            inner = stream.enter(region).map(lambda x: x + 1)
            assert region.arity == scope.arity == 1
            out = inner.leave()
        return out.capture()

    assert run_epochs(build, [[1], [2, 3]], workers) == [(0, [2]), (1, [3, 4])]


def test_scoped_adds_a_coordinate_and_leave_drops_it(workers):
    def build(scope, stream):
        with scope.scoped("Sub") as sub:
            assert sub.arity == 2
            entered = stream.enter(sub)
            inside = entered.capture()
            out = entered.leave()
        return out.capture(), inside

    got, inside = run_epochs(build, [[5], [6]], workers)
    assert got == [(0, [5]), (1, [6])]
    assert inside == [((0, 0), [5]), ((1, 0), [6])]


def test_root_scope_loop_with_integer_times():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            h, loop = scope.feedback(1)
            body = stream.concat(loop).filter(lambda x: x < 5).map(lambda x: x + 1)
            body.connect_loop(h)
            out = body.capture()
        handle.send(0)
        handle.close()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [(t, [t + 1]) for t in range(5)]


def test_zero_feedback_summary_is_rejected():
    def work(worker):
        with worker.dataflow() as scope:
            with scope.iterative() as inner:
                inner.feedback(0)

    with pytest.raises(timely.SummaryError, match="does not advance"):
        timely.execute_directly(work)


def test_unconnected_loop_is_rejected_at_build():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            with scope.iterative() as inner:
                h, loop = inner.feedback(1)
                stream.enter(inner).concat(loop).leave()

    with pytest.raises(timely.DataflowError, match="never connected"):
        timely.execute_directly(work)


def test_stream_of_another_scope_is_rejected():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            with scope.iterative() as inner:
                h, loop = inner.feedback(1)
                stream.concat(loop)          # forgot enter()

    with pytest.raises(timely.DataflowError, match="enter"):
        timely.execute_directly(work)


def test_feedback_summary_overflow_drops_records():
    """A record whose loop counter would overflow leaves the loop."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            h, loop = scope.feedback(2**63)
            body = stream.concat(loop)
            body.connect_loop(h)
            out = body.capture()
        handle.send("x")
        handle.close()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [(0, ["x"]), (2**63, ["x"])]


def test_loop_with_notification_inside(workers):
    """A notify operator inside a loop sees each (epoch, iteration) once, in order."""
    def build(scope, stream):
        with scope.iterative() as inner:
            h, loop = inner.feedback(1)
            state = stream.enter(inner).concat(loop)

            def logic(inp, out, notificator):
                for cap, data in inp:
                    notificator.notify_at(cap.retain())
                    out.session(cap).give_container([x - 1 for x in data])
                for cap, count in notificator:
                    order.append(cap.time)
                    out.session(cap).give(("notified", list(order)))

            order = []
            stepped = state.unary_notify(Pipeline, "Step", [], logic)
            values = stepped.filter(lambda x: not isinstance(x, tuple))
            values.filter(lambda x: x > 0).connect_loop(h)
            out = values.filter(lambda x: x <= 0).leave()
            notes = stepped.filter(lambda x: isinstance(x, tuple)).capture()
        return out.capture(), notes

    got, notes = run_epochs(build, [[3], [2]], workers)
    delivered = [t for t, records in notes for _ in records]
    orders = [record[1] for _, records in notes for record in records]
    assert got == [(0, [0]), (1, [0])]
    # Each time once (on the worker holding the record); comparable times in
    # order. (1, 0) and (0, 2) are incomparable, so either may come first.
    assert sorted(delivered) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    for order in orders:          # as one worker saw them
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                assert not timely.progress.less_than(b, a)
