"""Triangles over streams of edge Batches: per vertex, the triangles it is
in, their total, and local clustering coefficients (LDBC Graphalytics' LCC).

The edges are read as a set (duplicates count once, self-loops are
dropped), each oriented towards its higher-degree end, and the triangles
are counted in C by the worker owning each triangle's lowest vertex while
the workers' blocks of oriented edges go round a ring: no wedge is ever a
row, and no worker holds more than its block and one visiting block.

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         local_clustering_coefficient(edges, directed=False).inspect_batch(
...             lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=np.array([1, 2, 3, 3]), dst=np.array([2, 3, 1, 4])))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(1, 1.0), (2, 1.0), (3, 0.3333333333333333), (4, 0.0)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms._graph import triangle_links
from timely.algorithms.edges import by_vertex, simple_arcs, summed, vertex_rows
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import loop_round, outer_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import KeyIndex, PendingBatches, join

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["local_clustering_coefficient", "triangle_count", "triangles"]


def _csr(lo: np.ndarray, hi: np.ndarray, weight: np.ndarray,
         n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges ``lo -> hi`` between node numbers ``0..n-1`` indexed by
    ``lo``: ``(starts, targets, weights)``, the out-edges of ``u`` at
    ``starts[u]:starts[u + 1]``."""
    order = np.argsort(lo, kind="stable")
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(lo, minlength=n), out=starts[1:])
    return starts, np.ascontiguousarray(hi[order]), np.ascontiguousarray(weight[order])


class _OwnBlock:
    """One worker's oriented edges at one time: the out-edges of the nodes
    it owns, indexed by source over the distinct ids they name, and the
    triangles and links found so far of the triangles rooted at its nodes."""

    def __init__(self, rows: Batch) -> None:
        # Numbered in order of arrival (sources first), which keeps the
        # counting's look-ups closer together than numbering by id.
        self.numbers = KeyIndex(1)
        lo = self.numbers.insert([np.asarray(rows["lo"], dtype=np.int64)])
        hi = self.numbers.insert([np.asarray(rows["hi"], dtype=np.int64)])
        n = len(self.numbers)
        self.ids = np.asarray(self.numbers.keys()[0]).astype(np.int64, copy=False)
        self.edges = _csr(lo, hi, np.asarray(rows["weight"], dtype=np.int64), n)
        self.triangles = np.zeros(n, dtype=np.int64)
        self.links = np.zeros(n, dtype=np.int64)

    def meet(self, visiting: Batch | None) -> None:
        """Counts the triangles ``u -> v, u -> w, v -> w`` with ``u -> v`` and
        ``u -> w`` here and ``v -> w`` in ``visiting`` (None: this block
        itself). Only edges between ids named here can close one."""
        if visiting is None:
            other = self.edges
        else:
            lo = self.numbers.lookup([np.asarray(visiting["lo"], dtype=np.int64)])
            hi = self.numbers.lookup([np.asarray(visiting["hi"], dtype=np.int64)])
            kept = (lo >= 0) & (hi >= 0)
            weight = np.asarray(visiting["weight"], dtype=np.int64)
            other = _csr(lo[kept], hi[kept], weight[kept], len(self.ids))
        triangle_links(*self.edges, *other, self.triangles, self.links)

    def found(self) -> Batch | None:
        """``(node, size, links)`` rows for the nodes in a triangle found here."""
        there = np.flatnonzero(self.triangles)
        if not len(there):
            return None
        return Batch(node=self.ids[there], size=np.zeros(len(there), dtype=np.int64),
                     links=self.links[there])


def _ring_step(own: Stream[Batch], visiting: Stream[Batch],
               name: str) -> tuple[Stream[Batch], Stream[Batch]]:
    """The operator of :func:`_oriented_triangles`, in its loop: ``own``
    brings each worker its block at round 0, ``visiting`` the block passed
    to it at each later round. Returns the ``(node, size, links)`` rows,
    sent at the last round, and the blocks to pass on, with the worker to
    pass each to in ``dest``."""
    index, peers = own.scope.index, own.scope.peers
    last = peers - 1
    b = OperatorBuilder(name, own.scope)
    own_in = b.new_input(own, by_vertex("lo"))
    visiting_in = b.new_input(visiting, Exchange("dest"))
    out, counted = b.new_output()
    ahead, passed = b.new_output()

    def build(caps, _info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        held = [PendingBatches(notificator) for _ in range(2)]
        onward: dict = {}                  # per time before the last round: a capability to pass on
        blocks: dict = {}                  # per outer time: this worker's _OwnBlock

        def run(frontiers):
            for port, inp in enumerate((own_in, visiting_in)):
                for cap, data in inp:
                    held[port].add(cap, data)
                    if loop_round(cap.time) < last and cap.time not in onward:
                        onward[cap.time] = cap.retain_for_output(1)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                time = ready.time
                outer, r = outer_time(time), loop_round(time)
                rows, visiting_rows = (h.take(time) for h in held)
                if rows is not None:
                    # Round 0: the worker's own block, the first to visit it.
                    blocks[outer] = _OwnBlock(rows)
                    visiting_rows = rows
                    if r < last:
                        notificator.notify_at(ready.delayed((*outer, last)))
                block = blocks.get(outer)
                if block is not None and visiting_rows is not None:
                    block.meet(None if rows is not None else visiting_rows)
                forward = onward.pop(time, None)
                if forward is not None:
                    if visiting_rows is not None:
                        ahead.session(forward).give_container(Batch(
                            lo=visiting_rows["lo"], hi=visiting_rows["hi"],
                            weight=visiting_rows["weight"],
                            dest=np.full(len(visiting_rows), (index + 1) % peers, np.int64)))
                    forward.drop()
                if r == last and outer in blocks:
                    found = blocks.pop(outer).found()
                    if found is not None:
                        out.session(ready).give_container(found)
                ready.drop()

        return run

    b.build(build)
    return counted, passed


def _oriented_triangles(pairs: Stream[Batch], name: str = "Triangles") -> Stream[Batch]:
    """``(node, size, links)`` rows from the ``(lo, hi, weight)`` edges of a
    simple undirected graph, each oriented from its lower to its higher
    (degree, id) end: per node in a triangle, ``links`` the sum of the
    weights of the edges opposite it (``size`` 0), in rows that a sum by
    node completes. Edges at different times are different graphs.

    A triangle ``u -> v, u -> w, v -> w`` is counted by the worker that owns
    ``u`` (the edges are exchanged by ``lo``), when it holds the out-edges
    of ``v``. The workers' blocks of out-edges go round a ring in an
    ``iterative()`` loop: at round ``r`` worker ``i`` counts, in C
    (:func:`~timely.algorithms._graph.triangle_links`), its own block
    against the block of worker ``i - r`` (mod ``peers``), then passes that
    block to worker ``i + 1``; after ``peers`` rounds every block has met
    every other. The work, O(m sqrt(m)) in all, is split by owner of ``u``;
    each worker holds its own block, the block visiting it and at most one
    arriving, O(m / peers) edges when the blocks are even, and receives m
    edges in all over the rounds (``peers - 1`` rounds of messages)."""
    with pairs.scope.iterative("TriangleRing") as inner:
        handle, visiting = inner.feedback(1)
        counted, passed = _ring_step(pairs.enter(inner), visiting, name)
        passed.connect_loop(handle)
        result = counted.leave()
    return result


def _neighbourhoods(edges: Stream[Batch], nodes: Stream[Batch] | None, directed: bool,
                    src: str, dst: str) -> Stream[Batch]:
    """Per vertex ``v``: ``size``, the number of its neighbours ``N(v)``
    (in- and out-neighbours, itself excluded), and ``links``, the number of
    ordered pairs ``(u, w)`` of ``N(v)`` with an edge ``u -> w`` (for an
    undirected graph both orientations of each edge: twice the edges).

    The links of ``v`` are the triangles ``v, u, w`` of the simple
    undirected graph, each counting the arcs between ``u`` and ``w`` (1 or
    2); the triangles are found with every edge oriented towards its
    higher-degree end (:func:`_oriented_triangles`), so no vertex's pairs of
    neighbours are ever listed: O(m sqrt(m)) work in all, where listing the
    wedges costs the sum of the squared degrees. The oriented edges go round
    the workers in blocks, so a worker holds O(m / peers) of them at once
    (its share by vertex id) and receives m in all over ``peers`` rounds."""
    arcs = simple_arcs(edges, directed, src, dst)

    def unordered(b: Batch) -> Batch:
        s, d = b["src"], b["dst"]
        return Batch(lo=np.minimum(s, d), hi=np.maximum(s, d), one=np.ones(len(s), np.int64))

    # Each neighbouring pair once, with the arcs between them (1 or 2).
    pairs = arcs.map_batch(unordered).aggregate(["lo", "hi"], "one", how="sum").map_batch(
        lambda b: Batch(lo=b["lo"], hi=b["hi"], weight=b["sum"]))
    ends = pairs.map_batch(lambda b: Batch(node=np.concatenate([b["lo"], b["hi"]]),
                                           one=np.ones(2 * len(b), np.int64)))
    degree = ends.aggregate("node", "one", how="sum").map_batch(
        lambda b: Batch(node=b["node"], degree=b["sum"]))
    with_lo = join(pairs, degree.map_batch(lambda b: Batch(lo=b["node"], dlo=b["degree"])),
                   on="lo")
    with_both = join(with_lo, degree.map_batch(lambda b: Batch(hi=b["node"], dhi=b["degree"])),
                     on="hi")

    def oriented(b: Batch) -> Batch:
        lo, hi = b["lo"], b["hi"]
        flip = (b["dlo"] > b["dhi"]) | ((b["dlo"] == b["dhi"]) & (lo > hi))
        return Batch(lo=np.where(flip, hi, lo), hi=np.where(flip, lo, hi), weight=b["weight"])

    def counted(node: np.ndarray, size: np.ndarray) -> Batch:
        return Batch(node=node, size=size, links=np.zeros(len(node), np.int64))

    rows = degree.map_batch(lambda b: counted(b["node"], b["degree"]))
    rows = rows.concat(_oriented_triangles(with_both.map_batch(oriented)))
    rows = rows.concat(vertex_rows(edges, nodes, src, dst).map_batch(
        lambda b: counted(b["node"], np.zeros(len(b), np.int64))))
    return summed(rows, ("size", "links"), "Neighbourhoods")


def local_clustering_coefficient(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                 directed: bool = True, src: str = "src", dst: str = "dst",
                                 ids: Ids = "int64") -> Stream[Batch]:
    """The local clustering coefficient of every vertex (Graphalytics LCC),
    as Batches with columns ``node`` and ``lcc`` (float64).

    ``N(v)`` is the set of ``v``'s in- and out-neighbours, ``v`` itself
    excluded. Directed: ``lcc(v) = |{(u, w) in E : u, w in N(v)}| /
    (|N(v)| (|N(v)| - 1))``, the edges among the neighbours over the
    ordered pairs of them. Undirected (``directed=False``): the same with
    each undirected edge among the neighbours counted once over the
    unordered pairs, ``2 e / (k (k - 1))``. 0 when ``|N(v)| < 2``. The
    edges are read as a set: duplicate edges count once (undirected: ``u -
    v`` and ``v - u`` are one edge), self-loops are dropped.

    Work: the triangles of the undirected graph, found in C with each edge
    oriented towards its higher-degree end, O(m sqrt(m)) split over the
    workers by vertex. Memory: each worker holds its share of the oriented
    edges and one other worker's share at a time, O(m / peers) (vertices
    spread by a hash of their ids, :func:`~timely.algorithms.edges.by_vertex`,
    whatever their degrees or low bits; a hub's out-edges, at most
    sqrt(2 m) once oriented, stay with it); the shares pass
    round the workers in ``peers`` rounds, so each worker receives m edges
    in all.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` maps back.
    """
    v = VertexIds(ids, "local_clustering_coefficient")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_local_clustering_coefficient(
        edges, nodes, directed=directed, src=src, dst=dst), ("node",))


def _local_clustering_coefficient(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                  directed: bool = True, src: str = "src",
                                  dst: str = "dst") -> Stream[Batch]:

    def coefficient(b: Batch) -> Batch:
        k = b["size"].astype(np.float64)
        pairs = k * (k - 1)
        lcc = np.divide(b["links"], pairs, out=np.zeros(len(b)), where=pairs > 0)
        return Batch(node=b["node"], lcc=lcc)

    return _neighbourhoods(edges, nodes, directed, src, dst).map_batch(coefficient)


def triangles(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
              dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    """Per vertex, the number of triangles of the undirected graph it is
    in, as Batches with columns ``node`` and ``triangles`` (int64).

    The edges are taken as undirected and as a set: ``u -> v`` and ``v ->
    u`` are one edge, duplicates count once, self-loops are dropped. A
    vertex's triangles are the edges among its neighbours.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` maps back.
    """
    v = VertexIds(ids, "triangles")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_triangles(edges, nodes, src=src, dst=dst), ("node",))


def _triangles(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
               dst: str = "dst") -> Stream[Batch]:
    return _neighbourhoods(edges, nodes, False, src, dst).map_batch(
        lambda b: Batch(node=b["node"], triangles=b["links"] // 2))


def triangle_count(edges: Stream[Batch], *, src: str = "src", dst: str = "dst",
                   ids: Ids = "int64") -> Stream[Batch]:
    """The number of triangles of the undirected graph, as one Batch with
    one row and a column ``triangles`` (int64), on one worker; no row for a
    graph without edges. The edges are read as in :func:`triangles`.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src`` and ``dst``; the count holds no id.
    """
    v = VertexIds(ids, "triangle_count")
    (edges,) = v.inputs((edges, (src, dst)))
    return _triangle_count(edges, src=src, dst=dst)


def _triangle_count(edges: Stream[Batch], *, src: str = "src", dst: str = "dst") -> Stream[Batch]:
    per_vertex = _triangles(edges, src=src, dst=dst).map_batch(
        lambda b: Batch(total=np.zeros(len(b), np.int64), triangles=b["triangles"]))
    return per_vertex.aggregate("total", "triangles", how="sum").map_batch(
        lambda b: Batch(triangles=b["sum"] // 3))
