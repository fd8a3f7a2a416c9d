"""Before and after: the standard workloads against two or more source trees,
measured alternately in one run.

Each workload is timed inside the workers, from the moment all of them are
ready (a barrier) until the answer is complete. Each tree (a checkout of
timely built in place) is measured in its own
subprocess with the tree first on ``sys.path``; the trees take turns, round
after round, and each figure is the best of the rounds, so load on a shared
machine falls on every tree alike. Every run checks its answer before its
time counts.

Workloads (WORKLOADS.md), at 1 and 2 worker processes:

- ``wordcount, columnar``: 10^6 words as one str column, ``aggregate("word",
  how="count")`` per epoch (10 epochs);
- ``tumbling, columnar``: 10^6 ``(key, value)`` rows in 100 epochs,
  ``aggregate("key", "value", how="sum")``;
- ``wordcount, records``: the ``wordcount`` example's dataflow (``exchange``
  by word and a ``unary_notify`` count), batches of 1024 words;
- ``tumbling, records``: the tumbling rows as ``(key, value)`` tuples,
  ``exchange`` by key and a ``unary_notify`` sum per epoch;
- ``strings, Arrow round trip``: an Arrow string column of 10^6 words, each
  worker's half as ``Batch.from_arrow``, ``exchange("word")``, and every
  received batch back to Arrow (``to_arrow``), checked against the input;
- ``pingpong`` (1 worker): one record around a root-scope loop 10^5 times;
- ``epoch`` (``benchmarks/epoch.py``) at 1, 2 and 3 workers, columnar and
  records: CPU time per epoch per worker.

Run: ``python benchmarks/ab.py BEFORE_TREE AFTER_TREE [--rounds 3]``
(both trees built in place: ``python setup.py build_ext --inplace``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = 10**6
ROWS = 10**6
EPOCH_ROWS = 10**4
KEYS = 1000
LOOPS = 10**5


# -- workloads (run inside the measuring subprocess) --------------------------


def started(worker) -> float:
    """The clock's start inside ``worker``, once every worker got there (a
    barrier): a workload's time then counts its computation, not how much
    later one worker's process started than another's."""
    from timely.synchronization import Barrier

    barrier = Barrier(worker)
    barrier.wait()
    barrier.close()
    return time.perf_counter()


def _words(n: int = WORDS):
    from timely.examples.wordcount import make_words

    return make_words(n)


def columnar_wordcount(workers: int, rows: int = WORDS) -> float:
    import numpy as np

    import timely
    from timely import Batch

    words = np.array(_words(rows), dtype=object)
    unique, counts = np.unique(words.astype(str), return_counts=True)
    expected = dict(zip(unique.tolist(), counts.tolist()))

    def work(worker):
        mine = words[worker.index * rows // worker.peers:(worker.index + 1) * rows // worker.peers]
        out = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.aggregate("word", how="count").inspect_batch(
                lambda t, b: out.append(b)).probe()
        per = -(-len(mine) // 10)
        start = started(worker)
        for epoch in range(10):
            handle.send_batch(Batch(word=mine[epoch * per:(epoch + 1) * per]))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        while not probe.done():
            worker.step_or_park(0.001)
        elapsed = time.perf_counter() - start
        totals = collections.Counter()
        for b in out:
            totals.update(dict(zip(b["word"].tolist(), b["count"].tolist())))
        return elapsed, totals

    results = timely.execute(work, workers=workers)
    totals = collections.Counter()
    for _, part in results:
        totals.update(part)
    assert dict(totals) == expected, "columnar word count: wrong counts"
    return max(r[0] for r in results)


def keyed_sum():
    """The logic of a ``unary_notify`` operator that sums ``(key, value)``
    records per key and time and gives ``(key, total)`` once the time is
    complete."""
    pending: dict = {}

    def logic(input, output, notificator):
        for cap, data in input:
            sums = pending.get(cap.time)
            if sums is None:
                sums = pending[cap.time] = {}
                notificator.notify_at(cap)
            for key, value in data:
                sums[key] = sums.get(key, 0) + value
        for cap, _ in notificator:
            output.session(cap).give_iterator(iter(pending.pop(cap.time).items()))

    return logic


def _tumbling_data(rows: int = ROWS):
    import numpy as np

    rng = np.random.default_rng(20240)
    return rng.integers(0, KEYS, rows), rng.integers(0, 1000, rows)


def _tumbling_expected(keys, values, epoch_rows: int = EPOCH_ROWS):
    import numpy as np

    rows = len(keys)
    epochs = np.arange(rows) // epoch_rows
    return np.bincount(epochs * KEYS + keys, weights=values,
                       minlength=(rows // epoch_rows) * KEYS).astype(np.int64)


def columnar_tumbling(workers: int, rows: int = ROWS) -> float:
    """100 epochs of ``rows // 100`` rows (WORKLOADS.md's at 10^6 rows)."""
    import numpy as np

    import timely
    from timely import Batch

    epoch_rows = EPOCH_ROWS * rows // ROWS
    keys, values = _tumbling_data(rows)
    expected = _tumbling_expected(keys, values, epoch_rows)

    def work(worker):
        share = epoch_rows // worker.peers
        out = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.aggregate("key", "value", how="sum").inspect_batch(
                lambda t, b: out.append((t, b))).probe()
        start = started(worker)
        for epoch in range(rows // epoch_rows):
            lo = epoch * epoch_rows + worker.index * share
            hi = (epoch + 1) * epoch_rows if worker.index == worker.peers - 1 else lo + share
            handle.send_batch(Batch(key=keys[lo:hi], value=values[lo:hi]))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        while not probe.done():
            worker.step_or_park(0.001)
        elapsed = time.perf_counter() - start
        cells = [t * KEYS + b["key"] for t, b in out]
        sums = [b["sum"] for _, b in out]
        return elapsed, cells, sums

    results = timely.execute(work, workers=workers)
    got = np.zeros_like(expected)
    for _, cells, sums in results:
        for c, s in zip(cells, sums):
            np.add.at(got, c, s)
    assert np.array_equal(got, expected), "columnar tumbling: wrong sums"
    return max(r[0] for r in results)


def record_wordcount(workers: int) -> float:
    """The ``wordcount`` example's dataflow and input loop (its ``Count``
    operator, batches of 1024 words, 10 epochs), timed as the other
    workloads are: inside the workers, from the first send until the
    answer is complete."""
    import functools

    import timely
    from timely.examples.wordcount import count_operator

    words = _words()
    expected = dict(collections.Counter(words))

    def work(worker):
        final: dict = {}
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = count_operator(stream).inspect_batch(
                lambda t, updates: final.update(updates)).probe()
        mine = words[worker.index::worker.peers]
        per_epoch = -(-len(mine) // 10)
        start = started(worker)
        for epoch in range(10):
            chunk = mine[epoch * per_epoch:(epoch + 1) * per_epoch]
            for at in range(0, len(chunk), 1024):
                handle.send_batch(chunk[at:at + 1024])
                worker.step()
            handle.advance_to(epoch + 1)
            worker.step_while(functools.partial(probe.less_than, epoch))
        handle.close()
        worker.step_while(lambda: not probe.done())
        return time.perf_counter() - start, final

    results = timely.execute(work, workers=workers)
    counts: dict = {}
    for _, part in results:
        counts.update(part)
    assert counts == expected, "record word count: wrong counts"
    return max(r[0] for r in results)


def record_tumbling(workers: int) -> float:
    import numpy as np

    import timely

    keys, values = _tumbling_data()
    expected = _tumbling_expected(keys, values)
    records = list(zip(keys.tolist(), values.tolist()))

    def work(worker):
        share = EPOCH_ROWS // worker.peers
        out = []
        logic = keyed_sum()

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = (stream.unary_notify(timely.Exchange(lambda r: r[0]), "Sum", [], logic)
                     .inspect_batch(lambda t, b: out.append((t, b))).probe())
        start = started(worker)
        for epoch in range(ROWS // EPOCH_ROWS):
            lo = epoch * EPOCH_ROWS + worker.index * share
            hi = (epoch + 1) * EPOCH_ROWS if worker.index == worker.peers - 1 else lo + share
            for at in range(lo, hi, 1024):
                handle.send_batch(records[at:min(hi, at + 1024)])
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        while not probe.done():
            worker.step_or_park(0.001)
        return time.perf_counter() - start, out

    results = timely.execute(work, workers=workers)
    got = np.zeros_like(expected)
    for _, out in results:
        for t, batch in out:
            for key, total in batch:
                got[t * KEYS + key] += total
    assert np.array_equal(got, expected), "record tumbling: wrong sums"
    return max(r[0] for r in results)


def strings_round_trip(workers: int) -> float:
    import pyarrow as pa

    import timely
    from timely import Batch

    words = _words()
    table = pa.record_batch([pa.array(words, type=pa.string())], names=["word"])

    def work(worker):
        n = table.num_rows
        mine = table.slice(worker.index * n // worker.peers,
                           (worker.index + 1) * n // worker.peers - worker.index * n // worker.peers)
        out = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange("word").inspect_batch(
                lambda t, b: out.append(b.to_arrow())).probe()
        start = started(worker)
        for at in range(0, mine.num_rows, 65536):
            handle.send_batch(Batch.from_arrow(mine.slice(at, 65536)))
            worker.step()
        handle.close()
        while not probe.done():
            worker.step_or_park(0.001)
        elapsed = time.perf_counter() - start
        return elapsed, pa.Table.from_batches(out) if out else None

    results = timely.execute(work, workers=workers)
    got = collections.Counter()
    for _, part in results:
        if part is not None:
            got.update(part.column("word").to_pylist())
    assert got == collections.Counter(words), "string round trip: wrong strings"
    return max(r[0] for r in results)


def pingpong(workers: int, clock=time.perf_counter) -> float:
    """Seconds per iteration of one record around a root-scope loop, by
    ``clock`` (wall time by default; ``time.process_time`` for CPU time)."""
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, loop = scope.feedback(1)
            stream = scope.to_stream([0]).concat(loop)
            seen = []
            stream.filter(lambda x: x < LOOPS).map(lambda x: x + 1).connect_loop(handle)
            stream.inspect(lambda x: seen.append(x) if x == LOOPS else None)
        start = clock()
        worker.drain()
        elapsed = clock() - start
        assert seen == [LOOPS], "pingpong: the record did not come round"
        return elapsed / LOOPS

    return timely.execute_directly(work)


def epoch_cpu(api: str):
    """CPU seconds per epoch per worker of ``epoch.py``'s workload (its
    answer checked), 2,000 epochs; ``api`` is ``columnar`` or ``records``."""

    def measure_epoch(workers: int) -> float:
        import epoch

        return epoch.run(api, workers)["cpu_us"] / 1e6

    return measure_epoch


WORKLOADS = [
    ("wordcount, columnar", columnar_wordcount, (1, 2), WORDS),
    ("tumbling, columnar", columnar_tumbling, (1, 2), ROWS),
    ("wordcount, records", record_wordcount, (1, 2), WORDS),
    ("tumbling, records", record_tumbling, (1, 2), ROWS),
    ("strings, Arrow round trip", strings_round_trip, (1, 2), WORDS),
    ("pingpong (s per iteration)", pingpong, (1,), None),
    ("epoch, columnar (CPU s per epoch per worker)", epoch_cpu("columnar"), (1, 2, 3), None),
    ("epoch, records (CPU s per epoch per worker)", epoch_cpu("records"), (1, 2, 3), None),
]


def measure_here() -> dict:
    """Every workload once in this process: ``{"name/workers": seconds}``."""
    from multiprocessing import resource_tracker

    # Started once per process by the first shared-memory segment: a new
    # interpreter whose start-up would otherwise fall into the first
    # 2-worker run measured.
    resource_tracker.ensure_running()
    figures = {}
    for name, fn, counts, _ in WORKLOADS:
        for workers in counts:
            try:
                figures[f"{name}/{workers}"] = fn(workers)
            except Exception as error:  # noqa: BLE001 - a tree without a feature reports it
                figures[f"{name}/{workers}"] = f"{type(error).__name__}: {error}"
    return figures


# -- driver ---------------------------------------------------------------------


def measure(tree: str, script: str = __file__) -> dict:
    """What ``script --here`` prints (JSON, its last line), run in a fresh
    interpreter with ``tree`` first on ``sys.path``."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    run = subprocess.run([sys.executable, os.path.abspath(script), "--here"], env=env, cwd=HERE,
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="source trees, built in place (before first)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.here:
        print(json.dumps(measure_here()))
        return
    if len(args.trees) < 2:
        parser.error("name at least two trees")
    best: dict = {tree: {} for tree in args.trees}
    for round_ in range(args.rounds):
        for tree in args.trees:
            for key, value in measure(tree).items():
                old = best[tree].get(key)
                if isinstance(value, str) or old is None or (
                        not isinstance(old, str) and value < old):
                    best[tree][key] = value
            print(f"round {round_ + 1}: {tree} done", file=sys.stderr)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"best of {args.rounds} rounds, trees alternating; load average {' '.join(load)}\n")
    head = "| workload | workers | " + " | ".join(args.trees) + " | after / before |"
    print(head)
    print("|" + " --- |" * (3 + len(args.trees)))
    for name, _, counts, n in WORKLOADS:
        for workers in counts:
            key = f"{name}/{workers}"
            cells = []
            for tree in args.trees:
                v = best[tree].get(key)
                if isinstance(v, str):
                    cells.append(v)
                elif n:
                    cells.append(f"{v * 1e3:.1f} ms ({n / v / 1e6:.2f} M rows/s)")
                else:
                    cells.append(f"{v * 1e6:.1f} µs")
            first, last = best[args.trees[0]].get(key), best[args.trees[-1]].get(key)
            ratio = (f"{first / last:.2f}x faster" if last < first else f"{last / first:.2f}x slower"
                     ) if not isinstance(first, str) and not isinstance(last, str) else "–"
            print(f"| {name} | {workers} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
