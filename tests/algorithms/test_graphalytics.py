"""The LDBC Graphalytics algorithms against plain references written from
the definitions (``tests/reference/graphalytics.py``): random small graphs
with sparse 64-bit ids (negative ones too), isolated vertices, self-loops
and duplicate edges, at 1, 2 and 3 workers, whose answers must also agree
with each other exactly; and small cases checked by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.algorithms.helpers import run_graph
from tests.progress.strategies import capped
from tests.reference import graphalytics as reference
from timely.algorithms import (
    degrees,
    label_propagation,
    local_clustering_coefficient,
    pagerank,
    sssp,
    triangle_count,
    triangles,
)


def run(algorithms: dict, edges, nodes=(), weights=None, workers: int = 1) -> dict:
    """Per name of ``algorithms`` (``build(edges, node_stream)`` making a
    stream), its rows over all workers, sorted."""
    merged = run_graph(algorithms, edges, [nodes], weights, workers)
    return {name: sorted(rows) for name, rows in merged.items()}


def as_dict(rows) -> dict:
    """``{node: value}`` (or a tuple of values), checking one row per node."""
    result = {row[0]: row[1] if len(row) == 2 else tuple(row[1:]) for row in rows}
    assert len(result) == len(rows), "a vertex has more than one row"
    return result


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for v, want in expected.items():
        assert math.isclose(got[v], want, rel_tol=1e-9, abs_tol=0.0), (v, got[v], want)


# -- random graphs ------------------------------------------------------------------

IDS = st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3)
WEIGHTS = st.sampled_from([0.0, 1.0, 2.5]) | st.floats(0, 1e3, allow_nan=False)


@st.composite
def graphs(draw):
    """``(edges, weights, nodes)``: a few distinct ids; edges between them
    with repeats (duplicates, self-loops); some ids only as nodes."""
    ids = draw(st.lists(IDS, min_size=1, max_size=9, unique=True))
    pick = st.sampled_from(ids)
    edges = draw(st.lists(st.tuples(pick, pick), max_size=24))
    if edges and draw(st.booleans()):
        edges += draw(st.lists(st.sampled_from(edges), max_size=4))   # duplicates
    weights = draw(st.lists(WEIGHTS, min_size=len(edges), max_size=len(edges)))
    nodes = draw(st.lists(pick, max_size=4))
    return edges, weights, nodes


def every_algorithm(iterations: int, directed: bool, source: int) -> dict:
    return {
        "pagerank": lambda e, n: pagerank(e, iterations, nodes=n, definition="normalized"),
        "cdlp": lambda e, n: label_propagation(e, n, iterations, directed=directed),
        "lcc": lambda e, n: local_clustering_coefficient(e, n, directed=directed),
        "triangles": lambda e, n: triangles(e, n),
        "triangle_count": lambda e, n: triangle_count(e),
        "degrees": lambda e, n: degrees(e, n),
        "sssp": lambda e, n: sssp(e, source, n, directed=directed),
    }


def check_against_reference(got: dict, edges, weights, nodes, iterations: int,
                            directed: bool, source: int) -> None:
    if reference.vertices(edges, nodes):
        assert_close(as_dict(got["pagerank"]),
                     reference.pagerank_normalized(edges, nodes, iterations))
    else:
        assert got["pagerank"] == []
    assert as_dict(got["cdlp"]) == reference.label_propagation(edges, nodes, iterations,
                                                               directed)
    assert_close(as_dict(got["lcc"]),
                 reference.local_clustering_coefficient(edges, nodes, directed))
    assert as_dict(got["triangles"]) == reference.triangles(edges, nodes)
    expected_total = [(reference.triangle_count(edges),)] if edges else []
    assert got["triangle_count"] == expected_total
    assert as_dict(got["degrees"]) == reference.degrees(edges, nodes)
    assert_close(as_dict(got["sssp"]),
                 reference.sssp(edges, weights, nodes, source, directed))


@settings(max_examples=capped(30), deadline=None)
@given(graphs(), st.integers(0, 6), st.booleans(), st.data())
def test_random_graphs_match_the_definitions_at_any_worker_count(graph, iterations, directed,
                                                                 data):
    edges, weights, nodes = graph
    candidates = sorted(reference.vertices(edges, nodes)) + [12345]
    source = data.draw(st.sampled_from(candidates), label="source")
    algorithms = every_algorithm(iterations, directed, source)
    answers = [run(algorithms, edges, nodes, weights, workers) for workers in (1, 2, 3)]
    check_against_reference(answers[0], edges, weights, nodes, iterations, directed, source)
    # Bit for bit the same whatever the worker count.
    assert answers[1] == answers[0]
    assert answers[2] == answers[0]


# -- small cases checked by hand ------------------------------------------------------


def test_pagerank_of_one_edge(workers):
    got = run({"pr": lambda e, n: pagerank(e, 1, nodes=n, definition="normalized")}, [(1, 2)],
              workers=workers)
    ranks = as_dict(got["pr"])
    assert math.isclose(ranks[1], 0.2875, rel_tol=1e-12)
    assert math.isclose(ranks[2], 0.7125, rel_tol=1e-12)


def test_pagerank_counts_isolated_vertices_and_sums_to_one(workers):
    got = run({"pr": lambda e, n: pagerank(e, 0, nodes=n, definition="normalized"),
               "pr5": lambda e, n: pagerank(e, 5, nodes=n, damping=0.5,
                                            definition="normalized")},
              [(1, 2), (2, 1), (3, 1)], nodes=[7, 8], workers=workers)
    assert as_dict(got["pr"]) == {1: 0.2, 2: 0.2, 3: 0.2, 7: 0.2, 8: 0.2}
    ranks = as_dict(got["pr5"])
    assert math.isclose(sum(ranks.values()), 1.0, rel_tol=1e-12)
    assert_close(ranks, reference.pagerank_normalized([(1, 2), (2, 1), (3, 1)], [7, 8], 5, 0.5))


def test_clustering_of_a_triangle_and_a_star(workers):
    triangle = [(1, 2), (2, 3), (3, 1)]
    star = [(10, 11), (10, 12), (13, 10)]
    got = run({"undirected": lambda e, n: local_clustering_coefficient(e, n, directed=False),
               "directed": lambda e, n: local_clustering_coefficient(e, n, directed=True)},
              triangle + star, workers=workers)
    undirected, directed = as_dict(got["undirected"]), as_dict(got["directed"])
    assert [undirected[v] for v in (1, 2, 3)] == [1.0, 1.0, 1.0]
    # Directed, each vertex's two neighbours are linked one way of two.
    assert [directed[v] for v in (1, 2, 3)] == [0.5, 0.5, 0.5]
    assert undirected[10] == directed[10] == 0.0
    assert [undirected[v] for v in (11, 12, 13)] == [0.0, 0.0, 0.0]


def test_clustering_of_a_both_ways_triangle_and_duplicates(workers):
    edges = [(1, 2), (2, 1), (2, 3), (3, 2), (3, 1), (1, 3), (1, 3), (2, 2), (3, 4)]
    got = run({"lcc": lambda e, n: local_clustering_coefficient(e, n, directed=True),
               "triangles": lambda e, n: triangles(e, n),
               "total": lambda e, n: triangle_count(e)}, edges, nodes=[9], workers=workers)
    lcc = as_dict(got["lcc"])
    assert lcc[1] == lcc[2] == 1.0
    assert lcc[3] == 2 / 6        # N(3) = {1, 2, 4}: 1 -> 2 and 2 -> 1 of six ordered pairs
    assert lcc[4] == lcc[9] == 0.0
    assert as_dict(got["triangles"]) == {1: 1, 2: 1, 3: 1, 4: 0, 9: 0}
    assert got["total"] == [(1,)]


def test_triangles_of_a_complete_graph(workers):
    k4 = [(a, b) for a in range(4) for b in range(4) if a < b]
    got = run({"t": lambda e, n: triangles(e, n), "total": lambda e, n: triangle_count(e)},
              k4, workers=workers)
    assert as_dict(got["t"]) == {0: 3, 1: 3, 2: 3, 3: 3}
    assert got["total"] == [(4,)]


def test_label_propagation_by_hand(workers):
    # Two triangles joined by an edge, and a lone vertex.
    edges = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 6), (6, 4)]
    got = run({"one": lambda e, n: label_propagation(e, n, 1, directed=False),
               "zero": lambda e, n: label_propagation(e, n, 0, directed=False),
               "directed": lambda e, n: label_propagation(e, n, 1, directed=True)},
              edges, nodes=[-5], workers=workers)
    assert as_dict(got["zero"]) == {v: v for v in (1, 2, 3, 4, 5, 6, -5)}
    # 1 hears 2, 3 -> 2; 2 hears 1, 3 -> 1; 3 hears 1, 2, 4 -> 1; 4 hears 3, 5, 6 -> 3; ...
    assert as_dict(got["one"]) == {1: 2, 2: 1, 3: 1, 4: 3, 5: 4, 6: 4, -5: -5}
    assert as_dict(got["directed"]) == reference.label_propagation(edges, [-5], 1, True)


def test_label_propagation_counts_both_directions(workers):
    # 1 hears 2 twice (1 -> 2 and 2 -> 1) and 3, 4 once each: 2 wins over 3.
    edges = [(1, 2), (2, 1), (3, 1), (1, 4), (1, 4)]
    got = run({"l": lambda e, n: label_propagation(e, n, 1)}, edges, workers=workers)
    assert as_dict(got["l"])[1] == 2


def test_degrees_by_hand(workers):
    edges = [(1, 2), (1, 2), (2, 2), (-1, 1)]
    got = run({"d": lambda e, n: degrees(e, n)}, edges, nodes=[2**63 - 1], workers=workers)
    assert as_dict(got["d"]) == {1: (1, 2, 3), 2: (3, 1, 4), -1: (0, 1, 1),
                                 2**63 - 1: (0, 0, 0)}


def test_sssp_by_hand(workers):
    edges = [(0, 1), (0, 2), (2, 1), (1, 3), (1, 3), (4, 0)]
    weights = [5.0, 1.0, 1.5, 2.0, 0.5, 1.0]
    got = run({"d": lambda e, n: sssp(e, 0, n),
               "u": lambda e, n: sssp(e, 0, n, directed=False),
               "none": lambda e, n: sssp(e, 99, n)},
              edges, nodes=[-2**63], weights=weights, workers=workers)
    assert as_dict(got["d"]) == {0: 0.0, 1: 2.5, 2: 1.0, 3: 3.0, 4: math.inf,
                                 -2**63: math.inf}
    assert as_dict(got["u"])[4] == 1.0
    assert all(d == math.inf for d in as_dict(got["none"]).values())


def test_empty_graph(workers):
    got = run(every_algorithm(3, True, 0), [], workers=workers)
    assert all(rows == [] for rows in got.values())


def test_refusals():
    with pytest.raises(timely.ColumnarError):
        run({"s": lambda e, n: sssp(e, 0, n)}, [(0, 1)], weights=[-1.0])
    with pytest.raises(timely.ColumnarError):
        run({"s": lambda e, n: sssp(e, 0, n)}, [(0, 1)], weights=[math.nan])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n: pagerank(e, -1, nodes=n, definition="normalized")}, [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"p": lambda e, n: pagerank(e, 3, nodes=n, damping=1.5, definition="normalized")},
            [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"l": lambda e, n: label_propagation(e, n, -2)}, [(0, 1)])
    with pytest.raises(timely.ColumnarError):
        run({"s": lambda e, n: sssp(e, 2**63, n)}, [(0, 1)])
