"""Paths over streams of edge Batches: breadth-first distances,
weighted single-source shortest paths, hop distances to landmarks and
every shortest path between two vertex sets.

- :func:`bfs`: per vertex reachable from the roots, its distance in edges.
- :func:`sssp`: weighted single-source shortest paths (Graphalytics SSSP).
- :func:`shortest_paths`: per vertex, its distance in hops to each of a set
  of landmarks (GraphFrames' ``shortestPaths``).
- :func:`bfs_paths`: every shortest path from one set of vertices to
  another (GraphFrames' ``bfs``).

The distances are least values spread along the edges in an
``iterative()`` loop (:func:`~timely.algorithms.propagation.least_values`):
each worker holds the values and out-edges of the vertices it owns, a round
carries only the values that fell, and edges may arrive at many times (a
time's output names the vertices whose distance changed at it).

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

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms.edges import both_ways, edge_ends, node_ids, per_key
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import check_weights, least_values
from timely.container import Batch
from timely.dataflow.operators.relational import join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["bfs", "bfs_paths", "shortest_paths", "sssp"]

OnRound = Callable[[int, int], object]

_INT64 = (-2**63, 2**63 - 1)


def bfs(edges: Stream[Batch], roots: Stream[Batch], *, src: str = "src", dst: str = "dst",
        on_round: OnRound | None = None, ids: Ids = "int64") -> Stream[Batch]:
    """Per node reachable from a root along the directed ``edges``, its
    distance (number of edges) from the nearest root, as Batches with
    columns ``node`` and ``distance``; unreachable nodes have no row.

    ``roots``: a stream of Batches with a column ``node``. Edges and roots
    may arrive at many times: the distances at a time are those over
    everything given at it and before, and the output at a time has a row
    for each node whose distance was first found or fell at it. Rounds: the
    largest distance; work per round: the out-edges of the nodes first
    reached (or brought closer) in it. ``on_round(round, rows)``, when
    given, is called on each worker once a round is complete there, with
    the number of nodes whose distance fell on that worker in it.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and the roots' ``node``; ``node`` maps back.
    """
    v = VertexIds(ids, "bfs")
    edges, roots = v.inputs((edges, (src, dst)), (roots, ("node",)))
    return v.output(_bfs(edges, roots, src=src, dst=dst, on_round=on_round), ("node",))


def _bfs(edges, roots, *, src: str = "src", dst: str = "dst", on_round=None):
    arcs = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), edge_ends(b, src, dst)))))
    seeds = roots.map_batch(
        lambda b: Batch(node=node_ids(b, "node"), distance=np.zeros(len(b), dtype=np.int64)))
    return least_values(arcs, seeds, "distance", weighted=False, on_round=on_round,
                        name="Distance")


def sssp(edges: Stream[Batch], source: int | str, nodes: Stream[Batch] | None = None, *,
         directed: bool = True, weight: str = "weight", src: str = "src", dst: str = "dst",
         ids: Ids = "int64") -> Stream[Batch]:
    """Weighted single-source shortest paths (Graphalytics SSSP), as
    Batches with columns ``node`` and ``distance`` (float64), one row per
    vertex: the least total ``weight`` of a path from ``source`` (0 at
    ``source``, ``inf`` where no path reaches).

    ``edges`` has a column ``weight`` of non-negative numbers (taken as
    float64; a negative or NaN weight raises
    :class:`~timely.ColumnarError`). Parallel edges: the lightest counts;
    self-loops change nothing. ``directed=False`` reads each edge both ways.
    A ``source`` that is no vertex reaches nothing.

    A Bellman-Ford fixpoint in an ``iterative()`` scope: each round, the
    vertices whose distance fell send it plus the edge weight along their
    out-edges, and each vertex keeps the least it receives, until nothing
    falls. A path's length is added up from the source, as a sequential
    Dijkstra adds it, so the distances are exact.

    Edges and vertices may arrive at many times: the distances at a time
    are those of everything given at it and before, and the output at a
    time has a row for each vertex new at it (``inf`` when unreached) or
    whose distance fell at it; a later time's rounds start from the
    distances so far, at the ends of its new edges.

    :func:`~timely.algorithms.shortest_paths` is the unweighted hop
    distance of every vertex to a set of landmarks (GraphFrames'
    ``shortestPaths``).

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``, and ``source`` is a str; ``node`` maps
    back.
    """
    v = VertexIds(ids, "sssp")
    if ids == "string" and type(source) is not str:
        raise ColumnarError(f"sssp: with ids='string' the source is a str, not {source!r}")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)),
                            pinned=source if isinstance(source, str) else None)
    origin = -1 if v.numbering is not None else source
    return v.output(_sssp(edges, origin, nodes,  # type: ignore[arg-type]
                                      directed=directed, weight=weight, src=src, dst=dst),
                    ("node",))


def _sssp(edges: Stream[Batch], source: int, nodes: Stream[Batch] | None = None, *,
          directed: bool = True, weight: str = "weight", src: str = "src",
          dst: str = "dst") -> Stream[Batch]:
    if type(source) is not int and not isinstance(source, np.integer):
        raise ColumnarError(f"the source is an int vertex id, not {source!r}")
    if not _INT64[0] <= int(source) <= _INT64[1]:
        raise ColumnarError(f"the source {source} is not an int64 vertex id")
    origin = np.int64(source)

    def arcs(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        if weight not in b:
            raise ColumnarError(f"sssp takes edges with a column {weight!r}")
        w = check_weights(b[weight], weight)
        if not directed:
            s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
        return Batch(src=s, dst=d, weight=w)

    def seed(ids: tuple[np.ndarray, ...]) -> Batch:
        """The source at distance 0 where these ids name it: it is a vertex."""
        found = any(bool((i == origin).any()) for i in ids)
        return Batch(node=np.full(int(found), origin, dtype=np.int64),
                     distance=np.zeros(int(found)))

    seeds = edges.map_batch(lambda b: seed(edge_ends(b, src, dst)))
    vertices = None
    if nodes is not None:
        vertices = nodes.map_batch(lambda b: Batch(node=node_ids(b, "node")))
        seeds = seeds.concat(vertices.map_batch(lambda b: seed((b["node"],))))
    return least_values(edges.map_batch(arcs), seeds, "distance", vertices=vertices,
                        floating=True, report_new=True, name_targets=True, name="Distance")


def _arcs(edges: Stream[Batch], directed: bool, src: str, dst: str) -> Stream[Batch]:
    """The edges as ``(src, dst)`` int64 rows; both ways unless ``directed``."""
    arcs = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), edge_ends(b, src, dst)))))
    return arcs if directed else arcs.map_batch(both_ways)


def _named(stream: Stream[Batch]) -> Stream[Batch]:
    """The distinct ``node`` values of ``stream``, as int64 ``node`` rows."""
    return stream.map_batch(lambda b: Batch(node=node_ids(b, "node"))).distinct("node")


def shortest_paths(edges: Stream[Batch], landmarks: Stream[Batch],
                   nodes: Stream[Batch] | None = None, *, directed: bool = True,
                   src: str = "src", dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
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

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and the ``node`` of landmarks and nodes; ``node`` and
    ``landmark`` map back.
    """
    v = VertexIds(ids, "shortest_paths")
    edges, landmarks, nodes = v.inputs((edges, (src, dst)), (landmarks, ("node",)),
                                       (nodes, ("node",)))
    return v.output(_shortest_paths(edges, landmarks, nodes, directed=directed,
                                               src=src, dst=dst), ("node", "landmark"))


def _shortest_paths(edges: Stream[Batch], landmarks: Stream[Batch],
                    nodes: Stream[Batch] | None = None, *, directed: bool = True,
                    src: str = "src", dst: str = "dst") -> Stream[Batch]:
    arcs = _arcs(edges, directed, src, dst)
    backwards = arcs.map_batch(lambda b: Batch(src=b["dst"], dst=b["src"]))
    vertices = None
    if nodes is not None:
        vertices = nodes.map_batch(lambda b: Batch(node=node_ids(b, "node")))
    seeds = _named(landmarks).map_batch(
        lambda b: Batch(node=b["node"], landmark=b["node"], distance=np.zeros(len(b), np.int64)))
    return least_values(backwards, seeds, "distance", vertices=vertices, slot="landmark",
                        weighted=False, seeds_need_vertex=True, name_targets=True,
                        name="Distance")


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
              dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
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

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and the ``node`` of both vertex sets; every ``v<i>``
    maps back, on worker 0, which gets the text of the vertices on paths
    only; the rows are sorted by the strings.
    """
    v = VertexIds(ids, "bfs_paths")
    edges, from_nodes, to_nodes = v.inputs((edges, (src, dst)), (from_nodes, ("node",)),
                                           (to_nodes, ("node",)))
    return v.gathered(_bfs_paths(edges, from_nodes, to_nodes, directed=directed,
                                            max_length=max_length, src=src, dst=dst))


def _bfs_paths(edges: Stream[Batch], from_nodes: Stream[Batch], to_nodes: Stream[Batch], *,
               directed: bool = True, max_length: int | None = None, src: str = "src",
               dst: str = "dst") -> Stream[Batch]:
    if max_length is not None and (type(max_length) is not int or max_length < 0):
        raise ColumnarError(f"max_length is None or an int >= 0, not {max_length!r}")
    arcs = _arcs(edges, directed, src, dst)
    distance = _bfs(arcs, _named(from_nodes))
    reached = join(distance, _named(to_nodes), on="node")
    nearest = per_key(
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
    return per_key(
        complete.map_batch(lambda b: b.with_columns(gather=np.zeros(len(b), np.int64))),
        "gather", _sorted_paths, "BfsPaths")
