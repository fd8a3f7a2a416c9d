"""PageRank over streams of edge Batches: GraphX's unnormalized ranks (by
fixed iterations or to a tolerance, incremental), the normalized ranks of
LDBC Graphalytics and networkx, and personalized PageRank.

- :func:`pagerank`: ``definition="graphx"`` (default) or ``"normalized"``.
- :func:`personalized_pagerank`: the random jumps (and the dangling rank)
  go to a set of source vertices.

Each worker holds the ranks and out-arcs of the vertices it owns, in its
own 32-bit numbering of the ids it holds (8 bytes an arc); a round sums
what its vertices send per target (one pass in C) and sends a row per
distinct target. The normalized definitions add each vertex's sums in
the order of their values and round the dangling rank correctly, so their
ranks are the same, bit for bit, at any worker count.

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         pagerank(edges, 10).inspect_batch(lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=np.array([0, 1]), dst=np.array([1, 0])))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(0, 1.0), (1, 1.0)]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms.edges import edge_ends, node_ids, out_degrees, per_key, summed
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import latest, loop_round, pieces, pushed, reported, stepped
from timely.container import Batch
from timely.dataflow.channels import Pipeline
from timely.dataflow.operators.relational import KeyIndex, at_complete_times, join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["pagerank", "personalized_pagerank", "rescaled"]

OnRound = Callable[[int, int], object]


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


def _pagerank_fixed(nodes, directed, iterations: int, damping: float, on_round):
    """GraphX's ranks after ``iterations`` steps from ``r = 1`` everywhere
    (:func:`~timely.algorithms.propagation.stepped`). A vertex named only as
    a target is introduced to its owner by the first round's sums; only
    when round 0 is reported (no iterations, or ``on_round``) is it named
    by a row of its own."""
    every_round = on_round is not None
    vertices = None
    if nodes is not None:
        vertices = nodes.map_batch(lambda b: Batch(node=node_ids(b, "node")))
    if iterations == 0 or every_round:
        targets = directed.map_batch(lambda b: Batch(node=b["dst"]))
        vertices = targets if vertices is None else vertices.concat(targets)
    with directed.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = stepped(vertices.enter(inner) if vertices is not None else None,
                       pieces(directed).enter(inner), loop, iterations=iterations, damping=damping,
                       every_round=every_round)
        # The sums go round in slices: a worker queues one at a time for its peers.
        pieces(rows.map_batch(lambda b: b if "value" in b else None)).connect_loop(handle)
        ranks = reported(rows.map_batch(lambda b: b if "rank" in b else None), on_round)
        last = ranks.branch_when(lambda t: loop_round(t) < iterations)[0]
        return last.leave()


def pagerank(edges: Stream[Batch], iterations: int | None = 20, *, damping: float = 0.85,
             tolerance: float | None = None, nodes: Stream[Batch] | None = None,
             src: str = "src", dst: str = "dst", on_round: OnRound | None = None,
             definition: str = "graphx", ids: Ids = "int64") -> Stream[Batch]:
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

    Work per iteration (fixed iterations): one pass in C over the arcs and
    a hash probe per distinct target a worker sends to; memory per worker
    O(its arcs and vertices), with no table sized to the range of the ids.

    ``on_round(round, rows)``, when given, is called on each worker once a
    round is complete there, with the number of ranks computed (fixed
    iterations) or changed (tolerance) on that worker in it.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` maps back.
    """
    v = VertexIds(ids, "pagerank")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_pagerank(edges, iterations, damping=damping, tolerance=tolerance,
                                   nodes=nodes, src=src, dst=dst, on_round=on_round,
                                   definition=definition), ("node",))


def _pagerank(edges, iterations: int | None = 20, *, damping: float = 0.85,
              tolerance: float | None = None, nodes=None, src: str = "src", dst: str = "dst",
              on_round=None, definition: str = "graphx"):
    if definition not in ("graphx", "normalized"):
        raise ColumnarError(f"definition is 'graphx' or 'normalized', not {definition!r}")
    if definition == "normalized":
        if tolerance is not None:
            raise ColumnarError("pagerank with definition='normalized' runs fixed iterations, "
                                "not to a tolerance")
        return _pagerank_normalized(edges, nodes, iterations, damping, src, dst, on_round)
    if tolerance is None and (iterations is None or iterations < 0):
        raise ColumnarError("pagerank needs iterations >= 0 or a tolerance")
    if tolerance is not None and tolerance <= 0:
        raise ColumnarError(f"the tolerance is positive, not {tolerance}")
    directed = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), edge_ends(b, src, dst)))))
    if tolerance is None:
        assert iterations is not None
        return _pagerank_fixed(nodes, directed, iterations, damping, on_round)

    def ends(b: Batch) -> Batch:
        return Batch(node=np.concatenate([b["src"], b["dst"]]))

    vertices = directed.map_batch(ends)
    if nodes is not None:
        vertices = vertices.concat(nodes.map_batch(lambda b: Batch(node=node_ids(b, "node"))))
    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = pushed(directed.enter(inner), vertices.enter(inner), loop, damping=damping,
                      tolerance=tolerance)
        rows.filter_batch(lambda b: b["sent"]).map_batch(
            lambda b: b.select(["node", "value"])).connect_loop(handle)
        changed = rows.filter_batch(lambda b: ~b["sent"]).map_batch(
            lambda b: Batch(node=b["node"], rank=b["value"], round=b["round"]))
        ranks = reported(changed, on_round).leave()
    return latest(ranks, "node", "rank")


def _exact_parts(values: np.ndarray) -> list[float]:
    """Floats whose exact sum is the exact sum of ``values`` (a few of them:
    each ``math.fsum`` takes the correctly rounded rest of what the earlier
    ones left, until nothing is left), so that a sum of parts from many
    workers rounds as the sum of all their values would."""
    items = values.tolist()
    parts: list[float] = []
    while True:
        part = math.fsum(items)
        if part == 0.0:
            return parts
        parts.append(part)
        items.append(-part)


def rescaled(ranks: Stream[Batch], *, personalized: bool = False,
             column: str = "rank") -> Stream[Batch]:
    """GraphX's last step of PageRank (Spark 2.3 on, SPARK-18847): per
    time, ``column`` of the rows of ``ranks`` times their count over
    their sum, so that the ranks sum to the number of vertices even where
    dangling vertices let rank go; ``personalized``: divided by their sum
    (they sum to 1). Each time's rows must be the whole ranking, one row a
    vertex (a graph given at one time, as ``pagerank`` with ``iterations``
    or a ``tolerance`` gives it). The sum is correctly rounded (exact parts
    of each worker's rows, added once), so the factor does not depend on
    the worker count: the same ranks come out the same at any count. A sum
    of 0 scales as GraphX's does (``inf`` and ``nan``).

    >>> import numpy as np
    >>> import timely
    >>> def work(worker):
    ...     got = []
    ...     with worker.dataflow() as scope:
    ...         handle, edges = scope.new_input()
    ...         rescaled(pagerank(edges, 1)).inspect_batch(
    ...             lambda t, b: got.extend(b.to_records()))
    ...     handle.send_batch(timely.Batch(src=np.array([0]), dst=np.array([1])))
    ...     handle.close()
    ...     worker.drain()
    ...     return sorted(got)
    >>> timely.execute_directly(work)  # ranks 0.15 and 1.0 before
    [(0, 0.26086956521739135), (1, 1.7391304347826089)]
    """
    def sums(b: Batch) -> Batch:
        return Batch(rank=np.asarray(b[column], dtype=np.float64), count=np.ones(len(b)))

    totals = _totals(ranks.map_batch(sums), ("rank", "count"), "RankSum")

    def step(_cap, rows: list) -> Batch | None:
        got, total = rows
        if got is None:
            return None
        if total is None:
            raise ColumnarError("rescaled: no sum of the ranks came at their time")
        rank_sum, count = float(total["rank"][0]), float(total["count"][0])
        values = np.asarray(got[column], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = (values / np.float64(rank_sum) if personalized
                      else values * (np.float64(count) / np.float64(rank_sum)))
        return got.with_columns({column: scaled})

    return at_complete_times("Rescaled", [(ranks, Pipeline()), (totals, Pipeline())], step)


def _parts_of(batch: Batch, columns: tuple[str, ...]) -> Batch:
    """One message's rows as the exact parts of each column's sum (padded
    with zeros), all under one ``total`` key."""
    parts = [_exact_parts(np.asarray(batch[c], dtype=np.float64)) for c in columns]
    # A message with rows keeps one (its sums may be exact zeros).
    width = max([len(p) for p in parts] + [1 if len(batch) else 0])
    return Batch({**{c: np.array(p + [0.0] * (width - len(p))) for c, p in zip(columns, parts)},
                  "total": np.zeros(width, dtype=np.int64)})


def _totals(stream: Stream[Batch], columns: tuple[str, ...], name: str) -> Stream[Batch]:
    """Per complete time, one row with the sum of each float column of
    ``columns`` over every worker's rows, correctly rounded (``math.fsum``,
    so independent of the order of the rows), sent to every worker. Each
    message is first reduced where it is to the exact parts of its sums,
    so only those cross to the worker that adds them. A time without rows
    has no row."""
    keyed = stream.map_batch(lambda b: _parts_of(b, columns))

    def total(rows: Batch) -> Batch:
        return Batch({c: np.array([math.fsum(rows[c].tolist())]) for c in columns})

    return per_key(keyed, "total", total, name).broadcast()


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
    state = _Ranks()
    teleport = [np.zeros(0)]

    def step(cap, held) -> Batch | None:
        rows, got, total = held
        if rows is not None:
            state.add(rows)
            grown = np.zeros(len(state.index))
            grown[:len(teleport[0])] = teleport[0]
            grown[state.index.lookup([rows["node"]])] = rows["teleport"]
            teleport[0] = grown
        if total is None or not len(state.index):
            return None
        n = float(total["n"][0])
        jump = teleport[0]
        if n == 0.0:
            state.rank[:] = 0.0
        elif loop_round(cap.time) == 0:
            state.rank[:] = jump / n
        else:
            dangling = float(total["dangling"][0])
            state.rank[:] = reset * jump / n + damping * (
                _ordered_sums(state, got) + dangling * jump / n)
        linked = state.degree > 0
        share = np.zeros(len(state.rank))
        share[linked] = state.rank[linked] / state.degree[linked]
        return Batch(node=state.index.keys()[0], rank=state.rank.copy(), share=share,
                     dangling=np.where(linked, 0.0, state.rank), teleport=jump.copy())

    return at_complete_times("PageRankNormalized", [(info, "node"), (contributions, "node"),
                                                    (totals, Pipeline())], step)


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
    directed = edges.map_batch(lambda b: Batch(dict(zip(("src", "dst"), edge_ends(b, src, dst)))))
    counted = _totals(info.map_batch(
        lambda b: Batch(n=np.asarray(b["teleport"], dtype=np.float64),
                        dangling=np.zeros(len(b)))), ("n", "dangling"), "PageRankCount")

    with edges.scope.iterative() as inner:
        rank_handle, sent = inner.feedback(1)
        total_handle, carried = inner.feedback(1)
        ranks = reported(_normalized_step(info.enter(inner), sent,
                                           counted.enter(inner).concat(carried), reset,
                                           damping), on_round)
        done, more = ranks.branch_when(lambda t: loop_round(t) < iterations)
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
    info = out_degrees(edges, nodes, src, dst).map_batch(
        lambda b: b.with_columns(teleport=np.ones(len(b))))
    return _teleported_pagerank(edges, info, iterations, damping, src, dst, on_round)


def personalized_pagerank(edges: Stream[Batch], sources: Stream[Batch],
                          nodes: Stream[Batch] | None = None, iterations: int = 20, *,
                          damping: float = 0.85, src: str = "src", dst: str = "dst",
                          ids: Ids = "int64") -> Stream[Batch]:
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

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and the ``node`` of sources and nodes; ``node`` maps
    back.
    """
    v = VertexIds(ids, "personalized_pagerank")
    edges, sources, nodes = v.inputs((edges, (src, dst)), (sources, ("node",)),
                                     (nodes, ("node",)))
    return v.output(_personalized_pagerank(edges, sources, nodes, iterations,
                                                      damping=damping, src=src, dst=dst),
                    ("node",))


def _personalized_pagerank(edges: Stream[Batch], sources: Stream[Batch],
                           nodes: Stream[Batch] | None = None, iterations: int = 20, *,
                           damping: float = 0.85, src: str = "src",
                           dst: str = "dst") -> Stream[Batch]:

    def ends(b: Batch) -> Batch:
        s, d = edge_ends(b, src, dst)
        zeros = np.zeros(len(s) + len(d), np.int64)
        degree = np.concatenate([np.ones(len(s), np.int64), np.zeros(len(d), np.int64)])
        return Batch(node=np.concatenate([s, d]), degree=degree, teleport=zeros)

    def named(b: Batch, teleport: int) -> Batch:
        node = node_ids(b, "node")
        return Batch(node=node, degree=np.zeros(len(node), np.int64),
                     teleport=np.full(len(node), teleport, np.int64))

    rows = edges.map_batch(ends).concat(sources.map_batch(lambda b: named(b, 1)))
    if nodes is not None:
        rows = rows.concat(nodes.map_batch(lambda b: named(b, 0)))
    info = summed(rows, ("degree", "teleport"), "PersonalizedDegrees").map_batch(
        lambda b: b.with_columns(teleport=(b["teleport"] > 0).astype(np.float64)))
    return _teleported_pagerank(edges, info, iterations, damping, src, dst)
