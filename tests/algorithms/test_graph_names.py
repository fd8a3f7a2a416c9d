"""The algorithms under their GraphFrames names: ``pagerank`` with both
definitions, ``personalized_pagerank``, ``shortest_paths`` to landmarks,
``sssp`` and ``bfs_paths``, against plain references written from the
definitions (``tests/reference/paths.py``, ``tests/reference/graphalytics.py``):
random small graphs with sparse 64-bit ids (negative ones, ``2**63 - 1``),
isolated vertices, self-loops and duplicate edges, at 1, 2 and 3 workers,
whose answers must agree with each other exactly; and small cases checked
by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.algorithms.helpers import run_graph
from tests.progress.strategies import capped
from tests.reference import graphalytics as graphalytics_reference
from tests.reference import paths as reference
from timely.algorithms import (
    bfs_paths,
    pagerank,
    personalized_pagerank,
    shortest_paths,
    sssp,
)


def run(algorithms: dict, edges, nodes=(), marks=(), targets=(), workers: int = 1) -> dict:
    """Per name of ``algorithms`` (``build(edges, nodes, marks, targets)``
    making a stream from four input streams, the last three of Batches with
    a column ``node``), its rows over all workers in the order of the
    workers and of arrival."""
    return run_graph(algorithms, edges, [nodes, marks, targets], None, workers)


def as_dict(rows) -> dict:
    """``{key: value}`` of rows whose last column is the value, checking one
    row per key."""
    result = {row[0] if len(row) == 2 else tuple(row[:-1]): row[-1] for row in rows}
    assert len(result) == len(rows), "a key has more than one row"
    return result


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for v, want in expected.items():
        assert math.isclose(got[v], want, rel_tol=1e-9, abs_tol=1e-15), (v, got[v], want)


# -- random graphs ------------------------------------------------------------------

IDS = st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3) | st.just(2**63 - 1)


@st.composite
def graphs(draw):
    """``(edges, nodes, marks, targets)``: a few distinct ids; edges between
    them with repeats (duplicates, self-loops), often along a chain through
    some of them (for long paths); some ids only as nodes; two sets of
    named vertices, which may name ids of no edge or node."""
    ids = draw(st.lists(IDS, min_size=1, max_size=8, unique=True))
    pick = st.sampled_from(ids)
    edges = draw(st.lists(st.tuples(pick, pick), max_size=12))
    chain = draw(st.permutations(ids))[:draw(st.integers(0, 8))]
    edges += list(zip(chain, chain[1:]))
    if edges and draw(st.booleans()):
        edges += draw(st.lists(st.sampled_from(edges), max_size=3))   # duplicates
    nodes = draw(st.lists(pick, max_size=3))
    named = pick | st.just(12345)
    marks = draw(st.lists(named, max_size=3)) + chain[:1]
    targets = draw(st.lists(named, max_size=3)) + chain[-1:]
    if draw(st.booleans()):
        targets = [v for v in targets if v not in marks]
    return edges, nodes, marks, targets


def every_algorithm(iterations: int, directed: bool, max_length: int | None) -> dict:
    return {
        "pagerank": lambda e, n, m, t: pagerank(e, iterations, nodes=n, definition="normalized"),
        "personalized": lambda e, n, m, t: personalized_pagerank(e, m, n, iterations),
        "landmarks": lambda e, n, m, t: shortest_paths(e, m, n, directed=directed),
        "paths": lambda e, n, m, t: bfs_paths(e, m, t, directed=directed,
                                              max_length=max_length),
    }


@settings(max_examples=capped(40), deadline=None)
@given(graphs(), st.integers(0, 5), st.booleans(), st.none() | st.integers(0, 3))
def test_random_graphs_match_the_definitions_at_any_worker_count(graph, iterations, directed,
                                                                 max_length):
    edges, nodes, marks, targets = graph
    algorithms = every_algorithm(iterations, directed, max_length)
    answers = [run(algorithms, edges, nodes, marks, targets, workers) for workers in (1, 2, 3)]
    got = {name: sorted(rows) for name, rows in answers[0].items()}
    if graphalytics_reference.vertices(edges, nodes):
        assert_close(as_dict(got["pagerank"]),
                     graphalytics_reference.pagerank_normalized(edges, nodes, iterations))
    else:
        assert got["pagerank"] == []
    assert_close(as_dict(got["personalized"]),
                 reference.personalized_pagerank(edges, marks, nodes, iterations))
    assert as_dict(got["landmarks"]) == reference.shortest_paths(edges, marks, nodes, directed)
    # One sorted Batch on one worker: the rows arrive in their documented order.
    assert answers[0]["paths"] == reference.bfs_paths(edges, marks, targets, directed,
                                                      max_length)
    for other in answers[1:]:
        assert {name: sorted(rows) for name, rows in other.items()} == got
        assert other["paths"] == answers[0]["paths"]


# -- small cases checked by hand ------------------------------------------------------


def test_personalized_pagerank_by_hand(workers):
    got = run({"one": lambda e, n, m, t: personalized_pagerank(e, m, n, 1),
               "two": lambda e, n, m, t: personalized_pagerank(e, m, n, 2),
               "zero": lambda e, n, m, t: personalized_pagerank(e, m, n, 0)},
              [(1, 2)], nodes=[7], marks=[1, 1], workers=workers)
    assert as_dict(got["zero"]) == {1: 1.0, 2: 0.0, 7: 0.0}
    one = as_dict(got["one"])
    assert math.isclose(one[1], 0.15) and math.isclose(one[2], 0.85) and one[7] == 0.0
    # The dangling rank of 2 (0.85) jumps back to the source.
    two = as_dict(got["two"])
    assert math.isclose(two[1], 0.15 + 0.85 * 0.85)
    assert math.isclose(two[2], 0.85 * 0.15)
    assert two[7] == 0.0


def test_personalized_pagerank_counts_sources_as_vertices(workers):
    got = run({"p": lambda e, n, m, t: personalized_pagerank(e, m, n, 3)},
              [(1, 2), (2, 1)], marks=[-2**63, 2], workers=workers)
    ranks = as_dict(got["p"])
    assert set(ranks) == {1, 2, -2**63}
    assert math.isclose(sum(ranks.values()), 1.0, rel_tol=1e-12)
    assert_close(ranks, reference.personalized_pagerank([(1, 2), (2, 1)], [-2**63, 2], [], 3))


def test_personalized_pagerank_without_sources_is_zero(workers):
    got = run({"p": lambda e, n, m, t: personalized_pagerank(e, m, n, 4)},
              [(1, 2), (2, 3)], workers=workers)
    assert as_dict(got["p"]) == {1: 0.0, 2: 0.0, 3: 0.0}


def test_every_vertex_a_source_is_the_normalized_pagerank(workers):
    edges = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 4), (1, 2)]
    everyone = [1, 2, 3, 4, 9]
    got = run({"personalized": lambda e, n, m, t: personalized_pagerank(e, m, n, 6),
               "normalized": lambda e, n, m, t: pagerank(e, 6, nodes=n,
                                                         definition="normalized")},
              edges, nodes=[9], marks=everyone, workers=workers)
    assert sorted(got["personalized"]) == sorted(got["normalized"])


def test_pagerank_definitions(workers):
    got = run({"graphx": lambda e, n, m, t: pagerank(e, 1),
               "normalized": lambda e, n, m, t: pagerank(e, 1, definition="normalized")},
              [(1, 2)], workers=workers)
    graphx = as_dict(got["graphx"])
    assert math.isclose(graphx[1], 0.15) and math.isclose(graphx[2], 1.0)
    normalized = as_dict(got["normalized"])
    assert math.isclose(normalized[1], 0.2875) and math.isclose(normalized[2], 0.7125)


def test_shortest_paths_to_landmarks_by_hand(workers):
    edges = [(1, 2), (2, 3), (4, 3), (3, 3), (1, 2)]
    got = run({"d": lambda e, n, m, t: shortest_paths(e, m, n),
               "u": lambda e, n, m, t: shortest_paths(e, m, n, directed=False)},
              edges, nodes=[7], marks=[3, 1, 99, 3], workers=workers)
    assert as_dict(got["d"]) == {(1, 3): 2, (2, 3): 1, (3, 3): 0, (4, 3): 1, (1, 1): 0}
    assert as_dict(got["u"]) == {(1, 3): 2, (2, 3): 1, (3, 3): 0, (4, 3): 1,
                                 (1, 1): 0, (2, 1): 1, (3, 1): 2, (4, 1): 3}


def test_an_isolated_landmark_reaches_itself(workers):
    got = run({"d": lambda e, n, m, t: shortest_paths(e, m, n)},
              [(1, 2)], nodes=[2**63 - 1], marks=[2**63 - 1], workers=workers)
    assert got["d"] == [(2**63 - 1, 2**63 - 1, 0)]


def test_sssp_is_the_weighted_single_source_distance(workers):
    got = run({"s": lambda e, n, m, t: sssp(e, 1, n)}, [(1, 2), (2, 3)], nodes=[5],
              workers=workers)
    assert as_dict(got["s"]) == {1: 0.0, 2: 1.0, 3: 2.0, 5: math.inf}


DIAMOND = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (2, 4), (4, 4)]


def test_bfs_paths_by_hand(workers):
    cases = {
        "diamond": ([1], [4], {}),
        "both": ([1, 4], [4, 5], {}),
        "two_sources": ([3, 2], [5], {}),
        "too_long": ([1], [4], {"max_length": 1}),
        "long_enough": ([1], [4], {"max_length": 2}),
        "backwards": ([5], [1], {}),
        "undirected": ([5], [1], {"directed": False}),
        "missing": ([1], [99], {}),
    }
    for name, (starts, ends, options) in cases.items():
        got = run({"p": lambda e, n, m, t: bfs_paths(e, m, t, **options)}, DIAMOND,
                  marks=starts, targets=ends, workers=workers)
        expected = {
            "diamond": [(1, 2, 4), (1, 3, 4)],
            "both": [(4,)],
            "two_sources": [(2, 4, 5), (3, 4, 5)],
            "too_long": [],
            "long_enough": [(1, 2, 4), (1, 3, 4)],
            "backwards": [],
            "undirected": [(5, 4, 2, 1), (5, 4, 3, 1)],
            "missing": [],
        }[name]
        assert got["p"] == expected, name


def test_bfs_paths_with_extreme_ids(workers):
    low, high = -2**63, 2**63 - 1
    edges = [(low, 0), (0, high), (low, high), (high, 5)]
    got = run({"p": lambda e, n, m, t: bfs_paths(e, m, t)}, edges, marks=[low], targets=[5],
              workers=workers)
    assert got["p"] == [(low, high, 5)]


def test_empty_graph(workers):
    got = run(every_algorithm(3, True, None), [], workers=workers)
    assert all(rows == [] for rows in got.values())


def test_refusals():
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n, m, t: pagerank(e, 3, definition="networkx")}, [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n, m, t: pagerank(e, 3, tolerance=0.1, definition="normalized")},
            [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n, m, t: pagerank(e, -1, definition="normalized")}, [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n, m, t: personalized_pagerank(e, m, n, 2, damping=1.5)}, [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n, m, t: bfs_paths(e, m, t, max_length=-1)}, [(0, 1)])
