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
from timely.algorithms import bfs, rmat_edges, sssp

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
