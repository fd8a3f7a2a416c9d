"""Graph algorithms over streams of edge Batches, built from the relational
operators (:mod:`timely.dataflow.operators.relational`) in ``iterative()``
scopes.

Each takes a stream of :class:`~timely.Batch`\\ es with integer columns
``src`` and ``dst`` and returns a stream of Batches with one row per node.
Components, BFS and PageRank to a tolerance take edges at many times and
output, per time, the nodes whose answer changed at it (see each
function); PageRank by fixed iterations takes the edges of one graph at
one time. Answers do not depend on the worker count: every step
exchanges by node.

- :func:`connected_components`: per node, the least node id of its
  (undirected) component, by min-label propagation.
- :func:`bfs`: per node reachable from the roots, its distance in edges.
- :func:`pagerank`: per node, its rank after a fixed number of iterations,
  or to a tolerance; GraphX's unnormalized definition, or (``definition=
  "normalized"``) that of Graphalytics and networkx.

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         connected_components(edges).inspect_batch(lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=np.array([0, 1, 5]), dst=np.array([1, 2, 4])))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(0, 0), (1, 0), (2, 0), (4, 4), (5, 4)]
"""

from __future__ import annotations

import numpy as np

from timely.algorithms._graph import Components, component_minima, edge_hash
from timely.algorithms.propagation import each_time, latest, lowest, pushed, settle, stepped
from timely.container import Batch
from timely.dataflow.channels import Pipeline
from timely.dataflow.operators.core import Ok
from timely.dataflow.operators.relational import KeyIndex
from timely.errors import ColumnarError
from timely.progress import less_equal

__all__ = ["bfs", "connected_components", "pagerank"]


def _ints(values) -> np.ndarray:
    return np.asarray(values).astype(np.int64, copy=False)


def _edges(batch: Batch, src: str, dst: str) -> tuple[np.ndarray, np.ndarray]:
    if type(batch) is not Batch or src not in batch or dst not in batch:
        raise ColumnarError(f"graph algorithms take Batches with columns {src!r} and {dst!r}")
    return _ints(batch[src]), _ints(batch[dst])


def _nodes(batch: Batch, column: str) -> np.ndarray:
    if type(batch) is not Batch or column not in batch:
        raise ColumnarError(f"the nodes are Batches with a column {column!r}")
    return _ints(batch[column])


def _reported(stream, on_round):
    """``stream`` (inside a loop) passed on unchanged; when ``on_round`` is
    given, ``on_round(round, rows)`` is called once a round is complete on
    this worker, for every round in which ``stream`` carried rows here, with
    their count. Rounds are reported in order. Every worker must pass a
    callback or none: the reporting is an operator of the dataflow."""
    if on_round is None:
        return stream
    rows: dict = {}

    def seen(event) -> None:
        if type(event) is Ok:
            time, batch = event.value
            rows[time] = rows.get(time, 0) + len(batch)
            return
        frontier = event.error
        done = sorted(t for t in rows if not any(less_equal(f, t) for f in frontier))
        for time in done:
            on_round(time[-1], rows.pop(time))

    return stream.inspect_core(seen)


def _spread(arcs, seeds, value: str, *, vertices=None, slot: str | None = None,
            floating: bool = False, self_seeded: bool = False, seeds_need_vertex: bool = False,
            report_new: bool = False, on_round=None, name: str = "Lowest"):
    """The least ``value`` per vertex (and ``slot``) over seeds and the
    weighted ``arcs`` (``src``, ``dst``, ``weight``), by
    :func:`~timely.algorithms.propagation.lowest` in an ``iterative()``
    scope, kept across the times the arcs arrive at: per time, the vertices
    whose value changed at it."""
    keys = ("node",) if slot is None else ("node", slot)
    with arcs.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = lowest(arcs.enter(inner), seeds.enter(inner) if seeds is not None else None,
                      loop, value=value,
                      vertices=vertices.enter(inner) if vertices is not None else None,
                      slot=slot, floating=floating, self_seeded=self_seeded,
                      seeds_need_vertex=seeds_need_vertex, report_new=report_new, name=name)
        rows.filter_batch(lambda b: b["sent"]).map_batch(
            lambda b: b.select([*keys, value])).connect_loop(handle)
        changes = rows.filter_batch(lambda b: ~b["sent"]).map_batch(
            lambda b: b.select([*keys, value]))
        changes = _reported(changes, on_round).leave()
    return settle(changes, keys, value)


def _edge_hash(batch: Batch) -> np.ndarray:
    return edge_hash(np.ascontiguousarray(batch["src"], dtype=np.int64),
                     np.ascontiguousarray(batch["dst"], dtype=np.int64))


def spread_edges(edges, name: str = "SpreadEdges"):
    """``edges`` (Batches with int64 ``src`` and ``dst``) exchanged so that
    each of W workers holds about 1/W of them, a hub's edges included (by a
    hash of both ends, :func:`~timely.algorithms._graph.edge_hash`), and
    edges that arrived all on one worker leave it; unchanged with one
    worker. Cost: one exchange of every edge."""
    if edges.scope.peers == 1:
        return edges
    return edges.exchange_batch(_edge_hash, name=name)


def _local_forests(edges, src: str, dst: str):
    """Per worker and time, the edges it holds reduced to stars: ``(node,
    least)`` rows linking every node to the least node of its component in
    those edges (union-find, in C). The stars of all workers connect exactly
    what the edges connect, with at most one edge per node and worker."""

    def stars(rows: Batch) -> Batch | None:
        s, d = _edges(rows, src, dst)
        index = KeyIndex(1)
        ids = index.insert([np.concatenate([s, d])])
        keys = np.asarray(index.keys()[0])     # int64 keys decode as int64
        least = component_minima(ids[:len(s)], ids[len(s):], keys)
        return Batch(src=keys, dst=least) if len(keys) else None

    return each_time(edges, Pipeline(), stars, "LocalForest")


def _kept_components(edges, name: str = "Components"):
    """``(src, dst)`` edges at many times into one union-find per worker
    kept across times (:class:`~timely.algorithms._graph.Components`):
    per complete time, in time order, ``(node, label)`` for every node new
    at it or whose label fell at it, over the edges this worker holds."""
    index = KeyIndex(1)
    parts = Components()

    def changed(rows: Batch) -> Batch | None:
        before = len(index)
        ids = index.insert([np.concatenate([rows["src"], rows["dst"]])])
        new = np.arange(before, len(index), dtype=np.int64)
        parts.grow(np.asarray(index.take(new)[0]).astype(np.int64, copy=False))
        # The first edges: every node is new and reported, so no label is walked.
        fell = parts.union(ids[:len(rows)], ids[len(rows):], report=before > 0)
        labelled = np.concatenate([new, fell[fell < before]])
        if not len(labelled):
            return None
        return Batch(node=np.asarray(index.take(labelled)[0]), label=parts.labels(labelled))

    return each_time(edges, Pipeline(), changed, name)


_FANOUT = 64


def _bounded_tree(node: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges joining each group of ``node`` sharing a ``label``
    to that label as a tree in which no vertex has more than ``_FANOUT``
    children: the members in a row, the first ``_FANOUT`` linked to the
    label, each later one to the member ``_FANOUT`` times nearer the front.
    A star would do, but its centre, owned by one worker, would take in an
    edge per member (a giant component's least vertex, all of them); the
    tree joins the same vertices with depth ``log_FANOUT`` of the group."""
    keep = node != label
    node, label = node[keep], label[keep]
    order = np.argsort(label, kind="stable")
    node, label = node[order], label[order]
    first = np.flatnonzero(np.concatenate([[True], label[1:] != label[:-1]])) if len(label) \
        else np.zeros(0, dtype=np.int64)
    start = np.repeat(first, np.diff(np.append(first, len(label))))
    position = np.arange(len(node)) - start
    up = position // _FANOUT - 1
    parent = np.where(up < 0, label, node[start + np.maximum(up, 0)])
    return node, parent


def _joined(stars, on_round):
    """The least label per node over the ``(node, label)`` stars of all
    workers, each read as undirected edges (shaped by :func:`_bounded_tree`):
    min-label propagation in an ``iterative()`` scope (:func:`_spread`),
    kept across times; per time, the nodes whose label fell at it."""

    def arcs(b: Batch) -> Batch:
        s, d = _bounded_tree(np.asarray(b["node"]), np.asarray(b["label"]))
        return Batch(src=np.concatenate([s, d]), dst=np.concatenate([d, s]),
                     weight=np.zeros(2 * len(s), dtype=np.int64))

    return _spread(stars.map_batch(arcs), None, "label",
                   vertices=stars.map_batch(lambda b: Batch(node=b["node"])),
                   self_seeded=True, on_round=on_round, name="MinLabel")


def connected_components(edges, nodes=None, *, method: str = "union-find", src: str = "src",
                         dst: str = "dst", on_round=None):
    """Per node, the least node id of its connected component (edges taken
    as undirected), as Batches with columns ``node`` and ``label``,
    exchanged by node.

    ``edges``: a stream of Batches with integer columns ``src`` and ``dst``;
    ``nodes``: optionally a stream of Batches with a column ``node`` naming
    nodes that may have no edges (each is then its own component).
    Self-loops and duplicate edges are allowed. Edges and nodes may arrive
    at many times: the components at a time are those of everything given
    at it and before, and the output at a time has a row for each node that
    is new at it or whose label fell at it (at the first time, every node;
    later, only what the new edges changed).

    The edges are first spread evenly over the workers by a hash of both
    ends (:func:`spread_edges`), so no worker holds more than its share
    however they arrived and whatever the degrees. Then, by ``method``:

    - ``"union-find"`` (default): each worker keeps a union-find (in C)
      over the edges it holds, across times; a time's edges cost their
      unions plus the label changes they make (when two components meet,
      only the one whose label falls is walked). With one worker its
      labels are the answer, with no loop. With more, each worker's
      changed ``(node, local label)`` pairs are stars that join the
      workers' partial components by min-label propagation in an
      ``iterative()`` scope: rounds about the diameter of the stars' graph
      (a few on large random graphs), each carrying only the labels that
      fell. Memory per worker: its edges' nodes, O((m + n) / W) for
      random or hashed ids.
    - ``"propagate"``: each worker reduces a time's edges to stars (a
      union-find over that time's edges only, every node linked to the
      least node of its part) and the stars of all times are joined by the
      same min-label propagation, one round also with one worker.

    ``on_round``: ``on_round(round, rows)`` is called on each worker once a
    round of the propagation is complete there, with the number of labels
    that fell on that worker in it (rounds without any are not reported);
    with ``"union-find"`` on one worker there are no rounds.
    """
    if method not in ("union-find", "propagate"):
        raise ColumnarError(f"method is 'union-find' or 'propagate', not {method!r}")

    def checked(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        return Batch(src=s, dst=d)

    edges = edges.map_batch(checked)
    if nodes is not None:
        edges = edges.concat(nodes.map_batch(
            lambda b: Batch(src=_nodes(b, "node"), dst=_nodes(b, "node"))))
    edges = spread_edges(edges)
    if method == "union-find":
        stars = _kept_components(edges, "LocalComponents")
        if edges.scope.peers == 1:
            return stars
        return _joined(stars, on_round)
    stars = _local_forests(edges, "src", "dst").map_batch(
        lambda b: Batch(node=b["src"], label=b["dst"]))
    return _joined(stars, on_round)


def bfs(edges, roots, *, src: str = "src", dst: str = "dst", on_round=None):
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
    """

    def arcs(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        return Batch(src=s, dst=d, weight=np.ones(len(s), dtype=np.int64))

    seeds = roots.map_batch(
        lambda b: Batch(node=_nodes(b, "node"), distance=np.zeros(len(b), dtype=np.int64)))
    return _spread(edges.map_batch(arcs), seeds, "distance", on_round=on_round, name="Distance")


def _node_degrees(edges, nodes, src: str, dst: str):
    """``(node, degree)`` per node: its out-degree, 0 for nodes without out-edges."""

    def ends(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        return Batch(node=np.concatenate([s, d]),
                     degree=np.concatenate([np.ones(len(s), np.int64), np.zeros(len(d), np.int64)]))

    rows = edges.map_batch(ends)
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(
            lambda b: Batch(node=_nodes(b, "node"), degree=np.zeros(len(b), dtype=np.int64))))
    return rows.aggregate("node", "degree", how="sum").map_batch(
        lambda b: Batch(node=b["node"], degree=b["sum"]))


class _Ranks:
    """The state of one worker's nodes in PageRank: numbered by a KeyIndex,
    with out-degree, rank and undelivered residual in arrays."""

    def __init__(self):
        self.index = KeyIndex(1)
        self.degree = np.zeros(0, dtype=np.int64)
        self.rank = np.zeros(0)
        self.residual = np.zeros(0)

    def add(self, batch: Batch) -> np.ndarray:
        """Numbers the nodes of ``batch``; returns the numbers of the new ones."""
        before = len(self.index)
        ids = self.index.insert([batch["node"]])
        n = len(self.index)
        for name in ("degree", "rank", "residual"):
            held = getattr(self, name)
            grown = np.zeros(n, dtype=held.dtype)
            grown[:len(held)] = held
            setattr(self, name, grown)
        self.degree[ids] = batch["degree"]
        return np.arange(before, n, dtype=np.int64)

    def sums(self, batch: Batch) -> np.ndarray:
        ids = self.index.lookup([batch["node"]])
        return np.bincount(ids, weights=batch["c"], minlength=len(self.index))


def _pagerank_fixed(edges, nodes, directed, iterations: int, damping: float, src: str,
                    dst: str, on_round):
    """GraphX's ranks after ``iterations`` steps from ``r = 1`` everywhere
    (:func:`~timely.algorithms.propagation.stepped`)."""
    info = _node_degrees(edges, nodes, src, dst)
    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = stepped(info.enter(inner), directed.enter(inner), loop, iterations=iterations,
                       damping=damping, every_round=on_round is not None)
        rows.filter_batch(lambda b: b["sent"]).map_batch(
            lambda b: b.select(["node", "value"])).connect_loop(handle)
        ranks = _reported(rows.filter_batch(lambda b: ~b["sent"]), on_round)
        last = ranks.filter_batch(lambda b: b["round"] == iterations)
        return last.leave().map_batch(lambda b: Batch(node=b["node"], rank=b["value"]))


def pagerank(edges, iterations: int | None = 20, *, damping: float = 0.85,
             tolerance: float | None = None, nodes=None, src: str = "src", dst: str = "dst",
             on_round=None, definition: str = "graphx"):
    """PageRank of the directed ``edges``, as Batches with columns ``node``
    and ``rank`` (float64), one row per node. Duplicate edges count as
    often as they appear. ``definition`` chooses the ranks:

    - ``"graphx"`` (default): those of ``r(v) = (1 - damping) + damping *
      sum(r(u) / outdeg(u) for u -> v)`` (unnormalized, as Spark's GraphX:
      ranks sum to the node count when no node is dangling; a dangling
      node's rank is not passed on), for fixed iterations or to a
      tolerance, as below.
    - ``"normalized"``: the definition of LDBC Graphalytics and networkx:
      for ``N`` vertices (every node of ``nodes`` and every edge end),
      ranks start at ``1/N`` and each of ``iterations`` steps sets ``PR(v)
      = (1 - d)/N + d * (sum(PR(u) / outdeg(u) for u -> v) + D/N)``, ``D``
      the total rank of the dangling vertices (out-degree 0), so the ranks
      keep summing to 1. A self-loop is an edge from its vertex to itself.
      Fixed iterations only (no ``tolerance``); the sums are taken in an
      order independent of the workers and ``D`` is correctly rounded, so
      the ranks are the same, bit for bit, at any worker count.

    The rest of this describes ``"graphx"``.

    With ``iterations`` (and no ``tolerance``): ``iterations`` steps from
    ``r = 1`` everywhere, for the edges of one graph at one time. With
    ``tolerance``: residual pushing from ``r = 0`` — each node adds what it
    receives to a residual and passes the residual on once it exceeds
    ``tolerance`` — until no residual does; every rank is then within
    ``tolerance * n / (1 - damping)`` of the fixed point for ``n`` nodes (in
    practice far closer). ``nodes``: optionally Batches with a column
    ``node`` for nodes that may have no edges.

    With ``tolerance``, edges and nodes may arrive at many times: the ranks
    at a time are those of everything given at it and before, re-converged
    from the ranks so far (a node whose out-degree grows passes on again
    what it had pushed, spread over its new out-edges, see
    :func:`~timely.algorithms.propagation.pushed`), and the output at a
    time has a row for each node whose rank changed at it.

    Work per iteration: one hash probe per node and edge of the nodes that
    send, in C and numpy.

    ``on_round(round, rows)``, when given, is called on each worker once a
    round is complete there, with the number of ranks computed (fixed
    iterations) or changed (tolerance) on that worker in it.
    """
    if definition not in ("graphx", "normalized"):
        raise ColumnarError(f"definition is 'graphx' or 'normalized', not {definition!r}")
    if definition == "normalized":
        if tolerance is not None:
            raise ColumnarError("pagerank with definition='normalized' runs fixed iterations, "
                                "not to a tolerance")
        from timely.algorithms.graphalytics import _pagerank_normalized

        return _pagerank_normalized(edges, nodes, iterations, damping, src, dst, on_round)
    if tolerance is None and (iterations is None or iterations < 0):
        raise ColumnarError("pagerank needs iterations >= 0 or a tolerance")
    if tolerance is not None and tolerance <= 0:
        raise ColumnarError(f"the tolerance is positive, not {tolerance}")
    directed = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), _edges(b, src, dst)))))
    if tolerance is None:
        assert iterations is not None
        return _pagerank_fixed(edges, nodes, directed, iterations, damping, src, dst, on_round)

    def ends(b: Batch) -> Batch:
        return Batch(node=np.concatenate([b["src"], b["dst"]]))

    vertices = directed.map_batch(ends)
    if nodes is not None:
        vertices = vertices.concat(nodes.map_batch(lambda b: Batch(node=_nodes(b, "node"))))
    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = pushed(directed.enter(inner), vertices.enter(inner), loop, damping=damping,
                      tolerance=tolerance)
        rows.filter_batch(lambda b: b["sent"]).map_batch(
            lambda b: b.select(["node", "value"])).connect_loop(handle)
        changed = rows.filter_batch(lambda b: ~b["sent"]).map_batch(
            lambda b: Batch(node=b["node"], rank=b["value"], round=b["round"]))
        ranks = _reported(changed, on_round).leave()
    return latest(ranks, "node", "rank")
