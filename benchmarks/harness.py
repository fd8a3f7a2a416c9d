"""Shared machinery of the benchmark suites and of ``benchmarks/report.py``; measures nothing.

A suite (``test_<subject>.py``) lists its workloads as :class:`Case` objects in a
module-level ``CASES``. A case knows how to build the timed callable for either
implementation (``compiled``: ``timely.progress``; ``oracle``: the pure-Python
models in ``tests/reference/``), how to check what that callable returns, and
how many rounds the oracle gets at that size (0: the oracle is not run there,
and ``note`` says why). The same cases drive ``pytest benchmarks/`` (through
``conftest.py``) and ``python benchmarks/report.py``, so the two report the same
workloads.

Every figure is preceded or accompanied by a check of the answer against an
independent expectation (numpy, a closed form, or the oracle's own run); a
wrong answer fails the case instead of producing a figure.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# `import timely` must find the in-place build in this checkout (as
# `python -c "import timely.progress"` from the root does), and
# `import tests.reference` the oracles, wherever the benchmarks are started from.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COMPILED = "compiled"
ORACLE = "oracle"
IMPLS = (ORACLE, COMPILED)  # the oracle first, so a compiled row can quote its time
TARGET_RATIO = 30.0

LABELS = {
    COMPILED: "compiled (timely.progress)",
    ORACLE: "ORACLE (tests/reference, pure Python)",
}

_SOURCES = {
    COMPILED: {
        name: "timely.progress"
        for name in (
            "ChangeBatch",
            "Antichain",
            "MutableAntichain",
            "Builder",
            "Tracker",
            "Source",
            "Target",
            "PathSummary",
        )
    },
    ORACLE: {
        "ChangeBatch": "tests.reference.change_batch",
        "Antichain": "tests.reference.frontier",
        "MutableAntichain": "tests.reference.frontier",
        "Builder": "tests.reference.reachability",
        "Tracker": "tests.reference.reachability",
        "Source": "tests.reference.reachability",
        "Target": "tests.reference.reachability",
        "PathSummary": "tests.reference.timestamp",
    },
}


class Unavailable(Exception):
    """An implementation's module cannot be imported (not built or not written yet)."""


class Mismatch(AssertionError):
    """A workload returned a wrong answer: no figure may be reported for it."""


class Impl:
    """One implementation of the progress structures, its names resolved on first use.

    ``Impl("compiled").ChangeBatch`` is ``timely.progress.ChangeBatch``;
    ``Impl("oracle").ChangeBatch`` is ``tests.reference.change_batch.ChangeBatch``.
    A name whose module does not import raises :class:`Unavailable`.
    """

    def __init__(self, name: str) -> None:
        if name not in _SOURCES:
            raise ValueError(f"unknown implementation {name!r}")
        self.name = name

    def __getattr__(self, attr: str) -> object:
        module_name = _SOURCES[self.name].get(attr)
        if module_name is None:
            raise AttributeError(attr)
        try:
            module = importlib.import_module(module_name)
            value = getattr(module, attr)
        except (ImportError, AttributeError) as exc:
            raise Unavailable(
                f"{self.name}: {module_name}.{attr} is not available ({exc})"
            ) from exc
        setattr(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"Impl({self.name!r})"


@dataclass(frozen=True, eq=False)
class Case:
    """One workload at one size.

    ``make(impl)`` does the untimed setup and returns the timed zero-argument
    callable; ``check(result)`` raises :class:`Mismatch` unless ``result`` (what
    one call returned) is right. A callable may keep state between calls (a
    tracker advancing one round per call); ``check`` then gets enough in the
    result to know which call it was.
    """

    suite: str  # e.g. "ChangeBatch"
    subject: str  # the workload, as the report's first column shows it
    key: str  # pytest id, unique within the suite
    size: int
    unit: str  # what ``size`` counts: "updates", "times", "operators"
    make: Callable[[Impl], Callable[[], object]]
    check: Callable[[object], None]
    ops: int = 1  # operations per call, for the time per operation
    op: str = "call"
    oracle_rounds: int = 0  # 0: the oracle is not run at this size
    note: str = ""
    scaling: str = ""  # cases sharing this label form a growth curve over ``size``
    curve: tuple[str, ...] = IMPLS  # the implementations whose times join that curve

    @property
    def group(self) -> str:
        return f"{self.suite}: {self.subject}, n={size_label(self.size)}"


def params(cases: Iterable[Case]) -> list[object]:
    """pytest parameters ``(case, impl)``: per case the oracle (when run) then the compiled."""
    import pytest

    out = []
    for case in cases:
        for impl in IMPLS:
            if impl == ORACLE and not case.oracle_rounds:
                continue
            out.append(pytest.param(case, impl, id=f"{case.key}-{impl}"))
    return out


# ---------------------------------------------------------------------------
# Timing (report.py; pytest uses pytest-benchmark's own timer)
# ---------------------------------------------------------------------------


SLOW_CALL = 0.2  # seconds; slower compiled calls get a fixed, small number of rounds


def fixed_rounds(first_call: float, budget: float = 3.0, most: int = 5) -> int | None:
    """None (let the timer calibrate) for a fast call; else the rounds that fit ``budget``.

    Keeps a compiled case that turns out slow (a quadratic path, say) from
    eating the run's time: at least 1 round, at most ``most``.
    """
    if first_call < SLOW_CALL:
        return None
    return max(1, min(most, int(budget / first_call)))


@dataclass
class Timing:
    best: float  # seconds per call, the least over the rounds
    rounds: int
    result: object = field(repr=False, default=None)


def measure(
    fn: Callable[[], object],
    check: Callable[[object], None],
    *,
    rounds: int | None = None,
    min_rounds: int = 5,
    max_time: float = 1.0,
    collect: bool = True,
) -> Timing:
    """The best time of ``fn`` over ``rounds`` calls, or (``rounds=None``) over at
    least ``min_rounds`` calls and ``max_time`` seconds, as pytest-benchmark's
    ``Min``; a first call slower than ``SLOW_CALL`` fixes the rounds instead.

    ``check`` sees the first and the last result and raises on a wrong one, so
    no time is returned for a wrong answer. Calls shorter than ~1 ms are timed
    in batches, so that neither the timer's resolution nor the loop counts.
    ``collect`` runs the garbage collector first, so no earlier garbage is
    collected on this call's time.
    """
    if collect:
        gc.collect()
    start = time.perf_counter()
    result = fn()
    first = time.perf_counter() - start
    check(result)
    if rounds is None:
        rounds = fixed_rounds(first)
    batch = 1 if rounds else max(1, int(1e-3 / max(first, 1e-9)))
    best = first
    done = 1
    spent = first
    while True:
        if rounds is not None:
            if done >= rounds:
                break
        elif done >= min_rounds and spent >= max_time:
            break
        start = time.perf_counter()
        for _ in range(batch):
            result = fn()
        elapsed = time.perf_counter() - start
        best = min(best, elapsed / batch)
        spent += elapsed
        done += 1
    check(result)
    return Timing(best=best, rounds=done, result=result)


# ---------------------------------------------------------------------------
# Records and tables
# ---------------------------------------------------------------------------


@dataclass
class Record:
    case: Case
    impl: str
    best: float  # seconds per call


class Results:
    """Best times per (case, implementation), in the order they were measured."""

    def __init__(self) -> None:
        self._best: dict[tuple[int, str], Record] = {}

    def add(self, case: Case, impl: str, best: float) -> None:
        self._best[(id(case), impl)] = Record(case, impl, best)

    def get(self, case: Case, impl: str) -> float | None:
        record = self._best.get((id(case), impl))
        return record.best if record else None

    def cases(self) -> list[Case]:
        seen: dict[int, Case] = {}
        for record in self._best.values():
            seen.setdefault(id(record.case), record.case)
        return list(seen.values())

    def __bool__(self) -> bool:
        return bool(self._best)


def ratio_info(case: Case, compiled: float, oracle: float | None) -> dict[str, object]:
    """``benchmark.extra_info`` of a compiled row: the oracle's time and the ratio."""
    info: dict[str, object] = {
        "impl": LABELS[COMPILED],
        "per_op": f"{format_seconds(compiled / case.ops)}/{case.op}",
    }
    if oracle is None:
        info["oracle"] = "not run at this size" + (f": {case.note}" if case.note else "")
        return info
    ratio = oracle / compiled
    info.update(
        oracle_s=oracle,
        oracle_per_op=f"{format_seconds(oracle / case.ops)}/{case.op}",
        ratio=round(ratio, 1),
        target_ratio=TARGET_RATIO,
        meets_target=ratio >= TARGET_RATIO,
    )
    return info


def size_label(n: int) -> str:
    exponent = round(math.log10(n)) if n > 0 else 0
    if n >= 1000 and 10**exponent == n:
        return f"10^{exponent}"
    return f"{n:,}"


def format_seconds(seconds: float) -> str:
    for unit, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _time_cell(case: Case, seconds: float | None) -> str:
    if seconds is None:
        return "not run"
    cell = format_seconds(seconds)
    if case.ops > 1:
        cell += f" ({format_seconds(seconds / case.ops)}/{case.op})"
    return cell


def comparison_table(results: Results) -> str:
    """The Markdown table: subject, size, compiled time, oracle time, ratio (and the 30x target)."""
    lines = [
        "| subject | size | compiled | oracle | ratio | ≥ 30x |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    notes: list[str] = []
    for case in results.cases():
        compiled = results.get(case, COMPILED)
        oracle = results.get(case, ORACLE)
        if compiled is not None and oracle is not None:
            ratio = oracle / compiled
            ratio_cell = f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x"
            verdict = "yes" if ratio >= TARGET_RATIO else "**no**"
        else:
            ratio_cell, verdict = "–", "–"
        oracle_cell = _time_cell(case, oracle)
        if case.note:
            if case.note not in notes:
                notes.append(case.note)
            oracle_cell += f" [{notes.index(case.note) + 1}]"
        lines.append(
            f"| {case.suite}: {case.subject} | {size_label(case.size)} {case.unit} "
            f"| {_time_cell(case, compiled)} | {oracle_cell} | {ratio_cell} | {verdict} |"
        )
    lines.append("")
    lines.append(
        "Times are the best of several calls, compiled and oracle measured in the same "
        "process; ratio = oracle / compiled."
    )
    for i, note in enumerate(notes, 1):
        lines.append(f"[{i}] {note}")
    return "\n".join(lines)


def growth(sizes_times: Sequence[tuple[int, float]]) -> list[tuple[int, int, float, float]]:
    """For consecutive sizes: (n1, n2, t2/t1, k) with t ~ n^k between them."""
    out = []
    for (n1, t1), (n2, t2) in itertools.pairwise(sizes_times):
        ratio = t2 / t1
        out.append((n1, n2, ratio, math.log(ratio) / math.log(n2 / n1)))
    return out


def _shape_of(exponent: float) -> str:
    if exponent < 1.35:
        return "≈ n log n"
    if exponent < 1.75:
        return "between n log n and n^2"
    if exponent < 2.3:
        return "≈ n^2"
    if exponent < 2.75:
        return "between n^2 and n^3"
    return "≈ n^3 or worse"


def _curves(results: Results) -> dict[tuple[str, str], list[tuple[int, float]]]:
    curves: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for case in results.cases():
        if not case.scaling:
            continue
        for impl in case.curve:
            best = results.get(case, impl)
            if best is not None:
                curves.setdefault((case.scaling, impl), []).append((case.size, best))
    return {key: sorted(points) for key, points in curves.items()}


def growth_info(results: Results, case: Case, impl: str) -> dict[str, object]:
    """``extra_info`` on a curve's point: the growth from the previous size measured."""
    if not case.scaling or impl not in case.curve:
        return {}
    points = _curves(results).get((case.scaling, impl), [])
    smaller = [(n, t) for n, t in points if n < case.size]
    best = results.get(case, impl)
    if not smaller or best is None:
        return {}
    n1, t1 = smaller[-1]
    ratio = best / t1
    return {
        "growth": f"x{ratio:.1f} from n={size_label(n1)}",
        "growth_nlogn_predicts": round(case.size / n1 * math.log(case.size) / math.log(n1), 1),
        "growth_n2_predicts": round((case.size / n1) ** 2, 1),
        "growth_exponent_k": round(math.log(ratio) / math.log(case.size / n1), 2),
    }


def scaling_table(results: Results) -> str:
    """Total time growth with n, for every curve (``Case.scaling``) and implementation.

    From n1 to n2 = 10 n1, n log n predicts a ratio of 10 log(n2)/log(n1) (12.5 from
    10^4 to 10^5) and n^2 predicts 100; ``k`` is the exponent in t ~ n^k.
    """
    curves = _curves(results)
    if not curves:
        return ""
    header = (
        "| workload | impl | n1 → n2 | t(n1) | t(n2) | t(n2)/t(n1) | n log n predicts "
        "| n^2 predicts | k (t ~ n^k) | shape |"
    )
    lines = [header, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    extrapolated = []
    for (label, impl), points in curves.items():
        times = dict(points)
        k = 0.0
        for n1, n2, ratio, k in growth(points):
            nlogn = (n2 / n1) * math.log(n2) / math.log(n1)
            lines.append(
                f"| {label} | {impl} | {size_label(n1)} → {size_label(n2)} "
                f"| {format_seconds(times[n1])} | {format_seconds(times[n2])} | {ratio:.1f}x "
                f"| {nlogn:.1f}x | {(n2 / n1) ** 2:.0f}x | {k:.2f} | {_shape_of(k)} |"
            )
        other = curves.get((label, COMPILED if impl == ORACLE else ORACLE), [])
        n_max, t_max = points[-1]
        beyond = [n for n, _ in other if n > n_max]
        if impl == ORACLE and beyond and len(points) > 1:
            n = beyond[0]
            guess = t_max * (n / n_max) ** k
            extrapolated.append(
                f"- {label}: the oracle at n={size_label(n)} would take about "
                f"{format_seconds(guess)} per call (extrapolated with k={k:.2f}; not run)"
            )
    if extrapolated:
        lines.append("")
        lines.extend(extrapolated)
    return "\n".join(lines)


def first_difference(got: Sequence[object], want: Sequence[object]) -> str:
    """A short description of where two sequences first differ."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"item {i}: got {g!r}, expected {w!r}"
    if len(got) != len(want):
        return f"length {len(got)}, expected {len(want)}"
    return "no difference"


def expect_equal(what: str, got: Sequence[object], want: Sequence[object]) -> None:
    if got != want:
        raise Mismatch(f"{what}: {first_difference(list(got), list(want))}")


def print_at_end(request, name: str, title: str, text: Callable[[], str]) -> None:
    """Has the session end with ``text()`` under the heading ``title`` in
    the terminal summary (nothing when it is empty): the table of figures a
    benchmark file measured in this run. ``name`` registers it once, however
    many modules or fixtures ask."""
    import pytest

    class Summary:
        @pytest.hookimpl(trylast=True)
        def pytest_terminal_summary(self, terminalreporter) -> None:
            lines = text()
            if not lines:
                return
            terminalreporter.section(title)
            for line in lines.splitlines():
                terminalreporter.write_line(line)

    manager = request.config.pluginmanager
    if not manager.has_plugin(name):
        manager.register(Summary(), name)
