"""Graph algorithms of :mod:`timely.algorithms` at 1 and 2 worker processes,
against scipy (and a numpy power iteration for PageRank) in the same run.

The graph: ``rmat_edges(scale, edges, seed=1)`` (R-MAT, a=0.57, b=c=0.19),
10^5 edges on 2^15 nodes and 10^6 edges on 2^18 nodes; every node is given
as a node too. Each worker introduces every ``peers``-th edge as one Batch.

- ``cc``: :func:`~timely.algorithms.connected_components`, ``union-find`` and
  ``propagate``; baseline ``scipy.sparse.csgraph.connected_components`` of
  the graph, including building its CSR matrix (what a caller with edge
  arrays pays). Checked: the least node of every component, as scipy's.
- ``bfs``: :func:`~timely.algorithms.bfs` from node ``src[0]``; baseline
  ``csgraph.breadth_first_order`` plus the distances (``shortest_path``,
  unweighted, one source). Checked: every distance.
- ``pagerank``: :func:`~timely.algorithms.pagerank`, 10 iterations; baseline
  10 sparse matrix-vector products in numpy/scipy. Checked to 1e-9.
- ``triangles``: :func:`~timely.algorithms.triangle_count` of the graph as
  undirected and simple; baseline the sum of ``(L @ L) * L`` for ``L`` the
  edges oriented from the lower-degree end (scipy; the unoriented ``A @ A``
  of this skewed graph takes more than 24 GB). Checked: the count.

Beside the baseline, ``igraph_s``: the same answer by igraph (a C library),
graph construction from the edge arrays included, best of 3 (for PageRank
igraph's own solver, to convergence, so only a rough comparison).

Figures (``extra_info``): the slower worker's seconds from its first send
until its dataflow is done (``seconds``; forking the workers not included),
the best of the rounds; ``with_start_s``: the same including
``timely.execute``'s start of the processes; the baseline's best of 3; the
ratio timely / baseline. The machine is shared: read ratios, and the
``load`` (1-minute load average) recorded with each.

Run: ``pytest benchmarks/test_graph.py --benchmark-only``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_matrix, csgraph

import timely
from timely.algorithms import bfs, connected_components, pagerank, rmat_edges, triangle_count

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.reference import graph as reference  # noqa: E402

SIZES = {10**5: 15, 10**6: 18}
ITERATIONS = 10


def graph(edges: int):
    scale = SIZES[edges]
    src, dst = rmat_edges(scale, edges, seed=1)
    return 1 << scale, src, dst


def run(algorithm, n, src, dst, workers):
    def work(worker):
        got = []
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, nodes = scope.new_input()
            algorithm(edges, nodes).inspect_batch(lambda t, b: got.append(b))
        k, p = worker.index, worker.peers
        mine_src, mine_dst = src[k::p].copy(), dst[k::p].copy()
        start = time.perf_counter()
        edge_input.send_batch(timely.Batch(src=mine_src, dst=mine_dst))
        node_input.send_batch(timely.Batch(node=np.arange(k, n, p, dtype=np.int64)))
        edge_input.close()
        node_input.close()
        worker.drain()
        return time.perf_counter() - start, got

    start = time.perf_counter()
    parts = timely.execute(work, workers=workers)
    with_start = time.perf_counter() - start
    batches = [b for _, got in parts for b in got]
    merged = timely.Batch.concat(batches)
    return max(s for s, _ in parts), with_start, merged


def best_of(fn, rounds=3):
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def scipy_cc(n, src, dst):
    matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    return csgraph.connected_components(matrix, directed=False)


def scipy_bfs(n, src, dst, root):
    matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    csgraph.breadth_first_order(matrix, root, directed=True, return_predecessors=False)
    return csgraph.shortest_path(matrix, unweighted=True, indices=root)


def igraph_best(answer, n, src, dst, directed=True) -> float:
    """Seconds of ``answer(graph)`` by igraph, its graph made from the edge arrays."""
    import igraph

    def run():
        g = igraph.Graph(n=n, edges=np.column_stack([src, dst]), directed=directed)
        return answer(g)

    return best_of(run)[0]


def measure(benchmark, algorithm, n, src, dst, workers, baseline_s, check, igraph_s=None):
    seconds, starts = [], []

    def once():
        s, w, merged = run(algorithm, n, src, dst, workers)
        seconds.append(s)
        starts.append(w)
        return merged

    merged = benchmark.pedantic(once, rounds=3 if benchmark.enabled else 1, iterations=1)
    check(merged)
    benchmark.extra_info.update({
        "edges": len(src), "nodes": n, "workers": workers,
        "seconds": round(min(seconds), 4), "with_start_s": round(min(starts), 4),
        "baseline_s": round(baseline_s, 4),
        "ratio_to_baseline": round(min(seconds) / baseline_s, 2),
        "load": round(os.getloadavg()[0], 2),
    })
    if igraph_s is not None:
        benchmark.extra_info.update({"igraph_s": round(igraph_s, 4),
                                     "ratio_to_igraph": round(min(seconds) / igraph_s, 2)})


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("method", ["union-find", "propagate"])
@pytest.mark.parametrize("edges", [10**5, 10**6])
def test_cc(benchmark, edges, method, workers):
    n, src, dst = graph(edges)
    baseline_s, (count, labels) = best_of(lambda: scipy_cc(n, src, dst))
    least = np.full(count, n, dtype=np.int64)
    np.minimum.at(least, labels, np.arange(n))

    def check(merged):
        order = np.argsort(merged["node"])
        assert np.array_equal(merged["node"][order], np.arange(n))
        assert np.array_equal(merged["label"][order], least[labels])

    measure(benchmark, lambda e, nodes: connected_components(e, nodes, method=method),
            n, src, dst, workers, baseline_s, check,
            igraph_best(lambda g: g.connected_components(mode="weak"), n, src, dst))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("edges", [10**5, 10**6])
def test_bfs(benchmark, edges, workers):
    n, src, dst = graph(edges)
    root = int(src[0])
    baseline_s, dist = best_of(lambda: scipy_bfs(n, src, dst, root))
    reach = np.flatnonzero(np.isfinite(dist))

    def check(merged):
        order = np.argsort(merged["node"])
        assert np.array_equal(merged["node"][order], reach)
        assert np.array_equal(merged["distance"][order], dist[reach].astype(np.int64))

    def roots(e, nodes):
        return bfs(e, nodes.filter_batch(lambda b: b["node"] == root))

    measure(benchmark, roots, n, src, dst, workers, baseline_s, check,
            igraph_best(lambda g: g.distances(source=root, mode="out"), n, src, dst))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("edges", [10**5, 10**6])
def test_pagerank(benchmark, edges, workers):
    n, src, dst = graph(edges)
    baseline_s, expected = best_of(lambda: reference.pagerank(src, dst, n, ITERATIONS))

    def check(merged):
        order = np.argsort(merged["node"])
        np.testing.assert_allclose(merged["rank"][order], expected, rtol=1e-9)

    measure(benchmark, lambda e, nodes: pagerank(e, ITERATIONS, nodes=nodes),
            n, src, dst, workers, baseline_s, check,
            igraph_best(lambda g: g.pagerank(damping=0.85), n, src, dst))


def scipy_triangles(n, src, dst) -> int:
    """Triangles of the simple undirected graph: each edge oriented from
    the lower to the higher (degree, id) end, ``L``; the count is the sum
    of ``(L @ L) * L``, whose wedges number O(m sqrt(m)) where the
    unoriented ``A @ A`` of a skewed graph does not fit in memory."""
    matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    matrix = matrix + matrix.T
    matrix.setdiag(0)
    matrix.eliminate_zeros()
    degree = np.diff(matrix.indptr)
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), degree))] = np.arange(n)
    pairs = matrix.tocoo()
    up = rank[pairs.row] < rank[pairs.col]
    oriented = coo_matrix((np.ones(int(up.sum())), (pairs.row[up], pairs.col[up])),
                          shape=(n, n)).tocsr()
    return round((oriented @ oriented).multiply(oriented).sum())


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("edges", [10**5, 10**6])
def test_triangles(benchmark, edges, workers):
    n, src, dst = graph(edges)
    baseline_s, expected = best_of(lambda: scipy_triangles(n, src, dst))

    def check(merged):
        assert merged["triangles"].tolist() == [expected]

    def simple(g):
        g.simplify()
        return len(g.list_triangles())

    measure(benchmark, lambda e, nodes: triangle_count(e), n, src, dst, workers, baseline_s,
            check, igraph_best(simple, n, src, dst, directed=False))
