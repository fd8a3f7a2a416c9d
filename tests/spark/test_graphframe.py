"""``timely.spark.GraphFrame`` as a drop-in for GraphFrames' class: its name,
its constructor's errors, the graph operations (Spark's own DataFrame
operations, each checked against a plain-Python model of GraphFrames'
definition) and ``pageRank``'s GraphFrame with GraphX's final scaling.
Sparse 64-bit ids, an edge to a vertex that is not one, a self-loop, a
repeated edge and an isolated vertex in one small graph."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from timely.errors import GraphSchemaError, SparkSchemaError
from timely.spark import Graph, GraphFrame
from timely.spark.graphs import _check_components_options

A, B, C, D, E, STRANGER = 2**62 + 7, -(2**61) - 3, 12345678901, 5, -1, 2**63 - 1
VERTICES = [(A, "a", 30), (B, "b", 25), (C, "c", 41), (D, "d", 19), (E, "e", 60)]
EDGES = [(A, B, "friend"), (B, C, "follow"), (C, A, "friend"), (A, C, "follow"),
         (A, C, "follow"), (D, D, "self"), (C, STRANGER, "friend")]   # E is isolated


@pytest.fixture(scope="module")
def graph(spark):
    v = spark.createDataFrame(VERTICES, "id long, name string, age int")
    e = spark.createDataFrame(EDGES, "src long, dst long, relationship string")
    return GraphFrame(v, e, workers=2)


def rows(frame) -> list[tuple]:
    return sorted(map(tuple, frame.collect()))


def test_the_name_and_the_constructor(spark, graph):
    assert Graph is GraphFrame
    assert graph.nodes is graph.vertices
    assert (GraphFrame.ID, GraphFrame.SRC, GraphFrame.DST) == ("id", "src", "dst")
    v = spark.createDataFrame([(1,)], ["key"])
    e = spark.createDataFrame([(1, 2)], ["src", "to"])
    for vertices, edges, column in ((v, graph.edges, "id"), (graph.vertices, e, "dst")):
        with pytest.raises(ValueError, match=f"no column '{column}'") as raised:
            GraphFrame(vertices, edges)
        assert isinstance(raised.value, SparkSchemaError)
        assert isinstance(raised.value, GraphSchemaError)
    assert repr(graph).startswith("GraphFrame(v:DataFrame[id: bigint, name: string, age: int], "
                                  "e:DataFrame[src: bigint, dst: bigint, relationship: string]")


def test_triplets_are_the_edges_between_vertices_with_both_ends(graph):
    got = graph.triplets
    assert got.columns == ["src", "edge", "dst"]
    by_id = {v[0]: v for v in VERTICES}
    want = sorted((by_id[s], (s, d, r), by_id[d]) for s, d, r in EDGES
                  if s in by_id and d in by_id)
    assert sorted((tuple(r.src), tuple(r.edge), tuple(r.dst)) for r in got.collect()) == want


def test_filters_and_isolated_vertices(graph):
    kept = graph.filterVertices("age < 40")
    assert isinstance(kept, GraphFrame) and kept.workers == 2
    old = {v[0] for v in VERTICES if v[2] < 40}
    assert rows(kept.vertices) == sorted(v for v in VERTICES if v[0] in old)
    assert rows(kept.edges) == sorted(e for e in EDGES if e[0] in old and e[1] in old)

    from pyspark.sql import functions as F

    follows = graph.filterEdges(F.col("relationship") == "follow")
    assert rows(follows.vertices) == sorted(VERTICES)
    assert rows(follows.edges) == sorted(e for e in EDGES if e[2] == "follow")

    ends = {e[0] for e in EDGES} | {e[1] for e in EDGES}
    dropped = graph.dropIsolatedVertices()
    assert rows(dropped.vertices) == sorted(v for v in VERTICES if v[0] in ends)
    assert rows(dropped.edges) == sorted(EDGES)


def test_reversed_and_undirected_keep_the_edge_columns(graph):
    back = graph.as_reversed()
    assert back.edges.columns == ["src", "dst", "relationship"]
    assert rows(back.edges) == sorted((d, s, r) for s, d, r in EDGES)
    both = graph.as_undirected()
    assert rows(both.edges) == sorted([*EDGES, *((d, s, r) for s, d, r in EDGES)])
    assert rows(both.vertices) == sorted(VERTICES)


def test_validate_names_duplicates_and_unknown_ends(spark, graph):
    with pytest.raises(ValueError, match="Found 1 edges src/dst that are not in the vertices"):
        graph.validate()
    assert graph.validate(check_vertices=False) is None
    assert graph.filterVertices("true").filterEdges(f"dst != {STRANGER}").validate() is None
    twice = spark.createDataFrame([*VERTICES, VERTICES[0]], "id long, name string, age int")
    with pytest.raises(ValueError, match=r"Graph contains \(1\) duplicate vertices"):
        GraphFrame(twice, graph.edges).validate()


def test_typed_degrees_count_each_type(graph):
    types = sorted({e[2] for e in EDGES})
    for method, ends, name in (("type_out_degree", lambda e: [e[0]], "outDegrees"),
                               ("type_in_degree", lambda e: [e[1]], "inDegrees"),
                               ("type_degree", lambda e: [e[0], e[1]], "degrees")):
        counts: dict = {}
        for e in EDGES:
            for end in ends(e):
                counts.setdefault(end, Counter())[e[2]] += 1
        got = getattr(graph, method)("relationship")
        assert got.columns == ["id", name]
        assert {r.id: r[name].asDict() for r in got.collect()} == {
            v: {t: c[t] for t in types} for v, c in counts.items()}
        fixed = getattr(graph, method)("relationship", ["friend"])
        assert {r.id: r[name].asDict() for r in fixed.collect()} == {
            v: {"friend": c["friend"]} for v, c in counts.items()}


def test_cache_persist_and_unpersist_give_the_same_graph(graph):
    for made in (graph.cache(), graph.persist(), graph.unpersist(), graph.unpersist(True)):
        assert isinstance(made, GraphFrame) and made.workers == 2
        assert rows(made.vertices) == sorted(VERTICES)
        assert rows(made.edges) == sorted(EDGES)
    from pyspark import StorageLevel

    kept = graph.persist(StorageLevel.DISK_ONLY)
    assert kept.vertices.storageLevel == StorageLevel.DISK_ONLY
    kept.unpersist()


def test_pagerank_is_a_graphframe_scaled_as_graphx_scales_it(graph):
    ranked = graph.pageRank(resetProbability=0.15, maxIter=10)
    assert isinstance(ranked, GraphFrame)
    assert ranked.vertices.columns == ["id", "name", "age", "pagerank"]
    assert ranked.edges.columns == ["src", "dst", "relationship", "weight"]
    ids = [v[0] for v in VERTICES]
    inside = [(s, d) for s, d, _ in EDGES if s in ids and d in ids]
    out = Counter(s for s, _ in inside)
    rank = dict.fromkeys(ids, 1.0)
    for _ in range(10):
        sums = dict.fromkeys(ids, 0.0)
        for s, d in inside:
            sums[d] += rank[s] / out[s]
        rank = {v: 0.15 + 0.85 * sums[v] for v in ids}
    assert math.fsum(rank.values()) < len(ids) - 0.5     # E and D let rank go
    factor = len(ids) / math.fsum(rank.values())
    got = {r.id: r.pagerank for r in ranked.vertices.collect()}
    assert got == pytest.approx({v: r * factor for v, r in rank.items()}, rel=1e-12)
    assert math.fsum(got.values()) == pytest.approx(len(ids), rel=1e-12)
    assert rows(ranked.edges) == sorted((s, d, r, 1.0 / out[s]) for s, d, r in EDGES
                                        if s in ids and d in ids)


def test_graphframes_choices_of_how_to_compute_are_checked_and_change_nothing(graph):
    for algorithm in ("graphframes", "two_phase", "randomized_contraction", "graphx"):
        assert _check_components_options(algorithm, -1, -1, 1) is None
    got = graph.connectedComponents(algorithm="randomized_contraction", checkpointInterval=-1,
                                    broadcastThreshold=-1, use_local_checkpoints=True)
    assert {r.id: r.component for r in got.collect()} == {A: B, B: B, C: B, D: D, E: E}
    with pytest.raises(ValueError, match="not 'bfs'"):
        graph.connectedComponents(algorithm="bfs")
    with pytest.raises(TypeError, match="checkpointInterval is an int"):
        graph.connectedComponents(checkpointInterval="2")
    with pytest.raises(ValueError, match="max_iter is a positive count"):
        graph.connectedComponents(max_iter=0)
    labels = rows(graph.labelPropagation(3))
    assert rows(graph.labelPropagation(3, algorithm="graphframes", checkpoint_interval=5)) == labels
    with pytest.raises(ValueError, match="not 'fast'"):
        graph.labelPropagation(3, algorithm="fast")


def test_shortest_paths_along_the_edges_or_either_way(graph):
    directed = {r.id: dict(r.distances) for r in graph.shortestPaths([A, D]).collect()}
    assert directed == {A: {A: 0}, B: {A: 2}, C: {A: 1}, D: {D: 0}, E: {}}
    either = graph.shortestPaths([A, D], algorithm="graphframes", checkpoint_interval=1,
                                 is_directed=False)
    assert {r.id: dict(r.distances) for r in either.collect()} == {
        A: {A: 0}, B: {A: 1}, C: {A: 1}, D: {D: 0}, E: {}}
    with pytest.raises(ValueError, match="not 'bellman'"):
        graph.shortestPaths([A], algorithm="bellman")
