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

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms._graph import Components, LocalIds, hook
from timely.algorithms.edges import by_vertex, edge_ends, node_ids, spread_edges
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import Growing, least_values, pieces
from timely.container import Batch
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.operators.relational import Pace, at_complete_times
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["connected_components"]

OnRound = Callable[[int, int], object]


# Edges joined into a union-find per call: bounds the numbers held at once.
_CHUNK = 1 << 20


class _Share:
    """A worker's share of a union-find run: its ids numbered in 32 bits
    and the union-find over those numbers."""

    __slots__ = ("ids", "parts")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ids = LocalIds()
        self.parts = Components()


def _kept_components(edges, name: str = "Components", fresh: bool = False):
    """``(src, dst)`` edges at many times into one union-find per worker
    kept across times (:class:`~timely.algorithms._graph.Components`, over
    the worker's own 32-bit numbering of the ids it holds,
    :class:`~timely.algorithms._graph.LocalIds`): per complete time, in
    time order, ``(node, label)`` for every node new at it or whose label
    fell at it, over the edges this worker holds. With ``fresh``, each time
    starts from nothing (a union-find over that time's edges only): every
    node of the time is reported, linked to the least node of its part.

    A message at the one time the input can still bring (its frontier is
    that time alone) is joined in as it arrives and dropped: the edges are
    never held, only the nodes a time reports. A message at a later time
    waits for the times before it to be reported. A time's report is sent
    in slices of ``_SLICE`` rows made as they go, one an activation and none
    while a peer holds a full send window of this worker's data, so the
    rows in flight stay O(slice + window); nothing is joined in meanwhile.
    Memory per worker: about 37 bytes per id held (its number, its id and
    the union-find's 21 bytes)."""
    state = _Share()
    # time -> (nodes before it, arrays of the old nodes whose label fell)
    reports: dict = {}

    def join_in(time, rows: Batch) -> None:
        ids, parts = state.ids, state.parts
        report = reports.get(time)
        if report is None:
            fallen: list[np.ndarray] = []
            report = reports[time] = (len(ids), fallen)
        src = np.ascontiguousarray(rows["src"], dtype=np.int64)
        dst = np.ascontiguousarray(rows["dst"], dtype=np.int64)
        for at in range(0, len(rows), _CHUNK):
            before = len(ids)
            a = ids.insert(src[at:at + _CHUNK])
            b = ids.insert(dst[at:at + _CHUNK])
            if len(ids) > before:
                parts.grow(ids.view()[before:])
            # A time's first edges: every node is new and reported, so none is walked.
            fell = parts.union(a, b, report=report[0] > 0)
            if len(fell):
                report[1].append(fell[fell < report[0]])

    def sent(first: int, last: int, fallen: np.ndarray) -> Iterator[tuple[int, Batch]]:
        # The new nodes, then the old ones whose label fell, a slice at a time.
        ids, parts = state.ids, state.parts
        new = last - first
        for at in range(0, new + len(fallen), _SLICE):
            stop = min(at + _SLICE, new + len(fallen))
            numbers = np.concatenate([
                np.arange(first + min(at, new), first + min(stop, new), dtype=np.int64),
                fallen[max(at - new, 0):max(stop - new, 0)]])
            yield 0, Batch(node=ids.ids(numbers), label=parts.labels(numbers))
        if fresh:
            state.reset()

    def step(cap, _rows) -> Iterator[tuple[int, Batch]] | None:
        report = reports.pop(cap.time, None)
        if report is None:
            return None
        fallen = (np.unique(np.concatenate(report[1])) if report[1]
                  else np.zeros(0, dtype=np.int64))
        return sent(report[0], len(state.ids), fallen)

    return at_complete_times(name, [(edges, Pipeline(), join_in)], step, pace=Pace())


# Rows per slice of a report.
_SLICE = 1 << 17


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


class _Cells(Growing):
    """A :class:`~timely.algorithms.propagation.Growing` array that grows by
    a quarter (or to the size asked): per-node state is most of a worker's
    memory here, and doubling would leave up to half of it unused."""

    def reserve(self, size: int) -> None:
        if size > len(self.data):
            grown = np.full(max(size, len(self.data) + len(self.data) // 4), self.fill,
                            dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown


class _Owned:
    """What one worker keeps of the nodes it owns (by
    :func:`~timely.algorithms.edges.by_vertex`), shared by the operators
    that own them (:func:`_owners`, :func:`_labelled`, on the same worker):
    the nodes' numbers, each node's ``m`` (the least label the workers'
    union-finds gave it) and whether it has one (``seen``: 2 for a node
    named with no label, its own ``m``), the ``m``'s it asked for
    (numbered), each node's ``m`` by that number (-1 for its own, not
    asked) and its label as reported, and the final label of each ``m``
    asked. About 42 bytes per node owned, and 28 per ``m`` asked."""

    def __init__(self) -> None:
        self.nodes = LocalIds()
        self.least = _Cells(np.int64)
        self.seen = _Cells(np.uint8)
        self.asked = LocalIds()
        self.m_of = _Cells(np.int32)             # per node labelled: its m's number in asked
        self.label = _Cells(np.int64, fill=_LARGEST)
        self.final = _Cells(np.int64, fill=_LARGEST)


def _owners(owned: _Owned, stars, named):
    """Per node, on the worker that owns it: the least of the labels the
    workers' union-finds gave it in ``stars`` (``(node, label)`` rows), its
    ``m``, kept across times (:func:`~timely.algorithms._graph.hook`); a
    node of ``named`` (``node`` rows) with no label is its own ``m``. Per
    complete time, Batches of three kinds: ``(a, b)``, an edge between two
    of those labels that the node joins (each distinct pair once, those of
    one lower label shaped by :func:`_bounded_tree`); ``(node, m)``, the
    numbers (in ``owned``) of a node new at the time or whose ``m`` fell and
    of its ``m`` (-1 for a node that is its own, named with no label: it
    asks for nothing); ``(m, worker)``, this worker's first request for the
    final label of an ``m``. Work: one pass in C over the time's rows and a
    sort of the edges it makes."""
    me = stars.scope.index

    def step(_cap, held):
        got, names = held
        his, los, changes = [], [], []
        # Every id numbered first, so that the per-node arrays grow once a time.
        star_ids = [owned.nodes.insert(np.ascontiguousarray(rows["node"], dtype=np.int64))
                    for rows in got]
        name_ids = [owned.nodes.insert(np.ascontiguousarray(rows["node"], dtype=np.int64))
                    for rows in names]
        owned.least.resize(len(owned.nodes))
        owned.seen.resize(len(owned.nodes))
        for ids, rows in zip(star_ids, got):
            hi, lo, changed = hook(ids, np.ascontiguousarray(rows["label"], dtype=np.int64),
                                   owned.least.view, owned.seen.view)
            his.append(hi)
            los.append(lo)
            changes.append(changed)
        del star_ids
        for ids in name_ids:
            # A node named with no label is its own m, final until a star
            # gives it one (a label of its own id needs a star of it), so
            # it asks for nothing; seen 2 makes that star count as a change.
            alone = ids[owned.seen.view[ids] == 0]
            owned.seen.view[alone] = 2
            owned.least.view[alone] = owned.nodes.ids(alone)
            changes.append(alone)
        del name_ids
        if not changes:
            return None
        # Each node changed once however many messages named it: a flag per node.
        flags = np.zeros(len(owned.nodes), dtype=bool)
        for changed in changes:
            flags[changed] = True
        changed = np.flatnonzero(flags)
        del flags
        parts = []
        if his:
            hi, lo = _bounded_tree(*_distinct_pairs(np.concatenate(his), np.concatenate(los)))
            parts.append(Batch(a=hi, b=lo))
        asking = owned.seen.view[changed] == 1
        numbers = np.full(len(changed), -1, dtype=np.int32)
        known = len(owned.asked)
        numbers[asking] = owned.asked.insert(owned.least.view[changed[asking]])
        parts.append(Batch(node=changed.astype(np.int32), m=numbers))
        wanted = owned.asked.view()[known:].copy()
        parts.append(Batch(m=wanted, worker=np.full(len(wanted), me, np.int64)))
        return parts

    return at_complete_times("Owners", [(stars, by_vertex("node")), (named, by_vertex("node"))],
                             step, whole=False)


def _answers(requests, labels):
    """On the worker owning each ``m``: ``requests`` ``(m, worker)`` rows
    ask for its final label, ``labels`` ``(node, label)`` rows say where
    the label of a joined ``m`` fell (an ``m`` never joined is its own
    label). Per complete time, ``(m, label, to)`` rows: the label of every
    ``m`` asked at the time, and the new label of every ``m`` whose label
    fell, to each worker that ever asked for it. State: a label per ``m``
    owned, a row per asking worker and ``m``."""
    index = LocalIds()
    label = _Cells(np.int64, fill=_LARGEST)
    asking_m = _Cells(np.int32)
    asking_to = _Cells(np.int32)

    def step(_cap, held):
        asked, fell = held
        parts = []
        for rows in fell:
            ids = index.insert(np.ascontiguousarray(rows["node"], dtype=np.int64))
            label.resize(len(index))
            np.minimum.at(label.view, ids, np.asarray(rows["label"], dtype=np.int64))
            if asking_m.size:
                told = np.isin(asking_m.view, ids)
                parts.append((asking_m.view[told], asking_to.view[told]))
        for rows in asked:
            ids = index.insert(np.ascontiguousarray(rows["m"], dtype=np.int64))
            label.resize(len(index))
            to = np.asarray(rows["worker"], dtype=np.int32)
            asking_m.extend(ids)
            asking_to.extend(to)
            parts.append((ids, to))
        if not parts:
            return None
        ids = np.concatenate([p[0] for p in parts])
        to = np.concatenate([p[1] for p in parts])
        m = index.ids(ids)
        return [Batch(m=m, label=np.minimum(label.view[ids], m), to=to.astype(np.int64))]

    return at_complete_times("Answers", [(requests, by_vertex("m")), (labels, by_vertex("node"))],
                             step, whole=False)


def _labelled(owned: _Owned, moves, answers):
    """On the worker owning each node: its ``m`` from ``moves`` (``(node,
    m)`` numbers in ``owned``, local), and the final label of every ``m``
    it asked for from ``answers`` (``(m, label, to)`` rows, exchanged by
    ``to``). Per complete time, ``(node, label)`` for every node new at the
    time or whose label fell; a time whose answers lower a label gathers
    one flag per node of this worker."""

    def step(_cap, held):
        moved, answered = held
        lowered = None
        # A generator: the operator sends each slice as it is made.
        final = owned.final
        for rows in answered:
            ids = owned.asked.lookup(np.ascontiguousarray(rows["m"], dtype=np.int64))
            final.resize(len(owned.asked))
            was = final.view[ids].copy()
            np.minimum.at(final.view, ids, np.asarray(rows["label"], dtype=np.int64))
            fell = ids[final.view[ids] < was]
            if len(fell):
                if lowered is None:
                    lowered = np.zeros(len(owned.asked), dtype=bool)
                lowered[fell] = True
        known = owned.label.size
        moved_ids = []
        for rows in moved:
            ids = rows["node"]
            size = max(known, int(ids.max()) + 1)
            if size > owned.label.size:
                owned.m_of.resize(size)
                owned.label.resize(size)
            # Every m a node moves to was asked for, and answered, at this time or before.
            owned.m_of.view[ids] = rows["m"]
            moved_ids.append(ids)
        dirty = np.zeros(owned.label.size, dtype=bool)
        m_of = owned.m_of.view
        if lowered is not None and known:
            # The nodes held before whose m's label fell: one gather (a node
            # that is its own m, -1, asked for nothing and is never lowered).
            asked = np.flatnonzero(m_of[:known] >= 0)
            dirty[asked] = lowered[m_of[asked]]
            del asked
        for ids in moved_ids:
            dirty[ids] = True
        final.resize(len(owned.asked))
        # In slices, each sent before the next is made.
        for start in range(0, len(dirty), _SLICE):
            ids = np.flatnonzero(dirty[start:start + _SLICE])
            if not len(ids):
                continue
            ids += start
            ms = m_of[ids]
            now = owned.nodes.ids(ids)
            with_m = ms >= 0
            now[with_m] = final.view[ms[with_m]]
            changed = (now < owned.label.view[ids]) | (ids >= known)
            if not changed.all():
                ids, now = ids[changed], now[changed]
            owned.label.view[ids] = now
            if len(ids):
                yield Batch(node=owned.nodes.ids(ids), label=now)

    return at_complete_times("Labels", [(moves, Pipeline()), (answers, Exchange("to"))], step,
                             whole=False)


def _kind(*columns: str):
    """Keeps the Batches of :func:`_owners` with these columns, as they are."""
    return lambda b: b if tuple(b.names) == columns else None


def _joined(stars, named, on_round):
    """The least label per node over the ``(node, label)`` stars of all
    workers and the ``node`` rows of ``named`` (each its own label unless
    a star gives it one), kept across times; per time, the nodes whose
    label fell at it.

    Each node's owner keeps the least label the workers gave it (``m``)
    and links the other labels to it (:func:`_owners`); only those links,
    one per distinct pair of labels, are joined by min-label propagation in
    an ``iterative()`` scope; each owner then asks, once per ``m`` and
    worker, the worker owning ``m`` for its final label (:func:`_answers`)
    and labels its nodes (:func:`_labelled`). A star, a node and a label,
    crosses workers once; the loop carries labels, not nodes, and the
    links of one label are a tree of fan-out 64 per worker, so a giant
    component's least label takes in its share, not a row per member."""
    owned = _Owned()
    rows = _owners(owned, stars, named)
    links = rows.map_batch(_kind("a", "b"))

    def arcs(b: Batch) -> Batch:
        a, c = b["a"], b["b"]
        return Batch(src=np.concatenate([a, c]), dst=np.concatenate([c, a]),
                     weight=np.zeros(2 * len(a), dtype=np.int64))

    joined = least_values(links.map_batch(arcs), None, "label",
                          vertices=links.map_batch(
                              lambda b: Batch(node=np.concatenate([b["a"], b["b"]]))),
                          self_seeded=True, on_round=on_round, name="MinLabel")
    requests = rows.map_batch(_kind("m", "worker"))
    moves = rows.map_batch(_kind("node", "m"))
    return _labelled(owned, moves, _answers(requests, joined))


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
      fell. Memory per worker: its edges' nodes and the nodes it owns,
      each in its own 32-bit numbering (no table sized to the range of the
      ids), O((m + n) / W) for random or hashed ids; a node named in
      ``nodes`` only goes to its owner, and is its own label there
      without asking any worker.
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
    named = None if nodes is None else nodes.map_batch(lambda b: Batch(node=node_ids(b, "node")))
    if method == "union-find" and edges.scope.peers == 1:
        if named is not None:
            edges = edges.concat(named.map_batch(lambda b: Batch(src=b["node"], dst=b["node"])))
        return _kept_components(edges, "LocalComponents")
    edges = spread_edges(pieces(edges))
    stars = _kept_components(edges, "LocalComponents" if method == "union-find" else "LocalForest",
                             fresh=method == "propagate")
    if named is None:
        named = stars.map_batch(lambda b: None)
    return _joined(stars, pieces(named), on_round)
