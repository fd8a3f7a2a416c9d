"""The rest of the crate's capability, operator-builder, notificator, worker
and timestamp API, restating its doc tests."""

from __future__ import annotations

import datetime
import threading

import numpy as np
import pytest

import timely
from timely import CapabilitySet, FrontierNotificator
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.time import from_datetime, to_datetime, to_datetime64

from .helpers import merge

# -- capabilities ---------------------------------------------------------------


def test_capability_try_delayed_and_try_downgrade():
    def work(worker):
        results = {}
        with worker.dataflow() as scope:
            def constructor(cap, info):
                results["early"] = cap.try_delayed(0)
                cap.downgrade(3)
                results["none"] = cap.try_delayed(2)
                results["up"] = cap.try_downgrade(5)
                results["down"] = cap.try_downgrade(4)
                results["time"] = cap.time
                results["early"].drop()
                cap.drop()
                return lambda output: None
            scope.source("Try", constructor)
        worker.drain()
        return results

    r = timely.execute_directly(work)
    assert r == {"early": r["early"], "none": None, "up": True, "down": False, "time": 5}


def test_capability_set_from_elem_try_delayed_try_downgrade(workers):
    """The crate's from_elem doc test: a set downgraded to the input frontier
    sends with its first capability."""
    def constructor(default_cap, info):
        caps = CapabilitySet.from_elem(default_cap)
        checks = []

        def logic(input, output):
            if not checks:
                checks.append(caps.try_delayed(0) is not None)
                held = caps.try_delayed(0)
                held.drop()
                checks.append(caps.try_downgrade([]) and len(caps) == 0)
                checks.append(caps.try_delayed(0) is None)
            for cap, data in input:
                pass
        return logic

    def build(scope):
        b = scope.to_stream([()])
        caps = []

        def keep(default_cap, info):
            s = CapabilitySet.from_elem(default_cap)
            caps.append(s)

            def logic(input, output):
                s.downgrade(input.frontier.frontier())
                for cap, data in input:
                    pass
                first = s.first()
                if first is not None:
                    output.session(first).give(("at", first.time))
            return logic

        b.unary_frontier(timely.Pipeline, "check", constructor)
        return b.unary_frontier(timely.Pipeline, "example", keep).capture()

    got = merge(timely.execute(lambda w: _run(w, build), workers=workers))
    assert got == [(0, [("at", 0)] * workers)]


def test_capability_set_try_downgrade_refuses_earlier_times():
    def work(worker):
        out = []
        with worker.dataflow() as scope:
            def constructor(cap, info):
                caps = CapabilitySet.from_elem(cap.delayed(4))
                cap.drop()
                out.append(caps.try_downgrade([3]))
                out.append(caps.times())
                out.append(caps.try_downgrade([5, 6]))
                out.append(caps.times())
                caps.clear()
                return lambda output: None
            scope.source("Set", constructor)
        worker.drain()
        return out

    assert timely.execute_directly(work) == [False, [4], True, [5]]


def _run(worker, build):
    with worker.dataflow() as scope:
        captured = build(scope)
    worker.drain()
    return captured.extract()


# -- operator builder -----------------------------------------------------------


def test_output_index_and_new_output_connection(workers):
    def build(scope):
        b = OperatorBuilder("Split", scope)
        inp = b.new_input(scope.to_stream(range(3)), timely.Pipeline)
        same, s1 = b.new_output()
        later, s2 = b.new_output_connection({0: [(2,)]})
        assert (same.output_index, later.output_index) == (0, 1)
        assert [[list(map(lambda p: p.increments, s)) for s in row] for row in b.summary] == [[[0], [2]]]

        def constructor(caps, info):
            caps.clear()

            def logic(frontiers):
                for cap, data in inp:
                    with pytest.raises(timely.CapabilityError):
                        later.session(cap)          # not valid: the summary is 2
                    with pytest.raises(timely.CapabilityError):
                        cap.delayed(cap.time + 1, later.output_index)
                    same.session(cap).give_container(list(data))
                    later.session(cap.delayed(cap.time + 2, later.output_index)).give_container(data)
            return logic

        b.build(constructor)
        return s1.concatenate([s2]).capture()

    got = merge(timely.execute(lambda w: _run(w, build), workers=workers))
    assert got == [(0, sorted(list(range(3)) * workers)), (2, sorted(list(range(3)) * workers))]


def test_new_output_connection_not_connected_input():
    def build(scope):
        b = OperatorBuilder("Free", scope)
        inp = b.new_input(scope.to_stream([1]), timely.Pipeline)
        out, stream = b.new_output_connection({0: []})
        assert b.summary == [[[]]]

        def constructor(caps, info):
            held = [caps[0]]
            caps.clear()

            def logic(frontiers):
                for cap, data in inp:
                    with pytest.raises(timely.CapabilityError, match="not connected"):
                        cap.retain(out.output_index)
                if held:
                    out.session(held[0]).give("free")
                    held.pop().drop()
            return logic

        b.build(constructor)
        return stream.capture()

    assert timely.example(build).extract() == [(0, ["free"])]


# -- activation -----------------------------------------------------------------


def _countdown(scope, n):
    def constructor(cap, info):
        activator = scope.activator_for(info.address)
        left = [n]
        held = [cap]

        def logic(output):
            if left[0]:
                output.session(held[0]).give(left[0])
                left[0] -= 1
                activator.activate()
            elif held:
                held.pop().drop()
        return logic

    return scope.source("Countdown", constructor)


def test_activator_for_reschedules_an_operator(workers):
    got = merge(timely.execute(lambda w: _run(w, lambda s: _countdown(s, 3).capture()),
                               workers=workers))
    assert got == [(0, sorted([1, 2, 3] * workers))]


def test_activator_for_finds_operators_of_nested_scopes():
    def build(scope):
        with scope.region() as region:
            with region.iterative() as inner:
                out = _countdown(inner, 2).leave()
            out = out.leave()
        return out.capture()

    assert timely.example(build).extract() == [(0, [1, 2])]


def test_activator_for_unknown_address_raises():
    def work(worker):
        with worker.dataflow() as scope:
            scope.empty()
        with pytest.raises(timely.DataflowError, match="no live scope"):
            worker.activator_for((7, 1))

    timely.execute_directly(work)


def _woken_by_thread(worker):
    addresses, runs = [], []
    with worker.dataflow() as scope:
        def constructor(cap, info):
            addresses.append(info.address)
            held = [cap]

            def logic(output):
                runs.append(1)
                if held and len(runs) >= 2:
                    output.session(held[0]).give(worker.index)
                    held.pop().drop()
            return logic
        out = scope.source("Remote", constructor).capture()
    activator = scope.sync_activator_for(addresses[0])
    while worker.step():          # settle: nothing else will schedule the source
        if len(runs) >= 1 and not worker.active:
            break
    timer = threading.Timer(0.05, activator.activate)
    timer.start()
    try:
        while worker.step_or_park(30):
            pass
    finally:
        timer.join()
    return out.extract()


def test_sync_activator_wakes_a_parked_worker(workers):
    got = merge(timely.execute(_woken_by_thread, workers=workers))
    assert got == [(0, list(range(workers)))]


def test_sync_activator_wakes_thread_workers():
    got = merge(timely.execute(_woken_by_thread, workers=2, mode="threads"))
    assert got == [(0, [0, 1])]


# -- worker ---------------------------------------------------------------------


def test_step_or_park_while_and_timer(workers):
    def work(worker):
        with worker.dataflow() as scope:
            probe = scope.to_stream(range(10)).inspect(lambda x: None).probe()
        worker.step_or_park_while(0.001, lambda: probe.less_than(1))
        assert probe.done()
        t = worker.timer()
        assert 0 <= t.elapsed() and t.elapsed() <= t.elapsed()
        return True

    assert timely.execute(work, workers=workers) == [True] * workers


def test_drop_dataflow_then_build_another(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange(lambda x: x).probe()
        with worker.dataflow() as scope:
            second = scope.to_stream([worker.index]).exchange(lambda x: x).capture()
        first = worker.installed_dataflows()[0]
        worker.drop_dataflow(first)
        worker.drop_dataflow(first)           # already gone: nothing happens
        assert first not in worker.installed_dataflows()
        worker.drain(timeout=30)
        handle.send(1)                        # the dropped input's operator is gone
        handle.close()
        return second.extract()

    got = merge(timely.execute(work, workers=workers))
    assert got == [(0, list(range(workers)))]


# -- notificator ----------------------------------------------------------------


def test_frontier_notificator_infers_arity_and_for_each(workers):
    """The crate's notify_at doc test: each time t notifies t + 1 once the
    frontier passes it."""
    def constructor(cap, info):
        notificator = FrontierNotificator()

        def logic(input, output):
            for cap, data in input:
                output.session(cap).give_container(list(data))
                notificator.notify_at(cap.delayed(cap.time + 1))
            notificator.for_each([input.frontier],
                                 lambda cap, n: output.session(cap).give(("done", cap.time)))
        return logic

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = stream.unary_frontier(timely.Pipeline, "example", constructor).capture()
        for t in range(3):
            if worker.index == 0:
                handle.send(t)
            handle.advance_to(t + 1)
        handle.close()
        worker.drain()
        return out.extract()

    got = merge(timely.execute(work, workers=workers))
    done = [x for _, rs in got for x in rs if isinstance(x, tuple)]
    assert sorted(done) == [("done", t + 1) for t in range(3)]     # only worker 0 had data
    assert [t for t, rs in got if 0 in rs or 1 in rs or 2 in rs] == [0, 1, 2]


def test_frontier_notificator_nested_times_and_frontiered():
    def work(worker):
        out = []
        with worker.dataflow() as scope:
            with scope.iterative() as inner:
                def constructor(cap, info):
                    notificator = FrontierNotificator.from_capabilities([cap.delayed((0, 3))])
                    held = [cap]

                    def logic(input, output):
                        for c, data in input:
                            pass
                        notificator.for_each([input.frontier], lambda c, n: out.append(c.time))
                        if held and input.frontier.is_empty():
                            # Complete already: available at once, without for_each.
                            notificator.notify_at_frontiered(held[0].delayed((0, 1)), [input.frontier])
                            cap, count = notificator.next([])
                            out.append(("at once", cap.time, count))
                            held.pop().drop()
                    return logic
                src = scope.to_stream([1]).enter(inner)
                src.unary_frontier(timely.Pipeline, "nested", constructor).leave()
        worker.drain()
        return out

    assert timely.execute_directly(work) == [(0, 3), ("at once", (0, 1), 1)]


# -- timestamps -----------------------------------------------------------------


def test_pair_timestamps_at_the_root(workers):
    def work(worker):
        with worker.dataflow(arity=2) as scope:
            handle, stream = scope.new_input()
            with scope.iterative() as inner:
                looped = stream.enter(inner).map(lambda x: x + 1).leave()
            out = looped.exchange(lambda x: x).capture()
            probe = looped.probe()
        for epoch in range(3):
            if worker.index == 0:
                handle.send(epoch * 10)
            handle.advance_to((epoch, 1))
            if worker.index == 0:
                handle.send(epoch * 10 + 5)
            handle.advance_to((epoch + 1, 1))
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        assert scope.arity == 2
        return out.extract()

    got = merge(timely.execute(work, workers=workers))
    assert got == [((0, 0), [1]), ((0, 1), [6]), ((1, 1), [11, 16]), ((2, 1), [21, 26])]


def test_dataflow_arity_must_be_positive():
    def work(worker):
        with pytest.raises(timely.DataflowError):
            with worker.dataflow(arity=0):
                pass
    timely.execute_directly(work)


def test_datetime_epochs_map_to_nanoseconds(workers):
    start = np.datetime64("2024-03-01T00:00:00", "s")

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = stream.exchange(lambda x: x).capture()
        for minute in range(3):
            handle.advance_to(start + np.timedelta64(minute, "m"))
            if worker.index == 0:
                handle.send(minute)
        handle.advance_to(datetime.datetime(2024, 3, 1, 1, tzinfo=datetime.timezone.utc))
        handle.close()
        worker.drain()
        return out.extract()

    got = merge(timely.execute(work, workers=workers))
    assert [(str(to_datetime64(t)), rs) for t, rs in got] == [
        ("2024-03-01T00:00:00.000000000", [0]),
        ("2024-03-01T00:01:00.000000000", [1]),
        ("2024-03-01T00:02:00.000000000", [2])]


def test_datetime_conversions():
    aware = datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert to_datetime(from_datetime(aware)) == aware
    naive = datetime.datetime(2024, 1, 1, 10)
    assert from_datetime(naive) == from_datetime(aware)
    assert from_datetime(np.datetime64("2024-01-01T10:00:00.000000001")) == from_datetime(naive) + 1
    assert from_datetime(5) == 5 and from_datetime((naive, 2))[1] == 2
    with pytest.raises(timely.TimestampError):
        from_datetime(datetime.datetime(1969, 12, 31))
    with pytest.raises(timely.TimestampError):
        from_datetime(np.datetime64("NaT"))
