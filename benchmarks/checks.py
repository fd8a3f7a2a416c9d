"""Before and after: what the always-on capability checks cost.

Two source trees (each built in place with ``python setup.py build_ext
--inplace``) are measured alternately, round after round, each in its own
subprocess with the tree first on ``sys.path``; each figure is the best of
the rounds, so load on a shared machine falls on both trees alike. The load
average is printed with the table.

- ``wordcount, 1 worker``: the ``wordcount`` example (10^6 words, 10 epochs,
  ``exchange`` and a ``unary_notify`` count; one ``session.give`` per word
  and epoch), CPU time of the worker's process, best of three in each round;
- ``wordcount, 2 workers``: the same on two worker processes, wall time;
- ``pingpong``: one record around a root-scope loop (``concat``, ``filter``,
  ``map``, ``feedback``) 10^5 times, CPU time per iteration, best of three;
- ``delayed + drop``, ``retain + drop``, ``session.give``: the capability
  operations themselves, per call, inside an operator.

Run: ``python benchmarks/checks.py BEFORE_TREE AFTER_TREE [--rounds 5]``
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
import timeit

WORDS = 10**6


def wordcount(workers: int) -> float:
    from timely.examples.wordcount import make_words, wordcount

    words = make_words(WORDS)
    clock = time.process_time if workers == 1 else time.perf_counter
    start = clock()
    counts = wordcount(words, workers=workers, epochs=10)
    elapsed = clock() - start
    assert counts == dict(collections.Counter(words)), "word count: wrong counts"
    return elapsed


def pingpong() -> float:
    """CPU seconds per pingpong iteration (the workload of ``ab.py``)."""
    from ab import pingpong as ab_pingpong

    return ab_pingpong(1, clock=time.process_time)


def capability_operations() -> dict:
    import timely

    figures: dict = {}
    n = 100_000

    def per_call(fn) -> float:
        return min(timeit.repeat(fn, number=n, repeat=5)) / n

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                figures["delayed + drop"] = per_call(lambda: cap.delayed(5).drop())
                cap.drop()

                def logic(inp, out):
                    for c, data in inp:
                        session = out.session(c)
                        figures["session.give"] = per_call(lambda: session.give(1))
                        figures["retain + drop"] = per_call(lambda: c.retain().drop())

                return logic

            stream.unary(timely.Pipeline, "Measure", constructor).probe()
        handle.send(1)
        handle.close()
        worker.drain()

    timely.execute_directly(work)
    return figures


def measure_here() -> dict:
    """Every measure once in this process (in-process ones: best of three)."""
    figures = {
        "wordcount, 1 worker (s)": min(wordcount(1) for _ in range(3)),
        "wordcount, 2 workers (s)": wordcount(2),
        "pingpong (s per iteration)": min(pingpong() for _ in range(3)),
    }
    figures.update({f"{k} (s)": v for k, v in capability_operations().items()})
    return figures


def measure(tree: str) -> dict:
    from ab import measure as measure_script

    return measure_script(tree, __file__)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="BEFORE_TREE AFTER_TREE, built in place")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.here:
        print(json.dumps(measure_here()))
        return
    if len(args.trees) != 2:
        parser.error("name two trees: before and after")
    load_before = os.getloadavg()
    best: dict = {tree: {} for tree in args.trees}
    for round_ in range(args.rounds):
        for tree in args.trees:
            for key, value in measure(tree).items():
                best[tree][key] = min(value, best[tree].get(key, value))
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    load_after = os.getloadavg()
    before, after = (best[t] for t in args.trees)
    print(f"best of {args.rounds} rounds, trees alternating; load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' '.join(f'{x:.2f}' for x in load_after)} after\n")
    print("| measure | before | after | after / before |")
    print("| --- | --- | --- | --- |")
    for key in before:
        b, a = before[key], after[key]
        unit, scale = ("ms", 1e3) if b > 1e-3 else ("µs", 1e6) if b > 1e-6 else ("ns", 1e9)
        print(f"| {key[:key.rindex(' (')]} | {b * scale:.1f} {unit} | {a * scale:.1f} {unit} "
              f"| {a / b:.3f} |")


if __name__ == "__main__":
    main()
