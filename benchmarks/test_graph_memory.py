"""Peak memory of the graph algorithms at 10^7 edges and 2 worker processes.

The graph: ``rmat_edges(22, 10**7, seed=1)`` (R-MAT on 2^22 nodes), made
in the launching process before the workers fork; each worker introduces
every second edge. Recorded (``extra_info``): each worker's peak resident
set (``ru_maxrss``, which counts the pages it shares with the launcher
through fork: the graph's arrays, the interpreter) and what it grew by
from its start (``grown_mib``); the launcher's peak; ``total_mib``, the
launcher's peak plus what each worker grew by: the whole run's peak
memory, each shared page counted once (the target: under 2048 MiB); and
``bound_mib``, the sum of every process's peak, counting shared pages once
per process. Also the seconds of the slower worker.

Run: ``pytest benchmarks/test_graph_memory.py --benchmark-only``
"""

from __future__ import annotations

import resource
import time

import numpy as np
import pytest

import timely
from timely.algorithms import bfs, connected_components, pagerank, rmat_edges

SCALE, EDGES = 22, 10**7


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def resident_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


ALGORITHMS = {
    "cc-union-find": lambda e, n, root: connected_components(e, n),
    "cc-propagate": lambda e, n, root: connected_components(e, n, method="propagate"),
    "bfs": lambda e, n, root: bfs(e, n.filter_batch(lambda b: b["node"] == root)),
    "pagerank-10": lambda e, n, root: pagerank(e, 10, nodes=n),
}


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_peak_memory_at_ten_million_edges(benchmark, name):
    src, dst = rmat_edges(SCALE, EDGES, seed=1)
    root = int(src[0])
    build = ALGORITHMS[name]

    def work(worker):
        rows = [0]
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, nodes = scope.new_input()
            build(edges, nodes, root).inspect_batch(
                lambda t, b: rows.__setitem__(0, rows[0] + len(b)))
        k, p = worker.index, worker.peers
        at_start = resident_mib()
        start = time.perf_counter()
        edge_input.send_batch(timely.Batch(src=src[k::p].copy(), dst=dst[k::p].copy()))
        node_input.send_batch(timely.Batch(node=np.arange(k, 1 << SCALE, p, dtype=np.int64)))
        edge_input.close()
        node_input.close()
        worker.drain()
        return time.perf_counter() - start, peak_mib(), peak_mib() - at_start, rows[0]

    parts = benchmark.pedantic(lambda: timely.execute(work, workers=2), rounds=1, iterations=1)
    launcher = peak_mib()
    benchmark.extra_info.update({
        "edges": EDGES, "workers_mib": [round(m, 1) for _, m, _, _ in parts],
        "grown_mib": [round(g, 1) for _, _, g, _ in parts], "launcher_mib": round(launcher, 1),
        "total_mib": round(launcher + sum(g for _, _, g, _ in parts), 1),
        "bound_mib": round(launcher + sum(m for _, m, _, _ in parts), 1),
        "seconds": round(max(s for s, _, _, _ in parts), 3),
        "rows": sum(r for _, _, _, r in parts)})
