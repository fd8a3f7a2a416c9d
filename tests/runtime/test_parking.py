"""Waiting parks: ``step_while``, ``drain``, ``step_or_park`` and
``Barrier.wait`` sleep on the worker's doorbell when nothing is runnable,
and wake on data, progress, activations from other threads and delayed
activations, at 1, 2 and 3 workers, as threads and as processes.

A waiting worker is checked by what it did while its peer was slow: how
many steps it took and how much CPU time its thread used. A spinning
worker takes thousands of steps in the time the peer sleeps; a parked one
takes a handful (one per wake-up: the peer's progress, the stall watch).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import timely
from timely.synchronization import Barrier

SLOW = 0.4            # seconds the slow worker sleeps before it advances
STEP_LIMIT = 40       # steps a parked worker may take meanwhile (a spinning one takes thousands)
CPU_LIMIT = 0.15      # CPU seconds it may use meanwhile


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}w")
def workers(request):
    return request.param


@pytest.fixture(params=["threads", "processes"])
def mode(request):
    return request.param


def _slow_peer_rounds(worker, rounds: int):
    """Worker 0 sleeps before each advance; the others wait for it in
    ``step_while``. Returns ``(steps, cpu seconds)`` spent waiting by this
    worker, over every round."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = stream.exchange(lambda x: x).probe()
    steps = cpu = 0.0
    for r in range(1, rounds + 1):
        if worker.index == 0:
            time.sleep(SLOW)
            handle.send(r)
        handle.advance_to(r)
        before_steps, before_cpu = worker._steps, time.thread_time()
        worker.step_while(lambda: probe.less_than(handle.time))
        if worker.index != 0:
            steps += worker._steps - before_steps
            cpu += time.thread_time() - before_cpu
    handle.close()
    return steps, cpu


def test_step_while_parks_while_a_peer_is_slow(workers, mode):
    results = timely.execute(lambda w: _slow_peer_rounds(w, 2), workers=workers, mode=mode)
    for index, (steps, cpu) in enumerate(results[1:], start=1):
        assert steps <= 2 * STEP_LIMIT, f"worker {index} stepped {steps} times while waiting"
        assert cpu <= 2 * CPU_LIMIT, f"worker {index} used {cpu:.3f} s of CPU while waiting"
    assert len(results) == workers


def test_drain_parks_while_a_peer_is_slow(workers, mode):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = stream.exchange(lambda x: x).capture()
        if worker.index == 0:
            time.sleep(SLOW)
            handle.send(1)
        handle.close()
        before_steps, before_cpu = worker._steps, time.thread_time()
        worker.drain()
        return worker._steps - before_steps, time.thread_time() - before_cpu, out.extract()

    results = timely.execute(work, workers=workers, mode=mode)
    received = sorted(x for _, _, batches in results for _, data in batches for x in data)
    assert received == [1]
    for index, (steps, cpu, _) in enumerate(results[1:], start=1):
        assert steps <= STEP_LIMIT, f"worker {index} stepped {steps} times in drain"
        assert cpu <= CPU_LIMIT, f"worker {index} used {cpu:.3f} s of CPU in drain"


def test_barrier_waits_park(workers, mode):
    def work(worker):
        barrier = Barrier(worker)
        waited = []
        for _ in range(2):
            if worker.index == 0:
                time.sleep(SLOW)
            before = worker._steps
            barrier.wait()
            waited.append(worker._steps - before)
        barrier.close()
        return waited

    results = timely.execute(work, workers=workers, mode=mode)
    for index, waited in enumerate(results[1:], start=1):
        assert max(waited) <= STEP_LIMIT, f"worker {index} stepped {waited} times at the barrier"


@pytest.mark.parametrize("rounds", [300])
def test_many_quick_rounds_never_hang(workers, mode, rounds):
    """Rounds with no delay: every wake-up that arrives between a worker's
    finding nothing to do and its parking must end the park."""

    def work(worker):
        barrier = Barrier(worker)
        for _ in range(rounds):
            barrier.wait()
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        for r in range(1, rounds + 1):
            handle.send(r + worker.index)
            handle.advance_to(r)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        barrier.close()
        return barrier.round

    results = timely.execute(work, workers=workers, mode=mode)
    assert results == [rounds] * workers


def _one_operator(worker, logic_factory):
    """A source whose logic is ``logic_factory(cap, activator)(output)``."""
    with worker.dataflow() as scope:
        def constructor(cap, info):
            return logic_factory(cap, info.activator)
        return scope.source("Source", constructor).capture()


def test_delayed_activation_wakes_a_parked_worker():
    delay = 0.2
    runs: list = []

    def work(worker):
        def factory(cap, activator):
            held = [cap]

            def logic(output):
                runs.append(time.monotonic())
                if len(runs) == 1:
                    activator.activate_after(delay)
                elif held:
                    output.session(held[0]).give(len(runs))
                    held.pop().drop()
            return logic

        out = _one_operator(worker, factory)
        start = worker._steps
        worker.drain()
        return worker._steps - start, out.extract()

    steps, out = timely.execute_directly(work)
    assert out == [(0, [2])]
    assert runs[1] - runs[0] >= delay
    assert steps <= STEP_LIMIT, f"{steps} steps while waiting for a delayed activation"


def test_delayed_activation_at_or_below_zero_is_immediate():
    runs: list = []

    def work(worker):
        def factory(cap, activator):
            held = [cap]

            def logic(output):
                runs.append(1)
                if len(runs) == 1:
                    activator.activate_after(0)
                elif held:
                    held.pop().drop()
            return logic

        _one_operator(worker, factory)
        worker.drain()
        return len(runs)

    assert timely.execute_directly(work) >= 2     # rescheduled by the activation itself


def test_delayed_activations_fire_in_deadline_order():
    order: list = []

    def work(worker):
        with worker.dataflow() as scope:
            def constructor(name, delay):
                def make(cap, info):
                    state = {"first": True}

                    def logic(output):
                        if state["first"]:
                            state["first"] = False
                            info.activator.activate_after(delay)
                        elif not state.get("done"):
                            state["done"] = True
                            order.append(name)
                            cap.drop()
                    return logic
                return make

            scope.source("late", constructor("late", 0.15))
            scope.source("early", constructor("early", 0.05))
        worker.drain()
        return order

    assert timely.execute_directly(work) == ["early", "late"]


def test_sync_activator_wakes_step_while():
    def work(worker):
        addresses, runs = [], []
        with worker.dataflow() as scope:
            def constructor(cap, info):
                addresses.append(info.address)
                held = [cap]

                def logic(output):
                    runs.append(1)
                    if len(runs) == 2 and held:
                        output.session(held[0]).give("woken")
                        held.pop().drop()
                return logic
            out = scope.source("Remote", constructor)
            probe = out.probe()
            captured = out.capture()
        activator = worker.sync_activator_for(addresses[0])
        timer = threading.Timer(SLOW, activator.activate)
        timer.start()
        before_steps, before_cpu = worker._steps, time.thread_time()
        worker.step_while(lambda: not probe.done())
        timer.join()
        return worker._steps - before_steps, time.thread_time() - before_cpu, captured.extract()

    steps, cpu, out = timely.execute_directly(work)
    assert out == [(0, ["woken"])]
    assert steps <= STEP_LIMIT
    assert cpu <= CPU_LIMIT


def test_input_handle_wakes_step_while_at_one_worker():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.map(lambda x: x + 1).probe()
        for r in range(1, 50):
            handle.send(r)
            handle.advance_to(r)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        return handle.time

    assert timely.execute_directly(work) == 49


def test_drain_reports_a_stall_at_once_at_one_worker():
    import timely.errors

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.probe()
        start = time.monotonic()
        with pytest.raises(timely.errors.DataflowError, match="cannot complete"):
            worker.drain()
        handle.close()
        return time.monotonic() - start

    # Raised on the first look, not after a park: well under the stall watch's second.
    assert timely.execute_directly(work) < 0.5


def test_step_or_park_with_a_timeout_returns_after_it():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.probe()
        worker.step()
        start = time.monotonic()
        worker.step_or_park(0.05)
        waited = time.monotonic() - start
        handle.close()
        return waited

    assert timely.execute_directly(work) >= 0.05


def test_a_capability_dropped_outside_a_step_ends_the_park():
    """A change made by user code between steps is found before parking."""

    def work(worker):
        held = []
        with worker.dataflow() as scope:
            def constructor(cap, info):
                held.append(cap)
                return lambda output: None
            probe = scope.source("Holder", constructor).probe()
        worker.step()
        held.pop().drop()
        before = worker._steps
        worker.step_while(lambda: not probe.done())
        return worker._steps - before

    assert timely.execute_directly(work) <= STEP_LIMIT


def test_drain_parks_while_progress_waits_to_be_sent(workers, mode):
    # The fast workers hold progress of their own that no other worker needs
    # yet (the demand-driven protocol keeps it until it matters): waiting
    # with it must park, not wake at once to find that it still need not go.
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.aggregate("key", "value", how="sum").probe()
        slow = worker.index == worker.peers - 1
        for epoch in range(3):
            if slow and epoch == 2:
                time.sleep(SLOW)
            handle.send_batch(timely.Batch(key=np.arange(100) % 7, value=np.ones(100, np.int64)))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        before_steps, before_cpu = worker._steps, time.thread_time()
        while not probe.done():
            worker.step_or_park(None)
        return slow, worker._steps - before_steps, time.thread_time() - before_cpu

    for index, (slow, steps, cpu) in enumerate(timely.execute(work, workers=workers, mode=mode)):
        if not slow:
            assert steps <= STEP_LIMIT, f"worker {index} stepped {steps} times while waiting"
            assert cpu <= CPU_LIMIT, f"worker {index} used {cpu:.3f} s of CPU while waiting"


@pytest.mark.parametrize("workers", [2, 3])
def test_a_waiting_worker_uses_under_one_percent_of_a_core(workers):
    """While a peer takes a second, the others (processes, which poll their
    rings briefly before they park) use less than 1% of a core."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        handle.advance_to(1)
        worker.step_while(lambda: probe.less_than(1))      # every worker is running
        if worker.index == 0:
            time.sleep(1.0)
            handle.send(1)
        handle.advance_to(2)
        start, before = time.monotonic(), time.thread_time()
        worker.step_while(lambda: probe.less_than(2))
        used, waited = time.thread_time() - before, time.monotonic() - start
        handle.close()
        return used, waited

    for index, (used, waited) in enumerate(timely.execute(work, workers=workers)[1:], start=1):
        assert waited >= 0.9
        assert used <= 0.01 * waited, f"worker {index} used {used:.4f} s of CPU in {waited:.2f} s"
