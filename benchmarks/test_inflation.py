"""Work inflation, load balance and memory per edge of every graph algorithm
of :mod:`timely.algorithms` at 1, 2, 4 and 8 worker processes.

The graph: ``rmat_edges(scale, edges, seed=1)`` (R-MAT), 10^7 edges by
default (``TIMELY_INFLATION_EDGES`` sets the count), on ``2**scale`` nodes
for the least ``scale`` with ``2**scale >= edges / 2.5`` (2^22 at 10^7).
SSSP's edges carry a ``weight`` column, uniform in [0, 1) (seed 1). The
algorithms: connected components (``union-find``, the default, and
``propagate``), PageRank (10 iterations), BFS and SSSP from ``src[0]``,
label propagation (10 iterations) and the triangle count.

Every worker count, 1 included, runs in freshly forked worker processes
(:func:`timely.launch.execute_processes`), so no process carries the
high-water mark of an earlier run. Worker ``k`` of ``W`` introduces the
edges ``k::W`` and, where the algorithm takes nodes (BFS: its root among
them), the node ids ``k::W``. Each worker measures, from just before its
first send until ``worker.drain()`` returns:

- ``process_time()``: its CPU seconds (user and system, all its threads);
- its peak resident set above its own idle baseline, taken just before the
  first send (its slice of the input already made): the kernel's
  high-water mark (``VmHWM``) is reset to the current resident set by
  writing 5 to ``/proc/self/clear_refs``; where that is refused, the peak
  is ``VmHWM`` less the baseline's ``VmRSS``, which overstates it if the
  process had been larger before;
- its wall seconds.

Output rows go to a file per worker as they come out (the page cache, not
the worker's memory), and the launcher compares them, sorted, with the
1-worker answer of the same run before any figure is reported: integer
columns equal, float columns within a relative 1e-9 (PageRank's sums are
taken in an order that depends on the worker count).

Reported (``extra_info``, and a table at the end): ``inflation``, the CPU
seconds of all workers over those of the 1-worker run; ``balance``, the
busiest worker's CPU over the mean; ``bytes_per_edge``, the sum of the
workers' peak growth over the edges; ``wall_s``, the slowest worker's wall
seconds; and the 1-minute load average before and after each run (8
workers oversubscribe a 2-core machine: read wall seconds with the load).

Run: ``pytest benchmarks/test_inflation.py --benchmark-only``
(``TIMELY_INFLATION_EDGES=200000`` for a quick run).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import harness
import numpy as np
import pytest

import timely
from timely.algorithms import (
    bfs,
    connected_components,
    label_propagation,
    pagerank,
    rmat_edges,
    sssp,
    triangle_count,
)
from timely.launch import execute_processes

EDGES = int(os.environ.get("TIMELY_INFLATION_EDGES", str(10**7)))
SCALE = (-(-2 * EDGES // 5) - 1).bit_length()  # least scale with 2**scale >= EDGES / 2.5
NODES = 1 << SCALE
WORKERS = (1, 2, 4, 8)
ITERATIONS = 10
RTOL = 1e-9


@dataclass(frozen=True)
class Algorithm:
    build: Callable  # (edges, nodes, root) -> output stream
    takes_nodes: bool = True
    weighted: bool = False


ALGORITHMS = {
    "cc-union-find": Algorithm(lambda e, n, root: connected_components(e, n)),
    "cc-propagate": Algorithm(lambda e, n, root: connected_components(e, n, method="propagate")),
    "pagerank-10": Algorithm(lambda e, n, root: pagerank(e, ITERATIONS, nodes=n)),
    "bfs": Algorithm(lambda e, n, root: bfs(e, n.filter_batch(lambda b: b["node"] == root))),
    "sssp": Algorithm(lambda e, n, root: sssp(e, root, n), weighted=True),
    "label-propagation-10": Algorithm(lambda e, n, root: label_propagation(e, n, ITERATIONS)),
    "triangles": Algorithm(lambda e, n, root: triangle_count(e), takes_nodes=False),
}


# ---------------------------------------------------------------------------
# Memory of the calling process
# ---------------------------------------------------------------------------


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def idle_baseline() -> tuple[int, bool]:
    """This process's resident bytes now, and whether its high-water mark
    could be reset to them (so that ``VmHWM`` later is the peak from here)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    return _status_kib("VmRSS") * 1024, reset


def peak_bytes() -> int:
    return _status_kib("VmHWM") * 1024


# ---------------------------------------------------------------------------
# One run: an algorithm at W workers
# ---------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    workers: int
    cpu_s: list[float]
    wall_s: list[float]
    grown: list[int]  # bytes per worker above its idle baseline
    reset: bool  # every worker's high-water mark was reset at its baseline
    load: tuple[float, float]  # 1-minute load average before and after
    answer: dict[str, np.ndarray] = field(repr=False)  # emptied once no longer needed
    rows: int = 0
    sha1: str = ""

    def __post_init__(self) -> None:
        self.rows = len(next(iter(self.answer.values()), ()))
        self.sha1 = digest(self.answer)

    @property
    def total_cpu(self) -> float:
        return sum(self.cpu_s)

    @property
    def balance(self) -> float:
        return max(self.cpu_s) / (self.total_cpu / self.workers)

    @property
    def bytes_per_edge(self) -> float:
        return sum(self.grown) / EDGES


def _written(out, batch: timely.Batch) -> None:
    pickle.dump(batch.columns, out, protocol=pickle.HIGHEST_PROTOCOL)


def _read_parts(directory: str, workers: int) -> list[dict[str, np.ndarray]]:
    parts = []
    for k in range(workers):
        with open(os.path.join(directory, f"part-{k}"), "rb") as f:
            while True:
                try:
                    parts.append(pickle.load(f))
                except EOFError:
                    break
    return parts


def sorted_answer(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """All output rows as columns, sorted by the integer columns (first one first)."""
    if not parts:
        return {}
    names = list(parts[0])
    columns = {c: np.concatenate([p[c] for p in parts]) for c in names}
    keys = [columns[c] for c in reversed(names) if columns[c].dtype.kind in "iu"]
    order = np.lexsort(keys) if keys else np.arange(len(columns[names[0]]))
    return {c: columns[c][order] for c in names}


def digest(answer: dict[str, np.ndarray]) -> str:
    h = hashlib.sha1()
    for name, column in answer.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(column).tobytes())
    return h.hexdigest()[:12]


def check_same(what: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """Raises :class:`harness.Mismatch` unless ``got`` has the rows of ``want``
    (integers equal, floats within ``RTOL``)."""
    harness.expect_equal(f"{what}: columns", list(got), list(want))
    for name, expected in want.items():
        column = got[name]
        if len(column) != len(expected):
            raise harness.Mismatch(f"{what}: {len(column)} rows, expected {len(expected)}")
        if expected.dtype.kind == "f":
            ok = (column == expected) | np.isclose(column, expected, rtol=RTOL, atol=0.0)
        else:
            ok = column == expected
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            row = {c: want[c][i].item() for c in want}
            raise harness.Mismatch(f"{what}: row {i} {name}={column[i]!r}, expected {row}")


def run(name: str, workers: int, graph: dict[str, np.ndarray]) -> Run:
    algorithm = ALGORITHMS[name]
    root = int(graph["src"][0])
    columns = ["src", "dst"] + (["weight"] if algorithm.weighted else [])
    directory = tempfile.mkdtemp(prefix="timely-inflation-")

    def work(worker):
        k, w = worker.index, worker.peers
        with open(os.path.join(directory, f"part-{k}"), "wb") as out:
            with worker.dataflow() as scope:
                edge_input, edges = scope.new_input()
                node_input, nodes = scope.new_input()
                algorithm.build(edges, nodes, root).inspect_batch(
                    lambda t, b: _written(out, b))
            mine = timely.Batch(**{c: graph[c][k::w].copy() for c in columns})
            my_nodes = timely.Batch(node=np.arange(k, NODES, w, dtype=np.int64))
            idle, reset = idle_baseline()
            cpu, start = time.process_time(), time.perf_counter()
            edge_input.send_batch(mine)
            if algorithm.takes_nodes:
                node_input.send_batch(my_nodes)
            edge_input.close()
            node_input.close()
            worker.drain()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - start
            return cpu, wall, peak_bytes() - idle, reset

    load_before = os.getloadavg()[0]
    try:
        results = execute_processes(work, workers)
        answer = sorted_answer(_read_parts(directory, workers))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return Run(name, workers, [r[0] for r in results], [r[1] for r in results],
               [r[2] for r in results], all(r[3] for r in results),
               (load_before, os.getloadavg()[0]), answer)


def check_single(name: str, single: Run) -> None:
    """What can be said of the 1-worker answer without another implementation."""
    rows = single.rows
    if name == "triangles":
        harness.expect_equal(f"{name}: rows", [rows], [1])
    elif name != "bfs":
        harness.expect_equal(f"{name}: one row per node", [rows], [NODES])
        harness.expect_equal(f"{name}: nodes", [bool(np.array_equal(
            single.answer["node"], np.arange(NODES)))], [True])
    elif rows < 1:
        raise harness.Mismatch("bfs: the root is not in the answer")


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

_runs: dict[tuple[str, int], Run] = {}
_load: dict[str, tuple[float, float, float]] = {}


def table(runs: dict[tuple[str, int], Run]) -> str:
    start = " ".join(f"{x:.2f}" for x in _load.get("start", ()))
    end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    header = ("| algorithm | workers | wall | CPU, all workers | inflation | busiest / mean "
              "| bytes per edge | answer |")
    title = (f"R-MAT, {EDGES:,} edges on 2^{SCALE} nodes; load average (1, 5, 15 min) "
             f"{start} at the start, {end} at the end")
    lines = [
        title,
        "",
        header,
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (name, workers), r in runs.items():
        single = runs.get((name, 1))
        inflation = f"{r.total_cpu / single.total_cpu:.2f}" if single else "–"
        mark = "" if r.reset else " [1]"
        answer = f"sha1 {r.sha1}" if workers == 1 else "same as 1 worker"
        lines.append(
            f"| {name} | {workers} | {max(r.wall_s):.3f} s | {r.total_cpu:.3f} s | {inflation} "
            f"| {r.balance:.2f} | {r.bytes_per_edge:.1f}{mark} | {answer} |")
    if not all(r.reset for r in runs.values()):
        lines.append("")
        lines.append("[1] the high-water mark could not be reset: VmHWM less the idle VmRSS")
    return "\n".join(lines)


@pytest.fixture(scope="module", autouse=True)
def _inflation_summary(request):
    harness.print_at_end(request, "timely-inflation-summary",
                         "graph algorithms at 1 to 8 workers, measured in this run",
                         lambda: table(_runs) if _runs else "")
    _load.setdefault("start", os.getloadavg())
    yield


@pytest.fixture(scope="module")
def graph() -> dict[str, np.ndarray]:
    src, dst = rmat_edges(SCALE, EDGES, seed=1)
    weight = np.random.default_rng(1).random(EDGES)
    return {"src": src, "dst": dst, "weight": weight}


def single_worker(name: str, graph: dict[str, np.ndarray]) -> Run:
    """The 1-worker run of this session, made now if it was deselected."""
    if (name, 1) not in _runs:
        single = run(name, 1, graph)
        check_single(name, single)
        _runs[(name, 1)] = single
    return _runs[(name, 1)]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_inflation(benchmark, graph, name, workers):
    benchmark.group = f"{name}, {harness.size_label(EDGES)} edges"
    if workers == 1:
        _runs.pop((name, 1), None)
        single = benchmark.pedantic(lambda: single_worker(name, graph), rounds=1, iterations=1)
        result = single
    else:
        single = single_worker(name, graph)
        result = benchmark.pedantic(lambda: run(name, workers, graph), rounds=1, iterations=1)
        try:
            check_same(f"{name} at {workers} workers", result.answer, single.answer)
        except harness.Mismatch:
            benchmark.has_error = True  # no figure for a wrong answer
            raise
        result.answer = {}
        _runs[(name, workers)] = result
        if workers == WORKERS[-1]:
            single.answer = {}
    benchmark.extra_info.update({
        "edges": EDGES, "nodes": NODES, "workers": workers,
        "cpu_s": [round(c, 4) for c in result.cpu_s],
        "total_cpu_s": round(result.total_cpu, 4),
        "inflation": round(result.total_cpu / single.total_cpu, 3),
        "balance": round(result.balance, 3),
        "grown_mib": [round(g / 2**20, 1) for g in result.grown],
        "bytes_per_edge": round(result.bytes_per_edge, 1),
        "hwm_reset": result.reset,
        "wall_s": round(max(result.wall_s), 4),
        "rows": result.rows,
        "answer_sha1": single.sha1,
        "load_before": round(result.load[0], 2), "load_after": round(result.load[1], 2),
    })
