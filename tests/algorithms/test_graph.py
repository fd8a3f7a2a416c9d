"""Connected components, BFS and PageRank against scipy and numpy, at 1, 2
and 3 workers: random and R-MAT graphs, empty inputs, self-loops, duplicate
edges, nodes without edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from tests.reference import graph as reference
from timely.algorithms import bfs, connected_components, pagerank, rmat_edges
from timely.algorithms._graph import component_minima


def per_worker(build, src, dst, nodes, workers, mode="processes"):
    """What each worker collects: ``build(edges, node_stream, got)`` makes
    its dataflow, which appends to ``got``; each worker introduces every
    ``workers``-th edge and node."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    nodes = np.asarray(nodes, dtype=np.int64)

    def work(worker):
        got: list = []
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, node_stream = scope.new_input()
            build(edges, node_stream, got)
        k, p = worker.index, worker.peers
        edge_input.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p]))
        node_input.send_batch(timely.Batch(node=nodes[k::p]))
        edge_input.close()
        node_input.close()
        worker.drain()
        return got

    return timely.execute(work, workers=workers, mode=mode)


def run(algorithm, src, dst, nodes, workers, mode="processes", **options):
    """``algorithm(edges, nodes_stream, **options)``'s rows, sorted."""
    def build(edges, node_stream, got):
        algorithm(edges, node_stream, **options).inspect_batch(
            lambda t, b: got.extend(b.to_records()))

    return sorted(row for part in per_worker(build, src, dst, nodes, workers, mode)
                  for row in part)


def cc(method):
    return lambda edges, nodes: connected_components(edges, nodes, method=method)


def check_components(src, dst, n, workers, mode="processes"):
    expected = reference.component_labels(src, dst, n).tolist()
    for method in ("union-find", "propagate"):
        rows = run(cc(method), src, dst, range(n), workers, mode)
        assert [node for node, _ in rows] == list(range(n))
        assert [label for _, label in rows] == expected, method


def check_bfs(src, dst, n, roots, workers, mode="processes"):
    rows = run(bfs, src, dst, roots, workers, mode)
    assert len({node for node, _ in rows}) == len(rows)
    assert dict(rows) == reference.bfs_distances(src, dst, n, roots)


def check_pagerank(src, dst, n, iterations, workers, mode="processes"):
    rows = run(lambda e, nodes: pagerank(e, iterations, nodes=nodes), src, dst, range(n),
               workers, mode)
    assert [node for node, _ in rows] == list(range(n))
    got = np.array([rank for _, rank in rows])
    np.testing.assert_allclose(got, reference.pagerank(src, dst, n, iterations), rtol=1e-9,
                               atol=1e-12)
    return got


GRAPH = rmat_edges(7, 400, seed=11)


def test_rmat_graph_components(workers):
    check_components(*GRAPH, 128, workers)


def test_rmat_graph_bfs(workers):
    check_bfs(*GRAPH, 128, [int(GRAPH[0][0]), 5], workers)


def test_rmat_graph_pagerank_fixed_iterations(workers):
    check_pagerank(*GRAPH, 128, 15, workers)


def test_pagerank_to_a_tolerance(workers):
    src, dst = GRAPH
    n, tolerance = 128, 1e-10
    rows = run(lambda e, nodes: pagerank(e, None, tolerance=tolerance, nodes=nodes),
               src, dst, range(n), workers)
    assert [node for node, _ in rows] == list(range(n))
    fixed_point = reference.pagerank(src, dst, n, 400)
    got = np.array([rank for _, rank in rows])
    # Every rank is below the fixed point by at most tolerance * n / (1 - d).
    assert np.all(got <= fixed_point + 1e-12)
    assert np.all(fixed_point - got <= tolerance * n / 0.15)


def test_empty_graph(workers):
    assert run(cc("union-find"), [], [], [], workers) == []
    assert run(cc("propagate"), [], [], [], workers) == []
    assert run(bfs, [], [], [], workers) == []
    assert run(lambda e, nodes: pagerank(e, 5, nodes=nodes), [], [], [], workers) == []


def test_nodes_without_edges(workers):
    check_components([0, 3], [1, 3], 6, workers)
    check_bfs([0], [1], 4, [2], workers)
    check_pagerank([0], [1], 4, 3, workers)


def test_answers_do_not_depend_on_the_worker_count():
    src, dst = rmat_edges(8, 1500, seed=5)
    ranks = [check_pagerank(src, dst, 256, 10, w, "threads") for w in (1, 2, 3)]
    np.testing.assert_allclose(ranks[0], ranks[1], rtol=1e-12)
    np.testing.assert_allclose(ranks[0], ranks[2], rtol=1e-12)
    labels = [run(cc("propagate"), src, dst, range(256), w) for w in (1, 2, 3)]
    assert labels[0] == labels[1] == labels[2]


graphs = st.integers(1, 24).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60)))


def ends(edges):
    return [u for u, _ in edges], [v for _, v in edges]


@settings(max_examples=capped(40))
@given(graphs)
def test_components_of_random_graphs(graph):
    n, edges = graph
    for workers in (1, 2, 3):
        check_components(*ends(edges), n, workers, "threads")


@settings(max_examples=capped(40))
@given(graphs, st.data())
def test_bfs_of_random_graphs(graph, data):
    n, edges = graph
    roots = data.draw(st.lists(st.integers(0, n - 1), max_size=3))
    for workers in (1, 2, 3):
        check_bfs(*ends(edges), n, roots, workers, "threads")


@settings(max_examples=capped(40))
@given(graphs, st.integers(0, 8))
def test_pagerank_of_random_graphs(graph, iterations):
    n, edges = graph
    for workers in (1, 2, 3):
        check_pagerank(*ends(edges), n, iterations, workers, "threads")


@given(st.integers(1, 50).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))))))
def test_component_minima_is_union_find(graph):
    n, edges = graph
    src, dst = ends(edges)
    keys = np.arange(n, dtype=np.int64)
    got = component_minima(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), keys)
    assert got.tolist() == reference.component_labels(src, dst, n).tolist()


def test_rmat_edges_are_reproducible_and_in_range():
    a = rmat_edges(10, 5000, seed=3)
    b = rmat_edges(10, 5000, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert a[0].min() >= 0 and a[1].max() < 1024
    degrees = np.bincount(a[0], minlength=1024)
    assert degrees.max() > 10 * degrees.mean()       # skewed, unlike a uniform graph
    with pytest.raises(ValueError):
        rmat_edges(3, 10, probabilities=(0.5, 0.5, 0.5, 0.5))


def test_refusals():
    with pytest.raises(timely.ColumnarError):
        run(lambda e, nodes: connected_components(e, nodes, method="guess"), [0], [1], [], 1)
    with pytest.raises(timely.ColumnarError):
        run(lambda e, nodes: pagerank(e, None, nodes=nodes), [0], [1], [], 1)


def rounds_reported(algorithm, src, dst, n, workers):
    """Every worker's ``on_round`` calls, in the order each made them."""
    def build(edges, node_stream, got):
        algorithm(edges, node_stream, lambda r, rows: got.append((r, rows)))

    return per_worker(build, src, dst, range(n), workers)


def test_pagerank_reports_each_round_once_complete(workers):
    iterations = 4
    per_worker = rounds_reported(
        lambda e, nodes, report: pagerank(e, iterations, nodes=nodes, on_round=report),
        *GRAPH, 128, workers)
    totals: dict = {}
    for calls in per_worker:
        assert [r for r, _ in calls] == sorted({r for r, _ in calls})    # in order, once
        for r, rows in calls:
            totals[r] = totals.get(r, 0) + rows
    # Every node's rank is computed in every round, on the worker that owns it.
    assert totals == {r: 128 for r in range(iterations + 1)}


def test_label_propagation_reports_the_labels_improved_per_round(workers):
    src, dst = np.array([0, 1, 2, 3, 4, 5, 6, 7, 11]), np.array([1, 2, 3, 4, 5, 6, 7, 8, 10])
    per_worker = rounds_reported(
        lambda e, nodes, report: connected_components(e, nodes, method="propagate",
                                                      on_round=report),
        src, dst, 12, workers)
    totals: dict = {}
    for calls in per_worker:
        assert [r for r, _ in calls] == sorted({r for r, _ in calls})
        for r, rows in calls:
            assert rows > 0
            totals[r] = totals.get(r, 0) + rows
    # The loop joins the labels the workers' union-finds gave: one worker's
    # are final, with no round (a node named alone is its own label, with
    # nothing to join); spread over more, the chain 0..8 has labels to join,
    # each seen in round 0 and then only where it falls.
    if workers == 1:
        assert totals == {}
    else:
        assert min(totals) == 0 and sum(totals.values()) <= len(src) ** 2


def test_bfs_reports_the_frontier_of_each_round(workers):
    src, dst = np.array([0, 1, 2, 0, 5]), np.array([1, 2, 3, 2, 6])
    per_worker = rounds_reported(
        lambda e, nodes, report: bfs(
            e, nodes.map_batch(lambda b: timely.Batch(node=b["node"][b["node"] == 0])),
            on_round=report),
        src, dst, 7, workers)
    totals: dict = {}
    for calls in per_worker:
        for r, rows in calls:
            totals[r] = totals.get(r, 0) + rows
    # Node 0 at round 0, then 1 and 2 (2 first reached at distance 1), then 3.
    assert totals == {0: 1, 1: 2, 2: 1}


def graphx_ranks(src, dst, n: int, iterations: int, damping: float = 0.85) -> list[float]:
    """GraphX's unnormalized ranks of nodes 0..n-1, iterated from 1."""
    out = np.bincount(np.asarray(src, dtype=np.int64), minlength=n)
    rank = [1.0] * n
    for _ in range(iterations):
        sums = [0.0] * n
        for s, d in zip(src, dst):
            sums[d] += rank[s] / out[s]
        rank = [(1 - damping) + damping * sums[v] for v in range(n)]
    return rank


@settings(max_examples=capped(30), deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
           st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                                max_size=30))),
       st.integers(0, 4), st.booleans())
def test_rescaled_ranks_are_graphx_s_last_step_at_any_worker_count(graph, iterations,
                                                                   personalized):
    """``rescaled``: the ranks times their count over their correctly
    rounded sum (divided by it when ``personalized``), exactly, at 1, 2 and
    3 workers, with every node given, dangling nodes and self-loops; the
    ranks before are GraphX's."""
    from timely.algorithms.pagerank import rescaled

    n, edges = graph
    src = [s for s, _ in edges]
    dst = [d for _, d in edges]
    rank = graphx_ranks(src, dst, n, iterations)
    want = [r / math.fsum(rank) if personalized else r * (n / math.fsum(rank)) for r in rank]

    def both(edges, nodes, got):
        ranks = pagerank(edges, iterations, nodes=nodes)
        ranks.inspect_batch(lambda t, b: got.extend(("plain", *r) for r in b.to_records()))
        rescaled(ranks, personalized=personalized).inspect_batch(
            lambda t, b: got.extend(("scaled", *r) for r in b.to_records()))

    for workers in (1, 2, 3):
        rows = sorted(row for part in per_worker(both, src, dst, range(n), workers)
                      for row in part)
        plain = [r for kind, _, r in rows if kind == "plain"]
        scaled = [(node, r) for kind, node, r in rows if kind == "scaled"]
        assert [node for node, _ in scaled] == list(range(n))
        total = math.fsum(plain)
        assert [r for _, r in scaled] == [
            r / total if personalized else r * (n / total) for r in plain]
        assert [r for _, r in scaled] == pytest.approx(want, rel=1e-12)
