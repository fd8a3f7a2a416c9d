"""Communities over streams of edge Batches: label propagation (LDBC
Graphalytics' CDLP).

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         label_propagation(edges, directed=False).inspect_batch(
...             lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=np.array([1, 2, 3]), dst=np.array([2, 3, 1])))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(1, 1), (2, 1), (3, 1)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms._graph import most_frequent
from timely.algorithms.edges import both_ways, per_key, simple_arcs, vertex_rows
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import loop_round
from timely.container import Batch
from timely.dataflow.operators.relational import KeyIndex, join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["label_propagation"]


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
                      dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
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

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` and ``label`` map back, a tie
    keeping the least string.
    """
    v = VertexIds(ids, "label_propagation")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_label_propagation(edges, nodes, iterations, directed=directed,
                                                   src=src, dst=dst), ("node", "label"))


def _label_propagation(edges: Stream[Batch], nodes: Stream[Batch] | None = None,
                       iterations: int = 10, *, directed: bool = True, src: str = "src",
                       dst: str = "dst") -> Stream[Batch]:
    if type(iterations) is not int or iterations < 0:
        raise ColumnarError(f"label_propagation needs iterations >= 0, not {iterations!r}")
    heard_from = simple_arcs(edges, directed, src, dst)
    if directed:
        heard_from = heard_from.map_batch(both_ways)
    seeds = vertex_rows(edges, nodes, src, dst).distinct("node").map_batch(
        lambda b: Batch(node=b["node"], label=b["node"]))

    with edges.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        labels = seeds.enter(inner).concat(loop)
        done, more = labels.branch_when(lambda t: loop_round(t) < iterations)
        heard = join(more, heard_from.enter(inner), left_on="node", right_on="src",
                     persist="right").map_batch(
            lambda b: Batch(node=b["dst"], label=b["label"], own=np.zeros(len(b), np.int8)))
        own = more.map_batch(
            lambda b: Batch(node=b["node"], label=b["label"], own=np.ones(len(b), np.int8)))
        per_key(own.concat(heard), "node", _most_frequent,
                 "LabelPropagation").connect_loop(handle)
        result = done.leave()
    return result
