"""More workers: the 2-worker rate against the 1-worker rate, measured in one run.

Workloads (``benchmarks/ab.py``'s, which check their answers):

- ``wordcount, columnar`` at 10^6 and 10^7 words (10 epochs), target at
  10^7: 2 workers ≥ 1.6x the 1-worker rate; at 10^6: no slower (≥ 1.0x);
- ``tumbling, columnar`` at 10^6 and 10^7 rows (100 epochs), the same
  targets;
- ``wordcount, records`` (the example) at 10^6 words, target ≥ 1.2x.

Each case runs 1 worker and 2 workers alternately, three rounds (the
benchmark's figure is a round of both), and reports the best rate of each
and their ratio in ``extra_info``. The machine has 2
cores: figures taken while it runs anything else are not ratios of this
code; read ``load_average`` beside them.
"""

from __future__ import annotations

import os

import ab
import pytest

CASES = {
    "wordcount-columnar-1e6": (ab.columnar_wordcount, 10**6, 1.0),
    "wordcount-columnar-1e7": (ab.columnar_wordcount, 10**7, 1.6),
    "tumbling-columnar-1e6": (ab.columnar_tumbling, 10**6, 1.0),
    "tumbling-columnar-1e7": (ab.columnar_tumbling, 10**7, 1.6),
    "wordcount-records-1e6": (lambda workers, rows: ab.record_wordcount(workers), 10**6, 1.2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_two_workers_against_one(benchmark, case):
    fn, rows, target = CASES[case]
    one, two = [], []

    def alternate():
        one.append(fn(1, rows))
        two.append(fn(2, rows))

    benchmark.pedantic(alternate, rounds=3, iterations=1)
    # The workloads time themselves (inside the workers, from the moment all
    # of them are ready until the answer is complete): the best of each
    # count's rounds.
    one_s, two_s = min(one), min(two)
    benchmark.extra_info.update({
        "rows": rows,
        "rows_per_s_1_worker": round(rows / one_s),
        "rows_per_s_2_workers": round(rows / two_s),
        "ratio_2_over_1": round(one_s / two_s, 2),
        "target_ratio": target,
        "meets_target": one_s / two_s >= target,
        "load_average": os.getloadavg(),
    })
