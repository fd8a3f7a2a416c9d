"""The rest of the Rust crate's operator API, restating its doc tests and
unit tests: result streams, delay_total, enter_at, inspect_core, empty,
to_stream, iterator_source, concatenate, aggregate, state_machine,
for_each_time."""

from __future__ import annotations

import warnings

import pytest

import timely
from timely import Err, Ok
from timely.dataflow.operators.flow_controlled import IteratorSourceInput, iterator_source

from .helpers import merge, run_epochs

RESULTS = [Ok(0), Err("e"), Ok(5), Err("f")]


def on_workers(build, workers):
    """``build(scope)`` in one dataflow on every worker; merged captures."""

    def work(worker):
        with worker.dataflow() as scope:
            captured = build(scope)
        worker.drain()
        if isinstance(captured, (tuple, list)):
            return tuple(c.extract() for c in captured)
        return captured.extract()

    results = timely.execute(work, workers=workers)
    if results and isinstance(results[0], tuple):
        return tuple(merge([r[i] for r in results]) for i in range(len(results[0])))
    return merge(results)


def results_stream(scope):
    # Each worker contributes the records once: worker 0 only.
    return scope.to_stream(RESULTS if scope.index == 0 else [])


# -- result streams (vec::result tests) ----------------------------------------

def test_ok_and_err(workers):
    assert on_workers(lambda s: results_stream(s).ok().capture(), workers) == [(0, [0, 5])]
    assert on_workers(lambda s: results_stream(s).err().capture(), workers) == [(0, ["e", "f"])]


def test_map_ok_map_err_and_then_unwrap_or_else(workers):
    got = on_workers(lambda s: (
        results_stream(s).map_ok(lambda x: x + 1).capture(),
        results_stream(s).map_err(lambda e: e.upper()).capture(),
        results_stream(s).and_then(lambda x: Ok(x * 2) if x else Err("zero")).capture(),
        results_stream(s).unwrap_or_else(len).capture(),
    ), workers)
    assert got[0] == [(0, sorted([Ok(1), Err("e"), Ok(6), Err("f")]))]
    assert got[1] == [(0, sorted([Ok(0), Err("E"), Ok(5), Err("F")]))]
    assert got[2] == [(0, sorted([Err("zero"), Err("e"), Ok(10), Err("f")]))]
    assert got[3] == [(0, [0, 1, 1, 5])]


def test_ok_err_splits_by_result(workers):
    even, odd = on_workers(lambda s: [
        st.capture() for st in s.to_stream(range(10) if s.index == 0 else [])
        .ok_err(lambda x: Ok(x) if x % 2 == 0 else Err(x))], workers)
    assert even == [(0, [0, 2, 4, 6, 8])]
    assert odd == [(0, [1, 3, 5, 7, 9])]


def test_result_operators_reject_non_results():
    with pytest.raises(timely.DataflowError, match="Ok"):
        timely.example(lambda s: s.to_stream([1]).ok_err(lambda x: x)[0].capture())
    with pytest.raises(timely.DataflowError, match="and_then"):
        timely.example(lambda s: s.to_stream([Ok(1)]).and_then(lambda x: x).capture())


# -- delay_total, enter_at, inspect_core, empty ----------------------------------

def test_delay_total_moves_records_to_later_times(workers):
    # The crate's doc test: each record delayed to its own value.
    got = run_epochs(lambda s, st: st.delay_total(lambda x, t: t + x).capture(),
                     [[0, 1, 2], [3]], workers)
    assert got == [(0, [0]), (1, [1]), (2, [2]), (4, [3])]
    with pytest.raises(timely.CapabilityError):
        run_epochs(lambda s, st: st.delay_total(lambda x, t: 0).capture(), [[], [5]])


def test_enter_at_enters_at_the_records_coordinate(workers):
    def build(scope):
        with scope.iterative() as inner:
            src = scope.to_stream(range(4) if scope.index == 0 else [])
            entered = src.enter_at(inner, lambda x: 3 - x)
            captured = entered.capture()
            left = entered.leave().capture()
        return captured, left

    inside, outside = on_workers(build, workers)
    assert inside == [((0, 0), [3]), ((0, 1), [2]), ((0, 2), [1]), ((0, 3), [0])]
    assert outside == [(0, [0, 1, 2, 3])]
    with pytest.raises(timely.DataflowError, match="nested"):
        def flat(scope):
            with scope.region() as region:
                scope.to_stream([1]).enter_at(region, lambda x: x)
        timely.example(flat)


def test_inspect_core_sees_batches_and_frontiers():
    events = []

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.inspect_core(events.append)
        handle.send(1)
        handle.advance_to(2)
        worker.step_while(lambda: not any(type(e) is Err for e in events))
        handle.send(2)
        handle.close()
        worker.drain()

    timely.execute_directly(work)
    data = [e.value for e in events if type(e) is Ok]
    frontiers = [e.error for e in events if type(e) is Err]
    assert data == [(0, [1]), (2, [2])]
    assert frontiers == [[2], []]
    # A frontier event comes after the data at the times it passes.
    assert events.index(Err([2])) > events.index(Ok((0, [1])))


def test_empty_stream_completes(workers):
    def build(scope):
        return scope.empty().concatenate([scope.to_stream([scope.index])]).capture()

    assert on_workers(build, workers) == [(0, list(range(workers)))]
    assert timely.example(lambda s: s.empty().capture()).extract() == []


# -- sources ------------------------------------------------------------------------

def test_to_stream_gives_large_inputs_a_chunk_per_scheduling():
    from timely.dataflow.operators.input import TO_STREAM_CHUNK

    batches = []

    def build(scope):
        return scope.to_stream(iter(range(2 * TO_STREAM_CHUNK + 5))).inspect_batch(
            lambda t, b: batches.append(len(b))).count().capture()

    assert timely.example(build).extract() == [(0, [2 * TO_STREAM_CHUNK + 5])]
    assert max(batches) <= TO_STREAM_CHUNK and len(batches) >= 3


def test_iterator_source_waits_for_the_probe(workers):
    """The crate's doc test: chunks of ten records at time ``x // 100 * 100``;
    the next chunk is read only once the probe reached the previous target."""

    def work(worker):
        records = iter(range(worker.index, 1000, worker.peers))
        pending = []
        probe = timely.ProbeHandle()
        calls = []
        target = [0]

        def next_input(prev):
            chunk = list(pending) or [x for _, x in zip(range(10), records)]
            pending.clear()
            if not chunk:
                return None
            t = chunk[0] // 100 * 100
            mine = [x for x in chunk if x // 100 * 100 == t]
            pending.extend(x for x in chunk if x // 100 * 100 != t)
            calls.append(probe.less_than(target[0]))
            target[0] = prev
            return IteratorSourceInput(t, [(t, mine)], prev)

        with worker.dataflow() as scope:
            out = iterator_source(scope, "Source", next_input, probe).probe_with(probe).capture()
        worker.drain()
        # Every call came when the probe had reached the previous call's time.
        assert calls and not any(calls)
        return out.extract()

    got = merge(timely.execute(work, workers=workers))
    assert [t for t, _ in got] == list(range(0, 1000, 100))
    assert sorted(x for _, rs in got for x in rs) == list(range(1000))
    assert all(all(x // 100 * 100 == t for x in rs) for t, rs in got)


def test_iterator_source_rejects_times_going_back():
    def work(worker):
        calls = iter([IteratorSourceInput(5, [(5, [1])], 0), IteratorSourceInput(0, [(1, [2])], 0)])
        with worker.dataflow() as scope:
            iterator_source(scope, "Back", lambda t: next(calls, None), timely.ProbeHandle())
        worker.drain()

    with pytest.raises(timely.CapabilityError):
        timely.execute_directly(work)


# -- concatenate ------------------------------------------------------------------

def test_concatenate_variants(workers):
    def build(scope):
        a, b, c = (scope.to_stream([10 * i + scope.index]) for i in range(3))
        return a.concatenate([b, c]).capture(), scope.concatenate([a, b, c]).capture()

    one, other = on_workers(build, workers)
    expected = [(0, sorted(10 * i + w for i in range(3) for w in range(workers)))]
    assert one == other == expected


# -- aggregation (vec::aggregation doc tests) ---------------------------------------

def test_aggregate_sums_per_key(workers):
    def build(scope):
        return (scope.to_stream(range(10) if scope.index == 0 else [])
                .map(lambda x: (x % 2, x))
                .aggregate(lambda k, v, agg: agg + v, lambda k, agg: (k, agg), lambda k: k)
                .capture())

    assert on_workers(build, workers) == [(0, [(0, 20), (1, 25)])]


def test_aggregate_into_lists_reports_lengths(workers):
    def fold(key, val, agg):
        agg.append(val)
        return agg

    got = run_epochs(lambda s, st: st.map(lambda x: (x % 2, x))
                     .aggregate(fold, lambda k, agg: (k, len(agg)), lambda k: k, default=list)
                     .capture(), [range(10), range(3)], workers)
    assert got == [(0, [(0, 5), (1, 5)]), (1, [(0, 2), (1, 1)])]


def test_aggregate_keeps_the_columnar_form():
    import numpy as np

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            one = stream.aggregate("k", "v", "sum").capture()
            two = stream.aggregate_batch("k", "v", "sum").capture()
        handle.send_batch(timely.Batch({"k": np.array([1, 2, 1]), "v": np.array([1.0, 2.0, 3.0])}))
        handle.close()
        worker.drain()
        return one.extract(), two.extract()

    one, two = timely.execute_directly(work)
    assert one == two == [(0, [(1, 4.0), (2, 2.0)])]


def test_state_machine_running_sums(workers):
    """The crate's doc test: every result is one of the running sums."""
    def fold(key, val, agg):
        agg += val
        return agg, False, [(key, agg)]

    got = run_epochs(lambda s, st: st.map(lambda x: (x % 2, x))
                     .state_machine(fold, lambda k: k).capture(), [range(10)], workers)
    assert got == [(0, [(0, 0), (0, 2), (0, 6), (0, 12), (0, 20),
                        (1, 1), (1, 4), (1, 9), (1, 16), (1, 25)])]


def test_state_machine_applies_times_in_order_and_removes_states(workers):
    # A count per key that resets (removes its state) at 3; later epochs
    # continue from earlier ones even when their data arrive first.
    def fold(key, val, count):
        count += 1
        return count, count == 3, [(key, count)]

    def work(worker):
        with worker.dataflow() as scope:
            (handle, cap), stream = scope.new_unordered_input()
            out = stream.state_machine(fold, lambda k: k).capture()
        if worker.index == 0:
            late = cap.delayed(1)
            handle.session(late).give_iterator([("a", 0)] * 2)   # epoch 1 first
            for _ in range(3):
                worker.step()
            handle.session(cap).give_iterator([("a", 0)] * 2)    # then epoch 0
            late.drop()
        cap.drop()
        worker.drain()
        return out.extract()

    got = merge(timely.execute(work, workers=workers))
    assert got == [(0, [("a", 1), ("a", 2)]), (1, [("a", 1), ("a", 3)])]


# -- for_each_time -----------------------------------------------------------------

def test_for_each_time_groups_batches_by_time_in_order():
    seen = []

    def constructor(cap, info):
        def logic(input, output):
            def each(cap, batches):
                seen.append((cap.time, [list(b) for b in batches]))
                output.session(cap).give_iterator(x for b in batches for x in b)
            input.for_each_time(each)
        return logic

    def work(worker):
        with worker.dataflow() as scope:
            (handle, cap), stream = scope.new_unordered_input()
            out = stream.unary(timely.Pipeline, "Group", constructor).capture()
        c2 = cap.delayed(2)
        handle.session(c2).give_container([1])
        handle.session(cap).give_container([2])
        handle.session(c2).give_container([3])
        handle.session(cap).give_container([4])
        cap.drop()
        c2.drop()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [(0, [2, 4]), (2, [1, 3])]
    assert seen == [(0, [[2], [4]]), (2, [[1], [3]])]


# -- unordered input shape ---------------------------------------------------------

def test_new_unordered_input_has_the_crates_shape():
    def new_shape(worker):
        with worker.dataflow() as scope:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                result = scope.new_unordered_input()
                (handle, cap), stream = result
        assert len(result) == 2
        handle.activate().session(cap).give(2)
        cap.drop()
        worker.drain()

    timely.execute_directly(new_shape)
