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

from timely.algorithms._graph import Components, component_minima, hook
from timely.algorithms.edges import by_vertex, edge_ends, node_ids, spread_edges
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import Growing, each_time, least_values
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import KeyIndex, at_complete_times
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
    at it or whose label fell at it, over the edges this worker holds.

    A message at the one time the input can still bring (its frontier is
    that time alone) is joined in as it arrives and dropped: the edges are
    never held, only the nodes a time reports. A message at a later time
    waits for the times before it to be reported."""
    b = OperatorBuilder(name, edges.scope)
    inp = b.new_input(edges, Pipeline())
    out, result = b.new_output()

    def build(caps, _info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        index = KeyIndex(1)
        parts = Components()
        waiting: dict = {}          # time -> Batches not joined in yet
        # time -> (nodes before it, arrays of the old nodes whose label fell)
        reports: dict = {}
        notified: set = set()

        def join_in(time, rows: Batch) -> None:
            report = reports.get(time)
            if report is None:
                fallen: list[np.ndarray] = []
                report = reports[time] = (len(index), fallen)
            before = len(index)
            ids = index.insert([np.concatenate([rows["src"], rows["dst"]])])
            new = np.arange(before, len(index), dtype=np.int64)
            parts.grow(np.asarray(index.take(new)[0]).astype(np.int64, copy=False))
            # A time's first edges: every node is new and reported, so none is walked.
            fell = parts.union(ids[:len(rows)], ids[len(rows):], report=report[0] > 0)
            report[1].append(fell[fell < report[0]])

        def run(frontiers):
            # Report the complete times first: a later time joins in only after.
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready = item[0]
                notified.discard(ready.time)
                for rows in waiting.pop(ready.time, ()):
                    join_in(ready.time, rows)
                report = reports.pop(ready.time, None)
                if report is not None:
                    # New at the time, then the old nodes whose label fell (once each).
                    labelled = np.concatenate([np.arange(report[0], len(index), dtype=np.int64),
                                               np.unique(np.concatenate(report[1]))])
                    if len(labelled):
                        out.session(ready).give_container(Batch(
                            node=np.asarray(index.take(labelled)[0]), label=parts.labels(labelled)))
                ready.drop()
            frontier = frontiers[0].frontier()
            for cap, data in inp:
                time = cap.time
                if time not in notified:
                    notified.add(time)
                    notificator.notify_at(cap)
                if not len(data):
                    continue
                if not waiting and len(frontier) == 1 and frontier[0] == time:
                    join_in(time, data)
                else:
                    waiting.setdefault(time, []).append(data)

        return run

    b.build(build)
    return result


# The fill of a least-so-far: no label is larger (an id may equal it).
_LARGEST = np.iinfo(np.int64).max


def _first_of_groups(keys: np.ndarray) -> np.ndarray:
    """Positions where a run of equal ``keys`` (sorted) starts."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))


def _distinct_pairs(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((lo, hi))
    hi, lo = hi[order], lo[order]
    keep = np.ones(len(hi), dtype=bool)
    keep[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    return hi[keep], lo[keep]


_FANOUT = 64


def _bounded_tree(node: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges joining each group of ``node`` sharing a ``label`` to that
    label as a tree in which no vertex has more than ``_FANOUT`` children:
    the members in a row, the first ``_FANOUT`` linked to the label, each
    later one to the member ``_FANOUT`` times nearer the front. A star
    would join the same vertices, but its centre, owned by one worker,
    would take in an edge per member (a giant component's least label,
    linked to every small component that meets it); the tree's depth is
    ``log_FANOUT`` of the group."""
    keep = node != label
    node, label = node[keep], label[keep]
    order = np.lexsort((node, label))
    node, label = node[order], label[order]
    first = _first_of_groups(label)
    start = np.repeat(first, np.diff(np.append(first, len(label))))
    up = (np.arange(len(node)) - start) // _FANOUT - 1
    parent = np.where(up < 0, label, node[start + np.maximum(up, 0)])
    return node, parent


def _owners(stars):
    """Per node, on the worker that owns it (exchanged by node): the least
    of the labels the workers' union-finds gave it, ``m``, kept across
    times (:func:`~timely.algorithms._graph.hook`). Per complete time, rows
    of three kinds: ``kind`` 0, an edge ``(a, b)`` between two of those
    labels that the node joins (each distinct pair once, those of one lower
    label shaped by :func:`_bounded_tree`); 1, ``(node a, m b)`` for a node
    new at the time or whose ``m`` fell; 2, ``(m a, worker b)``, this
    worker's first request for the final label of an ``m``. Work: one pass
    in C over the time's rows and a sort of the edges it makes; state: an
    id and an ``m`` per node owned."""
    index = KeyIndex(1)
    least = Growing(np.int64)
    seen = Growing(np.uint8)
    asked = KeyIndex(1)
    me = stars.scope.index

    def step(_cap, rows):
        (got,) = rows
        if got is None:
            return None
        ids = index.insert([got["node"]])
        least.resize(len(index))
        seen.resize(len(index))
        hi, lo, changed = hook(ids, np.ascontiguousarray(got["label"], dtype=np.int64),
                               least.view, seen.view)
        hi, lo = _bounded_tree(*_distinct_pairs(hi, lo))
        nodes = np.asarray(index.take(changed)[0]).astype(np.int64, copy=False)
        ms = least.view[changed]
        known = len(asked)
        asked.insert([ms])
        wanted = np.asarray(asked.take(np.arange(known, len(asked)))[0]).astype(np.int64,
                                                                                copy=False)
        kind = np.concatenate([np.zeros(len(hi), np.int8), np.ones(len(nodes), np.int8),
                               np.full(len(wanted), 2, np.int8)])
        return Batch(kind=kind, a=np.concatenate([hi, nodes, wanted]),
                     b=np.concatenate([lo, ms, np.full(len(wanted), me, np.int64)]))

    return at_complete_times("Owners", [(stars, by_vertex("node"))], step)


def _answers(requests, labels):
    """On the worker owning each ``m``: ``requests`` ``(m, worker)`` rows
    ask for its final label, ``labels`` ``(node, label)`` rows say where
    the label of a joined ``m`` fell (an ``m`` never joined is its own
    label). Per complete time, ``(m, label, to)`` rows: the label of every
    ``m`` asked at the time, and the new label of every ``m`` whose label
    fell, to each worker that ever asked for it. State: a label per ``m``
    owned, a row per asking worker and ``m``."""
    index = KeyIndex(1)
    label = Growing(np.int64, fill=_LARGEST)
    asking_m = Growing(np.int64)
    asking_to = Growing(np.int64)

    def step(_cap, rows):
        asked, fell = rows
        parts = []
        if fell is not None:
            ids = index.insert([fell["node"]])
            label.resize(len(index))
            np.minimum.at(label.view, ids, np.asarray(fell["label"], dtype=np.int64))
            if asking_m.size:
                told = np.isin(asking_m.view, ids)
                m = asking_m.view[told]
                parts.append((m, asking_to.view[told]))
        if asked is not None:
            m = np.asarray(asked["a"], dtype=np.int64)
            ids = index.insert([m])
            label.resize(len(index))
            asking_m.extend(ids)
            asking_to.extend(np.asarray(asked["b"], dtype=np.int64))
            parts.append((ids, np.asarray(asked["b"], dtype=np.int64)))
        if not parts:
            return None
        ids = np.concatenate([p[0] for p in parts])
        to = np.concatenate([p[1] for p in parts])
        m = np.asarray(index.take(ids)[0]).astype(np.int64, copy=False)
        return Batch(m=m, label=np.minimum(label.view[ids], m), to=to)

    return at_complete_times("Answers", [(requests, by_vertex("a")), (labels, by_vertex("node"))],
                             step)


def _labelled(moves, answers):
    """On the worker owning each node: its ``m`` from ``moves`` (``(node
    a, m b)`` rows, local), and the final label of every ``m`` it asked for
    from ``answers`` (``(m, label, to)`` rows, exchanged by ``to``). Per
    complete time, ``(node, label)`` for every node new at the time or
    whose label fell. State: per node owned its ``m`` (numbered) and label,
    per ``m`` asked its label; a time whose answers lower a label gathers
    one flag per node of this worker."""
    nodes = KeyIndex(1)
    m_of = Growing(np.int64)            # per node: the number of its m in `heard`
    label = Growing(np.int64, fill=_LARGEST)
    heard = KeyIndex(1)
    final = Growing(np.int64, fill=_LARGEST)

    def step(_cap, rows):
        moved, answered = rows
        lowered = None
        if answered is not None:
            ids = heard.insert([answered["m"]])
            final.resize(len(heard))
            was = final.view[ids].copy()
            np.minimum.at(final.view, ids, np.asarray(answered["label"], dtype=np.int64))
            fell = ids[final.view[ids] < was]
            if len(fell):
                lowered = np.zeros(len(heard), dtype=bool)
                lowered[fell] = True
        known = len(nodes)
        if moved is not None:
            moved_ids = nodes.insert([moved["a"]])
            m_of.resize(len(nodes))
            label.resize(len(nodes))
            # Every m a node moves to was asked for, and answered, at this time or before.
            m_of.view[moved_ids] = heard.lookup([moved["b"]])
        dirty = np.zeros(len(nodes), dtype=bool)
        if lowered is not None and known:
            # The nodes held before whose m's label fell: one gather.
            dirty[:known] = lowered[m_of.view[:known]]
        if moved is not None:
            dirty[moved_ids] = True
        ids = np.flatnonzero(dirty)
        if not len(ids):
            return None
        now = final.view[m_of.view[ids]]
        fell = (now < label.view[ids]) | (ids >= known)
        ids, now = ids[fell], now[fell]
        label.view[ids] = now
        if not len(ids):
            return None
        return Batch(node=np.asarray(nodes.take(ids)[0]).astype(np.int64, copy=False), label=now)

    return at_complete_times("Labels", [(moves, Pipeline()), (answers, "to")], step)


def _joined(stars, on_round):
    """The least label per node over the ``(node, label)`` stars of all
    workers, kept across times; per time, the nodes whose label fell at it.

    Each node's owner keeps the least label the workers gave it (``m``)
    and links the other labels to it (:func:`_owners`); only those links,
    one per distinct pair of labels, are joined by min-label propagation in
    an ``iterative()`` scope; each owner then asks, once per ``m`` and
    worker, the worker owning ``m`` for its final label (:func:`_answers`)
    and labels its nodes (:func:`_labelled`). A star, a node and a label,
    crosses workers once; the loop carries labels, not nodes, and the
    links of one label are a tree of fan-out 64 per worker, so a giant
    component's least label takes in its share, not a row per member."""
    rows = _owners(stars)
    links = rows.filter_batch(lambda b: b["kind"] == 0)

    def arcs(b: Batch) -> Batch:
        a, c = b["a"], b["b"]
        return Batch(src=np.concatenate([a, c]), dst=np.concatenate([c, a]),
                     weight=np.zeros(2 * len(a), dtype=np.int64))

    joined = least_values(links.map_batch(arcs), None, "label",
                          vertices=links.map_batch(
                              lambda b: Batch(node=np.concatenate([b["a"], b["b"]]))),
                          self_seeded=True, on_round=on_round, name="MinLabel")
    requests = rows.filter_batch(lambda b: b["kind"] == 2)
    moves = rows.filter_batch(lambda b: b["kind"] == 1)
    return _labelled(moves, _answers(requests, joined))


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
