"""A scaling model of the columnar workloads, fitted to costs measured here,
and what it predicts for more workers on one host.

The model: a run of ``N`` rows at ``W`` worker processes (one core each)
takes

    T(W, N) = F(W) + N * c(W)

- ``c(W)``, the per-row cost: ``c1 / W`` of the work every row needs where
  it is (routing, the combiner's hash and probe, and the progress of the
  epochs when their number grows with the rows), plus the cost ``x`` of
  what crosses to another worker for a row (encoding partial aggregates,
  copying them through a ring, decoding and merging them), paid for the
  fraction ``(W - 1) / W`` of rows whose key another worker owns:
  ``c(W) = c1 / W + x (W - 1) / W``. ``c1`` and ``c(2)`` are the slopes of
  the measured time between two sizes (so that fixed costs cancel), and
  ``x = 2 c(2) - c1``.
- ``F(W)``, the cost that does not grow with the rows: the epochs' progress
  rounds when their number is fixed, the partial aggregates of a bounded
  set of keys, the end of the run. ``F(1)`` and ``F(2)`` are the
  intercepts of the same fits, and ``F(W) = F(1) + q (W - 1)`` with
  ``q = F(2) - F(1)``: each added peer adds its progress messages and its
  share of partial aggregates to every worker (pessimistic for the
  partials, whose merge work per worker does not grow with W).

A separate probe measures the per-epoch cost alone (one row per worker and
epoch) at 1, 2 and 3 workers, to check that it grows about linearly with
the peers.

Assumptions: W free cores (the prediction is for an idle host with at least
W cores), memory bandwidth not the limit, the keys spread evenly over the
workers. On a 2-core machine W = 3 is oversubscribed; take figures only on
an idle machine.

With ``--graphs``, the same kind of model for PageRank (10 iterations)
and connected components (union-find, the default) over R-MAT graphs,
fitted to each worker's CPU seconds (the harness of
``benchmarks/test_inflation.py``: forked workers, the answers checked
against the 1-worker run's) at W = 1, 2, 4 and 8 and two sizes ``m`` (CPU
time, so that W above the cores still says what each worker costs):

    S(W, m) = m * (a + x (W - 1) / W) + W * (e0 + e1 (W - 1))

is the CPU of all workers together: ``a`` per edge wherever it is, ``x``
per edge for what crosses to another worker, and per worker a cost that
does not grow with the edges (the rounds' progress and their fixed
work), growing by ``e1`` with each peer. ``a + x (W - 1) / W`` is fitted
to the per-edge slopes between the two sizes, ``e0 + e1 (W - 1)`` to the
intercepts (least squares over W). A run on W free cores takes the
busiest worker's share, ``T(W) = b(W) S(W) / W`` with ``b`` the measured
busiest-over-mean ratio (at W = 16 the W = 8 figure); the prediction is
``S(1, m) / T(W, m)`` at ``m = 10^8`` (``--graph-edges``). Assumptions
besides W free cores: the per-edge costs at 10^8 edges are those of the
sizes measured (the graph's share per worker falls with W, so caches favour
more workers, not fewer), and the rounds do not depend on W.

Run: ``python benchmarks/scaling_model.py [--rounds 3] [--three]`` (prints
Markdown tables and the load average); ``--graphs [--sizes 2000000
10000000]`` for the graph model (below about 10^6 edges the fixed costs
drown the per-edge ones and the fit means nothing).
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
        start = ab.started(worker)
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
    "word count, columnar (10 epochs)": ab.columnar_wordcount,
    "tumbling sum, columnar (an epoch per 10^4 rows)": ab.columnar_tumbling,
}


def best(fn, rounds: int) -> float:
    return min(fn() for _ in range(rounds))


def measure(rounds: int, small: int, large: int, epochs_probe: int, counts) -> dict:
    out: dict = {"p": {}, "rows": {}}
    for w in counts:
        out["p"][w] = best(lambda w=w: epochs_only(w, epochs_probe), rounds) / epochs_probe
    for name, fn in WORKLOADS.items():
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


GRAPH_ALGORITHMS = ("pagerank-10", "cc-union-find")
GRAPH_WORKERS = (1, 2, 4, 8)


def measure_graphs(sizes: tuple[int, int]) -> dict:
    """Per algorithm, size and W: each worker's CPU seconds (the inflation
    harness: forked workers, answers checked against the 1-worker run)."""
    import harness
    import test_inflation as inflation

    from timely.algorithms import rmat_edges

    got: dict = {}
    for m in sizes:
        scale = (-(-2 * m // 5) - 1).bit_length()
        src, dst = rmat_edges(scale, m, seed=1)
        graph = {"src": src, "dst": dst}
        inflation.NODES = 1 << scale
        for name in GRAPH_ALGORITHMS:
            single = None
            for w in GRAPH_WORKERS:
                run = inflation.run(name, w, graph)
                if single is None:
                    single = run
                else:
                    inflation.check_same(f"{name} at {w} workers", run.answer, single.answer)
                got[name, m, w] = list(run.cpu_s)
            harness.expect_equal(f"{name}: answered", [single.rows > 0], [True])
    return got


def fit_graphs(cpu: dict, sizes: tuple[int, int], name: str) -> dict:
    """The model's constants for ``name`` from the measured CPU seconds."""
    import numpy as np

    small, large = sizes
    ws = np.array(GRAPH_WORKERS, dtype=float)
    total = {(m, w): sum(cpu[name, m, w]) for m in sizes for w in GRAPH_WORKERS}
    slopes = np.array([(total[large, w] - total[small, w]) / (large - small)
                       for w in GRAPH_WORKERS])
    fixed = np.array([total[small, w] - slopes[i] * small for i, w in enumerate(GRAPH_WORKERS)])
    (a, x), *_ = np.linalg.lstsq(np.stack([np.ones_like(ws), (ws - 1) / ws], axis=1), slopes,
                                 rcond=None)
    (e0, e1), *_ = np.linalg.lstsq(np.stack([ws, ws * (ws - 1)], axis=1), fixed, rcond=None)
    balance = {w: max(cpu[name, large, w]) / (sum(cpu[name, large, w]) / w)
               for w in GRAPH_WORKERS}
    return {"a": a, "x": x, "e0": e0, "e1": e1, "balance": balance, "slopes": slopes,
            "fixed": fixed}


def graph_model(fit: dict, w: int, m: float) -> tuple[float, float]:
    """``(S, T)``: all workers' CPU seconds and the run's seconds on W cores."""
    total = m * (fit["a"] + fit["x"] * (w - 1) / w) + w * (fit["e0"] + fit["e1"] * (w - 1))
    balance = fit["balance"].get(w, fit["balance"][max(GRAPH_WORKERS)])
    return total, balance * total / w


def graphs_main(sizes: tuple[int, int], target: int) -> int:
    load_before = os.getloadavg()
    cpu = measure_graphs(sizes)
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"(on {os.cpu_count()} cores)\n")
    for name in GRAPH_ALGORITHMS:
        fit = fit_graphs(cpu, sizes, name)
        print(f"**{name}**: a = {fit['a'] * 1e9:.0f} ns/edge, x = {fit['x'] * 1e9:.0f} "
              f"ns/edge crossing, e0 = {fmt(fit['e0'])} + e1 = {fmt(fit['e1'])} per peer "
              f"(per worker, fixed).\n")
        print("| workers | edges | all workers' CPU, measured | model | busiest / mean |")
        print("| --- | --- | --- | --- | --- |")
        for m in sizes:
            for w in GRAPH_WORKERS:
                total, _ = graph_model(fit, w, m)
                print(f"| {w} | {m:.0e} | {fmt(sum(cpu[name, m, w]))} | {fmt(total)} | "
                      f"{max(cpu[name, m, w]) / (sum(cpu[name, m, w]) / w):.2f} |")
        one, _ = graph_model(fit, 1, target)
        print("\n| workers | edges | predicted seconds on W free cores | speed-up | "
              "speed-up / W |")
        print("| --- | --- | --- | --- | --- |")
        for w in (1, 2, 4, 8, 16):
            _, seconds = graph_model(fit, w, target)
            print(f"| {w} | {target:.0e} | {fmt(seconds)} | {one / seconds:.2f}x | "
                  f"{one / seconds / w:.2f} |")
        print()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", action="store_true",
                        help="the graph algorithms' model instead of the columnar one")
    parser.add_argument("--sizes", type=int, nargs=2, default=(2 * 10**6, 10**7),
                        help="the two graph sizes (edges) the graph model is fitted to")
    parser.add_argument("--graph-edges", type=int, default=10**8,
                        help="the graph size the graph model predicts for")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=10**6)
    parser.add_argument("--large", type=int, default=10**7)
    parser.add_argument("--epochs", type=int, default=200,
                        help="epochs of the per-epoch probe")
    parser.add_argument("--three", action="store_true",
                        help="also measure the per-epoch cost at 3 workers")
    args = parser.parse_args(argv)
    if args.graphs:
        return graphs_main(tuple(args.sizes), args.graph_edges)
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
    for name in WORKLOADS:
        (s1, l1), (s2, l2) = m["rows"][name, 1], m["rows"][name, 2]
        span = args.large - args.small
        c1 = (l1 - s1) / span
        c2 = (l2 - s2) / span
        x = 2 * c2 - c1
        f1 = s1 - c1 * args.small
        f2 = s2 - c2 * args.small
        q = f2 - f1

        def model(w, n):
            return f1 + q * (w - 1) + n * (c1 / w + x * (w - 1) / w)

        print(f"**{name}**: c1 = {c1 * 1e9:.1f} ns/row, c(2) = {c2 * 1e9:.1f} ns/row, "
              f"x = {x * 1e9:.1f} ns/row; F(1) = {fmt(f1)}, F(2) = {fmt(f2)}, "
              f"q = {fmt(q)} per added worker.\n")
        print("| workers | rows | measured | model | speed-up over 1 worker (model) |")
        print("| --- | --- | --- | --- | --- |")
        for n, measured in ((args.small, {1: s1, 2: s2}), (args.large, {1: l1, 2: l2})):
            for w in predicted_counts:
                seen = fmt(measured[w]) if w in measured else "–"
                print(f"| {w} | {n:.0e} | {seen} | {fmt(model(w, n))} | "
                      f"{model(1, n) / model(w, n):.2f}x |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
