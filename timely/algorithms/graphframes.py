"""Graph algorithms of the GraphFrames API that neither GraphX's
(:mod:`~timely.algorithms.graph`) nor LDBC Graphalytics'
(:mod:`~timely.algorithms.graphalytics`) definitions cover, over streams of
edge Batches.

Each takes a stream of :class:`~timely.Batch`\\ es with integer columns
``src`` and ``dst`` (the edges of one graph, given at one time;
:func:`shortest_paths` also at many times) and streams
of Batches with a column ``node`` naming vertices (sources, landmarks, the
ends of paths). Vertex ids are any int64 values (sparse, negative, up to
``2**63 - 1``). Every step exchanges by vertex and every floating-point sum
is taken in an order that does not depend on how rows were spread, so the
answers are the same, bit for bit, at any worker count.

- :func:`personalized_pagerank`: PageRank whose random jumps (and dangling
  rank) go to a set of source vertices.
- :func:`shortest_paths`: per vertex, its distance in hops to each of a set
  of landmarks (GraphFrames' ``shortestPaths``).
- :func:`bfs_paths`: every shortest path from one set of vertices to
  another (GraphFrames' ``bfs``).

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         edge_input, edges = scope.new_input()
...         from_input, from_nodes = scope.new_input()
...         to_input, to_nodes = scope.new_input()
...         bfs_paths(edges, from_nodes, to_nodes).inspect_batch(
...             lambda t, b: got.extend(b.to_records()))
...     edge_input.send_batch(timely.Batch(src=np.array([1, 1, 2, 3, 4]),
...                                        dst=np.array([2, 3, 4, 4, 5])))
...     from_input.send_batch(timely.Batch(node=np.array([1])))
...     to_input.send_batch(timely.Batch(node=np.array([5])))
...     for handle in (edge_input, from_input, to_input):
...         handle.close()
...     worker.drain()
...     return got
>>> timely.execute_directly(work)
[(1, 2, 4, 5), (1, 3, 4, 5)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms.graph import _edges, _nodes, _spread, bfs
from timely.algorithms.graphalytics import (
    _both_ways,
    _per_key,
    _summed,
    _teleported_pagerank,
    _vertex_rows,
)
from timely.container import Batch
from timely.dataflow.operators.relational import join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["bfs_paths", "personalized_pagerank", "shortest_paths"]


def _arcs(edges: Stream[Batch], directed: bool, src: str, dst: str) -> Stream[Batch]:
    """The edges as ``(src, dst)`` int64 rows; both ways unless ``directed``."""
    arcs = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), _edges(b, src, dst)))))
    return arcs if directed else arcs.map_batch(_both_ways)


def _named(stream: Stream[Batch]) -> Stream[Batch]:
    """The distinct ``node`` values of ``stream``, as int64 ``node`` rows."""
    return stream.map_batch(lambda b: Batch(node=_nodes(b, "node"))).distinct("node")


# -- personalized PageRank ---------------------------------------------------------


def personalized_pagerank(edges: Stream[Batch], sources: Stream[Batch],
                          nodes: Stream[Batch] | None = None, iterations: int = 20, *,
                          damping: float = 0.85, src: str = "src",
                          dst: str = "dst") -> Stream[Batch]:
    """PageRank personalized to the vertices of ``sources`` (Batches with
    a column ``node``), as Batches with columns ``node`` and ``rank``
    (float64), one row per vertex.

    The vertex set is every node of ``nodes``, of ``sources`` and every
    edge end. ``p`` is the uniform distribution over the distinct sources
    ``S``: ``p(v) = 1/|S|`` for ``v`` in ``S``, else 0. Ranks start at
    ``p``; each of ``iterations`` steps sets ``PR(v) = (1 - d) p(v) + d *
    (sum(PR(u) / outdeg(u) for u -> v) + D p(v))``, ``d`` the ``damping``
    and ``D`` the total rank of the dangling vertices (out-degree 0), so the
    ranks keep summing to 1. This is networkx's ``pagerank(G,
    personalization=p)`` (whose dangling rank also goes by ``p``), except
    that networkx starts from ``1/N`` everywhere: the two agree once
    converged. Every edge counts as given: a duplicate twice, a self-loop as
    an edge from its vertex to itself. Without any source every rank is 0.

    Each vertex's sum is added in the order of its values and ``D`` is
    correctly rounded, so the ranks do not depend on the worker count. Work
    per iteration as :func:`~timely.algorithms.pagerank`.
    """

    def ends(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        zeros = np.zeros(len(s) + len(d), np.int64)
        degree = np.concatenate([np.ones(len(s), np.int64), np.zeros(len(d), np.int64)])
        return Batch(node=np.concatenate([s, d]), degree=degree, teleport=zeros)

    def named(b: Batch, teleport: int) -> Batch:
        node = _nodes(b, "node")
        return Batch(node=node, degree=np.zeros(len(node), np.int64),
                     teleport=np.full(len(node), teleport, np.int64))

    rows = edges.map_batch(ends).concat(sources.map_batch(lambda b: named(b, 1)))
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: named(b, 0)))
    info = _summed(rows, ("degree", "teleport"), "PersonalizedDegrees").map_batch(
        lambda b: b.with_columns(teleport=(b["teleport"] > 0).astype(np.float64)))
    return _teleported_pagerank(edges, info, iterations, damping, src, dst)


# -- shortest paths to landmarks -----------------------------------------------------


def shortest_paths(edges: Stream[Batch], landmarks: Stream[Batch],
                   nodes: Stream[Batch] | None = None, *, directed: bool = True,
                   src: str = "src", dst: str = "dst") -> Stream[Batch]:
    """Per vertex and landmark it reaches, the least number of edges on a
    path from the vertex to the landmark, as Batches with columns ``node``,
    ``landmark`` and ``distance`` (int64): GraphFrames' ``shortestPaths``,
    whose map from landmark to distance per vertex is here one row per
    reachable pair. No row where a vertex does not reach a landmark.

    ``landmarks``: Batches with a column ``node``; a landmark that is no
    vertex (not named by ``nodes`` nor by an edge) is dropped, and every
    vertex that is a landmark has distance 0 to itself. ``directed``: paths
    follow the edges from ``src`` to ``dst``; ``directed=False`` reads each
    edge both ways. Duplicate edges and self-loops change nothing.

    One breadth-first search from all landmarks at once, over the reversed
    edges, in an ``iterative()`` scope: each round the ``(node, landmark)``
    pairs whose distance fell pass it on, plus one, to the vertices with an
    edge into ``node``, and each pair keeps the least, until nothing falls.
    Rounds: the largest distance; state: a distance per vertex and landmark.

    Edges, vertices and landmarks may arrive at many times: the distances
    at a time are those of everything given at it and before, and the output
    at a time has a row for each pair first reached or brought closer at it.
    """
    arcs = _arcs(edges, directed, src, dst)
    backwards = arcs.map_batch(lambda b: Batch(src=b["dst"], dst=b["src"],
                                               weight=np.ones(len(b), dtype=np.int64)))
    vertices = _vertex_rows(edges, nodes, src, dst)
    seeds = _named(landmarks).map_batch(
        lambda b: Batch(node=b["node"], landmark=b["node"], distance=np.zeros(len(b), np.int64)))
    return _spread(backwards, seeds, "distance", vertices=vertices, slot="landmark",
                   seeds_need_vertex=True, name="Distance")


# -- breadth-first search for paths -------------------------------------------------


def _nearest_targets(rows: Batch, max_length: int | None) -> Batch | None:
    """The ``(node, distance)`` rows of the least distance, as ``(node,
    layer)`` rows; none when it exceeds ``max_length``."""
    distance = np.asarray(rows["distance"], dtype=np.int64)
    least = int(distance.min())
    if max_length is not None and least > max_length:
        return None
    nearest = distance == least
    return Batch(node=rows["node"][nearest], layer=distance[nearest])


def _steps(rows: Batch) -> list[int]:
    """The numbers ``i`` of the columns ``s<i>`` of ``rows``, in order."""
    return sorted(int(c[1:]) for c in rows.names if c[:1] == "s" and c[1:].isdigit())


def _sorted_paths(rows: Batch) -> Batch:
    """The complete paths of ``rows`` (head ``node``, then ``s1``, ``s2``,
    ...) as columns ``v0``, ``v1``, ..., rows in lexicographic order."""
    steps = _steps(rows)
    columns = [np.asarray(rows["node"], dtype=np.int64)]
    columns += [np.asarray(rows[f"s{i}"], dtype=np.int64) for i in steps]
    order = np.lexsort(columns[::-1])
    return Batch({f"v{i}": c[order] for i, c in enumerate(columns)})


def bfs_paths(edges: Stream[Batch], from_nodes: Stream[Batch], to_nodes: Stream[Batch], *,
              directed: bool = True, max_length: int | None = None, src: str = "src",
              dst: str = "dst") -> Stream[Batch]:
    """Every shortest path from a vertex of ``from_nodes`` to a vertex of
    ``to_nodes`` (GraphFrames' ``bfs``), as one Batch on one worker with one
    row per path and the vertex ids in order in columns ``v0`` (in
    ``from_nodes``), ``v1``, ..., ``vL`` (in ``to_nodes``), int64.

    ``L`` is the least number of edges on a path from any vertex of
    ``from_nodes`` to any of ``to_nodes``; every path of that length is
    returned, once (duplicate edges do not repeat a path), the rows sorted
    by ``v0``, then ``v1``, and so on. Such paths never repeat a vertex and
    pass through no other vertex of either set. A vertex in both sets is a
    path of length 0 by itself (column ``v0`` only). No Batch when no path
    exists, or when ``L`` exceeds ``max_length``. ``from_nodes`` and
    ``to_nodes``: Batches with a column ``node``. ``directed=False`` reads
    each edge both ways.

    A breadth-first search from ``from_nodes`` (:func:`~timely.algorithms.bfs`)
    gives each vertex its distance; the edges from distance ``k`` to ``k +
    1`` form the graph of shortest paths, which an ``iterative()`` loop
    walks back from the nearest targets, one edge per round, extending each
    partial path by every predecessor. Work: the search, then one row per
    partial path and round (the number of shortest paths can grow
    exponentially with ``L``); the complete paths are sorted on one worker.
    """
    if max_length is not None and (type(max_length) is not int or max_length < 0):
        raise ColumnarError(f"max_length is None or an int >= 0, not {max_length!r}")
    arcs = _arcs(edges, directed, src, dst)
    distance = bfs(arcs, _named(from_nodes))
    reached = join(distance, _named(to_nodes), on="node")
    nearest = _per_key(
        reached.map_batch(lambda b: b.with_columns(gather=np.zeros(len(b), np.int64))),
        "gather", lambda rows: _nearest_targets(rows, max_length), "NearestTargets")
    tail = join(arcs.distinct(["src", "dst"]),
                distance.map_batch(lambda b: Batch(src=b["node"], tail=b["distance"])), on="src")
    layered = join(tail, distance.map_batch(lambda b: Batch(dst=b["node"], head=b["distance"])),
                   on="dst").filter_batch(lambda b: b["head"] == b["tail"] + 1)
    shortest = layered.map_batch(lambda b: Batch(dst=b["dst"], src=b["src"]))

    def extended(b: Batch) -> Batch:
        columns = {f"s{i + 1}": b[f"s{i}"] for i in _steps(b)}
        return Batch({"node": b["src"], "layer": b["layer"] - 1, "s1": b["node"], **columns})

    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        partial = nearest.enter(inner).concat(loop)
        join(partial.filter_batch(lambda b: b["layer"] > 0), shortest.enter(inner),
             left_on="node", right_on="dst", persist="right").map_batch(
                 extended).connect_loop(handle)
        complete = partial.filter_batch(lambda b: b["layer"] == 0).leave()
    return _per_key(
        complete.map_batch(lambda b: b.with_columns(gather=np.zeros(len(b), np.int64))),
        "gather", _sorted_paths, "BfsPaths")
