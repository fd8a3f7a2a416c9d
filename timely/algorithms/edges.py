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

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from timely.algorithms._graph import LocalIds, edge_hash, vertex_hash
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import Growing, each_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.errors import ColumnarError
from timely.progress import less_equal

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["both_ways", "by_vertex", "degrees", "edge_ends", "int64_column", "int64_values",
           "known_edges", "node_ids",
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


# Rows of waiting edges let go in one activation, once their time's nodes are all in.
_RELEASE = 1 << 16


def known_edges(edges: Stream[Batch], nodes: Stream[Batch], *, src: str = "src",
                dst: str = "dst", name: str = "KnownEdges") -> Stream[Batch]:
    """The edges whose two ends are vertices: the rows of ``edges`` (int64
    ``src`` and ``dst``, other columns kept) whose ``src`` and ``dst`` are
    both named by ``nodes`` (Batches with a column ``node``), a semi-join
    of each end with the vertex set, spread over the workers. An edge at a
    time is kept when both its ends are named at that time or before
    (times taken in order: the root scope's epochs, or one time only).

    Each worker keeps the ids of the nodes it owns (by
    :func:`by_vertex`) in a :class:`~timely.algorithms._graph.LocalIds`
    (14 to 28 bytes an id). An edge goes to the owner of its ``src`` and,
    kept there, on to the owner of its ``dst`` (the second hop through an
    ``iterative()`` scope, so that both look in the one table); with one
    worker both ends are looked up where the edge is. An end found is
    decided at once; an end not found waits, with its edge, while nodes
    of its time may still come, and is decided when they are all in,
    ``_RELEASE`` rows an activation and none while a peer holds a full
    send window of this worker's data. Memory per worker: its nodes and
    the edges waiting for theirs, O((m + n) / W) (the waiting edges are
    few when the nodes come first). Cost: two exchanges of every edge and
    a probe per end, in C.

    >>> import numpy as np
    >>> import timely
    >>> def work(worker):
    ...     got = []
    ...     with worker.dataflow() as scope:
    ...         edges_in, edges = scope.new_input()
    ...         nodes_in, nodes = scope.new_input()
    ...         known_edges(edges, nodes).inspect_batch(lambda t, b: got.extend(b.to_records()))
    ...     edges_in.send_batch(timely.Batch(src=np.array([1, 1, 5]), dst=np.array([2, 9, 1])))
    ...     nodes_in.send_batch(timely.Batch(node=np.array([1, 2, 5])))
    ...     edges_in.close()
    ...     nodes_in.close()
    ...     worker.drain()
    ...     return sorted(got)
    >>> timely.execute_directly(work)
    [(1, 2), (5, 1)]
    """
    if edges.scope.peers == 1:
        return _known(edges, nodes, None, src, dst, name)
    with edges.scope.iterative(name) as inner:
        handle, loop = inner.feedback(1)
        onward, kept = _known(edges.enter(inner), nodes.enter(inner), loop, src, dst, name)
        onward.connect_loop(handle)
        return kept.leave()


class _Vertices:
    """The ids of the nodes one worker owns and, once nodes come at more
    than one time, the first time each was named (a time as an integer:
    the root scope's epoch)."""

    def __init__(self) -> None:
        self.ids = LocalIds()
        self.first: Any = None         # the time of every node named so far, while one
        self.since: Growing | None = None

    @staticmethod
    def _epoch(time: object) -> int:
        epoch = time[0] if type(time) is tuple and len(time) == 1 else time
        if type(epoch) is not int:
            raise ColumnarError(f"known_edges takes nodes at more than one time only at "
                                f"integer times, not at {time!r}")
        return epoch

    def name(self, ids: np.ndarray, time: Any) -> None:
        before = len(self.ids)
        numbers = self.ids.insert(np.ascontiguousarray(ids))
        if self.first is None:
            self.first = time
        if self.since is None and time == self.first:
            return
        if self.since is None:
            self.since = Growing(np.int64)
            self.since.resize(before)
            self.since.view[:] = self._epoch(self.first)
        self.since.resize(len(self.ids))
        self.since.view[before:] = _INT64_MAX
        np.minimum.at(self.since.view, numbers, self._epoch(time))

    def known(self, ids: np.ndarray, time: Any) -> np.ndarray:
        """Whether each id was named at ``time`` or before."""
        if self.first is None or (self.since is None and not less_equal(self.first, time)):
            return np.zeros(len(ids), dtype=bool)
        numbers = self.ids.lookup(np.ascontiguousarray(ids))
        found = numbers >= 0
        if self.since is not None:
            found[found] = self.since.view[numbers[found]] <= self._epoch(time)
        return found


_INT64_MAX = np.iinfo(np.int64).max


def _known(edges, nodes, loop, src: str, dst: str, name: str):
    """The operator of :func:`known_edges`: with ``loop`` (inside an
    iterative scope), ``(onward, kept)``, the edges whose ``src`` is known
    (to feed back, exchanged by ``dst``) and those whose ``dst`` is too;
    without, the edges with both ends known."""
    b = OperatorBuilder(name, edges.scope)
    alone = loop is None
    route = (lambda column: Pipeline()) if alone else by_vertex
    vertex_in = b.new_input(nodes, route("node"))
    edge_in = b.new_input(edges, route(src))
    loop_in = None if alone else b.new_input(loop, route(dst))
    onward_out, onward = b.new_output()
    kept_out, kept = (onward_out, onward) if alone else b.new_output()
    allocator = edges.scope.worker.allocator

    def build(caps, info):
        caps.clear()
        state = [_Vertices()]       # let go once no input can bring anything more
        waiting: dict = {}          # time -> [capability, output, ends, [Batch, ...]]
        activate = info.activator.activate

        def outer(time):
            return time if alone else time[:-1]

        def complete(time, frontier) -> bool:
            """No node of ``time``'s outer time, or of one before it, can still come."""
            at = outer(time)
            return not any(less_equal(outer(element), at) for element in frontier.frontier())

        def decided(rows: Batch, ends: tuple[str, ...], time) -> np.ndarray:
            known = np.ones(len(rows), dtype=bool)
            for column in ends:
                known &= state[0].known(int64_column(rows, column, "the edges"), outer(time))
            return known

        def check(cap, rows: Batch, output, ends, final: bool, time) -> None:
            known = decided(rows, ends, time)
            if known.all():
                passed, left = rows, None
            else:
                passed = rows.filter(known)
                left = None if final else rows.filter(~known)
            if len(passed):
                output.session(cap).give_container(passed)
            if left is not None and len(left):
                held = waiting.get(time)
                if held is None:
                    port = 0 if output is onward_out else 1
                    held = waiting[time] = [cap.retain_for_output(port), output, ends, []]
                held[3].append(left)

        def run(frontiers):
            for cap, data in vertex_in:
                state[0].name(node_ids(data, "node"), outer(cap.time))
            inputs = [(edge_in, onward_out, (src, dst) if alone else (src,))]
            if loop_in is not None:
                inputs.append((loop_in, kept_out, (dst,)))
            for inp, output, ends in inputs:
                for cap, data in inp:
                    if type(data) is not Batch:
                        raise ColumnarError(f"the edges are Batches, not {type(data).__name__}")
                    if len(data):
                        check(cap, data, output, ends, complete(cap.time, frontiers[0]),
                              cap.time)
            budget = _RELEASE
            for time in sorted(waiting):
                if not complete(time, frontiers[0]):
                    continue
                held = waiting[time]
                cap, output, ends, parts = held
                while parts and budget > 0:
                    if allocator.congested():
                        allocator.on_window(activate)
                        return
                    rows = parts.pop()
                    budget -= len(rows)
                    passed = rows.filter(decided(rows, ends, time))
                    if len(passed):
                        output.session(cap).give_container(passed)
                if parts:
                    activate()
                    return
                cap.drop()
                del waiting[time]
            if not waiting and not any(f.frontier() for f in frontiers):
                state[0] = _Vertices()

        return run

    b.build(build)
    return onward if alone else (onward, kept)


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
