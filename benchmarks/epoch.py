"""The cost of an epoch: CPU time per epoch per worker at W = 1, 2, 3, 4.

The ``epoch`` workload (WORKLOADS.md): W workers; for 2,000 epochs each
worker sends 16 rows ``(key, 1)``, advances its input to the next epoch and
steps until the probe passes (``worker.step_while(lambda:
probe.less_than(handle.time))``), so every epoch is a full round of progress
among all workers with almost no data. Every worker sends the same 16 keys
``(epoch * 16 + i) * 7919`` (``i`` in 0..15) at an epoch: routed as ints
route (the int itself modulo W; 7919 is prime to 2, 3 and 4), they spread
evenly over the workers, and each key's W rows meet on one of them, so at
W ≥ 2 all but one of every key's rows cross workers. The dataflow is input → exchange by key → sum per (epoch, key) →
probe, in two variants:

- ``columnar``: one :class:`timely.Batch` (int64 ``key`` and ``value``
  columns) per epoch, ``aggregate("key", "value", how="sum")``, outputs
  collected with ``inspect_batch``;
- ``records``: the 16 ``(key, 1)`` tuples as one ``send_batch`` list,
  ``exchange(key=0)`` and a ``unary_notify`` operator that sums the values
  per key at each time and emits ``(key, total)`` when the time is complete.

Each worker (a process, as ``timely.execute(work, workers=W)`` runs them;
at W = 1 the calling process) measures its CPU time (``time.process_time()``
of its process; ``time.thread_time()`` of its thread at W = 1, where the
process may hold other threads) and wall time over the epoch loop only, from
a common start (``ab.started``'s barrier) until its probe has passed the
last epoch; a short discarded 1-worker run comes first. The figure is CPU time per epoch
per worker, the mean over workers: W may exceed the machine's cores, where
wall time measures the scheduler, not this code. Wall time per epoch (the
slowest worker's) is reported beside it. Before any figure counts, the sums
per (epoch, key) gathered from all workers (each emitted once, by one
worker; every worker owning some) are compared with a
``collections.Counter`` of the same rows.

Targets: CPU per epoch per worker at W = 1 at most 25 µs; at W = 2 at most
1.5x the W = 1 figure; at W = 3 and 4 at most 2x.

Run: ``python benchmarks/epoch.py [--epochs 2000] [--workers 1 2 3 4]
[--api columnar records] [--rounds 1]``
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ab import keyed_sum, started  # noqa: E402

EPOCHS = 2000
ROWS = 16  # rows per worker per epoch
PRIME = 7919  # spreads keys evenly over 2, 3 or 4 workers
WARMUP = 200  # epochs of a discarded 1-worker run before a sweep
WORKERS = (1, 2, 3, 4)
APIS = ("columnar", "records")
TARGET_W1_US = 25.0
TARGETS = {2: 1.5, 3: 2.0, 4: 2.0}  # CPU per epoch per worker, at most this times W=1's


def keys_of(epoch: int) -> list[int]:
    """The keys every worker sends at ``epoch``."""
    return [(epoch * ROWS + i) * PRIME for i in range(ROWS)]


def expected_sums(workers: int, epochs: int) -> dict:
    """``{(epoch, key): sum}`` of every worker's rows, by a plain Counter."""
    counts: collections.Counter = collections.Counter()
    for epoch in range(epochs):
        for _ in range(workers):
            for key in keys_of(epoch):
                counts[(epoch, key)] += 1
    return dict(counts)


def _timed_loop(worker, handle, probe, send, epochs: int, parent: int) -> tuple[float, float]:
    """CPU and wall seconds of the epoch loop, after the barrier.

    A worker process has one thread, the worker's: its CPU time is
    ``process_time``. A worker run in the calling process (W = 1) counts its
    own thread's (``thread_time``): that process may hold other threads, such
    as OpenBLAS's pool, which spins for about 0.1 s after numpy's import."""
    clock = time.thread_time if os.getpid() == parent else time.process_time
    step_while = worker.step_while
    less_than = probe.less_than
    started(worker)
    cpu0, wall0 = clock(), time.perf_counter()
    for epoch in range(epochs):
        send(epoch)
        handle.advance_to(epoch + 1)
        step_while(lambda: less_than(handle.time))
    cpu, wall = clock() - cpu0, time.perf_counter() - wall0
    handle.close()
    step_while(lambda: not probe.done())
    return cpu, wall


def columnar_work(epochs: int):
    parent = os.getpid()

    def work(worker):
        import numpy as np

        import timely

        out: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.aggregate("key", "value", how="sum").inspect_batch(
                lambda t, b: out.append((t, b["key"], b["sum"]))).probe()
        ones = np.ones(ROWS, dtype=np.int64)
        base = np.arange(ROWS, dtype=np.int64) * PRIME

        def send(epoch):
            handle.send_batch(timely.Batch(key=base + epoch * ROWS * PRIME, value=ones))

        cpu, wall = _timed_loop(worker, handle, probe, send, epochs, parent)
        rows = [(t, k, s) for t, keys, sums in out
                for k, s in zip(keys.tolist(), sums.tolist())]
        return cpu, wall, rows

    return work


def records_work(epochs: int):
    parent = os.getpid()

    def work(worker):
        import timely

        out: list = []
        logic = keyed_sum()

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = (stream.exchange(key=0)
                     .unary_notify(timely.Pipeline(), "Sum", [], logic)
                     .inspect_batch(lambda t, batch: out.append((t, batch))).probe())
        def send(epoch):
            handle.send_batch([((epoch * ROWS + i) * PRIME, 1) for i in range(ROWS)])

        cpu, wall = _timed_loop(worker, handle, probe, send, epochs, parent)
        rows = [(t, k, s) for t, batch in out for k, s in batch]
        return cpu, wall, rows

    return work


WORK = {"columnar": columnar_work, "records": records_work}


def run(api: str, workers: int, epochs: int = EPOCHS) -> dict:
    """One run of the workload, its answer checked: ``cpu_us`` (per epoch per
    worker, mean over workers), ``wall_us`` (per epoch, slowest worker),
    ``cpu_us_each`` (per worker) and ``crossed`` (input rows summed on a
    worker other than their sender's: each worker sends each key once, so
    ``total - 1`` of an output row's)."""
    import timely

    results = timely.execute(WORK[api](epochs), workers=workers)
    got: dict = {}
    crossed = 0
    for _, _, rows in results:
        for t, key, total in rows:
            assert (t, key) not in got, f"epoch, {api}, W={workers}: {(t, key)} emitted twice"
            got[(t, key)] = total
            crossed += total - 1
    assert got == expected_sums(workers, epochs), f"epoch, {api}, W={workers}: wrong sums"
    assert all(rows for _, _, rows in results), f"epoch, {api}, W={workers}: a worker owns no key"
    each = [cpu / epochs * 1e6 for cpu, _, _ in results]
    return {
        "cpu_us": sum(each) / len(each),
        "cpu_us_each": each,
        "wall_us": max(wall for _, wall, _ in results) / epochs * 1e6,
        "crossed": crossed,
    }


def sweep(api: str, workers=WORKERS, epochs: int = EPOCHS, rounds: int = 1) -> dict:
    """``{W: run(...)}``, the best (least CPU) of ``rounds`` rounds for each W,
    after a short discarded 1-worker run; the counts take turns within a
    round."""
    run(api, 1, min(epochs, WARMUP))  # first calls and imports, not counted
    best: dict = {}
    for _ in range(rounds):
        for w in workers:
            figure = run(api, w, epochs)
            if w not in best or figure["cpu_us"] < best[w]["cpu_us"]:
                best[w] = figure
    return best


def target_for(workers: int) -> tuple[str, float]:
    """(``"us"``, limit) for W = 1, (``"ratio"``, limit) otherwise."""
    if workers == 1:
        return "us", TARGET_W1_US
    return "ratio", TARGETS.get(workers, TARGETS[max(TARGETS)])


def meets(figures: dict, workers: int) -> bool | None:
    kind, limit = target_for(workers)
    if kind == "us":
        return figures[workers]["cpu_us"] <= limit
    if 1 not in figures:
        return None
    return figures[workers]["cpu_us"] / figures[1]["cpu_us"] <= limit


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKERS))
    parser.add_argument("--api", nargs="+", choices=APIS, default=list(APIS))
    parser.add_argument("--rounds", type=int, default=1, help="best of this many rounds")
    args = parser.parse_args(argv)
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # not inside the first multi-worker run
    tables = {api: sweep(api, args.workers, args.epochs, args.rounds) for api in args.api}
    load = os.getloadavg()
    print(f"epoch: {args.epochs} epochs, {ROWS} rows per worker per epoch, best of "
          f"{args.rounds} round(s); {os.cpu_count()} cores; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print("| api | W | CPU µs/epoch/worker | wall µs/epoch | CPU ratio to W=1 | target | meets |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for api, figures in tables.items():
        for w, f in figures.items():
            ratio = f"{f['cpu_us'] / figures[1]['cpu_us']:.2f}x" if 1 in figures else "–"
            kind, limit = target_for(w)
            target = f"≤ {limit:g} µs" if kind == "us" else f"≤ {limit:g}x"
            ok = meets(figures, w)
            print(f"| {api} | {w} | {f['cpu_us']:.1f} | {f['wall_us']:.1f} | {ratio} | {target} "
                  f"| {'–' if ok is None else 'yes' if ok else 'no'} |")


if __name__ == "__main__":
    main()
