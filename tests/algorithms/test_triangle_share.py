"""Triangles and clustering coefficients with the oriented edges passed
round the workers: the answers of the references
(``tests/reference/graphalytics.py``) on random graphs with sparse 64-bit
ids and a hub, given at two times, all on worker 0 or spread, at 1, 2, 3
and 5 workers; and, from the message log, that no worker receives more
than its share of the oriented edges in any round."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.algorithms.helpers import logged_graph_run, rows_received
from tests.progress.strategies import capped
from tests.reference import graphalytics as reference
from timely.algorithms import (
    local_clustering_coefficient,
    rmat_edges,
    triangle_count,
    triangles,
)

# -- answers --------------------------------------------------------------------------

IDS = st.integers(-2**63, 2**63 - 1)


@st.composite
def skewed_graphs(draw):
    """``(edges, nodes)``: distinct ids from all of int64, a hub linked to
    many of them, other edges among them (with duplicates, both directions
    and self-loops), and some ids only as nodes."""
    ids = draw(st.lists(IDS, min_size=1, max_size=14, unique=True))
    pick = st.sampled_from(ids)
    hub = ids[0]
    spokes = draw(st.lists(pick, max_size=14))
    edges = [(hub, v) if i % 2 else (v, hub) for i, v in enumerate(spokes)]
    edges += draw(st.lists(st.tuples(pick, pick), max_size=30))
    nodes = draw(st.lists(pick, max_size=3))
    return edges, nodes


def run_at_times(graphs, workers: int, spread: bool, directed: bool) -> list[dict]:
    """Per graph of ``graphs`` (given at times 0, 1, ...): the rows of
    ``triangles``, ``triangle_count`` and ``local_clustering_coefficient``,
    sorted. Worker 0 sends every edge and node, or (``spread``) each worker
    every ``workers``-th."""

    def work(worker):
        got: dict = defaultdict(list)
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, nodes = scope.new_input()
            built = {"triangles": triangles(edges, nodes),
                     "triangle_count": triangle_count(edges),
                     "lcc": local_clustering_coefficient(edges, nodes, directed=directed)}
            for name, stream in built.items():
                stream.inspect_batch(
                    lambda t, b, name=name: got[(t, name)].extend(b.to_records()))
        k, p = (worker.index, worker.peers) if spread else (0, 1)
        for time, (graph_edges, graph_nodes) in enumerate(graphs):
            for handle in (edge_input, node_input):
                handle.advance_to(time)
            if spread or worker.index == 0:
                src = np.array([u for u, _ in graph_edges], dtype=np.int64)
                dst = np.array([v for _, v in graph_edges], dtype=np.int64)
                edge_input.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p]))
                node_input.send_batch(
                    timely.Batch(node=np.array(graph_nodes, dtype=np.int64)[k::p]))
        for handle in (edge_input, node_input):
            handle.close()
        worker.drain()
        return dict(got)

    merged: dict = defaultdict(list)
    for part in timely.execute(work, workers=workers):
        for key, rows in part.items():
            merged[key].extend(rows)
    return [{name: sorted(merged[(time, name)]) for name in ("triangles", "triangle_count", "lcc")}
            for time in range(len(graphs))]


def check(got: dict, edges, nodes, directed: bool) -> None:
    per_vertex = dict(got["triangles"])
    assert len(per_vertex) == len(got["triangles"]), "a vertex has more than one row"
    assert per_vertex == reference.triangles(edges, nodes)
    assert got["triangle_count"] == ([(reference.triangle_count(edges),)] if edges else [])
    lcc = dict(got["lcc"])
    expected = reference.local_clustering_coefficient(edges, nodes, directed)
    assert lcc.keys() == expected.keys()
    for v, want in expected.items():
        assert math.isclose(lcc[v], want, rel_tol=1e-12, abs_tol=0.0), (v, lcc[v], want)


@settings(max_examples=capped(25), deadline=None)
@given(skewed_graphs(), skewed_graphs(), st.booleans())
def test_answers_match_the_references_at_every_worker_count_and_placement(first, second,
                                                                          directed):
    graphs = [first, second]
    answers = {}
    for workers in (1, 2, 3, 5):
        for spread in (False, True):
            answers[(workers, spread)] = run_at_times(graphs, workers, spread, directed)
    for (edges, nodes), got in zip(graphs, answers[(1, False)]):
        check(got, edges, nodes, directed)
    # The same rows (and bits) whatever the worker count and placement.
    for got in answers.values():
        assert got == answers[(1, False)]


def test_several_times_are_separate_graphs(workers):
    square = [(1, 2), (2, 3), (3, 4), (4, 1), (1, 3)]
    graphs = [(square, []), ([(5, 6)], [7]), (square + [(2, 4)], [])]
    for (edges, nodes), got in zip(graphs, run_at_times(graphs, workers, True, False)):
        check(got, edges, nodes, False)


# -- the share of the edges each worker receives -------------------------------------

SHARE = 1.5          # the most, in rows, a worker may receive in a round: SHARE * m / W + SLACK
SLACK = 64


def oriented_edge_count(src: np.ndarray, dst: np.ndarray) -> int:
    """The edges of the simple undirected graph: distinct pairs, no self-loops."""
    kept = src != dst
    lo, hi = np.minimum(src[kept], dst[kept]), np.maximum(src[kept], dst[kept])
    return len(np.unique(np.stack([lo, hi], axis=1), axis=0))


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_no_worker_receives_more_than_its_share_of_the_edges_in_a_round(workers):
    src, dst = rmat_edges(12, 20000, seed=1)
    m = oriented_edge_count(src, dst)
    counted, logs = logged_graph_run(triangle_count, src, dst, workers, all_on_first=False)
    assert len(counted) == 1
    received = {(k, time): rows for (k, name, time), rows
                in rows_received(logs, by_time=True).items() if name == "Triangles"}
    bound = SHARE * m / workers + SLACK
    for (index, time), rows in received.items():
        assert rows <= bound, (f"worker {index} received {rows} oriented edges at {time}, "
                               f"more than {bound:.0f} of {m}")
    for index in range(workers):
        # Every block visits every worker once: m rows over the rounds 0..W-1.
        mine = {time: rows for (k, time), rows in received.items() if k == index}
        assert sum(mine.values()) == m
        assert sorted(time[-1] for time in mine) == list(range(workers))
