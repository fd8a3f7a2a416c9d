"""Connected components over streams of edge Batches, spread over the
workers and kept up to date as edges arrive.

:func:`connected_components` labels every vertex with the least vertex id
of its (weakly) connected component. The edges are spread evenly over the
workers by a hash of both ends; each worker keeps a compiled union-find over
its share; the workers' partial components are joined by min-label
propagation of the labels that fell, in an ``iterative()`` scope. Strongly
connected components are a vertex program
(:func:`~timely.algorithms.vertex_program.strongly_connected_components`).

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

from typing import TYPE_CHECKING, Callable

import numpy as np

from timely.algorithms._graph import Components, component_minima
from timely.algorithms.edges import edge_ends, node_ids, spread_edges
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import each_time, least_values
from timely.container import Batch
from timely.dataflow.channels import Pipeline
from timely.dataflow.operators.relational import KeyIndex
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["connected_components"]

OnRound = Callable[[int, int], object]


def _local_forests(edges, src: str, dst: str):
    """Per worker and time, the edges it holds reduced to stars: ``(node,
    least)`` rows linking every node to the least node of its component in
    those edges (union-find, in C). The stars of all workers connect exactly
    what the edges connect, with at most one edge per node and worker."""

    def stars(rows: Batch) -> Batch | None:
        s, d = edge_ends(rows, src, dst)
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

    return least_values(stars.map_batch(arcs), None, "label",
                   vertices=stars.map_batch(lambda b: Batch(node=b["node"])),
                   self_seeded=True, on_round=on_round, name="MinLabel")


def connected_components(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                         method: str = "union-find", src: str = "src", dst: str = "dst",
                         on_round: OnRound | None = None, ids: Ids = "int64") -> Stream[Batch]:
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

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` and ``label`` map back, the
    label the least string.
    """
    v = VertexIds(ids, "connected_components")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_connected_components(edges, nodes, method=method, src=src, dst=dst,
                                               on_round=on_round), ("node", "label"))


def _connected_components(edges, nodes=None, *, method: str = "union-find", src: str = "src",
                         dst: str = "dst", on_round=None):
    if method not in ("union-find", "propagate"):
        raise ColumnarError(f"method is 'union-find' or 'propagate', not {method!r}")

    def checked(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        return Batch(src=s, dst=d)

    edges = edges.map_batch(checked)
    if nodes is not None:
        edges = edges.concat(nodes.map_batch(
            lambda b: Batch(src=node_ids(b, "node"), dst=node_ids(b, "node"))))
    edges = spread_edges(edges)
    if method == "union-find":
        stars = _kept_components(edges, "LocalComponents")
        if edges.scope.peers == 1:
            return stars
        return _joined(stars, on_round)
    stars = _local_forests(edges, "src", "dst").map_batch(
        lambda b: Batch(node=b["src"], label=b["dst"]))
    return _joined(stars, on_round)
