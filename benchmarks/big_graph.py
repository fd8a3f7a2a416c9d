"""The big graph through Spark: connected components, PageRank and BFS of a
10^8-edge R-MAT graph held in a DataFrame, through ``timely.spark.Graph`` on
``local[2]``, against the PySpark-only baselines at the same size.

The graph: ``rmat_edges(scale, edges, seed=1)`` on ``2**scale`` nodes, the
least ``scale`` with ``2**scale >= edges / 3`` (2^25 at 10^8), written once
as Parquet (edges ``src, dst``; vertices ``id``, every node, isolated ones
included) under ``TIMELY_BIG_GRAPH_DIR`` (default: the temporary directory)
and read by Spark as a user's graph would be. The session is
``local[2]`` with ``spark.driver.memory`` set (``--driver-memory``, 8g by
default: the JVM of a local session is its only executor, and the
baselines' shuffles of 10^8 rows need more than the default 1g).

For each algorithm, ``timely``:
``Graph(vertices, edges).connectedComponents()``,
``.pageRank(resetProbability=0.15, maxIter=10)`` and ``.bfs("id = a",
"id = b")``, the result written to Parquet (so every row is computed), and
``spark``: :mod:`timely.examples.spark_baselines` (large-star/small-star,
the join PageRank, the hop-distance search from ``a``, each round
checkpointed), stopped after its first round that ends past
``--baseline-minutes`` (it may not finish: how far it got is reported).

While an algorithm runs, a thread samples every 20 ms the resident memory
of the Python worker processes of the session (``pyspark.daemon`` and the
workers it forks: timely's workers live in them) and keeps the peak of
their sum; the figure includes each interpreter and the loaded packages.

Before a figure counts, the answers are checked: components against
scipy's (every vertex's least-id label), PageRank against the scipy
power iteration of the same definition (relative 1e-9), and BFS's paths
against a breadth-first count of shortest paths from ``a`` (their number
and length; ``a`` and ``b`` are chosen from the graph so that ``b`` is 3
hops from ``a`` through at most 10^4 shortest paths).

Run: ``python benchmarks/big_graph.py [--edges 100000000]
[--algorithms components pagerank bfs] [--baseline-minutes 15]
[--no-baseline] [--driver-memory 8g]``; each Spark session starts with a
small graph through each method (the Python workers' start and imports),
not timed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

EDGES = 10**8
ALGORITHMS = ("components", "pagerank", "bfs")
ITERATIONS = 10
RESET = 0.15
SEED = 1
BFS_HOPS = 3
BFS_MAX_PATHS = 10**4
DRIVER_MEMORY = "8g"
BASELINE_MINUTES = 15.0
SAMPLE_S = 0.02


def scale_for(edges: int) -> int:
    """The least scale with ``2**scale >= edges / 3``."""
    return max(4, (-(-edges // 3) - 1).bit_length())


# -- the graph on disk ------------------------------------------------------------------


def graph_dir(edges: int, scale: int) -> str:
    root = os.environ.get("TIMELY_BIG_GRAPH_DIR", tempfile.gettempdir())
    return os.path.join(root, f"timely-big-graph-{edges}-{scale}-{SEED}")


def write_graph(edges: int) -> tuple[str, int]:
    """The graph's directory (``edges/``, ``vertices/`` as Parquet and
    ``src.npy``, ``dst.npy`` for the references), written unless present."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from timely.algorithms import rmat_edges

    scale = scale_for(edges)
    path = graph_dir(edges, scale)
    done = os.path.join(path, "complete")
    if os.path.exists(done):
        return path, scale
    os.makedirs(os.path.join(path, "edges"), exist_ok=True)
    os.makedirs(os.path.join(path, "vertices"), exist_ok=True)
    src, dst = rmat_edges(scale, edges, seed=SEED)
    np.save(os.path.join(path, "src.npy"), src)
    np.save(os.path.join(path, "dst.npy"), dst)
    files = max(1, min(16, edges // 2_000_000))
    for k, (s, d) in enumerate(zip(np.array_split(src, files), np.array_split(dst, files))):
        pq.write_table(pa.table({"src": s, "dst": d}),
                       os.path.join(path, "edges", f"part-{k:03d}.parquet"))
    del src, dst
    pq.write_table(pa.table({"id": np.arange(1 << scale, dtype=np.int64)}),
                   os.path.join(path, "vertices", "part-000.parquet"))
    open(done, "w").close()
    return path, scale


def load_arrays(path: str) -> tuple[np.ndarray, np.ndarray]:
    return (np.load(os.path.join(path, "src.npy"), mmap_mode="r"),
            np.load(os.path.join(path, "dst.npy"), mmap_mode="r"))


# -- references -------------------------------------------------------------------------


def reference_components(src, dst, n: int) -> np.ndarray:
    """Per vertex 0..n-1, the least vertex of its weak component."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n)).tocsr()
    _, component = connected_components(graph, directed=True, connection="weak")
    least = np.full(component.max() + 1, n, dtype=np.int64)
    np.minimum.at(least, component, np.arange(n, dtype=np.int64))
    return least[component]


def reference_pagerank(src, dst, n: int, iterations: int = ITERATIONS,
                       damping: float = 1.0 - RESET) -> np.ndarray:
    """Per vertex 0..n-1, GraphX's unnormalized rank after ``iterations``
    steps from 1 (a vertex without out-edges passes nothing on)."""
    from scipy.sparse import csr_matrix

    degree = np.bincount(src, minlength=n).astype(np.float64)
    into = csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    rank = np.ones(n)
    share = np.zeros(n)
    for _ in range(iterations):
        np.divide(rank, degree, out=share, where=degree > 0)
        share[degree == 0] = 0.0
        rank = (1.0 - damping) + damping * (into @ share)
    return rank


def bfs_pair(src, dst, n: int) -> tuple[int, int, int]:
    """``(a, b, paths)``: ``a`` a vertex with out-edges from which some ``b``
    is ``BFS_HOPS`` hops away through at most ``BFS_MAX_PATHS`` shortest
    paths (``paths`` of them, parallel edges counted), found by a
    breadth-first count of shortest paths."""
    from scipy.sparse import csr_matrix

    out = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    degree = np.diff(out.indptr)
    rng = np.random.default_rng(SEED)
    for a in rng.choice(np.flatnonzero(degree > 0), 64, replace=False):
        count = np.zeros(n)
        count[a] = 1.0
        seen = np.zeros(n, dtype=bool)
        seen[a] = True
        for _ in range(BFS_HOPS):
            count = out.T @ count           # paths into each vertex, one hop on
            count[seen] = 0.0
            seen |= count > 0
        ends = np.flatnonzero((count > 0) & (count <= BFS_MAX_PATHS))
        if len(ends):
            b = int(ends[np.argmax(count[ends])])
            return int(a), b, int(count[b])
    raise RuntimeError(f"no vertex {BFS_HOPS} hops away through few paths")


# -- memory of the Python workers -------------------------------------------------------


def _python_workers() -> list[int]:
    """The session's Python worker processes (the daemon and its forks)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if b"pyspark.daemon" in command or b"pyspark/daemon.py" in command:
            pids.append(int(entry))
    return pids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


@dataclass
class WorkerMemory:
    """Samples the summed resident memory of the Python workers until stopped."""

    peak: int = 0
    most: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> WorkerMemory:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            pids = _python_workers()
            self.most = max(self.most, len(pids))
            self.peak = max(self.peak, sum(_rss(p) for p in pids))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()


# -- runs -------------------------------------------------------------------------------


class OutOfTime(Exception):
    """A baseline passed its time limit at the end of a round."""


@dataclass
class Figure:
    algorithm: str
    system: str
    seconds: float
    complete: bool
    rounds: int = 0
    peak_bytes: int = 0
    processes: int = 0
    note: str = ""


def session(driver_memory: str = DRIVER_MEMORY):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("timely-big-graph")
             .config("spark.driver.memory", driver_memory)
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_parquet(path: str) -> tuple[np.ndarray, ...]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return tuple(table.column(i).to_numpy() for i in range(table.num_columns))


def warm_up(spark) -> None:
    """One small graph through each method first: the session's first
    barrier stage starts the Python workers and imports timely in them."""
    from timely.spark import Graph

    edges = spark.createDataFrame([(i, (i * 7 + 1) % 64) for i in range(256)], "src long, dst long")
    graph = Graph(spark.range(64), edges)
    graph.connectedComponents().collect()
    graph.pageRank(maxIter=2).vertices.collect()
    graph.bfs("id = 0", "id = 5").collect()


def run_timely(spark, path: str, algorithm: str, pair: tuple[int, int, int], out: str) -> Figure:
    """Runs ``algorithm`` through ``timely.spark.Graph``; the result is
    written to ``out`` (Parquet)."""
    from pyspark.sql import functions as F

    from timely.spark import Graph

    vertices = spark.read.parquet(os.path.join(path, "vertices"))
    edges = spark.read.parquet(os.path.join(path, "edges"))
    graph = Graph(vertices, edges)
    start = time.perf_counter()
    with WorkerMemory() as memory:
        if algorithm == "components":
            result = graph.connectedComponents().select("id", "component")
        elif algorithm == "pagerank":
            result = graph.pageRank(resetProbability=RESET, maxIter=ITERATIONS).vertices.select(
                "id", "pagerank")
        else:
            a, b, _ = pair
            found = graph.bfs(f"id = {a}", f"id = {b}")
            result = found.select(*[
                F.col(f"{c}.id" if c in ("from", "to") or c.startswith("v") else f"{c}.src")
                .alias(c) for c in found.columns])
        result.write.mode("overwrite").parquet(out)
    seconds = time.perf_counter() - start
    return Figure(algorithm, "timely", seconds, True, peak_bytes=memory.peak,
                  processes=memory.most)


def check_timely(algorithm: str, out: str, src, dst, n: int, pair) -> None:
    """Raises AssertionError unless the result in ``out`` is the reference's."""
    columns = read_parquet(out)
    if algorithm == "bfs":
        a, b, paths = pair
        assert len(columns[0]) == paths, f"bfs: {len(columns[0])} paths, expected {paths}"
        # from, e0, v1, e1, ..., to: BFS_HOPS edges
        assert len(columns) == 2 * BFS_HOPS + 1, f"bfs: {len(columns)} columns"
        assert (columns[0] == a).all() and (columns[-1] == b).all()
        return
    ids, values = columns
    order = np.argsort(ids)
    assert np.array_equal(ids[order], np.arange(n)), f"{algorithm}: not one row per vertex"
    if algorithm == "components":
        assert np.array_equal(values[order], reference_components(src, dst, n))
    else:
        expected = reference_pagerank(src, dst, n)
        # GraphFrames' pageRank scales the ranks to sum to n, as GraphX does.
        expected *= n / math.fsum(expected.tolist())
        assert np.allclose(values[order], expected, rtol=1e-9, atol=0), "pagerank differs"


def run_baseline(spark, path: str, algorithm: str, pair, limit_s: float,
                 src, dst, n: int) -> Figure:
    """The PySpark-only baseline, stopped after the first round ending past
    ``limit_s``; checked against the reference when it completes."""
    from timely.examples import spark_baselines

    edges = spark.read.parquet(os.path.join(path, "edges"))
    start = time.perf_counter()
    rounds = [0]

    def on_round(round_: int, *rest: object) -> None:
        rounds[0] = round_
        print(f"  spark {algorithm}: round {round_} at {time.perf_counter() - start:.0f} s"
              + (f", {rest[0]}" if rest else ""), flush=True)
        if time.perf_counter() - start > limit_s:
            raise OutOfTime

    try:
        if algorithm == "components":
            got = spark_baselines.large_small_star_components(edges, on_round=on_round)
        elif algorithm == "pagerank":
            got = spark_baselines.join_pagerank(edges, ITERATIONS, 1.0 - RESET,
                                                on_round=on_round)
        else:
            got = spark_baselines.landmark_distances(edges, [pair[0]], on_round=on_round)
        rows = got.toPandas()
    except OutOfTime:
        return Figure(algorithm, "spark", time.perf_counter() - start, False, rounds[0],
                      note=f"stopped after round {rounds[0]}, past {limit_s / 60:.0f} min")
    except Exception as exc:  # an out-of-memory JVM, a lost executor: reported, not hidden
        return Figure(algorithm, "spark", time.perf_counter() - start, False, rounds[0],
                      note=f"failed after round {rounds[0]}: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200] if str(exc) else ''}")
    seconds = time.perf_counter() - start
    if algorithm == "components":
        ids = rows["id"].to_numpy()
        assert np.array_equal(rows["component"].to_numpy(),
                              reference_components(src, dst, n)[ids])
    elif algorithm == "pagerank":
        ids = rows["id"].to_numpy()
        assert np.allclose(rows["rank"].to_numpy(), reference_pagerank(src, dst, n)[ids],
                           rtol=1e-9, atol=0)
    else:
        at = rows[rows["id"] == pair[1]]["distance"].to_numpy()
        assert list(at) == [BFS_HOPS], f"spark bfs: distance {list(at)}"
    return Figure(algorithm, "spark", seconds, True, rounds[0])


def run(edges: int = EDGES, algorithms=ALGORITHMS, baseline_minutes: float = BASELINE_MINUTES,
        driver_memory: str = DRIVER_MEMORY, baseline: bool = True) -> list[Figure]:
    path, scale = write_graph(edges)
    n = 1 << scale
    src, dst = load_arrays(path)
    pair = bfs_pair(src, dst, n) if "bfs" in algorithms else (0, 0, 0)
    spark = session(driver_memory)
    figures = []
    try:
        warm_up(spark)
        with tempfile.TemporaryDirectory() as scratch:
            for algorithm in algorithms:
                out = os.path.join(scratch, algorithm)
                figure = run_timely(spark, path, algorithm, pair, out)
                check_timely(algorithm, out, src, dst, n, pair)
                figures.append(figure)
                print(describe(figure, edges), flush=True)
                if baseline:
                    figure = run_baseline(spark, path, algorithm, pair,
                                          baseline_minutes * 60, src, dst, n)
                    figures.append(figure)
                    print(describe(figure, edges), flush=True)
    finally:
        spark.stop()
    return figures


def describe(f: Figure, edges: int) -> str:
    memory = (f", Python workers' peak {f.peak_bytes / 2**30:.2f} GiB over {f.processes} "
              f"processes" if f.peak_bytes else "")
    done = "" if f.complete else f" (incomplete: {f.note})"
    return (f"{f.algorithm} {f.system}: {f.seconds:.1f} s, {edges / f.seconds / 1e6:.2f} M "
            f"edges/s{memory}{done}")


def table(figures: list[Figure], edges: int) -> str:
    lines = ["| algorithm | system | seconds | M edges/s | complete | Python workers' peak GiB |",
             "| --- | --- | --- | --- | --- | --- |"]
    for f in figures:
        peak = f"{f.peak_bytes / 2**30:.2f}" if f.peak_bytes else "-"
        done = "yes" if f.complete else f"no: {f.note}"
        lines.append(f"| {f.algorithm} | {f.system} | {f.seconds:.1f} | "
                     f"{edges / f.seconds / 1e6:.2f} | {done} | {peak} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=EDGES)
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=list(ALGORITHMS))
    parser.add_argument("--baseline-minutes", type=float, default=BASELINE_MINUTES)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--driver-memory", default=DRIVER_MEMORY)
    args = parser.parse_args(argv)
    figures = run(args.edges, args.algorithms, args.baseline_minutes, args.driver_memory,
                  not args.no_baseline)
    print(f"\n{args.edges} edges on 2^{scale_for(args.edges)} nodes, local[2], load "
          f"{os.getloadavg()[0]:.1f}\n")
    print(table(figures, args.edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
