"""pytest-benchmark setup for the suites in this folder.

Run with ``pytest benchmarks/ --benchmark-only``. Each case gives two rows in
pytest-benchmark's table, grouped together: ``<case>-oracle`` (the pure-Python
model in ``tests/reference/``, few rounds in pedantic mode) and
``<case>-compiled``; the compiled row's ``extra_info`` holds the oracle's time
and the ratio, and a Markdown summary of the same figures is printed at the
end. Without ``--benchmark-only`` (the project's ``addopts`` say
``--benchmark-disable``) every workload still runs once and is checked.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

# The suites and report.py share harness.py, whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

_results = harness.Results()


def pytest_configure(config: pytest.Config) -> None:
    # pyproject's addopts carry --benchmark-disable for the unit tests; asking for
    # --benchmark-only here means the benchmarks should run, not a usage error.
    if config.getoption("benchmark_only", False):
        config.option.benchmark_enable = True


@pytest.fixture
def run_case(benchmark):
    """``run_case(case, impl)``: checks, times and records one row."""

    def run(case: harness.Case, impl: str) -> None:
        try:
            fn = case.make(harness.Impl(impl))
        except harness.Unavailable as exc:
            pytest.skip(str(exc))
        benchmark.group = case.group
        if impl == harness.COMPILED:
            start = time.perf_counter()
            first = fn()
            elapsed = time.perf_counter() - start
            case.check(first)  # no figure before the answer is right
            rounds = harness.fixed_rounds(elapsed)
            if rounds is None:
                result = benchmark(fn)
            else:
                result = benchmark.pedantic(fn, rounds=rounds, iterations=1)
        else:
            result = benchmark.pedantic(fn, rounds=case.oracle_rounds, iterations=1)
        try:
            case.check(result)
        except Exception:
            benchmark.has_error = True  # shown in red, left out of saved JSON
            raise
        if not benchmark.enabled:
            return
        best = benchmark.stats.stats.min
        _results.add(case, impl, best)
        if impl == harness.ORACLE:
            benchmark.extra_info.update(
                impl=harness.LABELS[harness.ORACLE],
                per_op=f"{harness.format_seconds(best / case.ops)}/{case.op}",
                rounds=case.oracle_rounds,
                **harness.growth_info(_results, case, impl),
            )
            return
        oracle = _results.get(case, harness.ORACLE)
        if oracle is None and case.oracle_rounds:
            # The oracle row was deselected (-k): time the oracle here, still checked.
            timing = harness.measure(
                case.make(harness.Impl(harness.ORACLE)), case.check, rounds=case.oracle_rounds
            )
            oracle = timing.best
            _results.add(case, harness.ORACLE, oracle)
        benchmark.extra_info.update(harness.ratio_info(case, best, oracle))
        benchmark.extra_info.update(harness.growth_info(_results, case, impl))

    return run


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _results:
        return
    write = terminalreporter.write_line
    terminalreporter.section("compiled vs oracle, measured in this run")
    for line in harness.comparison_table(_results).splitlines():
        write(line)
    scaling = harness.scaling_table(_results)
    if scaling:
        write("")
        write("Growth with n (total time per call):")
        for line in scaling.splitlines():
            write(line)
