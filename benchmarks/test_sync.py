"""Synchronization at 2 worker processes: Barrier round latency, Sequencer hand-off.

- ``barrier wait``: 2 worker processes each call ``Barrier.wait()`` 5·10^3
  times in a row, after one warm-up round. Figure: µs per round, measured
  inside the workers (the slower worker's mean), and the CPU time per round
  of each worker. Measured in the same run: the round with another process
  spinning on the machine (a busy neighbour; the figure should stay within
  2x of the quiet one), and the bare progress round trip the barrier is made
  of (advance an input, step until a probe on its stream passes), once
  parking (``step_while``) and once spinning (``worker.step()`` in a loop).
- ``sequencer hand-off``: a token passes between the 2 workers through a
  ``Sequencer``: worker ``r % 2`` pushes ``r`` once it has read ``r - 1``;
  10^3 elements. Figure: µs per element (push to the other worker reading
  it, and back).

Every run checks its answer: every worker completed every round, and both
read the sequence ``0, 1, ..., n - 1``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import harness  # noqa: F401  (puts this checkout first on sys.path)
import pytest

import timely
from timely.synchronization import Barrier, Sequencer

WORKERS = 2
BARRIER_ROUNDS = 5_000
HANDOFFS = 1_000


def barrier_rounds(rounds: int = BARRIER_ROUNDS) -> tuple[float, float]:
    """Seconds per ``wait()`` round, the slower worker's mean, and the CPU
    seconds per round of the busier worker."""

    def work(worker):
        barrier = Barrier(worker)
        barrier.wait()
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(rounds):
            barrier.wait()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert barrier.round == rounds + 1
        barrier.close()
        return elapsed / rounds, cpu / rounds

    results = timely.execute(work, workers=WORKERS)
    return max(r[0] for r in results), max(r[1] for r in results)


@contextlib.contextmanager
def busy_neighbour():
    """Another process spinning on the machine while the block runs; stopped
    by its pid afterwards."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        yield
    finally:
        spinner.kill()
        spinner.wait()


def probe_rounds(rounds: int = BARRIER_ROUNDS, spin: bool = False) -> float:
    """The same rounds as a bare input advance and probe: waiting with
    ``step_while`` (parking), or with ``spin`` by calling ``worker.step()``
    until the probe passes."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.probe()

        def wait():
            if spin:
                while probe.less_than(handle.time):
                    worker.step()
            else:
                worker.step_while(lambda: probe.less_than(handle.time))

        handle.advance_to(1)
        wait()
        start = time.perf_counter()
        for r in range(2, rounds + 2):
            handle.advance_to(r)
            wait()
        elapsed = time.perf_counter() - start
        handle.close()
        return elapsed / rounds

    return max(timely.execute(work, workers=WORKERS))


def sequencer_handoff(total: int = HANDOFFS) -> float:
    """Seconds per element of a token passed between the workers."""

    def work(worker):
        sequencer = Sequencer(worker)
        read: list = []
        start = time.perf_counter()
        for r in range(total):
            if r % worker.peers == worker.index:
                sequencer.push(r)
            while len(read) <= r:
                worker.step()
                read.extend(sequencer)
        elapsed = time.perf_counter() - start
        sequencer.close()
        assert read == list(range(total))
        return elapsed / total

    return max(timely.execute(work, workers=WORKERS))


def test_barrier_wait_latency(benchmark):
    parked = probe_rounds()
    spinning = probe_rounds(spin=True)
    figures: list = []
    benchmark.pedantic(lambda: figures.append(barrier_rounds()), rounds=3, iterations=1)
    per_round, cpu = min(figures)
    with busy_neighbour():
        busy, busy_cpu = min(barrier_rounds() for _ in range(3))
    benchmark.extra_info.update(
        {
            "workers": WORKERS,
            "us_per_round": round(per_round * 1e6, 1),
            "cpu_us_per_round": round(cpu * 1e6, 1),
            "us_per_round_busy_neighbour": round(busy * 1e6, 1),
            "busy_over_quiet": round(busy / per_round, 2),
            "bare_probe_round_trip_us_parking": round(parked * 1e6, 1),
            "bare_probe_round_trip_us_spinning": round(spinning * 1e6, 1),
        }
    )


@pytest.mark.parametrize("total", [HANDOFFS])
def test_sequencer_handoff_latency(benchmark, total):
    figures: list = []
    benchmark.pedantic(lambda: figures.append(sequencer_handoff(total)), rounds=3, iterations=1)
    per_element = min(figures)
    benchmark.extra_info.update(
        {
            "workers": WORKERS,
            "us_per_element": round(per_element * 1e6, 1),
        }
    )
