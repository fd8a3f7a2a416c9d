"""Communities over streams of edge Batches: label propagation (LDBC
Graphalytics' CDLP), spread over the workers.

Each worker keeps the arcs of the vertices it owns (chosen by a 64-bit mix
of the id, as :func:`~timely.algorithms.edges.by_vertex` routes) as a CSR
over 32-bit numbers of its own, with the label of every vertex those arcs
reach. A round computes, in C, the most frequent neighbour label of each
vertex with a neighbour whose label changed, and only the labels that
changed travel, each to the workers that hold its vertex and under its
number there (learnt once, when the graph is built). A vertex with more
arcs than a worker should hold (a hub) has its arcs spread by a hash of both
ends; the workers' counts of its labels meet on the workers of each
``(vertex, label)`` pair, and only the best of each reach its owner.

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

import mmap
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from timely.algorithms._graph import (
    add_arcs,
    arc_listeners,
    bucket_ends,
    compact_arcs,
    edge_hash,
    fan_out,
    group_stably,
    heavy_buckets,
    label_modes,
    label_records,
    mark_heard,
    mirror_lists,
    owners,
    relabel_listeners,
    renumber,
    vertex_records,
)
from timely.algorithms.edges import by_vertex, edge_ends, node_ids
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import Growing, loop_round, outer_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.operators.core import per_time
from timely.dataflow.operators.relational import KeyIndex, Pace, PacedSender, at_complete_times
from timely.errors import ColumnarError
from timely.progress import less_equal

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["label_propagation"]

# A vertex is heavy when, on some worker, at least max(HEAVY_AT, 2 m_w /
# (HEAVY_SHARE * W)) of the ends of that worker's m_w edges are its own. A
# vertex that is not has fewer than W * HEAVY_AT + 2 m / (HEAVY_SHARE * W)
# arcs in all, which its owner keeps; a heavy one's arcs are spread.
HEAVY_AT = 4096
HEAVY_SHARE = 8
_BUCKETS = 1 << 16          # the hashed counters that find heavy candidates
_EDGES_A_MESSAGE = 1 << 16  # edges turned into records per message
_CHANGES_A_MESSAGE = 1 << 15  # changed vertices per message of a round
_ARCS_RESERVED = 1 << 22    # packed arcs first mapped (32 MiB of address space)
_IN_FLIGHT = 2 << 20        # bytes sent and not yet taken in, above which a sender waits
_LOOK_AGAIN = 200e-6        # seconds between a waiting sender's looks
# A message an activation, and with other workers none while more than
# _IN_FLIGHT bytes wait at the others: what waits costs memory on both sides,
# and a worker ahead of the others gains nothing by sending more.
_PACE = Pace(in_flight=_IN_FLIGHT, look_again=_LOOK_AGAIN)


def _to_worker(batch: Batch) -> np.ndarray:
    return np.asarray(batch["to"])


def _record_worker(batch: Batch) -> np.ndarray:
    return np.asarray(batch["tag"]) >> 3


_ADDRESSED = Exchange(batch=_to_worker)
_RECORDS = Exchange(batch=_record_worker)


def _by_pair(batch: Batch) -> np.ndarray:
    return edge_hash(np.ascontiguousarray(batch["node"], dtype=np.int64),
                     np.ascontiguousarray(batch["label"], dtype=np.int64))


def _complete(time: tuple, frontiers) -> bool:
    """No input can still bring data at ``time``."""
    return not any(less_equal(element, time) for frontier in frontiers
                   for element in frontier.frontier())


def _distinct(ids: np.ndarray) -> np.ndarray:
    """The distinct ``ids``, ascending (a sort in place of a copy)."""
    ids = np.sort(ids)
    return ids[np.concatenate([[True], ids[1:] != ids[:-1]])] if len(ids) else ids


# ---------------------------------------------------------------------------
# Heavy vertices
# ---------------------------------------------------------------------------


class _Ends:
    """A worker's edges of one time, as they arrive: kept (they are the
    caller's arrays) and counted into hashed buckets, so that the vertices
    with many ends are found with one more pass over the hot buckets."""

    def __init__(self) -> None:
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []
        self.counts = np.zeros(_BUCKETS, dtype=np.int64)
        self.count = 0

    def add(self, s: np.ndarray, d: np.ndarray) -> None:
        s, d = np.ascontiguousarray(s), np.ascontiguousarray(d)
        self.count += heavy_buckets(s, d, self.counts)
        self.edges.append((s, d))

    def heavy(self, peers: int) -> Batch | None:
        """The ``node`` rows of the vertices with at least the threshold of
        ends here (HEAVY_AT), or None."""
        least = max(HEAVY_AT, 2 * self.count // (HEAVY_SHARE * peers))
        hot = (self.counts >= least).astype(np.uint8)
        if not hot.any():
            return None
        ends = np.sort(np.concatenate([bucket_ends(s, d, hot) for s, d in self.edges]))
        start = np.flatnonzero(np.concatenate([[True], ends[1:] != ends[:-1]]))
        counts = np.diff(np.append(start, len(ends)))
        many = ends[start[counts >= least]]
        return Batch(node=many) if len(many) else None


def _heavy_vertices(edges: Stream[Batch], src: str, dst: str) -> Stream[Batch]:
    """Per time, on every worker: the ``node`` rows of the vertices that
    are heavy on some worker (see HEAVY_AT), broadcast."""
    peers = edges.scope.peers
    b = OperatorBuilder("HeavyVertices", edges.scope)
    inp = b.new_input(edges, Pipeline())
    out, found = b.new_output()

    def absorb(ends: _Ends, batch: Batch) -> _Ends:
        ends.add(*edge_ends(batch, src, dst))
        return ends

    def build(caps, _info):
        caps.clear()
        return per_time(b, inp, out, lambda _time: _Ends(), absorb,
                        lambda _time, ends: ends.heavy(peers))

    b.build(build)
    return found.broadcast()


# ---------------------------------------------------------------------------
# Records: the arcs, addressed to the workers that keep them
# ---------------------------------------------------------------------------


class _Inputs:
    """What one worker was given at one time, once the time is complete:
    its edges, nodes and the heavy vertices, as the caller's arrays."""

    def __init__(self) -> None:
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []
        self.nodes: list[np.ndarray] = []
        self.heavy: list[np.ndarray] = []

    def records(self, directed: bool, peers: int) -> Iterator[Batch]:
        """The records of the nodes, then of the edges, a message per worker
        and slice of ``_EDGES_A_MESSAGE``, each sent as it is (no split);
        ids travel as int32 where a whole array fits. Each array is let go
        once its records are made. (The nodes first: where they are dense
        ids, a worker's index of ids is dense from the start.) With one
        worker nothing is sent: ids stay int64."""
        heavy = _distinct(np.concatenate(self.heavy)) if self.heavy else np.zeros(0, np.int64)
        nodes, self.nodes = self.nodes, []
        while nodes:
            ids = nodes.pop(0)
            narrow = peers > 1 and _fits_int32(ids)
            for i in range(0, len(ids), _EDGES_A_MESSAGE):
                yield from _by_worker(*vertex_records(ids[i:i + _EDGES_A_MESSAGE], peers),
                                      narrow)
        edges, self.edges = self.edges, []
        while edges:
            s, d = edges.pop(0)
            narrow = peers > 1 and _fits_int32(s) and _fits_int32(d)
            for i in range(0, len(s), _EDGES_A_MESSAGE):
                yield from _by_worker(*label_records(s[i:i + _EDGES_A_MESSAGE],
                                                     d[i:i + _EDGES_A_MESSAGE], heavy, directed,
                                                     peers), narrow)


def _fits_int32(ids: np.ndarray) -> bool:
    return not len(ids) or (int(ids.min()) >= -2**31 and int(ids.max()) < 2**31)


def _by_worker(node: np.ndarray, heard: np.ndarray, tag: np.ndarray, starts: np.ndarray,
               narrow: bool) -> Iterator[Batch]:
    """A Batch of records per worker with any, its ids as int32 when
    ``narrow``."""
    for w in np.flatnonzero(np.diff(starts)):
        part = slice(int(starts[w]), int(starts[w + 1]))
        if narrow:
            yield Batch(node=node[part].astype(np.int32), heard=heard[part].astype(np.int32),
                        tag=tag[part])
        else:
            yield Batch(node=node[part], heard=heard[part], tag=tag[part])


def _records(edges: Stream[Batch], nodes: Stream[Batch] | None, heavy: Stream[Batch],
             directed: bool, src: str, dst: str) -> Stream[Batch]:
    """Per time, once the edges, nodes and heavy vertices of the time are
    all in: ``(node, heard, tag)`` records of every edge and node this
    worker was given, each for the worker ``tag >> 3``, made and sent a
    message at a time (:func:`~timely.algorithms._graph.label_records`)."""
    peers = edges.scope.peers

    def step(_cap, rows: list[list[Batch]]) -> Iterator[tuple[int, Batch]]:
        edge_rows, heavy_rows, node_rows = rows
        # Each Batch let go as its arrays are taken (a cast may copy them).
        given = _Inputs()
        while edge_rows:
            s, d = edge_ends(edge_rows.pop(0), src, dst)
            given.edges.append((np.ascontiguousarray(s), np.ascontiguousarray(d)))
        while heavy_rows:
            given.heavy.append(node_ids(heavy_rows.pop(0)))
        while node_rows:
            given.nodes.append(np.ascontiguousarray(node_ids(node_rows.pop(0))))
        return ((0, batch) for batch in given.records(directed, peers))

    return at_complete_times("LabelRecords", [(edges, Pipeline()), (heavy, Pipeline()),
                                              (nodes, Pipeline())], step, whole=False,
                             pace=_PACE)


# ---------------------------------------------------------------------------
# One worker's share of one time's graph
# ---------------------------------------------------------------------------


class _Mapped:
    """A buffer mapped from the system, private to the process: it grows
    and shrinks in place (``mremap``; where that is refused, a new mapping
    and a copy), only what is written is resident, and what it gives back
    leaves no hole in the C heap (numpy's ``resize`` copies). Views of it
    (:meth:`view`) must be let go before it is resized."""

    def __init__(self) -> None:
        self.map: mmap.mmap | None = None

    def __len__(self) -> int:
        return len(self.map) if self.map is not None else 0

    def resize(self, size: int) -> None:
        size = max(size, 1)
        if self.map is None:
            self.map = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            return
        try:
            self.map.resize(size)
        except (OSError, SystemError):
            grown = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            keep = min(size, len(self.map))
            grown[:keep] = self.map[:keep]
            self.map.close()
            self.map = grown

    def view(self, dtype, count: int) -> np.ndarray:
        if self.map is None:
            self.resize(1)
        assert self.map is not None
        return np.frombuffer(self.map, dtype=dtype, count=count)


class _Share:
    """One worker's part of the label propagation of one time.

    Built from the records as they arrive: a :class:`KeyIndex` numbers the
    ids, each arc is packed in a uint64 (``listener << 32 | heard << 1 |
    direction``, :func:`~timely.algorithms._graph.add_arcs`) and a vertex
    record only flags its number. Once all are in, the index goes and the
    vertices are numbered again: the listeners first, most arcs first (the
    labels read most often sit together), then the mirrors (vertices
    owned elsewhere, heard here) by owner and id, then the heavy vertices
    only heard. The packed arcs are sorted in place by their new listener,
    repeats dropped and the heard numbers kept as int32 in the first half
    of the same memory (``heard``, a CSR by listener, ``starts``), the rest
    given back. A vertex only named (no arc) is answered at once and
    dropped.

    Per number: its id, its label and a changed flag. A mirror's number is
    ``base[owner] + rank``, its rank among the mirrors of that owner here
    by id: the owner knows which workers hold its vertices (those keeping
    an arc that hears them) and so each rank, and tells a changed label to
    ``(owner << 32 | rank)`` on each, with no id looked up."""

    def __init__(self, me: int, peers: int) -> None:
        self.me, self.peers = me, peers
        self.index: KeyIndex | None = KeyIndex(1)
        self.arcs = _Mapped()       # the packed arcs, then the heard numbers
        self.used = 0
        self.named = Growing(np.uint8)          # per number: a vertex record came
        self.numbers = np.zeros(0, dtype=np.int64)   # a message's numbers, reused
        self.heavy_given: list[np.ndarray] = []
        self.pending: dict[int, list[tuple[int, Batch]]] = {}   # loop time -> messages
        self.done = -1              # the last loop time acted on

    # -- building --------------------------------------------------------------

    def take_records(self, batch: Batch) -> None:
        assert self.index is not None
        n = len(batch)
        if len(self.numbers) < 2 * n:
            self.numbers = np.empty(2 * n, dtype=np.int64)
        listener = self.index.insert([batch["node"]], out=self.numbers[:n])
        heard = self.index.insert([batch["heard"]], out=self.numbers[n:2 * n])
        self.named.resize(len(self.index))
        room = len(self.arcs) // 8
        if self.used + 2 * n > room:
            self.arcs.resize(8 * max(self.used + 2 * n, room + room // 2, _ARCS_RESERVED))
        self.used = add_arcs(self.arcs.view(np.uint64, len(self.arcs) // 8), self.used, listener,
                             heard, np.ascontiguousarray(batch["tag"], dtype=np.int32),
                             self.named.view)

    def build(self) -> Batch:
        """Turns the arcs into the CSR and each listener's mirrors into
        lists; returns the ``(node, label)`` answers of the vertices
        without arcs, dropped from the share.

        The listeners are numbered first, most arcs first (the labels read
        most often sit together), and the arcs sorted and halved by them
        before anything else is made; then the mirrors by owner and id, then
        the heavy vertices only heard."""
        index = self.index
        assert index is not None
        me, peers = self.me, self.peers
        heavy = (_distinct(np.concatenate(self.heavy_given)) if self.heavy_given
                 else np.zeros(0, np.int64))
        index.insert([heavy[owners(heavy, peers) == me]])    # each heavy vertex at its owner
        size = len(index)
        self.named.resize(size)
        owned = self.named.view.astype(bool)
        self.named = Growing(np.uint8)
        self.numbers = np.zeros(0, dtype=np.int64)
        is_heavy = np.zeros(size, dtype=bool)
        at = index.lookup([heavy])
        is_heavy[at[at >= 0]] = True
        ids = np.asarray(index.keys()[0]).astype(np.int64, copy=False)
        self.index = index = None
        owned[is_heavy] |= owners(ids[is_heavy], peers) == me
        arcs = self.arcs.view(np.uint64, self.used)
        listens = np.zeros(size, dtype=np.int32)
        arc_listeners(arcs, listens)
        first = np.flatnonzero(listens)
        first = first[np.argsort(-listens[first], kind="stable")].astype(np.int32)
        del listens
        rank = np.full(size, -1, dtype=np.int32)
        rank[first] = np.arange(len(first), dtype=np.int32)
        relabel_listeners(arcs, rank)
        arcs.sort()
        del arcs
        count, listeners, sizes = compact_arcs(self.arcs.view(np.uint64, self.used), self.used)
        self.arcs.resize(4 * count)                        # in place: gives the rest back
        self.heard = self.arcs.view(np.int32, count)
        self.listeners = len(first)
        self.starts = np.zeros(self.listeners + 1, dtype=np.int64)
        self.starts[1 + listeners] = sizes
        np.cumsum(self.starts, out=self.starts)
        del listeners, sizes
        listening = rank >= 0
        heard = np.zeros(size, dtype=np.uint8)
        mark_heard(self.heard, heard)
        alone = ids[owned & ~(listening | heard.view(bool) | is_heavy)]
        # The mirrors by owner, then id: the order every owner can tell.
        mirrors = np.flatnonzero(heard.view(bool) & ~listening & ~is_heavy).astype(np.int32)
        del heard
        mirrors = mirrors[np.argsort(ids[mirrors])]
        mirrors, groups = group_stably(mirrors, owners(ids[mirrors], peers), peers)
        self.base = groups[:-1] + len(first)
        rest = np.flatnonzero(~listening & is_heavy).astype(np.int32)
        order = np.concatenate([first, mirrors, rest])      # new number -> old number
        del first, mirrors, rest, groups
        owned |= listening & ~is_heavy
        del listening
        rank[order] = np.arange(len(order), dtype=np.int32)
        renumber(self.heard, rank)
        del rank
        self.ids = ids[order]
        del ids
        heavy_new = is_heavy[order]
        self.owned = np.flatnonzero(owned[order]).astype(np.int32)
        del owned, is_heavy, order
        self.skip = heavy_new[:self.listeners].astype(np.uint8)
        self.labels = self.ids.copy()
        self.changed = np.zeros(len(self.ids), dtype=np.uint8)
        self.heavy_numbers = np.flatnonzero(heavy_new)
        self.heavy_known = self.ids[self.heavy_numbers]
        at = np.argsort(self.heavy_known)
        self.heavy_known, self.heavy_numbers = self.heavy_known[at], self.heavy_numbers[at]
        if peers > 1:
            self._mirror_lists(heavy_new.view(np.uint8))
        return Batch(node=alone, label=alone.copy())

    def _mirror_lists(self, heavy: np.ndarray) -> None:
        """Per light listener, the workers holding a mirror of it and its
        number there (``fan_starts``, ``fan_worker``, ``fan_number``)."""
        by_id = np.argsort(self.ids[:self.listeners])
        self.fan_starts, self.fan_worker, self.fan_number = mirror_lists(
            self.starts, self.heard, self.ids, heavy, self.skip, by_id, self.me, self.peers)

    # -- rounds ------------------------------------------------------------------

    def take_changes(self, batch: Batch) -> None:
        number = np.asarray(batch["number"], dtype=np.int64)
        local = self.base[number >> 32] + (number & 0xFFFFFFFF)
        if len(local) and (local.min() < self.listeners or local.max() >= len(self.labels)):
            raise ColumnarError("label propagation: a label for a mirror not held here")
        self.labels[local] = batch["label"]
        self.changed[local] = 1

    def take_heavy_changes(self, batch: Batch) -> None:
        node = np.asarray(batch["node"])
        if not len(self.heavy_known):
            return
        at = np.minimum(np.searchsorted(self.heavy_known, node), len(self.heavy_known) - 1)
        known = self.heavy_known[at] == node
        numbers = self.heavy_numbers[at[known]]
        self.labels[numbers] = np.asarray(batch["label"])[known]
        self.changed[numbers] = 1

    def step(self, first: bool) -> tuple[np.ndarray, np.ndarray, Batch | None]:
        """One round: the listeners whose label changes and their labels,
        applied here, and the label counts of the heavy vertices' arcs held
        here (``(node, label, count)``), from the labels before."""
        rows, new = label_modes(self.starts, self.heard, self.labels, self.changed, self.skip,
                                first)
        counts = self._heavy_counts()
        self.changed[:] = 0
        self.labels[rows] = new
        self.changed[rows] = 1
        return rows, new, counts

    def _heavy_counts(self) -> Batch | None:
        parts = np.flatnonzero(self.skip)
        if not len(parts):
            return None
        first, last = self.starts[parts], self.starts[parts + 1]
        sizes = last - first
        part_of = np.repeat(parts, sizes)
        at = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
        label = self.labels[self.heard[at]]
        order = np.lexsort((label, part_of))
        part_of, label = part_of[order], label[order]
        start = np.flatnonzero(np.concatenate(
            [[True], (part_of[1:] != part_of[:-1]) | (label[1:] != label[:-1])]))
        counts = np.diff(np.append(start, len(label)))
        return Batch(node=self.ids[part_of[start]], label=label[start], count=counts)

    def changes(self, rows: np.ndarray, new: np.ndarray) -> Iterator[Batch]:
        """``(number, label, to)`` rows telling each mirror of ``rows`` its new label."""
        for i in range(0, len(rows), _CHANGES_A_MESSAGE):
            number, label, to = fan_out(rows[i:i + _CHANGES_A_MESSAGE],
                                        new[i:i + _CHANGES_A_MESSAGE], self.fan_starts,
                                        self.fan_worker, self.fan_number)
            yield Batch(number=number, label=label, to=to.astype(np.int32))

    def answers(self) -> Batch:
        return Batch(node=self.ids[self.owned], label=self.labels[self.owned])


# ---------------------------------------------------------------------------
# The rounds
# ---------------------------------------------------------------------------


class _Time:
    """A time's share on this worker, the loop time it waits for, its
    capabilities (one per output) and whether it is still sending."""

    def __init__(self, share: _Share, caps: list) -> None:
        self.share = share
        self.caps = caps
        self.waiting = 0
        self.sending = False


def _propagate(records, heavy, changes, heavy_changes, iterations: int):
    """The operator of the rounds, inside the loop. Loop time 0: the
    records are taken in as they arrive; once all are in, the share is
    built and the first round computed (every vertex from its own label).
    ``r``: the labels changed in round ``r - 1`` are applied as they
    arrive, round ``r`` is computed, and only the labels that change are
    sent, each to its vertex's mirrors; at ``iterations``, the answers.
    Outputs: the changes, the heavy vertices' label counts and the answers
    ``(node, label)``."""
    scope = records.scope
    me, peers = scope.index, scope.peers
    b = OperatorBuilder("LabelPropagation", scope)
    ports = [b.new_input(records, _RECORDS), b.new_input(heavy, Pipeline()),
             b.new_input(changes, _ADDRESSED), b.new_input(heavy_changes, _ADDRESSED)]
    outs = [b.new_output() for _ in range(3)]
    handles = [o[0] for o in outs]

    def build(caps, info):
        caps.clear()
        live: dict = {}             # outer time -> _Time
        sender = PacedSender(scope, info, _PACE)

        def apply(share: _Share, port: int, batch: Batch) -> None:
            if port == 2:
                share.take_changes(batch)
            else:
                share.take_heavy_changes(batch)

        def act(entry: _Time) -> None:
            """Acts on loop time ``entry.waiting``, now complete."""
            share, t, now = entry.share, entry.waiting, entry.caps
            for port, batch in share.pending.pop(t, ()):
                apply(share, port, batch)
            if t == 0:
                alone = share.build()
                if len(alone):
                    handles[2].session(now[2]).give_container(alone)
            if t == iterations:
                handles[2].session(now[2]).give_container(share.answers())
            else:
                rows, new, counts = share.step(first=t == 0)
                if counts is not None:
                    handles[1].session(now[1]).give_container(counts)
                if peers > 1 and len(rows):
                    sender.add([now[0]], ((handles[0], part) for part in share.changes(rows, new)),
                               drop=False)
            share.done = t
            for port, batch in share.pending.pop(t + 1, ()):
                apply(share, port, batch)

        def run(frontiers):
            for port, inp in enumerate(ports):
                for cap, data in inp:
                    outer, t = outer_time(cap.time), loop_round(cap.time)
                    entry = live.get(outer)
                    if entry is None:
                        if t != 0:
                            raise ColumnarError("label propagation: a round's message for a "
                                                "time this worker holds nothing of")
                        entry = live[outer] = _Time(_Share(me, peers),
                                                    [cap.retain_for_output(k) for k in range(3)])
                    share = entry.share
                    if not len(data):
                        continue
                    if port == 0:
                        share.take_records(data)
                    elif port == 1:
                        share.heavy_given.append(node_ids(data))
                    elif share.done >= t - 1:
                        apply(share, port, data)
                    else:
                        share.pending.setdefault(t, []).append((port, data))
            for outer in sorted(live):
                entry = live[outer]
                while True:
                    if entry.sending:
                        if not sender.send():
                            return
                        entry.sending = False
                        if entry.waiting == iterations:
                            for cap in entry.caps:
                                cap.drop()
                            del live[outer]
                            break
                        entry.waiting += 1
                        for cap in entry.caps:
                            cap.downgrade((*outer, entry.waiting))
                    if not _complete((*outer, entry.waiting), frontiers):
                        break
                    act(entry)
                    entry.sending = True

        return run

    b.build(build)
    return [o[1] for o in outs]


def _heavy_sums(counts: Stream[Batch]) -> Stream[Batch]:
    """Per loop time, on the worker of each ``(node, label)`` pair: the sum
    of its counts from the workers holding the node's arcs, and per node
    the best of its pairs here (the largest count, the least label)."""

    def step(_cap, rows):
        (got,) = rows
        if got is None:
            return None
        return _best(np.asarray(got["node"]), np.asarray(got["label"]),
                     np.asarray(got["count"]), summed=True)

    return at_complete_times("HeavyLabelCounts", [(counts, Exchange(batch=_by_pair))], step)


def _best(node: np.ndarray, label: np.ndarray, count: np.ndarray, summed: bool) -> Batch:
    """Per node, the label of the largest count (of the summed counts per
    ``(node, label)`` when ``summed``), the least on a tie."""
    if summed:
        order = np.lexsort((label, node))
        node, label, count = node[order], label[order], count[order]
        start = np.flatnonzero(np.concatenate(
            [[True], (node[1:] != node[:-1]) | (label[1:] != label[:-1])]))
        node, label, count = node[start], label[start], np.add.reduceat(count, start)
    order = np.lexsort((label, -count, node))
    node, label, count = node[order], label[order], count[order]
    first = np.flatnonzero(np.concatenate([[True], node[1:] != node[:-1]]))
    return Batch(node=node[first], label=label[first], count=count[first])


def _heavy_labels(best: Stream[Batch], peers: int, iterations: int) -> Stream[Batch]:
    """On each heavy vertex's owner, per loop time: its label for the next
    round (the best of the workers' best pairs), and when it changed, a
    ``(node, label, to)`` row for every worker."""
    held: dict = {}             # outer time -> (KeyIndex of nodes, their labels)

    def step(cap, rows):
        (got,) = rows
        outer, t = outer_time(cap.time), loop_round(cap.time)
        if got is None:
            return None
        top = _best(np.asarray(got["node"]), np.asarray(got["label"]),
                    np.asarray(got["count"]), summed=False)
        index, labels = held.setdefault(outer, (KeyIndex(1), Growing(np.int64)))
        node = np.asarray(top["node"]).astype(np.int64, copy=False)
        before = len(index)
        numbers = index.insert([node])
        labels.resize(len(index))
        new = numbers >= before
        labels.view[numbers[new]] = node[new]       # a label starts as its vertex's id
        label = np.asarray(top["label"])
        moved = labels.view[numbers] != label
        labels.view[numbers[moved]] = label[moved]
        if t >= iterations - 1:
            held.pop(outer, None)
        node, label = node[moved], label[moved]
        if not len(node):
            return None
        return Batch(node=np.repeat(node, peers), label=np.repeat(label, peers),
                     to=np.tile(np.arange(peers, dtype=np.int64), len(node)))

    return at_complete_times("HeavyLabels", [(best, by_vertex("node"))], step)


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
    edges count once, self-loops are dropped. Each time's edges and nodes
    are a graph of their own.

    Spread over the workers: each vertex's arcs are kept by its owner (a
    hub's, spread by a hash of both ends), as a CSR of 32-bit numbers;
    memory per worker O((m + n) / W): on 10^7 R-MAT edges, 27 to 41 bytes
    per edge over all workers at 1 to 8 workers. Work per step: the arcs of
    the vertices with a neighbour whose label changed, in C; only the
    labels that changed travel, once to each worker holding their vertex.

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
    heavy = _heavy_vertices(edges, src, dst)
    records = _records(edges, nodes, heavy, directed, src, dst)
    with edges.scope.iterative() as inner:
        (changes_in, changes), (heavy_in, heavy_changes) = inner.feedback(1), inner.feedback(1)
        changed, counts, answers = _propagate(records.enter(inner), heavy.enter(inner), changes,
                                              heavy_changes, iterations)
        changed.connect_loop(changes_in)
        _heavy_labels(_heavy_sums(counts), edges.scope.peers, iterations).connect_loop(heavy_in)
        result = answers.leave()
    return result
