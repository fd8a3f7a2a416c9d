"""Barrier: no worker leaves a round before the last one arrives; rounds
reuse one dataflow; waiting keeps other dataflows running; closing or
dropping a barrier lets everything complete; misuse raises BarrierError.

Workers are separate processes, so every observation is returned from
``work``. Arrival and departure stamps come from ``time.monotonic()``, which
on Linux reads one system-wide clock, so stamps from different processes
compare. The assertions are causal (the last arrival precedes the first
departure), never about speed.
"""

from __future__ import annotations

import doctest
import time

import pytest

import timely
from timely.synchronization import Barrier, BarrierError, barrier

TIMEOUT = 60.0  # generous: a wait that takes this long is a hang, not slowness


def assert_rounds_meet(results, rounds: int) -> None:
    """``results``: per worker, ``[(arrived, left)]`` per round."""
    assert all(len(stamps) == rounds for stamps in results)
    for r in range(rounds):
        last_arrival = max(stamps[r][0] for stamps in results)
        first_departure = min(stamps[r][1] for stamps in results)
        assert last_arrival <= first_departure, f"round {r}: a worker left early"


def staggered(rounds: int, delay: float):
    """Each worker sleeps a different multiple of ``delay`` before each wait;
    the worker that arrives last changes from round to round."""

    def work(worker):
        b = Barrier(worker)
        stamps = []
        for r in range(rounds):
            time.sleep(delay * ((worker.index + r) % worker.peers))
            arrived = time.monotonic()
            b.wait()
            stamps.append((arrived, time.monotonic()))
        assert b.round == rounds
        return stamps

    return work


def test_no_worker_leaves_before_the_last_arrives(workers):
    rounds = 5
    results = timely.execute(staggered(rounds, 0.05), workers=workers)
    assert_rounds_meet(results, rounds)


def test_one_barrier_serves_many_rounds(workers):
    rounds = 300

    def work(worker):
        b = Barrier(worker)
        installed = worker.installed_dataflows()
        stamps = []
        for _ in range(rounds):
            arrived = time.monotonic()
            b.wait()
            stamps.append((arrived, time.monotonic()))
        # Reuse builds nothing new.
        assert worker.installed_dataflows() == installed
        return stamps

    assert_rounds_meet(timely.execute(work, workers=workers), rounds)


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "threads"},
        {"progress_mode": "eager"},
        {"schedule_seed": 3, "check_progress": True},
    ],
    ids=["threads", "eager", "shuffled"],
)
def test_barrier_under_other_execution_modes(options):
    rounds = 4
    assert_rounds_meet(timely.execute(staggered(rounds, 0.02), workers=2, **options), rounds)


def test_waiting_keeps_other_dataflows_running(workers):
    # Worker 0 goes straight into the barrier. Every other worker sends
    # records to worker 0 and arrives at the barrier only after its probe
    # says worker 0 consumed them, which needs worker 0 to step the data
    # dataflow while it waits.
    def work(worker):
        seen = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: 0).inspect(seen.append).probe()
        b = Barrier(worker)
        if worker.index == 0:
            handle.close()
            b.wait()
            return sorted(seen)
        handle.send_batch([worker.index * 100 + i for i in range(5)])
        handle.close()
        deadline = time.monotonic() + TIMEOUT
        while not probe.done():
            assert time.monotonic() < deadline, "worker 0 did not consume while waiting"
            worker.step_or_park(0.01)
        b.wait()
        return None

    results = timely.execute(work, workers=workers)
    expected = sorted(w * 100 + i for w in range(1, workers) for i in range(5))
    assert results[0] == expected


def test_advance_and_reached_wait_without_blocking(workers):
    def work(worker):
        b = Barrier(worker)
        assert b.reached()  # round 0: nothing to wait for
        steps = 0
        for r in range(3):
            b.advance()
            assert b.round == r + 1
            deadline = time.monotonic() + TIMEOUT
            while not b.reached():
                assert time.monotonic() < deadline
                worker.step()
                steps += 1
        return b.round, steps > 0

    results = timely.execute(work, workers=workers)
    assert [r for r, _ in results] == [3] * workers
    assert all(stepped for _, stepped in results)


def test_a_closed_barrier_holds_no_one_back(workers):
    # Worker 0 leaves at once; the others meet for several rounds without it.
    rounds = 4

    def work(worker):
        b = Barrier(worker)
        if worker.index == 0:
            b.close()
            assert b.closed
            return []
        stamps = []
        for r in range(rounds):
            time.sleep(0.02 * ((worker.index + r) % worker.peers))
            arrived = time.monotonic()
            b.wait()
            stamps.append((arrived, time.monotonic()))
        return stamps

    results = timely.execute(work, workers=workers)
    assert results[0] == []
    if workers > 1:
        assert_rounds_meet(results[1:], rounds)


def test_dropped_barriers_let_the_worker_drain(workers):
    def work(worker):
        kept = Barrier(worker)
        dropped = Barrier(worker)
        kept.wait()
        dropped.wait()
        del dropped
        kept.close()
        worker.drain(timeout=TIMEOUT)
        return worker.has_dataflows()

    assert timely.execute(work, workers=workers) == [False] * workers


def test_barrier_left_open_is_closed_when_work_returns(workers):
    # execute() drains every worker after `work` returns: the barrier, now
    # garbage, must not keep its dataflow alive.
    def work(worker):
        b = Barrier(worker)
        b.wait()
        return b.round

    assert timely.execute(work, workers=workers) == [1] * workers


def test_use_after_close_raises():
    def work(worker):
        b = Barrier(worker)
        b.wait()
        b.close()
        b.close()  # idempotent
        errors = []
        for method in (b.wait, b.advance, b.reached):
            with pytest.raises(BarrierError, match="closed") as info:
                method()
            errors.append(info.value)
        return errors, repr(b)

    errors, text = timely.execute_directly(work)
    assert all(isinstance(e, timely.TimelyError) and isinstance(e, RuntimeError) for e in errors)
    assert text == "Barrier(closed)"


def test_wait_inside_operator_logic_raises():
    def work(worker):
        b = Barrier(worker)
        failures = []

        def logic(input):
            for _cap, _data in input:
                try:
                    b.wait()
                except timely.DataflowError as exc:
                    failures.append(str(exc))

        with worker.dataflow() as scope:
            scope.to_stream([1]).sink(timely.Pipeline, "Waits", logic)
        worker.step()
        b.close()
        worker.drain(timeout=TIMEOUT)
        return failures

    failures = timely.execute_directly(work)
    assert len(failures) == 1 and "inside a step" in failures[0]


def test_docstring_examples():
    result = doctest.testmod(barrier, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
