"""The dataflow engine at one worker, against plain-Python and numpy baselines.

Each workload runs a whole dataflow (built, fed, drained) per call, in one
worker (``timely.execute_directly``), and its baselines compute the same answer
without timely, measured in the same run. The answer of every implementation
is checked before its figure is taken, and again on the timed result.
Workloads (WORKLOADS.md names where they match):

- ``mapfilter``: 10^6 ints ``x``; ``map(lambda x: 3*x+1).filter(lambda y: y % 7 < 3)``
  then ``count()``; answer 428,572. Fed with ``send_batch`` in batches of 1024
  (one ``worker.step()`` per batch), or record by record with ``send`` (the
  handle buffers 1024 records per message; the worker steps once all are in).
  Baselines: a list comprehension calling the same two functions per record
  (the per-record work the dataflow cannot avoid), the same comprehension with
  the expressions inlined, and numpy on an array. Target: ≥ 3 M records/s.
- ``exchange+count``: 10^6 keys in [0, 1000) (fixed seed), in 100 epochs of
  10^4 (``send_batch`` of 1024, ``advance_to`` per epoch), through
  ``exchange(key)`` and ``count()``; answer 10^4 per epoch. At one worker the
  exchange hands batches on without calling the route, so this measures the
  engine's per-batch and per-epoch cost. Baseline: a Python loop counting
  each epoch's records.
- ``exchange+keyed count``: the same records through ``exchange(key)`` and a
  ``unary_notify`` operator that counts per (epoch, key) with a ``Counter``
  per epoch and emits ``(key, count)`` when the epoch is complete. Baselines:
  ``collections.Counter`` per epoch; ``np.bincount`` of ``epoch*1000 + key``.
- ``pingpong``: one record circulating a root-scope feedback loop for
  N = 10^5 iterations, as the Rust crate's ``examples/pingpong.rs``: ``concat``
  of input and loop, ``exchange``, ``map(x + 1)``, ``branch_when(t < N)``; the
  record leaves with value N + 1 at time N. Figure:
  µs per iteration. Reference: the Rust crate's ~1.6 µs (WORKLOADS.md; not
  measured here). Target: ≤ 20 µs.
- ``idle step``: 10^5 calls of ``worker.step()`` with nothing to do, on a
  worker with no dataflow and on one holding an idle dataflow (an open input,
  nothing sent). Baseline: 10^5 calls of an empty method.
- ``wordcount``: ``timely.examples.wordcount.wordcount`` on 10^6 words from
  its fixed vocabulary (10 epochs, batches of 1024), one worker. Baselines:
  ``collections.Counter``; ``np.unique(..., return_counts=True)`` on a numpy
  string array made beforehand.

Rows come in groups, one per workload: a row per baseline, then ``timely``.
The ``timely`` row's ``extra_info`` has the rate, each baseline's time and the
ratio ``timely time / baseline time`` (how many times slower timely is), and
the target when there is one; the same figures are printed as a Markdown
table at the end of the run, and by ``python benchmarks/report.py --suite
engine``. The whole file takes about 30 s with ``--benchmark-only`` on 2 cores.
"""

from __future__ import annotations

import collections
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

import harness  # puts this checkout first on sys.path, so `timely` is the in-place build
import numpy as np
import pytest

import timely
from timely.examples import wordcount as wordcount_example

SUITE = "engine"
TIMELY = "timely"
SEED = 20240601

N_RECORDS = 10**6
BATCH = 1024
N_KEYS = 1000
EPOCH = 10**4
PINGPONG = 10**5
IDLE_STEPS = 10**5
RUST_PINGPONG = 1.6e-6  # seconds per iteration, WORKLOADS.md (not measured here)


@dataclass(frozen=True, eq=False)
class Workload:
    """One workload: the timely callable, its baselines, and the check of an answer.

    ``make(impl)`` does the untimed setup and returns the timed zero-argument
    callable, for ``impl`` ``"timely"`` or one of ``baselines``. ``check(result)``
    raises :class:`harness.Mismatch` unless ``result`` is right.
    """

    key: str
    subject: str
    size: int
    ops: int
    op: str
    make: Callable[[str], Callable[[], object]]
    check: Callable[[object], None]
    baselines: tuple[str, ...] = ()
    target: str = ""  # e.g. "≥ 3 M records/s"
    meets: Callable[[float], bool] | None = None  # seconds per op -> meets the target
    reference: tuple[str, float] | None = None  # (label, seconds per op) not measured here

    @property
    def group(self) -> str:
        return f"{SUITE}: {self.subject}, n={harness.size_label(self.size)}"

    @property
    def impls(self) -> tuple[str, ...]:
        return (*self.baselines, TIMELY)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


@functools.cache
def ints() -> list[int]:
    return list(range(N_RECORDS))


@functools.cache
def keys() -> list[int]:
    rng = random.Random(SEED)
    return [rng.randrange(N_KEYS) for _ in range(N_RECORDS)]


@functools.cache
def words() -> list[str]:
    return wordcount_example.make_words(N_RECORDS)


def _batches(records: list, start: int, stop: int):
    for i in range(start, stop, BATCH):
        yield records[i : min(i + BATCH, stop)]


# ---------------------------------------------------------------------------
# mapfilter
# ---------------------------------------------------------------------------

MAPFILTER_ANSWER = sum(1 for x in range(N_RECORDS) if (3 * x + 1) % 7 < 3)


def _mapfilter_work(worker, batched: bool) -> int:
    counted: list[int] = []
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        (
            stream.map(lambda x: 3 * x + 1)
            .filter(lambda y: y % 7 < 3)
            .count()
            .inspect(counted.append)
        )
    data = ints()
    if batched:
        send_batch, step = handle.send_batch, worker.step
        for batch in _batches(data, 0, len(data)):
            send_batch(batch)
            step()
    else:
        send = handle.send
        for x in data:
            send(x)
    handle.close()
    worker.drain()
    return sum(counted)


def make_mapfilter(batched: bool):
    def make(impl: str):
        data = ints()
        if impl == TIMELY:
            return lambda: timely.execute_directly(
                functools.partial(_mapfilter_work, batched=batched)
            )
        if impl == "listcomp (same functions)":

            def f(x):
                return 3 * x + 1

            def p(y):
                return y % 7 < 3

            return lambda: len([y for y in map(f, data) if p(y)])
        if impl == "listcomp (inlined)":
            return lambda: len([y for y in [3 * x + 1 for x in data] if y % 7 < 3])
        if impl == "numpy":
            array = np.arange(N_RECORDS, dtype=np.int64)

            def run() -> int:
                y = 3 * array + 1
                return int(np.count_nonzero(y % 7 < 3))

            return run
        raise ValueError(impl)

    return make


def check_mapfilter(result: object) -> None:
    if result != MAPFILTER_ANSWER:
        raise harness.Mismatch(f"mapfilter kept {result!r} records, expected {MAPFILTER_ANSWER}")


# ---------------------------------------------------------------------------
# exchange + count, exchange + keyed count
# ---------------------------------------------------------------------------

EPOCHS = N_RECORDS // EPOCH


def _feed_epochs(worker, handle, records: list) -> None:
    send_batch, step = handle.send_batch, worker.step
    for epoch in range(EPOCHS):
        for batch in _batches(records, epoch * EPOCH, (epoch + 1) * EPOCH):
            send_batch(batch)
            step()
        handle.advance_to(epoch + 1)
    handle.close()
    worker.drain()


def _exchange_count_work(worker) -> list:
    counts: list = []
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        stream.exchange(lambda k: k).count().inspect_time(lambda t, n: counts.append((t, n)))
    _feed_epochs(worker, handle, keys())
    return counts


def make_exchange_count(impl: str):
    if impl == TIMELY:
        return lambda: timely.execute_directly(_exchange_count_work)
    if impl == "Python loop":
        data = keys()

        def run() -> list:
            out = []
            for epoch in range(EPOCHS):
                n = 0
                for _ in data[epoch * EPOCH : (epoch + 1) * EPOCH]:
                    n += 1
                out.append((epoch, n))
            return out

        return run
    raise ValueError(impl)


def check_exchange_count(result: object) -> None:
    harness.expect_equal("count per epoch", result, [(e, EPOCH) for e in range(EPOCHS)])


def keyed_count(stream):
    """``(key, count)`` per key per complete epoch, keyed by ``exchange``."""
    pending: dict = {}

    def logic(input, output, notificator):
        for cap, data in input:
            counter = pending.get(cap.time)
            if counter is None:
                counter = pending[cap.time] = collections.Counter()
                notificator.notify_at(cap)
            counter.update(data)
        for cap, _ in notificator:
            output.session(cap).give_iterator(pending.pop(cap.time).items())

    return stream.unary_notify(timely.Exchange(lambda k: k), "KeyedCount", [], logic)


def _keyed_count_work(worker) -> dict:
    counts: dict = {}
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        keyed_count(stream).inspect_batch(lambda t, batch: counts.setdefault(t, {}).update(batch))
    _feed_epochs(worker, handle, keys())
    return counts


def make_keyed_count(impl: str):
    data = keys()
    if impl == TIMELY:
        return lambda: timely.execute_directly(_keyed_count_work)
    if impl == "Counter per epoch":
        return lambda: {
            e: collections.Counter(data[e * EPOCH : (e + 1) * EPOCH]) for e in range(EPOCHS)
        }
    if impl == "numpy bincount":
        array = np.array(data, dtype=np.int64)
        epoch = np.arange(N_RECORDS, dtype=np.int64) // EPOCH

        def run() -> np.ndarray:
            flat = np.bincount(epoch * N_KEYS + array, minlength=EPOCHS * N_KEYS)
            return flat.reshape(EPOCHS, N_KEYS)

        return run
    raise ValueError(impl)


@functools.cache
def keyed_count_answer() -> np.ndarray:
    answer = np.zeros((EPOCHS, N_KEYS), dtype=np.int64)
    for i, k in enumerate(keys()):
        answer[i // EPOCH, k] += 1
    return answer


def check_keyed_count(result: object) -> None:
    if isinstance(result, np.ndarray):
        got = result
    else:
        got = np.zeros((EPOCHS, N_KEYS), dtype=np.int64)
        for epoch, per_key in result.items():  # type: ignore[union-attr]
            if not 0 <= epoch < EPOCHS:
                raise harness.Mismatch(f"keyed count: output at epoch {epoch!r}")
            for k, n in per_key.items():
                got[epoch, k] = n
    if got.shape != (EPOCHS, N_KEYS) or not np.array_equal(got, keyed_count_answer()):
        raise harness.Mismatch("keyed count: counts per (epoch, key) differ")


# ---------------------------------------------------------------------------
# pingpong
# ---------------------------------------------------------------------------


def _pingpong_work(worker) -> list:
    # The Rust crate's examples/pingpong.rs, with one element.
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        loop_handle, loop = scope.feedback(1)
        done, again = (
            stream.concat(loop)
            .exchange(lambda x: x)
            .map(lambda x: x + 1)
            .branch_when(lambda t: t < PINGPONG)
        )
        again.connect_loop(loop_handle)
        # Not capture(): it would also run (and record progress) at every iteration.
        exits: list = []
        done.inspect_time(lambda t, x: exits.append((t, [x])))
    if worker.index == 0:
        handle.send(0)
    handle.close()
    worker.drain()
    return exits


def make_pingpong(impl: str):
    if impl == TIMELY:
        return lambda: timely.execute_directly(_pingpong_work)
    raise ValueError(impl)


def check_pingpong(result: object) -> None:
    harness.expect_equal("pingpong exit", result, [(PINGPONG, [PINGPONG + 1])])


# ---------------------------------------------------------------------------
# idle step
# ---------------------------------------------------------------------------


class _Nothing:
    def step(self) -> bool:
        return False


def make_idle(with_dataflow: bool):
    def make(impl: str):
        handle = None
        if impl == TIMELY:
            worker = timely.Worker()
            if with_dataflow:
                with worker.dataflow() as scope:
                    handle, stream = scope.new_input()
                    stream.map(lambda x: x).probe()
                for _ in range(3):
                    worker.step()
            step = worker.step
        elif impl == "empty method":
            step = _Nothing().step
        else:
            raise ValueError(impl)
        expected = with_dataflow and impl == TIMELY

        def run(_open_input=handle) -> tuple:  # the open input keeps the dataflow alive
            last = None
            for _ in range(IDLE_STEPS):
                last = step()
            return expected, last

        return run

    return make


def check_idle(result: object) -> None:
    expected, last = result  # type: ignore[misc]
    if last is not expected:
        raise harness.Mismatch(f"step() returned {last!r}, expected {expected!r}")


# ---------------------------------------------------------------------------
# wordcount
# ---------------------------------------------------------------------------


@functools.cache
def wordcount_answer() -> dict:
    return dict(collections.Counter(words()))


def make_wordcount(impl: str):
    data = words()
    if impl == TIMELY:
        return lambda: wordcount_example.wordcount(data, workers=1)
    if impl == "Counter":
        return lambda: collections.Counter(data)
    if impl == "numpy unique":
        array = np.array(data)
        return lambda: np.unique(array, return_counts=True)
    raise ValueError(impl)


def check_wordcount(result: object) -> None:
    if isinstance(result, tuple):
        uniq, counts = result
        result = dict(zip(uniq.tolist(), counts.tolist()))
    if dict(result) != wordcount_answer():  # type: ignore[call-overload]
        raise harness.Mismatch("wordcount: counts differ from collections.Counter")


# ---------------------------------------------------------------------------
# The workloads
# ---------------------------------------------------------------------------


def _at_least(rate: float):
    return lambda per_op: 1.0 / per_op >= rate


WORKLOADS = [
    Workload(
        key="mapfilter-send_batch",
        subject="mapfilter, send_batch(1024)",
        size=N_RECORDS,
        ops=N_RECORDS,
        op="record",
        make=make_mapfilter(batched=True),
        check=check_mapfilter,
        baselines=("listcomp (same functions)", "listcomp (inlined)", "numpy"),
        target="≥ 3 M records/s",
        meets=_at_least(3e6),
    ),
    Workload(
        key="mapfilter-send",
        subject="mapfilter, send() per record",
        size=N_RECORDS,
        ops=N_RECORDS,
        op="record",
        make=make_mapfilter(batched=False),
        check=check_mapfilter,
        baselines=("listcomp (same functions)",),
        target="≥ 3 M records/s",
        meets=_at_least(3e6),
    ),
    Workload(
        key="exchange-count",
        subject="exchange + count(), 100 epochs",
        size=N_RECORDS,
        ops=N_RECORDS,
        op="record",
        make=make_exchange_count,
        check=check_exchange_count,
        baselines=("Python loop",),
    ),
    Workload(
        key="exchange-keyed_count",
        subject="exchange + keyed count, 100 epochs x 1000 keys",
        size=N_RECORDS,
        ops=N_RECORDS,
        op="record",
        make=make_keyed_count,
        check=check_keyed_count,
        baselines=("Counter per epoch", "numpy bincount"),
    ),
    Workload(
        key="pingpong",
        subject="pingpong, root-scope feedback loop",
        size=PINGPONG,
        ops=PINGPONG,
        op="iteration",
        make=make_pingpong,
        check=check_pingpong,
        target="≤ 20 µs/iteration",
        meets=lambda per_op: per_op <= 20e-6,
        reference=("Rust timely-dataflow (WORKLOADS.md)", RUST_PINGPONG),
    ),
    Workload(
        key="idle_step-no_dataflow",
        subject="idle worker.step(), no dataflow",
        size=IDLE_STEPS,
        ops=IDLE_STEPS,
        op="step",
        make=make_idle(with_dataflow=False),
        check=check_idle,
        baselines=("empty method",),
    ),
    Workload(
        key="idle_step-idle_dataflow",
        subject="idle worker.step(), one idle dataflow",
        size=IDLE_STEPS,
        ops=IDLE_STEPS,
        op="step",
        make=make_idle(with_dataflow=True),
        check=check_idle,
        baselines=("empty method",),
    ),
    Workload(
        key="wordcount",
        subject="wordcount example, 1 worker, 10 epochs",
        size=N_RECORDS,
        ops=N_RECORDS,
        op="word",
        make=make_wordcount,
        check=check_wordcount,
        baselines=("Counter", "numpy unique"),
    ),
]


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------


class Figures:
    """Best seconds per call, per (workload, implementation), in measurement order."""

    def __init__(self) -> None:
        self.best: dict[tuple[str, str], float] = {}
        self.workloads: dict[str, Workload] = {}

    def add(self, workload: Workload, impl: str, seconds: float) -> None:
        self.workloads.setdefault(workload.key, workload)
        self.best[(workload.key, impl)] = seconds

    def get(self, workload: Workload, impl: str) -> float | None:
        return self.best.get((workload.key, impl))

    def __bool__(self) -> bool:
        return bool(self.best)


def timely_info(workload: Workload, seconds: float, figures: Figures) -> dict[str, object]:
    """``extra_info`` of a ``timely`` row: rate, baselines, ratios, target."""
    per_op = seconds / workload.ops
    info: dict[str, object] = {
        "per_op": f"{harness.format_seconds(per_op)}/{workload.op}",
        "rate": f"{workload.ops / seconds / 1e6:.2f} M {workload.op}s/s",
    }
    for impl in workload.baselines:
        base = figures.get(workload, impl)
        if base is None:
            continue
        info[f"{impl}: s"] = base
        info[f"{impl}: timely/baseline"] = round(seconds / base, 2)
    if workload.reference:
        label, ref = workload.reference
        info[f"{label}: per {workload.op}"] = harness.format_seconds(ref)
        info[f"{label}: timely/reference"] = round(per_op / ref, 1)
    if workload.meets is not None:
        info["target"] = workload.target
        info["meets_target"] = workload.meets(per_op)
    return info


def table(figures: Figures) -> str:
    """The Markdown table of a run: timely against each baseline, per workload."""
    lines = [
        (
            "| workload | n | timely | timely rate | baseline | baseline time "
            "| timely / baseline | target | met |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for workload in figures.workloads.values():
        seconds = figures.get(workload, TIMELY)
        if seconds is None:
            continue
        per_op = seconds / workload.ops
        time_cell = (
            f"{harness.format_seconds(seconds)} ({harness.format_seconds(per_op)}/{workload.op})"
        )
        rate = f"{workload.ops / seconds / 1e6:.2f} M/s"
        met = "–" if workload.meets is None else ("yes" if workload.meets(per_op) else "**no**")
        rows = []
        for impl in workload.baselines:
            base = figures.get(workload, impl)
            if base is not None:
                base_cell = f"{harness.format_seconds(base)} ({workload.ops / base / 1e6:.1f} M/s)"
                rows.append((impl, base_cell, f"{seconds / base:.1f}x"))
        if workload.reference:
            label, ref = workload.reference
            rows.append(
                (
                    f"{label}, not measured here",
                    f"{harness.format_seconds(ref)}/{workload.op}",
                    f"{per_op / ref:.1f}x",
                )
            )
        if not rows:
            rows.append(("–", "–", "–"))
        for i, (impl, base_cell, ratio) in enumerate(rows):
            first = i == 0
            lines.append(
                f"| {workload.subject if first else ''} "
                f"| {harness.size_label(workload.size) if first else ''} "
                f"| {time_cell if first else ''} | {rate if first else ''} "
                f"| {impl} | {base_cell} | {ratio} "
                f"| {workload.target if first else ''} | {met if first else ''} |"
            )
    return "\n".join(lines)


def measure_all(max_time: float = 1.0, progress=None) -> tuple[Figures, list[str]]:
    """Every workload without pytest, for ``report.py``: per workload the baselines,
    then timely, each checked on its first and last answer. Returns the figures and
    the workloads that gave a wrong answer (which get no figure)."""
    figures = Figures()
    failures: list[str] = []
    for workload in WORKLOADS:
        for impl in workload.impls:
            try:
                timing = harness.measure(workload.make(impl), workload.check, max_time=max_time)
            except harness.Mismatch as exc:
                failures.append(f"{workload.group} [{impl}]: {exc}")
                if progress:
                    progress(f"FAIL {impl:23s} {workload.group}: {exc}")
                continue
            figures.add(workload, impl, timing.best)
            if progress:
                progress(
                    f"{impl:28s} {harness.format_seconds(timing.best):>9s}  "
                    f"x{timing.rounds:<4d} {workload.group}"
                )
    return figures, failures


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

_figures = Figures()


@pytest.fixture(scope="module", autouse=True)
def _engine_summary(request):
    harness.print_at_end(request, "timely-engine-summary",
                         "timely engine vs baselines, measured in this run",
                         lambda: table(_figures) if _figures else "")
    yield


def _params():
    return [
        pytest.param(w, impl, id=f"{w.key}-{impl.replace(' ', '_')}")
        for w in WORKLOADS
        for impl in w.impls
    ]


@pytest.mark.parametrize(("workload", "impl"), _params())
def test_engine(benchmark, workload: Workload, impl: str) -> None:
    fn = workload.make(impl)
    benchmark.group = workload.group
    rounds = None
    if benchmark.enabled:
        first_call = harness.measure(
            fn, workload.check, rounds=1
        )  # no figure before a right answer
        rounds = harness.fixed_rounds(first_call.best)
    if rounds is None:
        result = benchmark(fn)
    else:
        result = benchmark.pedantic(fn, rounds=rounds, iterations=1)
    try:
        workload.check(result)
    except Exception:
        benchmark.has_error = True
        raise
    if not benchmark.enabled:
        return
    best = benchmark.stats.stats.min
    _figures.add(workload, impl, best)
    if impl != TIMELY:
        benchmark.extra_info.update(
            impl=impl,
            per_op=f"{harness.format_seconds(best / workload.ops)}/{workload.op}",
            rate=f"{workload.ops / best / 1e6:.2f} M {workload.op}s/s",
        )
        return
    for base in workload.baselines:
        if _figures.get(workload, base) is None:
            # The baseline's row was deselected (-k): measure it here, still checked.
            timing = harness.measure(workload.make(base), workload.check)
            _figures.add(workload, base, timing.best)
    benchmark.extra_info.update(impl=TIMELY, **timely_info(workload, best, _figures))
