"""A scaling model of the columnar workloads, fitted to costs measured here,
and what it predicts for more workers on one host.

The model: a run of ``N`` rows in ``E`` epochs at ``W`` worker processes
(one core each) takes

    T(W) = E * p(W) + N * c(W)

- ``p(W)``, the per-epoch cost: sending an (almost empty) batch, the
  progress messages every worker sends every other worker for the epoch,
  and the wake-ups that carry them. Measured at W = 1, 2 (and 3) by a
  workload of ``E`` epochs of one row per worker; fitted as
  ``p(W) = p1 + q (W - 1)`` (each worker handles ``W - 1`` peers' progress).
- ``c(W)``, the per-row cost: ``c1 / W`` of the work every row needs where
  it is (routing, the combiner's hash and probe) and the cost ``x`` of what
  crosses to another worker for a row (encoding the partial aggregates,
  copying them through a ring, decoding and merging them), paid for the
  fraction ``(W - 1) / W`` of rows whose key another worker owns:
  ``c(W) = c1 / W + x (W - 1) / W``. ``c1`` is measured at one worker and
  ``x`` from ``c(2) = c1 / 2 + x / 2``; both by the rows' slope between two
  sizes, so that the fixed costs cancel.

Assumptions: W free cores (the prediction is for an idle host with at least
W cores), memory bandwidth not the limit, partial aggregates per row as at
2 workers (true when keys are few against the rows), and per-epoch costs
linear in the number of peers (each worker reads W - 1 progress messages
per epoch). On a 2-core machine W = 3 is oversubscribed: its figure is
printed as a check of the per-epoch fit only when the machine is idle.

Run: ``python benchmarks/scaling_model.py [--rounds 3]`` (prints Markdown
tables and the load average; take figures only on an idle machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ab  # noqa: E402


def epochs_only(workers: int, epochs: int) -> float:
    """``epochs`` epochs of one row per worker through the word count's
    ``aggregate``: the per-epoch cost, rows aside."""
    import numpy as np

    import timely
    from timely import Batch

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.aggregate("word", how="count").probe()
        one = np.array([f"w{worker.index}"], dtype=object)
        start = time.perf_counter()
        for epoch in range(epochs):
            handle.send_batch(Batch(word=one))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        while not probe.done():
            worker.step_or_park(0.001)
        return time.perf_counter() - start

    return max(timely.execute(work, workers=workers))


WORKLOADS = {
    "word count, columnar (10 epochs)": (ab.columnar_wordcount, 10),
    "tumbling sum, columnar (100 epochs per 10^6 rows)": (ab.columnar_tumbling, None),
}


def best(fn, rounds: int) -> float:
    return min(fn() for _ in range(rounds))


def measure(rounds: int, small: int, large: int, epochs_probe: int, counts) -> dict:
    out: dict = {"p": {}, "rows": {}}
    for w in counts:
        out["p"][w] = best(lambda w=w: epochs_only(w, epochs_probe), rounds) / epochs_probe
    for name, (fn, _) in WORKLOADS.items():
        for w in (1, 2):
            out["rows"][name, w] = (best(lambda: fn(w, small), rounds),
                                    best(lambda: fn(w, large), rounds))
    return out


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=10**6)
    parser.add_argument("--large", type=int, default=10**7)
    parser.add_argument("--epochs", type=int, default=200,
                        help="epochs of the per-epoch probe")
    parser.add_argument("--three", action="store_true",
                        help="also measure the per-epoch cost at 3 workers")
    args = parser.parse_args(argv)
    counts = (1, 2, 3) if args.three else (1, 2)
    load_before = os.getloadavg()
    m = measure(args.rounds, args.small, args.large, args.epochs, counts)
    load_after = os.getloadavg()

    p = m["p"]
    p1, q = p[1], p[2] - p[1]
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"(on {os.cpu_count()} cores)\n")
    print("| per-epoch cost | measured | model p1 + q (W - 1) |")
    print("| --- | --- | --- |")
    for w in counts:
        print(f"| {w} worker{'s' if w > 1 else ''} | {fmt(p[w])} | {fmt(p1 + q * (w - 1))} |")
    print()
    predicted_counts = (1, 2, 4, 8, 16)
    for name, (_, epochs_fixed) in WORKLOADS.items():
        (s1, l1), (s2, l2) = m["rows"][name, 1], m["rows"][name, 2]
        span = args.large - args.small
        c1 = (l1 - s1) / span
        c2 = (l2 - s2) / span
        x = 2 * c2 - c1

        def epochs_of(n):
            return epochs_fixed if epochs_fixed is not None else max(1, n // 10**4)

        def model(w, n):
            return epochs_of(n) * (p1 + q * (w - 1)) + n * (c1 / w + x * (w - 1) / w)

        print(f"**{name}**: c1 = {c1 * 1e9:.1f} ns/row at one worker; at two workers "
              f"c(2) = {c2 * 1e9:.1f} ns/row, so x = {x * 1e9:.1f} ns per row whose key "
              "another worker owns.\n")
        print("| workers | rows | measured | model | speed-up over 1 worker (model) |")
        print("| --- | --- | --- | --- | --- |")
        for n, measured in ((args.small, {1: s1, 2: s2}), (args.large, {1: l1, 2: l2})):
            for w in predicted_counts:
                seen = fmt(measured[w]) if w in measured else "–"
                print(f"| {w} | {n:.0e} | {seen} | {fmt(model(w, n))} | "
                      f"{model(1, n) / model(w, n):.2f}x |")
        limit = c1 / x if x > 0 else float("inf")
        print(f"\nAs W grows the per-row cost tends to x: the speed-up is bounded by "
              f"c1 / x = {limit:.1f}x before the per-epoch cost, which grows with W, "
              "takes over.\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
