"""The cost of an epoch: CPU time per epoch per worker at W = 1, 2, 3, 4.

The ``epoch`` workload of ``benchmarks/epoch.py`` (which checks its answer,
the sums per (epoch, key) against a ``collections.Counter``): 2,000 epochs
of 16 rows per worker, each epoch a full round of progress (advance, step
until the probe passes), through exchange by key → sum per (epoch, key) →
probe, for the ``columnar`` (``aggregate``) and ``records``
(``exchange`` + ``unary_notify``) APIs. One case per API runs W = 1, 2, 3,
4 in turn; its ``extra_info`` holds CPU µs per epoch per worker (mean over
workers) and wall µs per epoch for each W, the CPU ratio to W = 1, the
targets (W = 1 ≤ 25 µs; W = 2 ≤ 1.5x W = 1; W = 3, 4 ≤ 2x) and whether they
are met. Timings are reported, never asserted on; only answers are.

The machine has 2 cores: W = 3 and 4 oversubscribe it, which is why the
figure is CPU time; read ``load_average`` beside the figures. Without
``--benchmark-only`` (the project's ``addopts`` disable benchmarks) each
case runs once at 50 epochs, as a check of the answers.
"""

from __future__ import annotations

import os

import epoch
import pytest

CHECK_EPOCHS = 50  # when benchmarks are disabled: a correctness check only


@pytest.mark.parametrize("api", epoch.APIS)
def test_epoch(benchmark, api):
    epochs = CHECK_EPOCHS if benchmark.disabled else epoch.EPOCHS
    runs: list = []

    def sweep():
        runs.append(epoch.sweep(api, epoch.WORKERS, epochs))  # checks every answer

    benchmark.group = "epoch"
    benchmark.pedantic(sweep, rounds=1, iterations=1)
    figures = runs[-1]
    # A wrong answer has already failed in epoch.run; every run's rows crossed.
    assert all(f["crossed"] for w, f in figures.items() if w > 1)
    one = figures[1]["cpu_us"]
    info: dict = {"api": api, "epochs": epochs, "rows_per_worker_per_epoch": epoch.ROWS,
                  "target_cpu_us_W1": epoch.TARGET_W1_US}
    for w, f in figures.items():
        info[f"cpu_us_per_epoch_W{w}"] = round(f["cpu_us"], 2)
        info[f"cpu_us_per_epoch_each_W{w}"] = [round(x, 2) for x in f["cpu_us_each"]]
        info[f"wall_us_per_epoch_W{w}"] = round(f["wall_us"], 2)
        info[f"ratio_W{w}_over_W1"] = round(f["cpu_us"] / one, 2)
        if w > 1:
            info[f"target_ratio_W{w}"] = epoch.target_for(w)[1]
        info[f"meets_target_W{w}"] = epoch.meets(figures, w)
    info["meets_target"] = all(epoch.meets(figures, w) for w in figures)
    info["load_average"] = os.getloadavg()
    info["cores"] = os.cpu_count()
    benchmark.extra_info.update(info)
