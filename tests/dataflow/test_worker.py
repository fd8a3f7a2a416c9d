"""The worker: stepping, activation, completion, and stalls."""

from __future__ import annotations

import pytest

import timely
from timely import Pipeline


def test_step_returns_false_without_dataflows():
    def work(worker):
        first = worker.step()
        with worker.dataflow() as scope:
            scope.to_stream(range(3)).probe()
        second = worker.step()
        while worker.step():
            pass
        return first, second, worker.has_dataflows()

    first, second, remaining = timely.execute_directly(work)
    assert first is False
    assert remaining is False


def test_execute_returns_results_in_index_order():
    assert timely.execute(lambda w: (w.index, w.peers), workers=1) == [(0, 1)]
    assert timely.execute_directly(lambda w: "done") == "done"
    assert timely.execute_from_args(["-w", "1"], lambda w: w.peers) == [1]


def test_operators_run_only_when_activated():
    runs = {"idle": 0}

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            other, quiet = scope.new_input()

            def constructor(cap, info):
                cap.drop()

                def logic(inp, out):
                    runs["idle"] += 1
                    for c, data in inp:
                        out.session(c).give_container(data)

                return logic

            quiet.unary(Pipeline, "Quiet", constructor).probe()
            probe = stream.map(lambda x: x).probe()
        worker.step()
        baseline = runs["idle"]
        for t in range(50):
            handle.send(t)
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        during = runs["idle"] - baseline
        handle.close()
        other.close()
        worker.drain()
        return during

    # The quiet operator's input saw no data and no frontier change while
    # the other input advanced fifty times.
    assert timely.execute_directly(work) == 0


def test_step_or_park_returns_when_idle():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.probe()
        worker.step_or_park(0.01)
        handle.close()
        while worker.step_or_park(0):
            pass
        return worker.has_dataflows()

    assert timely.execute_directly(work) is False


def test_a_dataflow_that_cannot_complete_is_reported_not_hung():
    def work(worker):
        keep = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                keep.append(cap)          # held forever by user state
                return lambda inp, out: [None for _ in inp]

            stream.unary(Pipeline, "Holder", constructor).probe()
        handle.close()
        try:
            worker.drain()
        finally:
            keep.clear()
        return "unreachable"

    with pytest.raises(timely.DataflowError, match=r"a capability at 0 held by Holder \[0, 2\] \(output 0\), created at .*test_worker.py:\d+"):
        timely.execute_directly(work)


def test_step_inside_step_is_an_error():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.inspect(lambda x: worker.step()).probe()
        handle.send(1)
        handle.close()
        worker.drain()

    with pytest.raises(timely.DataflowError, match="inside a step"):
        timely.execute_directly(work)


def test_results_do_not_depend_on_the_worker_count():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            counts = (stream.flat_map(str.split)
                      .exchange(lambda w: w)
                      .map(lambda w: (w, 1))
                      .accumulate({}, lambda acc, batch: {**acc, **{
                          w: acc.get(w, 0) + sum(1 for x, _ in batch if x == w) for w, _ in batch}})
                      .capture())
        lines = ["a b c", "b c", "c"] * 5
        for epoch in range(3):
            handle.send_batch([l for i, l in enumerate(lines) if i % worker.peers == worker.index])
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return counts.extract()

    def merged(workers):
        total: dict = {}
        for result in timely.execute(work, workers=workers):
            for time, dicts in result:
                for d in dicts:
                    for w, c in d.items():
                        total[(time, w)] = total.get((time, w), 0) + c
        return total

    one = merged(1)
    assert one == {(t, w): {"a": 5, "b": 10, "c": 15}[w] for t in range(3) for w in "abc"}
    assert merged(2) == one
    assert merged(3) == one


@pytest.mark.parametrize("mode", ["processes", "threads"])
@pytest.mark.parametrize("workers", [2, 3])
def test_a_failing_worker_stops_the_others(workers, mode):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        if worker.index == workers - 1:
            raise ValueError("boom in the last worker")
        for t in range(1000):
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        return "finished"

    with pytest.raises(timely.TimelyError, match=f"worker {workers - 1} failed") as info:
        timely.execute(work, workers=workers, mode=mode)
    # the worker's own traceback comes along
    assert "ValueError: boom in the last worker" in str(info.value)


@pytest.mark.parametrize("workers", [2, 3])
def test_a_killed_worker_is_detected(workers):
    """A worker that dies by a signal brings the computation down with an
    error naming it; nothing is left in /dev/shm."""
    import os
    import signal

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        for t in range(100000):
            if worker.index == 1 and t == 50:
                os.kill(os.getpid(), signal.SIGKILL)
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        return "finished"

    with pytest.raises(timely.TimelyError, match="worker 1 killed by signal SIGKILL"):
        timely.execute(work, workers=workers)
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"timely-{os.getpid()}-")]


def test_results_are_the_same_with_threads_and_processes():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = stream.exchange(lambda x: x * 7).map(lambda x: x * x).capture()
        handle.send_batch(list(range(worker.index, 100, worker.peers)))
        handle.close()
        worker.drain()
        return out.extract()

    def flat(results):
        return sorted(x for result in results for _, xs in result for x in xs)

    expected = [x * x for x in range(100)]
    for workers in (2, 3):
        assert flat(timely.execute(work, workers=workers, mode="threads")) == expected
        assert flat(timely.execute(work, workers=workers, mode="processes")) == expected


@pytest.mark.parametrize("mode", ["processes", "threads"])
def test_workers_that_build_different_dataflows_fail_fast(mode):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            if worker.index == 1:
                stream = stream.map(lambda x: x)        # worker 1 builds another graph
            probe = stream.exchange(lambda x: x).probe()
        for t in range(50):
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        return "finished"

    with pytest.raises(timely.TimelyError, match="built a different dataflow"):
        timely.execute(work, workers=2, mode=mode)


def _dataflows_work(extra_on):
    """Every worker builds one dataflow; worker ``extra_on`` (if any) builds
    a second one and waits for it."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        for t in range(5):
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        if worker.index == extra_on:
            with worker.dataflow() as scope:
                second, stream = scope.new_input()
                probe2 = stream.exchange(lambda x: x).probe()
            second.close()
            worker.step_while(lambda: not probe2.done())
        return worker.index

    return work


@pytest.mark.parametrize("mode", ["processes", "threads"])
@pytest.mark.parametrize("extra_on", [0, 1])
def test_workers_that_build_different_numbers_of_dataflows_fail_fast(mode, extra_on):
    import time

    start = time.monotonic()
    with pytest.raises(timely.WorkerFailed, match="DataflowError") as info:
        timely.execute(_dataflows_work(extra_on), workers=2, mode=mode)
    assert time.monotonic() - start < 30
    assert f"worker {extra_on} built 2 dataflow(s)" in str(info.value)
    assert f"worker(s) [{1 - extra_on}] finished after building [1]" in str(info.value)
    if mode == "threads":
        assert isinstance(info.value.__cause__, timely.DataflowError)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_that_build_the_same_dataflows_at_different_moments_finish(workers):
    """Several dataflows per worker, the last one built late by some workers
    only after stepping a while: no false alarm."""

    def work(worker):
        results = []
        for n in range(3):
            if worker.index % 2:
                for _ in range(20):
                    worker.step()
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                out = stream.exchange(lambda x: x).map(lambda x: x + n).capture()
            handle.send_batch([worker.index * 10 + n])
            handle.close()
            worker.drain()
            results.extend(x for _, xs in out.extract() for x in xs)
        return sorted(results)

    results = timely.execute(work, workers=workers)
    assert sorted(x for r in results for x in r) == sorted(
        w * 10 + 2 * n for w in range(workers) for n in range(3))
