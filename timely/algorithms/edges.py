"""Edge and vertex streams of the graph algorithms: checking their id
columns, spreading edges over the workers, counting degrees, and the small
per-vertex operators the algorithms share.

Vertex ids are int64 (any values: sparse, negative, up to ``2**63 - 1``);
:func:`int64_column` is the one check of an id column, refusing anything
but integers (a float id is a mistake, not an id). Every operator here
exchanges by vertex, so its answer does not depend on the worker count.

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         degrees(edges).inspect_batch(lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=np.array([1, 1, 2]), dst=np.array([2, 3, 3])))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(1, 0, 2, 2), (2, 1, 1, 2), (3, 2, 0, 2)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from timely.algorithms._graph import edge_hash, vertex_hash
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import each_time
from timely.container import Batch
from timely.dataflow.channels import Exchange
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["both_ways", "by_vertex", "degrees", "edge_ends", "int64_column", "int64_values",
           "node_ids",
           "out_degrees", "per_key", "simple_arcs", "spread_edges", "summed", "sums_by_node",
           "vertex_rows"]


def int64_values(values, what: str) -> np.ndarray:
    """``values`` as int64 vertex ids, or a :class:`~timely.ColumnarError`
    naming ``what`` when they are not integers (floats, bools, text) or an
    unsigned value does not fit int64. An empty array of any dtype is no
    ids."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        if not len(values):
            return np.zeros(0, dtype=np.int64)
        raise ColumnarError(f"{what}: vertex ids are integers, not {values.dtype}")
    if values.dtype == np.uint64 and len(values) and int(values.max()) > 2**63 - 1:
        raise ColumnarError(f"{what}: the vertex id {int(values.max())} does not fit int64")
    return values.astype(np.int64, copy=False)


def int64_column(batch, column: str, what: str) -> np.ndarray:
    """``batch[column]`` as int64 vertex ids (:func:`int64_values`), or a
    :class:`~timely.ColumnarError` naming ``what`` and the column."""
    if type(batch) is not Batch:
        raise ColumnarError(f"{what} are Batches, not {type(batch).__name__}")
    if column not in batch:
        raise ColumnarError(f"{what} have no column {column!r}; they have {list(batch.names)}")
    return int64_values(batch[column], f"{what}, column {column!r}")


def edge_ends(batch, src: str, dst: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``src`` and ``dst`` columns of an edge Batch as int64 ids."""
    return int64_column(batch, src, "the edges"), int64_column(batch, dst, "the edges")


def node_ids(batch, column: str = "node") -> np.ndarray:
    """The ``column`` of a Batch of vertices as int64 ids."""
    return int64_column(batch, column, "the nodes")


def _edge_hash(batch: Batch) -> np.ndarray:
    return edge_hash(np.ascontiguousarray(batch["src"], dtype=np.int64),
                     np.ascontiguousarray(batch["dst"], dtype=np.int64))


def by_vertex(column: str) -> Exchange:
    """A pact routing each row by a 64-bit mix of its int64 vertex id in
    ``column`` (:func:`~timely.algorithms._graph.vertex_hash`): every id is
    owned by one worker, and ids that share their low bits (multiples of
    1024, say) still spread, where ``Exchange(column)`` takes an int as its
    own hash."""

    def hashes(batch: Batch) -> np.ndarray:
        return vertex_hash(np.ascontiguousarray(batch[column], dtype=np.int64))

    hashes.__qualname__ = f"by_vertex({column!r})"
    return Exchange(batch=hashes)


def spread_edges(edges, name: str = "SpreadEdges"):
    """``edges`` (Batches with int64 ``src`` and ``dst``) exchanged so that
    each of W workers holds about 1/W of them, a hub's edges included (by a
    hash of both ends, :func:`~timely.algorithms._graph.edge_hash`), and
    edges that arrived all on one worker leave it; unchanged with one
    worker. Cost: one exchange of every edge."""
    if edges.scope.peers == 1:
        return edges
    return edges.exchange_batch(_edge_hash, name=name)


def per_key(stream: Stream[Batch], key: str, body: Callable[[Batch], Batch | None],
             name: str) -> Stream[Batch]:
    """``body(rows)`` per worker and complete time, over every row of that
    time whose ``key`` the worker owns (rows exchanged by ``key``): all the
    rows of a key meet in one call."""
    return each_time(stream, Exchange(key), body, name)


def sums_by_node(rows: Batch, columns: tuple[str, ...]) -> Batch:
    """One row per distinct ``node`` of ``rows``, with the sums of the
    integer ``columns``."""
    keys, inverse = np.unique(rows["node"], return_inverse=True)
    sums = {}
    for c in columns:
        sums[c] = np.zeros(len(keys), dtype=np.int64)
        np.add.at(sums[c], inverse, np.asarray(rows[c], dtype=np.int64))
    return Batch({"node": keys, **sums})


def summed(stream: Stream[Batch], columns: tuple[str, ...], name: str) -> Stream[Batch]:
    """Per vertex and time, the sums of the integer ``columns`` over the
    ``(node, *columns)`` rows of ``stream`` (each message first summed where
    it is, so only one row per vertex and message crosses workers)."""
    local = stream.map_batch(lambda b: sums_by_node(b, columns))
    return per_key(local, "node", lambda rows: sums_by_node(rows, columns), name)


def vertex_rows(edges: Stream[Batch], nodes: Stream[Batch] | None, src: str,
                 dst: str) -> Stream[Batch]:
    """A ``node`` row per edge end and per node of ``nodes`` (with repeats)."""
    rows = edges.map_batch(lambda b: Batch(node=np.concatenate(edge_ends(b, src, dst))))
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: Batch(node=node_ids(b, "node"))))
    return rows


def simple_arcs(edges: Stream[Batch], directed: bool, src: str, dst: str) -> Stream[Batch]:
    """The edges as a set of ordered pairs ``(src, dst)`` without
    self-loops: distinct pairs when ``directed``, else both orientations
    of each distinct undirected edge."""

    def pairs(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        kept = s != d
        s, d = s[kept], d[kept]
        if not directed:
            s, d = np.minimum(s, d), np.maximum(s, d)
        return Batch(src=s, dst=d)

    simple = edges.map_batch(pairs).distinct(["src", "dst"])
    if directed:
        return simple
    return simple.map_batch(both_ways)


def both_ways(b: Batch) -> Batch:
    """Every pair of ``b`` and its reverse."""
    s, d = b["src"], b["dst"]
    return Batch(src=np.concatenate([s, d]), dst=np.concatenate([d, s]))


def out_degrees(edges, nodes, src: str, dst: str):
    """``(node, degree)`` per node: its out-degree, 0 for nodes without out-edges."""

    def ends(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        return Batch(node=np.concatenate([s, d]),
                     degree=np.concatenate([np.ones(len(s), np.int64), np.zeros(len(d), np.int64)]))

    rows = edges.map_batch(ends)
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(
            lambda b: Batch(node=node_ids(b, "node"), degree=np.zeros(len(b), dtype=np.int64))))
    return rows.aggregate("node", "degree", how="sum").map_batch(
        lambda b: Batch(node=b["node"], degree=b["sum"]))


def degrees(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
            dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    """Per vertex, its degrees, as Batches with columns ``node``,
    ``in_degree``, ``out_degree`` and ``degree`` (their sum), all int64;
    isolated vertices (named only by ``nodes``) have 0.

    Every edge counts as given: a duplicate edge twice, a self-loop once as
    an out-edge and once as an in-edge of its vertex (degree 2). For the
    degrees of the simple graph, pass ``edges.distinct(["src", "dst"])``.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` maps back.
    """
    v = VertexIds(ids, "degrees")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_degrees(edges, nodes, src=src, dst=dst), ("node",))


def _degrees(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
             dst: str = "dst") -> Stream[Batch]:

    def ends(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        ones, zeros = np.ones(len(s), np.int64), np.zeros(len(s), np.int64)
        return Batch(node=np.concatenate([s, d]), in_degree=np.concatenate([zeros, ones]),
                     out_degree=np.concatenate([ones, zeros]))

    rows = edges.map_batch(ends)
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: Batch(
            node=node_ids(b, "node"), in_degree=np.zeros(len(b), np.int64),
            out_degree=np.zeros(len(b), np.int64))))
    return summed(rows, ("in_degree", "out_degree"), "Degrees").map_batch(
        lambda b: b.with_columns(degree=b["in_degree"] + b["out_degree"]))
