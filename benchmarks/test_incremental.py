"""Incremental graph algorithms: a 10^6-edge graph at time 0, then batches
of 10^3 new edges at later times, at 1 and 2 worker processes.

The graph: ``rmat_edges(18, 10**6, seed=1)`` (R-MAT on 2^18 nodes); each
later time adds ``BATCH`` edges between uniformly drawn nodes of the graph
(seeded). Each worker introduces every ``peers``-th edge of each time.

- ``cc-union-find`` / ``cc-propagate``:
  :func:`~timely.algorithms.connected_components`;
- ``bfs``: :func:`~timely.algorithms.bfs` from node ``src[0]``;
- ``sssp``: :func:`~timely.algorithms.sssp` from ``src[0]``, weights
  uniform in [0, 1);
- ``landmarks``: :func:`~timely.algorithms.shortest_paths` to 4 landmarks;
- ``pagerank``: :func:`~timely.algorithms.pagerank` (GraphX's ranks) to a
  tolerance of ``TOLERANCE`` per vertex, re-converged from the ranks so far.

Figures (``extra_info``), from worker 0's clock: ``scratch_s``, from the
first send until the probe has passed time 0 (the answer from scratch);
``update_s``, the median over ``TIMES`` later times of the same for one
batch; ``update_to_scratch`` their ratio (the target: at most 0.01); the
rows worker 0 output per update. The machine is shared: read ratios, and the
``load`` (1-minute load average) recorded with each.

Run: ``pytest benchmarks/test_incremental.py --benchmark-only``
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import timely
from timely.algorithms import (
    bfs,
    connected_components,
    pagerank,
    rmat_edges,
    shortest_paths,
    sssp,
)

SCALE, EDGES, BATCH, TIMES = 18, 10**6, 10**3, 5
TOLERANCE = 1e-4


def algorithms(root: int, landmarks: np.ndarray) -> dict:
    return {
        "cc-union-find": lambda e, n: connected_components(e, n, method="union-find"),
        "cc-propagate": lambda e, n: connected_components(e, n, method="propagate"),
        "bfs": lambda e, n: bfs(e, n.filter_batch(lambda b: b["node"] == root)),
        "sssp": lambda e, n: sssp(e, root, n),
        "landmarks": lambda e, n: shortest_paths(
            e, n.filter_batch(lambda b: np.isin(b["node"], landmarks)), n),
        "pagerank": lambda e, n: pagerank(e, tolerance=TOLERANCE, nodes=n),
    }


def measure_updates(name: str, workers: int) -> dict:
    src, dst = rmat_edges(SCALE, EDGES, seed=1)
    rng = np.random.default_rng(2)
    weight = rng.random(EDGES)
    later = [(rng.integers(0, 1 << SCALE, BATCH), rng.integers(0, 1 << SCALE, BATCH),
              rng.random(BATCH)) for _ in range(TIMES)]
    root = int(src[0])
    landmarks = np.unique(src[:4])
    build = algorithms(root, landmarks)[name]

    def work(worker):
        rows = [0]
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, nodes = scope.new_input()
            out = build(edges, nodes)
            out.inspect_batch(lambda t, b: rows.__setitem__(0, rows[0] + len(b)))
            probe = out.probe()
        k, p = worker.index, worker.peers

        def one_time(t, s, d, w, node_ids):
            rows[0] = 0
            start = time.perf_counter()
            edge_input.send_batch(timely.Batch(src=s[k::p], dst=d[k::p], weight=w[k::p]))
            node_input.send_batch(timely.Batch(node=node_ids[k::p]))
            edge_input.advance_to(t + 1)
            node_input.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(t + 1))
            return time.perf_counter() - start, rows[0]

        every = np.arange(1 << SCALE, dtype=np.int64)
        scratch, _ = one_time(0, src, dst, weight, every)
        updates = [one_time(t, s, d, w, np.zeros(0, dtype=np.int64))
                   for t, (s, d, w) in enumerate(later, start=1)]
        edge_input.close()
        node_input.close()
        worker.drain()
        return scratch, updates

    scratch, updates = timely.execute(work, workers=workers)[0]
    seconds = sorted(s for s, _ in updates)
    update = seconds[len(seconds) // 2]
    return {"scratch_s": round(scratch, 4), "update_s": round(update, 5),
            "update_to_scratch": round(update / scratch, 4),
            "update_rows": [r for _, r in updates]}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", ["cc-union-find", "cc-propagate", "bfs", "sssp", "landmarks",
                                  "pagerank"])
def test_incremental(benchmark, name, workers):
    found = benchmark.pedantic(lambda: measure_updates(name, workers), rounds=1, iterations=1)
    benchmark.extra_info.update(found)
    benchmark.extra_info.update({"edges": EDGES, "batch": BATCH, "workers": workers,
                                 "load": round(os.getloadavg()[0], 2)})
