"""Several workers: the progress round trip, and word count at 1 and 2 workers.

- ``round trip``: 2 worker processes; worker loop: advance the input, step
  until the probe (behind an exchange) passes it; 10^4 rounds. Figure: µs per
  round, measured inside the workers. Reference: the Rust crate's ~49 µs
  across two processes over TCP (WORKLOADS.md; not measured here). Target:
  ≤ 50 µs. Measured for demand-driven and eager progress.
- ``wordcount``: ``timely.examples.wordcount`` on 10^6 words at 1 and 2
  worker processes, checked against ``collections.Counter``; figure: words/s,
  with Counter's rate measured in the same run.
"""

from __future__ import annotations

import collections
import time

import pytest

import timely
from timely.examples import wordcount

ROUNDS = 10_000


def round_trip(mode: str) -> float:
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        start = time.perf_counter()
        for r in range(ROUNDS):
            handle.advance_to(r + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        elapsed = time.perf_counter() - start
        assert probe.frontier().elements() == [ROUNDS]
        handle.close()
        return elapsed / ROUNDS

    return max(timely.execute(work, workers=2, progress_mode=mode))


@pytest.mark.parametrize("mode", ["demand", "eager"])
def test_progress_round_trip(benchmark, mode):
    per_round = benchmark.pedantic(lambda: round_trip(mode), rounds=3, iterations=1)
    benchmark.extra_info.update({
        "us_per_round": round(per_round * 1e6, 1),
        "target_us": 50,
        "meets_target": per_round <= 50e-6,
        "rust_tcp_us": 49,
    })


@pytest.mark.parametrize("workers", [1, 2])
def test_wordcount_workers(benchmark, workers):
    words = wordcount.make_words(10**6)
    start = time.perf_counter()
    expected = collections.Counter(words)
    counter_s = time.perf_counter() - start

    def run():
        return wordcount.wordcount(words, workers=workers, epochs=10)

    counts = benchmark.pedantic(run, rounds=2, iterations=1)
    assert counts == dict(expected)
    benchmark.extra_info.update({
        "words_per_s": round(len(words) / benchmark.stats.stats.min),
        "counter_words_per_s": round(len(words) / counter_s),
    })
