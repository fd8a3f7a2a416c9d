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

from timely.algorithms._graph import LocalIds
from timely.algorithms.edges import both_ways, by_vertex, edge_ends, node_ids
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import (
    check_weights,
    each_time,
    least_values,
    outer_done,
    outer_time,
)
from timely.container import Batch
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.operators.relational import at_complete_times, join
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
    gives each vertex its distance, and the nearest targets their layer
    ``L``. Each worker keeps the arcs out of its own vertices whose source
    lies below ``L``, grouped by the source's distance (16 bytes an arc
    kept, the arc Batches let go as they are read). An ``iterative()``
    loop then walks back from the targets one layer a round: the heads of
    a round (broadcast: each is a vertex of some shortest path, so they
    are never more than the output's vertices) pick out, on every worker,
    the arcs into them from the layer below, whose sources are the next
    round's heads. Those arcs, each on some shortest path, go to worker 0,
    which enumerates and sorts the paths. Work: the search, one pass over
    the arcs, then per round a binary search per arc of its layer; memory
    per worker: its share of the arcs, once.

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
    nearest = each_time(reached, _TO_FIRST, lambda rows: _nearest_targets(rows, max_length),
                        "NearestTargets")
    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        heads = nearest.enter(inner).concat(loop).broadcast()
        found, onward = _walk_back(arcs.enter(inner), distance.enter(inner), heads)
        onward.connect_loop(handle)
        steps = found.leave()
    return at_complete_times("BfsPaths", [(nearest, _TO_FIRST), (steps, _TO_FIRST)],
                             lambda cap, rows: _enumerated(*rows))


def _first(batch: Batch) -> np.ndarray:
    return np.zeros(len(batch), dtype=np.int64)


_TO_FIRST = Exchange(batch=_first)      # every row to worker 0


class _Layers:
    """One worker's arcs out of the vertices it owns that may lie on a
    shortest path: those whose source is at a distance below the targets',
    grouped by that distance (their layer), as int64 ``heads`` (the arcs'
    targets) and ``tails`` (their sources) with ``starts[k]`` the first arc
    of layer ``k``. Made from the arc Batches, each let go once read; 16
    bytes an arc kept, and a byte or two per arc read while it is made."""

    def __init__(self, arcs: list[Batch], distances: list[Batch], limit: int) -> None:
        nodes = [np.ascontiguousarray(d["node"], dtype=np.int64) for d in distances]
        owned = LocalIds()
        owned.insert(np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64))
        depth = np.concatenate([np.asarray(d["distance"], dtype=np.int64) for d in distances]
                               ) if distances else np.zeros(0, dtype=np.int64)
        # A layer per arc, `limit` where the arc is dropped; the narrowest
        # unsigned type sorts by counting.
        kind = np.uint8 if limit < 1 << 8 else np.uint16 if limit < 1 << 16 else np.int64
        depth = np.minimum(depth, limit).astype(kind)
        layers = []
        depth = np.append(depth, kind(limit))        # where a source is not owned
        for batch in arcs:
            at = owned.lookup(np.ascontiguousarray(batch["src"], dtype=np.int64))
            layers.append(depth[at])                # -1 reads the appended cell
        counts = np.bincount(np.concatenate(layers) if layers else np.zeros(0, kind),
                             minlength=limit + 1)[:limit]
        self.starts = np.zeros(limit + 1, dtype=np.int64)
        np.cumsum(counts, out=self.starts[1:])
        total = int(self.starts[-1])
        self.heads = np.empty(total, dtype=np.int64)
        self.tails = np.empty(total, dtype=np.int64)
        cursor = self.starts[:-1].copy()
        while arcs:
            batch, layer = arcs.pop(0), layers.pop(0)
            kept = np.flatnonzero(layer < limit)
            layer = layer[kept]
            order = np.argsort(layer, kind="stable")
            layer = layer[order]
            kept = kept[order]
            first = np.searchsorted(layer, np.arange(limit, dtype=kind))
            at = cursor[layer] + np.arange(len(layer)) - first[layer]
            self.heads[at] = np.asarray(batch["dst"], dtype=np.int64)[kept]
            self.tails[at] = np.asarray(batch["src"], dtype=np.int64)[kept]
            cursor += np.bincount(layer, minlength=limit)[:limit]

    def into(self, heads: np.ndarray, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct arcs ``(tail, head)`` of layer ``layer - 1`` into
        the sorted distinct ``heads``."""
        lo, hi = self.starts[layer - 1], self.starts[layer]
        targets = self.heads[lo:hi]
        at = np.minimum(np.searchsorted(heads, targets), max(len(heads) - 1, 0))
        hit = np.flatnonzero(heads[at] == targets) if len(heads) else np.zeros(0, np.int64)
        pairs = np.unique(np.stack([self.tails[lo:hi][hit], targets[hit]], axis=1), axis=0)
        return pairs[:, 0], pairs[:, 1]


def _walk_back(arcs: Stream[Batch], distance: Stream[Batch], heads: Stream[Batch]
               ) -> list[Stream[Batch]]:
    """Inside the loop: per outer time, from the nearest targets (``heads``
    at its first round, one layer a round after) back to the sources, each
    worker the arcs out of its own vertices. Outputs: the arcs of the
    shortest paths, ``(tail, head, layer)`` with ``layer`` the tail's
    distance; and the next round's heads, the tails of this round's arcs
    (every worker sees them all: they are broadcast), until the sources."""
    tables: dict = {}               # outer time -> _Layers of its arcs

    def step(cap, rows):
        arc_rows, distance_rows, head_rows = rows
        outer = outer_time(cap.time)
        if not head_rows:           # no target reached: nothing to walk
            arc_rows.clear()
            return None
        head = Batch.concat(head_rows) if len(head_rows) > 1 else head_rows[0]
        layer = int(head["layer"][0])
        if outer not in tables:
            if layer == 0:          # the paths are the targets themselves
                arc_rows.clear()
                return None
            tables[outer] = _Layers(arc_rows, distance_rows, layer)
        tails, targets = tables[outer].into(np.unique(head["node"]), layer)
        if layer == 1:
            del tables[outer]
        found = Batch(tail=tails, head=targets, layer=np.full(len(tails), layer - 1, np.int64))
        sources = np.unique(tails)
        onward = Batch(node=sources, layer=np.full(len(sources), layer - 1, np.int64))
        return [(0, found)] + ([(1, onward)] if layer > 1 else [])

    def forget(frontiers) -> None:
        for outer in [o for o in tables if outer_done(o, frontiers)]:
            del tables[outer]

    return at_complete_times("WalkBack", [(arcs, by_vertex("src")), (distance, by_vertex("node")),
                                          (heads, Pipeline())],
                             step, whole=False, outputs=2, after=forget)


def _enumerated(nearest: Batch | None, arcs: Batch | None) -> Batch | None:
    """Every path from the layer-0 vertices to the targets ``nearest``
    along ``arcs`` (``(tail, head, layer)``, distinct): columns ``v0``,
    ``v1``, ..., rows in lexicographic order."""
    if nearest is None:
        return None
    columns = [np.sort(np.asarray(nearest["node"], dtype=np.int64))]
    if arcs is not None:
        layer = np.asarray(arcs["layer"])
        for k in range(int(nearest["layer"][0]) - 1, -1, -1):
            mine = np.flatnonzero(layer == k)
            heads = np.asarray(arcs["head"])[mine]
            order = np.argsort(heads, kind="stable")
            heads, tails = heads[order], np.asarray(arcs["tail"])[mine][order]
            lo = np.searchsorted(heads, columns[0], "left")
            hi = np.searchsorted(heads, columns[0], "right")
            path = np.repeat(np.arange(len(lo)), hi - lo)
            within = np.arange(len(path)) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo)
            columns = [tails[np.repeat(lo, hi - lo) + within]] + [c[path] for c in columns]
    order = np.lexsort(columns[::-1])
    return Batch({f"v{i}": c[order] for i, c in enumerate(columns)})
