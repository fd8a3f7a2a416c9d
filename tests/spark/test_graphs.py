"""``timely.spark.Graph``, GraphFrames' methods over a vertices and an edges
DataFrame, against plain references (tests/reference/graphalytics.py and
the oracles below) on small random graphs: sparse 64-bit ids (negative, up
to 2**63-1) and string ids, isolated vertices, self-loops, duplicate
edges, edges to vertices not in the vertices DataFrame; at 1 and 2
workers (a local session has two task slots)."""

from __future__ import annotations

import math
import random

import pytest

from tests.reference import graphalytics as reference
from tests.reference.scc import tarjan, weak_components
from timely.errors import SparkSchemaError
from timely.spark import Graph


def random_graph(seed, ids):
    rng = random.Random(seed)
    nodes = rng.sample(ids, 12)
    edges = [(rng.choice(nodes), rng.choice(nodes)) for _ in range(18)]
    edges += [(nodes[0], nodes[0]), edges[0], (nodes[1], rng.choice(ids))]   # loop, dup, stranger
    return nodes, edges


INT_IDS = [-2**63 + 1, -5, 0, 3, 17, 2**40, 2**63 - 1] + list(range(100, 130))
TEXT_IDS = ["a", "b", "zé", "日本", "", "x" * 40] + [f"v{i}" for i in range(30)]


def frames(spark, nodes, edges, text):
    kind = "string" if text else "long"
    vertices = spark.createDataFrame([(v, f"name {i}") for i, v in enumerate(nodes)],
                                     f"id {kind}, name string")
    edge_frame = spark.createDataFrame(edges, f"src {kind}, dst {kind}")
    return vertices, edge_frame


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("text", [False, True], ids=["int64 ids", "string ids"])
def test_graph_methods_follow_the_references(spark, workers, text):
    nodes, edges = random_graph(7 + workers, TEXT_IDS if text else INT_IDS)
    vertices, edge_frame = frames(spark, nodes, edges, text)
    g = Graph(vertices, edge_frame, workers=workers)
    inside = [(s, d) for s, d in edges if s in nodes and d in nodes]
    names = {v: f"name {i}" for i, v in enumerate(nodes)}

    got = {r.id: (r.name, r.component) for r in g.connectedComponents().collect()}
    named = {r.id: (r.name, r.component)
             for r in g.connectedComponents(useLabelsAsComponents=True).collect()}
    want = weak_components(nodes, inside)
    if text:
        # a long per component by default; with useLabelsAsComponents, the
        # id of a vertex in it (the least by number)
        assert {v: got[v][0] for v in nodes} == names == {v: named[v][0] for v in nodes}
        groups = {}
        for v in nodes:
            groups.setdefault(want[v], set()).add(v)
        assert len({got[next(iter(m))][1] for m in groups.values()}) == len(groups)
        for members in groups.values():
            assert len({got[v][1] for v in members}) == 1
            assert type(got[next(iter(members))][1]) is int
            assert len({named[v][1] for v in members}) == 1
            assert named[next(iter(members))][1] in members
    else:
        assert got == named == {v: (names[v], want[v]) for v in nodes}

    if not text:
        labels = {r.id: r.label for r in g.labelPropagation(3).collect()}
        assert labels == reference.label_propagation(inside, nodes, 3, directed=True)
        counts = {r.id: r["count"] for r in g.triangleCount().collect()}
        assert counts == reference.triangles(inside, nodes)
    strong = {r.id: r.component for r in g.stronglyConnectedComponents().collect()}
    want_strong = tarjan(nodes, inside)
    if text:                  # the same groups, each named by one of its vertices
        groups: dict = {}
        for v in nodes:
            groups.setdefault(want_strong[v], set()).add(v)
        assert sorted(map(sorted, groups.values())) == sorted(
            sorted(v for v in nodes if strong[v] == name) for name in set(strong.values()))
        assert all(strong[v] in groups[want_strong[v]] for v in nodes)
    else:
        assert strong == want_strong
    degree = reference.degrees(inside, nodes)
    assert {r.id: r.degree for r in g.degrees.collect()} == {
        v: d[2] for v, d in degree.items() if d[2] > 0}
    assert {r.id: r.inDegree for r in g.inDegrees.collect()} == {
        v: d[0] for v, d in degree.items() if d[0] > 0}
    assert {r.id: r.outDegree for r in g.outDegrees.collect()} == {
        v: d[1] for v, d in degree.items() if d[1] > 0}


def test_pagerank_is_graphx_s(spark):
    vertices, edges = frames(spark, [1, 2, 3], [(1, 2), (2, 3), (3, 1), (1, 3)], False)
    ranked = Graph(vertices, edges, workers=2).pageRank(resetProbability=0.15, maxIter=30)
    ranks = {r.id: r.pagerank for r in ranked.vertices.collect()}
    # r(v) = 0.15 + 0.85 * sum(r(u) / outdeg(u)), iterated from 1, then
    # scaled to sum to the vertex count
    r = {1: 1.0, 2: 1.0, 3: 1.0}
    for _ in range(30):
        r = {1: 0.15 + 0.85 * r[3], 2: 0.15 + 0.85 * r[1] / 2,
             3: 0.15 + 0.85 * (r[1] / 2 + r[2])}
    assert ranks == pytest.approx(scaled(r), rel=1e-12)
    assert sorted(map(tuple, ranked.edges.collect())) == [(1, 2, 0.5), (1, 3, 0.5), (2, 3, 1.0),
                                                          (3, 1, 1.0)]


def test_the_example_and_misuse(spark):
    g = Graph(spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], ["id", "name"]),
              spark.createDataFrame([(1, 2)], ["src", "dst"]))
    assert sorted(map(tuple, g.connectedComponents().collect())) == [
        (1, "a", 1), (2, "b", 1), (3, "c", 3)]
    with pytest.raises(SparkSchemaError, match="no column 'id'"):
        Graph(spark.createDataFrame([(1,)], ["key"]), spark.createDataFrame([(1, 2)],
                                                                         ["src", "dst"]))
    with pytest.raises(SparkSchemaError, match="exactly one of maxIter and tol"):
        g.pageRank(maxIter=3, tol=0.1)


def hops_to(nodes, edges, landmark):
    """Least edges from each vertex to ``landmark`` along the edges."""
    distance = {landmark: 0}
    frontier = [landmark]
    while frontier:
        following = []
        for v in frontier:
            for s, d in edges:
                if d == v and s not in distance:
                    distance[s] = distance[v] + 1
                    following.append(s)
        frontier = following
    return distance


@pytest.mark.parametrize("text", [False, True], ids=["int64 ids", "string ids"])
def test_shortest_paths_to_landmarks(spark, text):
    nodes, edges = random_graph(3, TEXT_IDS if text else INT_IDS)
    vertices, edge_frame = frames(spark, nodes, edges, text)
    inside = [(s, d) for s, d in edges if s in nodes and d in nodes]
    landmarks = [nodes[0], nodes[5], "not a vertex" if text else 2**62]
    got = {r.id: dict(r.distances) for r in Graph(vertices, edge_frame, workers=2)
           .shortestPaths(landmarks).collect()}
    want = {v: {} for v in nodes}
    for mark in landmarks[:2]:
        for v, hops in hops_to(nodes, inside, mark).items():
            want[v][mark] = hops
    assert got == want


def test_bfs_gives_every_shortest_path_with_its_vertices_and_edges(spark):
    # 1 -> 2 -> 4, 1 -> 3 -> 4 (twice: parallel edges), 4 -> 5; 6 alone.
    vertices = spark.createDataFrame([(v, f"n{v}") for v in (1, 2, 3, 4, 5, 6)],
                                     "id long, name string")
    edges = spark.createDataFrame(
        [(1, 2, "a"), (2, 4, "b"), (1, 3, "c"), (3, 4, "d"), (3, 4, "e"), (4, 5, "f")],
        "src long, dst long, kind string")
    g = Graph(vertices, edges, workers=2)
    paths = g.bfs("id = 1", "id = 4")
    assert paths.columns == ["from", "e0", "v1", "e1", "to"]
    got = sorted((r["from"].id, r.e0.kind, r.v1.name, r.e1.kind, r.to.name)
                 for r in paths.collect())
    assert got == [(1, "a", "n2", "b", "n4"), (1, "c", "n3", "d", "n4"),
                   (1, "c", "n3", "e", "n4")]
    filtered = g.bfs("id = 1", "name = 'n5'", edgeFilter="kind != 'b'")
    assert sorted((r.v1.id, r.e1.kind, r.v2.id) for r in filtered.collect()) == [
        (3, "d", 4), (3, "e", 4)]
    assert g.bfs("id = 1", "id = 5", maxPathLength=2).count() == 0
    assert g.bfs("id = 6", "id = 1").columns == ["from", "to"]
    assert [(r["from"].id, r.to.id) for r in g.bfs("id = 6", "id = 6").collect()] == [(6, 6)]


def test_aggregate_messages_sums_what_the_edges_send(spark):
    from pyspark.sql import functions as F

    from timely.spark import AM

    vertices = spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "id long, age long")
    edges = spark.createDataFrame([(1, 2, 1), (1, 3, 2), (2, 3, 5)], "src long, dst long, w long")
    g = Graph(vertices, edges)
    got = g.aggregateMessages(F.sum(AM.msg).alias("total"), F.count(AM.msg).alias("n"),
                              sendToSrc=AM.dst["age"] * AM.edge["w"], sendToDst=AM.src["age"])
    assert sorted(map(tuple, got.collect())) == [(1, 20 + 60, 2), (2, 10 + 150, 2),
                                                 (3, 10 + 20, 2)]
    with pytest.raises(SparkSchemaError, match="sendToSrc, sendToDst"):
        g.aggregateMessages(F.sum(AM.msg))


def test_a_graph_in_more_partitions_than_slots_runs_on_the_session_slots(spark):
    """Vertices in more partitions than the session has task slots (as a
    large file read in many splits): ``Graph`` with no ``workers`` runs on
    every slot instead of asking for one worker per partition."""
    nodes, edges = random_graph(11, INT_IDS)
    vertices, edge_frame = frames(spark, nodes, edges, False)
    vertices = vertices.repartition(6)
    assert vertices.rdd.getNumPartitions() == 6
    inside = [(s, d) for s, d in edges if s in nodes and d in nodes]
    got = {r.id: r.component for r in Graph(vertices, edge_frame).connectedComponents().collect()}
    assert got == weak_components(nodes, inside)


def scaled(ranks: dict) -> dict:
    """GraphX's last step: the ranks times their count over their sum."""
    factor = len(ranks) / math.fsum(ranks.values())
    return {v: r * factor for v, r in ranks.items()}


def graphx_ranks(nodes, edges, iterations: int, reset: float = 0.15) -> dict:
    """GraphX's unnormalized PageRank, iterated from 1."""
    out = {v: 0 for v in nodes}
    for s, _ in edges:
        out[s] += 1
    rank = {v: 1.0 for v in nodes}
    for _ in range(iterations):
        sums = {v: 0.0 for v in nodes}
        for s, d in edges:
            sums[d] += rank[s] / out[s]
        rank = {v: reset + (1 - reset) * sums[v] for v in nodes}
    return rank


@pytest.mark.parametrize("workers", [1, 2])
def test_dangling_edges_are_left_out_in_the_dataflow(spark, workers):
    """Integer ids reach the stage as they are and the dataflow drops the
    edges with an end that is not a vertex: many such edges, at either end
    or both, sparse 64-bit ids, the vertices and the edges each in one
    partition (all the input of a stage on one task)."""
    rng = random.Random(29 + workers)
    ids = list(dict.fromkeys([rng.getrandbits(64) - 2**63 for _ in range(60)]
                             + [-2**63, 2**63 - 1, 0, 1 << 40, 2 << 40]))
    rng.shuffle(ids)
    nodes = ids[:40]
    strangers = ids[40:]
    edges = [(rng.choice(nodes), rng.choice(nodes)) for _ in range(80)]
    edges += [(rng.choice(nodes), rng.choice(strangers)) for _ in range(20)]
    edges += [(rng.choice(strangers), rng.choice(nodes)) for _ in range(20)]
    edges += [(rng.choice(strangers), rng.choice(strangers)) for _ in range(20)]
    edges += [(nodes[0], nodes[0]), edges[0], (strangers[0], strangers[0])]
    rng.shuffle(edges)
    vertices, edge_frame = frames(spark, nodes, edges, False)
    vertices, edge_frame = vertices.coalesce(1), edge_frame.coalesce(1)
    g = Graph(vertices, edge_frame, workers=workers)
    inside = [(s, d) for s, d in edges if s in nodes and d in nodes]
    names = {v: f"name {i}" for i, v in enumerate(nodes)}

    got = {r.id: (r.name, r.component) for r in g.connectedComponents().collect()}
    assert got == {v: (names[v], c) for v, c in weak_components(nodes, inside).items()}
    ranks = {r.id: r.pagerank for r in g.pageRank(maxIter=5).vertices.collect()}
    assert ranks == pytest.approx(scaled(graphx_ranks(nodes, inside, 5)), rel=1e-12)
    degree = reference.degrees(inside, nodes)
    assert {r.id: r.degree for r in g.degrees.collect()} == {
        v: d[2] for v, d in degree.items() if d[2] > 0}
    a = next(s for s, d in inside if s != d)
    hops = hops_to(nodes, [(d, s) for s, d in inside], a)       # from a, along the edges
    b = max(hops, key=lambda v: (hops[v], v))
    paths = g.bfs(f"id = {a}", f"id = {b}").collect()
    assert paths and all(r["from"].id == a and r.to.id == b for r in paths)
    assert len(paths[0]) == 2 * hops[b] + 1 if hops[b] else len(paths[0]) == 2
    marks = {r.id: dict(r.distances) for r in g.shortestPaths([a]).collect()}
    assert marks == {v: ({a: d} if (d := hops_to(nodes, inside, a).get(v)) is not None else {})
                     for v in nodes}
