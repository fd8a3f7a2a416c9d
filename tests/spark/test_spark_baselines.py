"""The PySpark baselines of :mod:`timely.examples.spark_baselines` against
plain references (scipy's csgraph and tests/reference/) on small random
graphs: sparse 64-bit ids (negative, -2**63 and 2**63-1), self-loops and
duplicate edges, several components and long paths; each with its small
sides broadcast and, on one graph, with every join shuffled
(``broadcast_rows=0``)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from tests.reference import graph as scipy_reference
from tests.reference import graphalytics as reference
from tests.reference.paths import shortest_paths
from timely.examples import spark_baselines as baselines

IDS = [-2**63, -2**62, -2**40, -1000, -7, -1, 0, 1, 5, 2**33, 2**62, 2**63 - 1]


def _graph(seed: int, nodes: int, edges: int, path: bool) -> list[tuple[int, int]]:
    """``edges`` random edges among ``nodes`` vertices with sparse ids, a
    self-loop and repeats; with ``path``, also a path through every vertex
    in a random order (many rounds of star contraction and of search)."""
    rng = random.Random(seed)
    ids = rng.sample(IDS, len(IDS)) + rng.sample(range(-2**50, 2**50), nodes - len(IDS))
    found = [(rng.choice(ids), rng.choice(ids)) for _ in range(edges)]
    if path:
        found += list(itertools.pairwise(ids))
    found += [(ids[3], ids[3]), found[0], found[1], (ids[-1], ids[-1])]  # loops, repeats
    return found


# (edges, broadcast_rows): a sparse graph of several components, a long path
# with chords and its joins shuffled, a denser graph with many triangles.
GRAPHS = {
    "sparse": (_graph(1, 40, 30, path=False), baselines.BROADCAST_ROWS),
    "path, shuffled": (_graph(2, 14, 6, path=True), 0),
    "dense": (_graph(3, 16, 150, path=False), baselines.BROADCAST_ROWS),
}


@pytest.fixture(scope="module")
def frames(spark):
    made = {name: (spark.createDataFrame(edges, "src long, dst long").cache(), edges, limit)
            for name, (edges, limit) in GRAPHS.items()}
    yield made
    for df, _, _ in made.values():
        df.unpersist()


def _numbered(edges):
    """The vertices in order and the edges as indices into them."""
    nodes = np.unique(np.array(edges, dtype=np.int64).ravel())
    index = np.searchsorted(nodes, np.array(edges, dtype=np.int64))
    return nodes, index[:, 0], index[:, 1]


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _recorder(into: list):
    """An ``on_round`` callback appending its arguments to ``into``."""
    return lambda *args: into.append(args)


def test_components_are_the_least_ids_of_scipys(frames):
    for name, (df, edges, limit) in frames.items():
        nodes, src, dst = _numbered(edges)
        changed = []
        got = baselines.large_small_star_components(
            df, checkpoint_every=2, broadcast_rows=limit,
            on_round=_recorder(changed))
        least = nodes[scipy_reference.component_labels(src, dst, len(nodes))]
        assert _rows(got) == list(zip(nodes.tolist(), least.tolist())), name
        assert [r for r, _ in changed] == list(range(1, len(changed) + 1)), name
        assert changed[-1][1] == 0 and all(n > 0 for _, n in changed[:-1]), name


def test_pagerank_is_graphxs(frames):
    for name, (df, edges, limit) in frames.items():
        nodes, src, dst = _numbered(edges)
        seen = []
        got = _rows(baselines.join_pagerank(df, 5, checkpoint_every=2, broadcast_rows=limit,
                                            on_round=seen.append))
        want = scipy_reference.pagerank(src, dst, len(nodes), 5)
        assert [v for v, _ in got] == nodes.tolist(), name
        assert np.allclose([r for _, r in got], want, rtol=1e-12, atol=0), name
        assert seen == [2, 4, 5], name


def test_pagerank_without_iterations_is_one_everywhere(frames):
    df, edges, _ = frames["sparse"]
    nodes, _, _ = _numbered(edges)
    assert _rows(baselines.join_pagerank(df, 0)) == [(v, 1.0) for v in nodes.tolist()]


def test_label_propagation_is_graphalytics_cdlp(frames):
    for name, (df, edges, limit) in frames.items():
        got = dict(_rows(baselines.label_propagation(df, 4, checkpoint_every=3,
                                                     broadcast_rows=limit)))
        assert got == reference.label_propagation(edges, [], 4, directed=True), name


def test_triangles_per_vertex(frames):
    for name, (df, edges, limit) in frames.items():
        got = dict(_rows(baselines.triangle_count(df, broadcast_rows=limit)))
        assert got == reference.triangles(edges, []), name
    assert sum(got.values()) > 30        # the dense graph has triangles to find


def test_landmark_distances_are_hops_along_the_edges(frames):
    for name, (df, edges, limit) in frames.items():
        nodes, _, _ = _numbered(edges)
        landmarks = [int(nodes[0]), int(nodes[len(nodes) // 2]), int(nodes[-1]), 12345]
        rounds = []
        got = baselines.landmark_distances(df, landmarks, checkpoint_every=2,
                                           broadcast_rows=limit,
                                           on_round=_recorder(rounds))
        want = shortest_paths(edges, landmarks, [], directed=True)
        assert {(v, mark): d for v, mark, d in _rows(got)} == want, name
        assert [n for _, n in rounds][-1] == 0 and len(rounds) == max(want.values()) + 1, name


def test_degrees_count_every_edge(frames):
    for name, (df, edges, _) in frames.items():
        got = {v: rest for v, *rest in _rows(baselines.degrees(df))}
        assert got == {v: list(d) for v, d in reference.degrees(edges, []).items()}, name


def test_answers_agree_by_rows_and_by_tolerance():
    import pandas as pd

    ours = pd.DataFrame({"id": [1, 2], "rank": [0.5, 0.25]})
    assert baselines.agree(ours, pd.DataFrame({"id": [1, 2], "rank": [0.5, 0.25 + 1e-12]}))
    assert not baselines.agree(ours, pd.DataFrame({"id": [1, 3], "rank": [0.5, 0.25]}))
    assert not baselines.agree(ours, pd.DataFrame({"id": [1, 2], "rank": [0.5, 0.26]}))
    assert not baselines.agree(ours, ours.rename(columns={"rank": "pagerank"}))
