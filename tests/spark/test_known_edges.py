"""The semi-join behind ``timely.spark.Graph`` with integral ids
(:func:`timely.algorithms.edges.known_edges`): the edges whose two ends are
vertices, decided inside the dataflow, against a plain filter, at 1, 2
and 3 workers, with sparse 64-bit ids, dangling edges at either end,
duplicates and self-loops, the input all on one worker or spread, the
nodes before, after or among the edges, and nodes at several epochs."""

from __future__ import annotations

import numpy as np
import pytest

import timely
from timely.algorithms.edges import known_edges
from timely.errors import ColumnarError


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}w")
def workers(request):
    return request.param


def sparse_graph(seed: int, nodes: int = 300, edges: int = 2000):
    rng = np.random.default_rng(seed)
    pool = np.unique(np.concatenate([
        rng.integers(-2**63, 2**63 - 1, size=nodes, dtype=np.int64),
        np.array([-2**63, -1, 0, 1, 2**63 - 1], dtype=np.int64),
        np.arange(0, 1 << 20, 1 << 14, dtype=np.int64)]))      # ids sharing their low bits
    vertices = rng.permutation(pool[rng.random(len(pool)) < 0.7])
    src = rng.choice(pool, edges)
    dst = rng.choice(pool, edges)
    src[:20] = dst[:20]                                           # self-loops
    src[20:40], dst[20:40] = src[40:60], dst[40:60]               # duplicates
    weight = np.arange(edges, dtype=np.int64)                     # a column carried along
    return vertices, src, dst, weight


def expected(vertices, src, dst, weight):
    inside = np.isin(src, vertices) & np.isin(dst, vertices)
    return sorted(zip(src[inside].tolist(), dst[inside].tolist(), weight[inside].tolist()))


def run(vertices, src, dst, weight, workers: int, *, where: str, order: str):
    """The kept ``(src, dst, weight)`` rows of all workers: the input on
    worker 0 (``where="first"``) or every ``workers``-th row on each; the
    nodes sent before the edges, after them, or in slices among them."""

    def work(worker):
        got: list = []
        with worker.dataflow() as scope:
            edges_in, edges = scope.new_input()
            nodes_in, nodes = scope.new_input()
            known_edges(edges, nodes).inspect_batch(lambda t, b: got.extend(
                zip(b["src"].tolist(), b["dst"].tolist(), b["weight"].tolist())))
        k, p = worker.index, worker.peers
        pick = (slice(None) if k == 0 else slice(0, 0)) if where == "first" else slice(k, None, p)
        mine = vertices[pick]
        s, d, w = src[pick], dst[pick], weight[pick]
        node_parts = np.array_split(mine, 4)
        edge_parts = [(s[i::4], d[i::4], w[i::4]) for i in range(4)]

        def send_nodes(part):
            nodes_in.send_batch(timely.Batch(node=part))

        def send_edges(part):
            edges_in.send_batch(timely.Batch(src=part[0], dst=part[1], weight=part[2]))

        if order == "nodes first":
            for part in node_parts:
                send_nodes(part)
        for i, part in enumerate(edge_parts):
            send_edges(part)
            if order == "among":
                send_nodes(node_parts[i])
            worker.step()
        if order == "nodes last":
            for part in node_parts:
                send_nodes(part)
        edges_in.close()
        nodes_in.close()
        worker.drain()
        return got

    return sorted(r for rows in timely.execute(work, workers=workers) for r in rows)


@pytest.mark.parametrize("order", ["nodes first", "among", "nodes last"])
@pytest.mark.parametrize("where", ["first", "spread"])
def test_the_edges_between_vertices_are_kept(workers, where, order):
    graph = sparse_graph(workers * 7 + len(order))
    want = expected(*graph)
    assert 0 < len(want) < len(graph[1])
    assert run(*graph, workers, where=where, order=order) == want


def test_no_nodes_keeps_no_edge(workers):
    vertices = np.zeros(0, dtype=np.int64)
    src = np.array([1, 2], dtype=np.int64)
    assert run(vertices, src, src, src, workers, where="spread", order="among") == []


def test_an_edge_is_kept_from_the_epoch_its_ends_are_named(workers):
    """Nodes at epochs 0 and 2, edges at 0, 1, 2 and 3: an edge at an epoch
    is kept when both ends were named at it or before."""

    def work(worker):
        got: list = []
        with worker.dataflow() as scope:
            edges_in, edges = scope.new_input()
            nodes_in, nodes = scope.new_input()
            known_edges(edges, nodes).inspect_batch(lambda t, b: got.extend(
                (t, s, d) for s, d in zip(b["src"].tolist(), b["dst"].tolist())))
        if worker.index == 0:
            nodes_in.send_batch(timely.Batch(node=np.array([1, 2], dtype=np.int64)))
            for epoch in range(4):
                if epoch == 2:
                    nodes_in.send_batch(timely.Batch(node=np.array([3, 2**62], dtype=np.int64)))
                edges_in.send_batch(timely.Batch(src=np.array([1, 1, 2**62], dtype=np.int64),
                                                 dst=np.array([2, 3, 1], dtype=np.int64)))
                edges_in.advance_to(epoch + 1)
                nodes_in.advance_to(epoch + 1)
        edges_in.close()
        nodes_in.close()
        worker.drain()
        return got

    got = sorted(r for rows in timely.execute(work, workers=workers) for r in rows)
    assert got == [(0, 1, 2), (1, 1, 2), (2, 1, 2), (2, 1, 3), (2, 2**62, 1),
                   (3, 1, 2), (3, 1, 3), (3, 2**62, 1)]


def test_ids_that_are_not_integers_are_refused():
    def work(worker):
        with worker.dataflow() as scope:
            edges_in, edges = scope.new_input()
            nodes_in, nodes = scope.new_input()
            known_edges(edges, nodes)
        nodes_in.send_batch(timely.Batch(node=np.array([1], dtype=np.int64)))
        edges_in.send_batch(timely.Batch(src=np.array([1.5]), dst=np.array([1.0])))
        edges_in.close()
        nodes_in.close()
        worker.drain()

    with pytest.raises(ColumnarError, match="vertex ids are integers"):
        timely.execute_directly(work)
