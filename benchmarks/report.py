"""Compiled vs oracle, in one process: the Markdown tables for the README.

    python benchmarks/report.py                      # every suite
    python benchmarks/report.py --suite tracker      # one suite (repeatable)
    python benchmarks/report.py --suite engine       # the dataflow engine vs its baselines

Runs the cases of ``benchmarks/test_*.py`` without pytest. Per case, the
oracle (``tests/reference``) gets the case's few rounds and the compiled
implementation at least 5 calls and ``--max-time`` seconds, the two interleaved
(an oracle round, then a slice of compiled calls, and so on) so that both see
the same load on a shared machine; the time kept is the best call, as
pytest-benchmark's ``Min``. The first and the last answer of
every case are checked; a wrong answer is listed as a failure, gets no figure,
and makes the exit status 1. Progress goes to stderr,
the tables to stdout.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

ENGINE = "engine"  # test_engine.py: timely against plain-Python/numpy baselines, its own table
SUITES = ("change_batch", "mutable_antichain", "tracker", ENGINE)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure_case(case: harness.Case, fns: dict[str, object], max_time: float) -> dict[str, float]:
    """Best time per implementation, the oracle's rounds interleaved with slices of the
    compiled calls so that both see the same load on a shared machine."""
    slices = min(case.oracle_rounds, 5) if harness.ORACLE in fns else 1
    best = dict.fromkeys(fns, float("inf"))
    rounds = dict.fromkeys(fns, 0)
    gc.collect()
    for _ in range(slices):
        for impl, fn in fns.items():
            if impl == harness.ORACLE:
                timing = harness.measure(
                    fn, case.check, rounds=-(-case.oracle_rounds // slices), collect=False
                )
            else:
                timing = harness.measure(
                    fn,
                    case.check,
                    min_rounds=-(-5 // slices),
                    max_time=max_time / slices,
                    collect=False,
                )
            best[impl] = min(best[impl], timing.best)
            rounds[impl] += timing.rounds
    for impl in fns:
        _progress(
            f"{impl:8s}  {harness.format_seconds(best[impl]):>9s}  x{rounds[impl]:<5d}  {case.group}"
        )
    return best


def run(suites: list[str], max_time: float) -> tuple[harness.Results, list[str], list[str]]:
    results = harness.Results()
    failures: list[str] = []
    skipped: list[str] = []
    for suite in suites:
        module = __import__(f"test_{suite}")
        for case in module.CASES:
            fns = {}
            for impl in harness.IMPLS:
                if impl == harness.ORACLE and not case.oracle_rounds:
                    continue
                try:
                    fns[impl] = case.make(harness.Impl(impl))
                except harness.Unavailable as exc:
                    skipped.append(f"{case.group} [{impl}]: {exc}")
                    _progress(f"skip      {case.group} [{impl}]: {exc}")
            if harness.COMPILED not in fns:
                continue
            try:
                best = measure_case(case, fns, max_time)
            except harness.Mismatch as exc:
                failures.append(f"{case.group}: {exc}")
                _progress(f"FAIL      {case.group}: {exc}")
                continue
            for impl, seconds in best.items():
                results.add(case, impl, seconds)
    return results, failures, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite",
        action="append",
        choices=SUITES,
        help="run only this suite (repeatable); default: all",
    )
    parser.add_argument(
        "--max-time",
        type=float,
        default=1.0,
        help="seconds of compiled calls per case, at least 5 calls (default 1)",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    suites = args.suite or list(SUITES)
    results, failures, skipped = run([s for s in suites if s != ENGINE], args.max_time)
    engine_table = None
    if ENGINE in suites:
        import test_engine

        figures, engine_failures = test_engine.measure_all(args.max_time, _progress)
        failures += engine_failures
        engine_table = test_engine.table(figures) if figures else None
    import timely  # after the suites, so a missing build shows as skips, not a traceback

    print(
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"timely from {Path(timely.__file__).parent}; "
        f"{time.perf_counter() - started:.0f} s in all.\n"
    )
    if results:
        print(harness.comparison_table(results))
    if engine_table:
        print("\nThe dataflow engine (one worker) against baselines measured in the same run:\n")
        print(engine_table)
    scaling = harness.scaling_table(results)
    if scaling:
        print("\nGrowth of the total time with n:\n")
        print(scaling)
    if skipped:
        print("\nNot run (implementation not importable):\n")
        print("\n".join(f"- {line}" for line in skipped))
    if failures:
        print("\nWRONG ANSWERS (no figure reported):\n")
        print("\n".join(f"- {line}" for line in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
