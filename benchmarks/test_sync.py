"""Synchronization at 2 worker processes: Barrier round latency, Sequencer hand-off.

- ``barrier wait``: 2 worker processes each call ``Barrier.wait()`` 5·10^3
  times in a row, after one warm-up round. Figure: µs per round, measured
  inside the workers (the slower worker's mean). Baseline, measured in the
  same run: the bare progress round trip the barrier is made of (advance an
  input, step until a probe on its stream passes) with ``step_while``.
- ``sequencer hand-off``: a token passes between the 2 workers through a
  ``Sequencer``: worker ``r % 2`` pushes ``r`` once it has read ``r - 1``;
  10^3 elements. Figure: µs per element (push to the other worker reading
  it, and back).

Every run checks its answer: every worker completed every round, and both
read the sequence ``0, 1, ..., n - 1``.
"""

from __future__ import annotations

import time

import harness  # noqa: F401  (puts this checkout first on sys.path)
import pytest

import timely
from timely.synchronization import Barrier, Sequencer

WORKERS = 2
BARRIER_ROUNDS = 5_000
HANDOFFS = 1_000


def barrier_rounds(rounds: int = BARRIER_ROUNDS) -> float:
    """Seconds per ``wait()`` round, the slower worker's mean."""

    def work(worker):
        barrier = Barrier(worker)
        barrier.wait()
        start = time.perf_counter()
        for _ in range(rounds):
            barrier.wait()
        elapsed = time.perf_counter() - start
        assert barrier.round == rounds + 1
        barrier.close()
        return elapsed / rounds

    return max(timely.execute(work, workers=WORKERS))


def probe_rounds(rounds: int = BARRIER_ROUNDS) -> float:
    """The same rounds as a bare input advance and probe, spinning on step_while."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.probe()
        handle.advance_to(1)
        worker.step_while(lambda: probe.less_than(handle.time))
        start = time.perf_counter()
        for r in range(2, rounds + 2):
            handle.advance_to(r)
            worker.step_while(lambda: probe.less_than(handle.time))
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
    baseline = probe_rounds()
    figures: list = []
    benchmark.pedantic(lambda: figures.append(barrier_rounds()), rounds=3, iterations=1)
    per_round = min(figures)
    benchmark.extra_info.update(
        {
            "workers": WORKERS,
            "us_per_round": round(per_round * 1e6, 1),
            "bare_probe_round_trip_us": round(baseline * 1e6, 1),
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
