"""No worker holds more than its share of a graph: the records each worker's
operators take in, counted from the logged messages, with every edge
introduced on one worker."""

from __future__ import annotations

import numpy as np
import pytest

from tests.algorithms.helpers import logged_graph_run, rows_received
from tests.reference.scc import weak_components
from timely.algorithms import connected_components, rmat_edges

SRC, DST = rmat_edges(12, 20_000, seed=1)


def shares(received: dict, name: str, workers: int) -> list[int]:
    return [received.get((k, name), 0) for k in range(workers)]


@pytest.mark.parametrize("workers", [2, 3, 4, 5])
@pytest.mark.parametrize("method", ["union-find", "propagate"])
def test_components_spread_the_edges_and_the_stars(workers, method):
    rows, logs = logged_graph_run(lambda e: connected_components(e, method=method),
                                  SRC, DST, workers)
    expected = weak_components([], list(zip(SRC.tolist(), DST.tolist())))
    assert sorted(rows) == sorted(expected.items())
    received = rows_received(logs)
    local = "LocalComponents" if method == "union-find" else "LocalForest"
    edges = shares(received, local, workers)
    # Every edge reaches one worker's union-find, each worker about 1/W of them.
    assert sum(edges) == len(SRC)
    assert max(edges) <= 1.2 * len(SRC) / workers
    # The stars, to each node's owner, are spread alike: no worker takes in
    # more than its share, and all of them together not more than the edges' ends.
    stars = shares(received, "Owners", workers)
    assert 0 < sum(stars) <= 2 * len(SRC)
    assert max(stars) <= 1.2 * sum(stars) / workers + 100
    # The loop joins labels, not nodes: few rows, and the least label's
    # owner takes in at most a tree's fan-out per worker more than its share.
    links = shares(received, "MinLabel", workers)
    assert sum(links) <= len(SRC) / 4
    assert max(links) <= 1.3 * sum(links) / workers + 2 * 64 * workers


def test_spread_edges_of_a_hub_and_of_ids_sharing_their_low_bits():
    # A star around one hub, its ids all multiples of 1024: routed by the
    # ids alone every edge would go to one worker.
    hub = np.full(6000, 1 << 40, dtype=np.int64)
    leaves = np.arange(1, 6001, dtype=np.int64) * 1024
    rows, logs = logged_graph_run(connected_components, hub, leaves, 4)
    assert sorted(rows) == sorted([(1024 * i, 1024) for i in range(1, 6001)] + [(1 << 40, 1024)])
    received = rows_received(logs)
    edges = shares(received, "LocalComponents", 4)
    assert sum(edges) == 6000 and max(edges) <= 1.2 * 6000 / 4
    # The nodes' owners too are chosen by a hash of the id, not the id.
    stars = shares(received, "Owners", 4)
    assert max(stars) <= 1.2 * sum(stars) / 4 + 100
