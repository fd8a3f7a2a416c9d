"""Graph algorithms by the definitions of the LDBC Graphalytics benchmark,
over streams of edge Batches.

Each takes a stream of :class:`~timely.Batch`\\ es with integer columns
``src`` and ``dst`` (the edges of one graph, given at one time; :func:`sssp`
also at many times) and,
optionally, a stream of Batches with a column ``node`` naming vertices that
may have no edges; the vertex set is every node named there or by an edge.
Vertex ids are any int64 values (sparse, negative, up to ``2**63 - 1``).
Each returns a stream of Batches with one row per vertex (the triangle
total: one row). Every step exchanges by vertex, and every floating-point
sum is taken in an order that does not depend on how rows were spread, so
the answers are the same, bit for bit, at any worker count.

- PageRank as Graphalytics (and networkx) define it, ranks summing to 1
  and dangling vertices' rank spread over all: it is
  :func:`~timely.algorithms.pagerank` with ``definition="normalized"``.
- :func:`label_propagation`: community detection by label propagation (CDLP).
- :func:`local_clustering_coefficient`: LCC, directed or undirected.
- :func:`triangles` and :func:`triangle_count`: triangles of an undirected graph.
- :func:`degrees`: in-, out- and total degree.
- :func:`sssp`: weighted single-source shortest paths (SSSP).

Graphalytics' graphs are simple. Here the neighbourhood algorithms (CDLP,
LCC, triangles) read the edges as a set: duplicate edges count once and
self-loops are dropped. PageRank and the degrees count every edge as given
(a duplicate twice, a self-loop as an out- and an in-edge of its vertex);
shortest paths take the least weight of parallel edges.

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

import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from timely.algorithms._graph import most_frequent, triangle_links
from timely.algorithms.graph import _edges, _ints, _node_degrees, _nodes, _Ranks, _reported, _spread
from timely.algorithms.propagation import check_weights, each_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import KeyIndex, PendingBatches, join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = [
    "degrees",
    "label_propagation",
    "local_clustering_coefficient",
    "sssp",
    "triangle_count",
    "triangles",
]

_INT64 = (-2**63, 2**63 - 1)


def _round(time: Any) -> int:
    """The round of a time of an iterative scope: its last coordinate."""
    return int(time[-1])


def _outer(time: Any) -> tuple:
    """The time outside an iterative scope of one of its times: all but the round."""
    return tuple(time[:-1])


def _per_key(stream: Stream[Batch], key: str, body: Callable[[Batch], Batch | None],
             name: str) -> Stream[Batch]:
    """``body(rows)`` per worker and complete time, over every row of that
    time whose ``key`` the worker owns (rows exchanged by ``key``): all the
    rows of a key meet in one call."""
    return each_time(stream, Exchange(key), body, name)


def _sums_by_node(rows: Batch, columns: tuple[str, ...]) -> Batch:
    """One row per distinct ``node`` of ``rows``, with the sums of the
    integer ``columns``."""
    keys, inverse = np.unique(rows["node"], return_inverse=True)
    sums = {}
    for c in columns:
        sums[c] = np.zeros(len(keys), dtype=np.int64)
        np.add.at(sums[c], inverse, np.asarray(rows[c], dtype=np.int64))
    return Batch({"node": keys, **sums})


def _summed(stream: Stream[Batch], columns: tuple[str, ...], name: str) -> Stream[Batch]:
    """Per vertex and time, the sums of the integer ``columns`` over the
    ``(node, *columns)`` rows of ``stream`` (each message first summed where
    it is, so only one row per vertex and message crosses workers)."""
    local = stream.map_batch(lambda b: _sums_by_node(b, columns))
    return _per_key(local, "node", lambda rows: _sums_by_node(rows, columns), name)


def _vertex_rows(edges: Stream[Batch], nodes: Stream[Batch] | None, src: str,
                 dst: str) -> Stream[Batch]:
    """A ``node`` row per edge end and per node of ``nodes`` (with repeats)."""
    rows = edges.map_batch(lambda b: Batch(node=np.concatenate(_edges(b, src, dst))))
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: Batch(node=_nodes(b, "node"))))
    return rows


def _simple_arcs(edges: Stream[Batch], directed: bool, src: str, dst: str) -> Stream[Batch]:
    """The edges as a set of ordered pairs ``(src, dst)`` without
    self-loops: distinct pairs when ``directed``, else both orientations
    of each distinct undirected edge."""

    def pairs(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        kept = s != d
        s, d = s[kept], d[kept]
        if not directed:
            s, d = np.minimum(s, d), np.maximum(s, d)
        return Batch(src=s, dst=d)

    simple = edges.map_batch(pairs).distinct(["src", "dst"])
    if directed:
        return simple
    return simple.map_batch(_both_ways)


def _both_ways(b: Batch) -> Batch:
    """Every pair of ``b`` and its reverse."""
    s, d = b["src"], b["dst"]
    return Batch(src=np.concatenate([s, d]), dst=np.concatenate([d, s]))


# -- PageRank ------------------------------------------------------------------


def _totals(stream: Stream[Batch], columns: tuple[str, ...], name: str) -> Stream[Batch]:
    """Per complete time, one row with the sum of each float column of
    ``columns`` over every worker's rows, correctly rounded (``math.fsum``,
    so independent of the order of the rows), sent to every worker. A time
    without rows has no row."""
    keyed = stream.map_batch(
        lambda b: b.select(columns).with_columns(total=np.zeros(len(b), dtype=np.int64)))

    def total(rows: Batch) -> Batch:
        return Batch({c: np.array([math.fsum(rows[c].tolist())]) for c in columns})

    return _per_key(keyed, "total", total, name).broadcast()


def _ordered_sums(state: _Ranks, got: Batch | None) -> np.ndarray:
    """Per vertex of ``state``, the sum of the contributions ``c`` sent to
    it in ``got``, added in the order of their values: the same sum
    whatever order they arrived in."""
    n = len(state.index)
    if got is None:
        return np.zeros(n)
    ids = np.asarray(state.index.lookup([got["node"]]), dtype=np.int64)
    values = np.asarray(got["c"], dtype=np.float64)
    order = np.lexsort((values, ids))
    return np.bincount(ids[order], weights=values[order], minlength=n)


def _normalized_step(info: Stream[Batch], contributions: Stream[Batch], totals: Stream[Batch],
                     reset: float, damping: float) -> Stream[Batch]:
    """The vertices' ranks at each round, on the worker that owns them:
    ``info`` brings the ``(node, degree, teleport)`` rows at round 0
    (``teleport`` 1.0 for a vertex the random surfer jumps to, else 0.0),
    ``contributions`` the ``(node, c)`` shares sent to them, ``totals`` (on
    every worker) the teleport count ``n`` and the dangling rank
    ``dangling`` of the round before. With ``n`` 0 every rank is 0."""
    b = OperatorBuilder("PageRankNormalized", info.scope)
    iin = b.new_input(info, Exchange("node"))
    cin = b.new_input(contributions, Exchange("node"))
    tin = b.new_input(totals, Pipeline())
    out, result = b.new_output()

    def build(caps, _info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        held = [PendingBatches(notificator) for _ in range(3)]
        state = _Ranks()
        teleport = [np.zeros(0)]

        def run(frontiers):
            for port, inp in enumerate((iin, cin, tin)):
                for cap, data in inp:
                    held[port].add(cap, data)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                time = ready.time
                rows, got, total = (h.take(time) for h in held)
                if rows is not None:
                    state.add(rows)
                    grown = np.zeros(len(state.index))
                    grown[:len(teleport[0])] = teleport[0]
                    grown[state.index.lookup([rows["node"]])] = rows["teleport"]
                    teleport[0] = grown
                if total is not None and len(state.index):
                    n = float(total["n"][0])
                    jump = teleport[0]
                    if n == 0.0:
                        state.rank[:] = 0.0
                    elif _round(time) == 0:
                        state.rank[:] = jump / n
                    else:
                        dangling = float(total["dangling"][0])
                        state.rank[:] = reset * jump / n + damping * (
                            _ordered_sums(state, got) + dangling * jump / n)
                    linked = state.degree > 0
                    share = np.zeros(len(state.rank))
                    share[linked] = state.rank[linked] / state.degree[linked]
                    out.session(ready).give_container(Batch(
                        node=state.index.keys()[0], rank=state.rank.copy(), share=share,
                        dangling=np.where(linked, 0.0, state.rank), teleport=jump.copy()))
                ready.drop()

        return run

    b.build(build)
    return result


def _teleported_pagerank(edges: Stream[Batch], info: Stream[Batch], iterations: int | None,
                         damping: float, src: str, dst: str, on_round=None) -> Stream[Batch]:
    """PageRank whose random surfer jumps, and passes the dangling rank,
    uniformly to the vertices with ``teleport`` 1.0 in the ``(node, degree,
    teleport)`` rows of ``info`` (one per vertex); ranks start uniform over
    them. Batches with columns ``node`` and ``rank``, one row per vertex."""
    if type(iterations) is not int or iterations < 0:
        raise ColumnarError(f"pagerank needs iterations >= 0, not {iterations!r}")
    if not 0.0 <= damping <= 1.0:
        raise ColumnarError(f"the damping factor is between 0 and 1, not {damping}")
    reset = 1.0 - damping
    directed = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), _edges(b, src, dst)))))
    counted = _totals(info.map_batch(
        lambda b: Batch(n=np.asarray(b["teleport"], dtype=np.float64),
                        dangling=np.zeros(len(b)))), ("n", "dangling"), "PageRankCount")

    with edges.scope.iterative() as inner:
        rank_handle, sent = inner.feedback(1)
        total_handle, carried = inner.feedback(1)
        ranks = _reported(_normalized_step(info.enter(inner), sent,
                                           counted.enter(inner).concat(carried), reset,
                                           damping), on_round)
        done, more = ranks.branch_when(lambda t: _round(t) < iterations)
        join(more, directed.enter(inner), left_on="node", right_on="src",
             persist="right").map_batch(
                 lambda b: Batch(node=b["dst"], c=b["share"])).connect_loop(rank_handle)
        _totals(more.map_batch(lambda b: Batch(n=b["teleport"], dangling=b["dangling"])),
                ("n", "dangling"), "DanglingRank").connect_loop(total_handle)
        result = done.leave()
    return result.map_batch(lambda b: Batch(node=b["node"], rank=b["rank"]))


def _pagerank_normalized(edges: Stream[Batch], nodes: Stream[Batch] | None,
                         iterations: int | None, damping: float, src: str, dst: str,
                         on_round=None) -> Stream[Batch]:
    """PageRank as LDBC Graphalytics (and networkx) define it, as Batches
    with columns ``node`` and ``rank`` (float64), one row per vertex: see
    :func:`timely.algorithms.pagerank` with ``definition="normalized"``.

    The teleport goes to every vertex: ranks start at ``1/N`` and the
    dangling rank is spread over all ``N`` vertices. The sums of each vertex
    are added in the order of their values and the dangling rank is
    correctly rounded, so the ranks do not depend on the worker count.
    """
    info = _node_degrees(edges, nodes, src, dst).map_batch(
        lambda b: b.with_columns(teleport=np.ones(len(b))))
    return _teleported_pagerank(edges, info, iterations, damping, src, dst, on_round)


# -- community detection by label propagation ------------------------------------


def _most_frequent(rows: Batch) -> Batch:
    """Per vertex with an ``own`` row: the label heard most often in its
    other rows, the least such label on a tie; its own label when it heard
    none. The ``(vertex, label)`` pairs heard are counted in a compiled hash
    table and the best per vertex is chosen in one pass in C."""
    node, label, own = rows["node"], rows["label"], rows["own"].astype(bool)
    mine_node, mine_label = node[own], label[own]
    heard = ~own
    if not heard.any():
        return Batch(node=mine_node, label=mine_label)
    pairs = KeyIndex(2)
    counts = np.bincount(pairs.insert([node[heard], label[heard]]))
    pair_node, pair_label = (np.asarray(c).astype(np.int64, copy=False) for c in pairs.keys())
    vertices = KeyIndex(1)
    mine = vertices.insert([mine_node])
    group = vertices.lookup([pair_node])
    kept = group >= 0
    best, found = most_frequent(np.ascontiguousarray(group[kept]),
                                np.ascontiguousarray(pair_label[kept]),
                                np.ascontiguousarray(counts[kept]), len(vertices))
    return Batch(node=mine_node, label=np.where(found[mine].astype(bool), best[mine], mine_label))


def label_propagation(edges: Stream[Batch], nodes: Stream[Batch] | None = None,
                      iterations: int = 10, *, directed: bool = True, src: str = "src",
                      dst: str = "dst") -> Stream[Batch]:
    """Community detection by label propagation (Graphalytics CDLP), as
    Batches with columns ``node`` and ``label`` (int64), one row per vertex.

    Synchronous: every vertex starts with its own id as its label; in each
    of ``iterations`` steps every vertex takes the label that is most
    frequent among its neighbours' labels of the step before, the least
    such label on a tie; a vertex without neighbours keeps its label.
    ``directed``: a vertex hears its in- and its out-neighbours, each edge
    direction once (a neighbour linked both ways is counted twice);
    undirected, each neighbour once. The edges are read as a set: duplicate
    edges count once, self-loops are dropped.

    Work per iteration: a join of the labels with the edges (both
    directions) and a sort of what each vertex heard, in C and numpy.
    """
    if type(iterations) is not int or iterations < 0:
        raise ColumnarError(f"label_propagation needs iterations >= 0, not {iterations!r}")
    heard_from = _simple_arcs(edges, directed, src, dst)
    if directed:
        heard_from = heard_from.map_batch(_both_ways)
    seeds = _vertex_rows(edges, nodes, src, dst).distinct("node").map_batch(
        lambda b: Batch(node=b["node"], label=b["node"]))

    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        labels = seeds.enter(inner).concat(loop)
        done, more = labels.branch_when(lambda t: _round(t) < iterations)
        heard = join(more, heard_from.enter(inner), left_on="node", right_on="src",
                     persist="right").map_batch(
            lambda b: Batch(node=b["dst"], label=b["label"], own=np.zeros(len(b), np.int8)))
        own = more.map_batch(
            lambda b: Batch(node=b["node"], label=b["label"], own=np.ones(len(b), np.int8)))
        _per_key(own.concat(heard), "node", _most_frequent,
                 "LabelPropagation").connect_loop(handle)
        result = done.leave()
    return result


# -- clustering coefficients and triangles ----------------------------------------


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
        lo = self.numbers.insert([_ints(rows["lo"])])
        hi = self.numbers.insert([_ints(rows["hi"])])
        n = len(self.numbers)
        self.ids = np.asarray(self.numbers.keys()[0]).astype(np.int64, copy=False)
        self.edges = _csr(lo, hi, _ints(rows["weight"]), n)
        self.triangles = np.zeros(n, dtype=np.int64)
        self.links = np.zeros(n, dtype=np.int64)

    def meet(self, visiting: Batch | None) -> None:
        """Counts the triangles ``u -> v, u -> w, v -> w`` with ``u -> v`` and
        ``u -> w`` here and ``v -> w`` in ``visiting`` (None: this block
        itself). Only edges between ids named here can close one."""
        if visiting is None:
            other = self.edges
        else:
            lo = self.numbers.lookup([_ints(visiting["lo"])])
            hi = self.numbers.lookup([_ints(visiting["hi"])])
            kept = (lo >= 0) & (hi >= 0)
            other = _csr(lo[kept], hi[kept], _ints(visiting["weight"])[kept], len(self.ids))
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
    own_in = b.new_input(own, Exchange("lo"))
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
                    if _round(cap.time) < last and cap.time not in onward:
                        onward[cap.time] = cap.retain_for_output(1)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                time = ready.time
                outer, r = _outer(time), _round(time)
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
    arcs = _simple_arcs(edges, directed, src, dst)

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
    rows = rows.concat(_vertex_rows(edges, nodes, src, dst).map_batch(
        lambda b: counted(b["node"], np.zeros(len(b), np.int64))))
    return _summed(rows, ("size", "links"), "Neighbourhoods")


def local_clustering_coefficient(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                 directed: bool = True, src: str = "src",
                                 dst: str = "dst") -> Stream[Batch]:
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
    edges and one other worker's share at a time, O(m / peers) when the
    shares are even (vertex ids spread by ``id % peers``); the shares pass
    round the workers in ``peers`` rounds, so each worker receives m edges
    in all.
    """

    def coefficient(b: Batch) -> Batch:
        k = b["size"].astype(np.float64)
        pairs = k * (k - 1)
        lcc = np.divide(b["links"], pairs, out=np.zeros(len(b)), where=pairs > 0)
        return Batch(node=b["node"], lcc=lcc)

    return _neighbourhoods(edges, nodes, directed, src, dst).map_batch(coefficient)


def triangles(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
              dst: str = "dst") -> Stream[Batch]:
    """Per vertex, the number of triangles of the undirected graph it is
    in, as Batches with columns ``node`` and ``triangles`` (int64).

    The edges are taken as undirected and as a set: ``u -> v`` and ``v ->
    u`` are one edge, duplicates count once, self-loops are dropped. A
    vertex's triangles are the edges among its neighbours.
    """
    return _neighbourhoods(edges, nodes, False, src, dst).map_batch(
        lambda b: Batch(node=b["node"], triangles=b["links"] // 2))


def triangle_count(edges: Stream[Batch], *, src: str = "src", dst: str = "dst") -> Stream[Batch]:
    """The number of triangles of the undirected graph, as one Batch with
    one row and a column ``triangles`` (int64), on one worker; no row for a
    graph without edges. The edges are read as in :func:`triangles`."""
    per_vertex = triangles(edges, src=src, dst=dst).map_batch(
        lambda b: Batch(total=np.zeros(len(b), np.int64), triangles=b["triangles"]))
    return per_vertex.aggregate("total", "triangles", how="sum").map_batch(
        lambda b: Batch(triangles=b["sum"] // 3))


# -- degrees ------------------------------------------------------------------------


def degrees(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
            dst: str = "dst") -> Stream[Batch]:
    """Per vertex, its degrees, as Batches with columns ``node``,
    ``in_degree``, ``out_degree`` and ``degree`` (their sum), all int64;
    isolated vertices (named only by ``nodes``) have 0.

    Every edge counts as given: a duplicate edge twice, a self-loop once as
    an out-edge and once as an in-edge of its vertex (degree 2). For the
    degrees of the simple graph, pass ``edges.distinct(["src", "dst"])``.
    """

    def ends(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        ones, zeros = np.ones(len(s), np.int64), np.zeros(len(s), np.int64)
        return Batch(node=np.concatenate([s, d]), in_degree=np.concatenate([zeros, ones]),
                     out_degree=np.concatenate([ones, zeros]))

    rows = edges.map_batch(ends)
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: Batch(
            node=_nodes(b, "node"), in_degree=np.zeros(len(b), np.int64),
            out_degree=np.zeros(len(b), np.int64))))
    return _summed(rows, ("in_degree", "out_degree"), "Degrees").map_batch(
        lambda b: b.with_columns(degree=b["in_degree"] + b["out_degree"]))


# -- single-source shortest paths ---------------------------------------------------


def sssp(edges: Stream[Batch], source: int, nodes: Stream[Batch] | None = None, *,
         directed: bool = True, weight: str = "weight", src: str = "src",
         dst: str = "dst") -> Stream[Batch]:
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
    """
    if type(source) is not int and not isinstance(source, np.integer):
        raise ColumnarError(f"the source is an int vertex id, not {source!r}")
    if not _INT64[0] <= int(source) <= _INT64[1]:
        raise ColumnarError(f"the source {source} is not an int64 vertex id")
    origin = np.int64(source)

    def arcs(b: Batch) -> Batch:
        s, d = _edges(b, src, dst)
        if weight not in b:
            raise ColumnarError(f"sssp takes edges with a column {weight!r}")
        w = check_weights(b[weight], weight)
        if not directed:
            s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
        return Batch(src=s, dst=d, weight=w)

    vertices = _vertex_rows(edges, nodes, src, dst)
    seeds = vertices.filter_batch(lambda b: b["node"] == origin).map_batch(
        lambda b: Batch(node=b["node"], distance=np.zeros(len(b))))
    return _spread(edges.map_batch(arcs), seeds, "distance", vertices=vertices, floating=True,
                   report_new=True, name="Distance")
