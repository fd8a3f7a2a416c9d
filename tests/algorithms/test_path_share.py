"""Breadth-first and weighted distances spread their vertices over the
workers by a 64-bit mix of each id (``edges.by_vertex``), not by ``id %
workers``: with every id a multiple of 1024, which the latter would send
to one worker, each worker's loop takes in about its share of the arcs and
proposals, counted from the logged messages; the answers are the
references'."""

from __future__ import annotations

import numpy as np
import pytest

import timely
from tests.algorithms.helpers import logged_graph_run, rows_received
from tests.reference import graph as graph_reference
from tests.reference import graphalytics as reference
from tests.reference import paths as paths_reference
from timely.algorithms import bfs, bfs_paths, rmat_edges, sssp

SCALE = 12
NUMBERS = rmat_edges(SCALE, 20_000, seed=1)
SRC, DST = (ends * 1024 for ends in NUMBERS)
ROOT = int(SRC[0])


def weights(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A weight per edge from its ends, so that every worker can make it."""
    return ((src // 1024 * 7 + dst // 1024) % 13 + 1) / 8.0


def shortest(edges):
    return sssp(edges.map_batch(lambda b: b.with_columns(weight=weights(b["src"], b["dst"]))),
                ROOT)


def breadth_first(edges):
    roots = edges.map_batch(lambda b: timely.Batch(node=b["src"][b["src"] == ROOT][:1]))
    return bfs(edges, roots)


@pytest.mark.parametrize("workers", [2, 3, 4])
@pytest.mark.parametrize("algorithm", ["bfs", "sssp"])
def test_paths_spread_ids_that_share_their_low_bits(algorithm, workers):
    build = breadth_first if algorithm == "bfs" else shortest
    rows, logs = logged_graph_run(build, SRC, DST, workers)
    if algorithm == "bfs":
        numbered = graph_reference.bfs_distances(*NUMBERS, 1 << SCALE, [ROOT // 1024])
        assert sorted(rows) == sorted((1024 * v, d) for v, d in numbered.items())
    else:
        edges = list(zip(SRC.tolist(), DST.tolist()))
        expected = reference.sssp(edges, weights(SRC, DST).tolist(), [], ROOT, True)
        assert sorted(rows) == sorted(expected.items())
    received = rows_received(logs)
    shares = [received.get((k, "Distance"), 0) for k in range(workers)]
    # Every arc reaches its source's owner, and the proposals their targets'.
    assert sum(shares) >= len(SRC)
    assert max(shares) <= 1.2 * sum(shares) / workers


# bfs_paths: sparse 64-bit ids (multiples of 1024 below zero), a skewed
# graph, every edge introduced by worker 0.
PATH_NUMBERS = rmat_edges(SCALE, 20_000, seed=3)
PATH_SRC, PATH_DST = (ends * 1024 - 2**62 for ends in PATH_NUMBERS)


def path_ends() -> tuple[list[int], list[int]]:
    """A source of out-degree 2 to 4, and every vertex three hops from it."""
    src, dst = PATH_NUMBERS
    degree = np.bincount(src, minlength=1 << SCALE)
    starts = [int(v) for v in np.flatnonzero((degree >= 2) & (degree <= 4))[:1]]
    out = {}
    for u, v in zip(src.tolist(), dst.tolist()):
        out.setdefault(u, set()).add(v)
    layer = {starts[0]}
    seen = set(layer)
    for _ in range(3):
        layer = {v for u in layer for v in out.get(u, ())} - seen
        seen |= layer
    return ([v * 1024 - 2**62 for v in starts], [v * 1024 - 2**62 for v in sorted(layer)])


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_bfs_paths_walk_back_over_each_workers_share(workers):
    starts, ends = path_ends()
    expected = paths_reference.bfs_paths(list(zip(PATH_SRC.tolist(), PATH_DST.tolist())),
                                   starts, ends, True)
    assert len(expected) > 20 and len(expected[0]) == 4

    def build(edges):
        pick = np.array(starts), np.array(ends)
        return bfs_paths(edges,
                         edges.map_batch(lambda b: timely.Batch(node=pick[0])).distinct("node"),
                         edges.map_batch(lambda b: timely.Batch(node=pick[1])).distinct("node"))

    rows, logs = logged_graph_run(build, PATH_SRC, PATH_DST, workers)
    assert rows == expected                  # one sorted Batch, on one worker
    received = rows_received(logs)
    # The walk holds the arcs out of each worker's own vertices, no more.
    shares = [received.get((k, "WalkBack"), 0) for k in range(workers)]
    assert sum(shares) >= len(PATH_SRC)
    assert max(shares) <= 1.25 * sum(shares) / workers
