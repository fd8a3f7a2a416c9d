"""Triangles over streams of edge Batches: per vertex, the triangles it is
in, their total, and local clustering coefficients (LDBC Graphalytics' LCC).

The edges are read as a set (duplicates count once, self-loops are
dropped), each oriented towards its higher-degree end, and the triangles
are counted in C by the worker owning each triangle's lowest vertex while
the workers' blocks of oriented edges go round a ring: no wedge is ever a
row, and no worker holds more than its block and the one visiting it.

How, per time, for ``m`` edges on ``W`` workers (every stage sends its
messages a window at a time, so what is in flight stays bounded):

1. each edge's ends, lower id first, go to the worker of a hash of both
   (even over the workers, a hub's edges included);
2. that worker numbers the distinct ids it holds, keeps each pair once as
   one uint64 of two numbers (8 bytes an edge) and asks each id's owner
   (by a hash of the id) for its degree, telling it how many of its pairs
   the id is in;
3. the owner sums what it is told into the degree, gives each of its
   vertices a global number (its place among the owner's ids, times
   ``W``, plus the owner's index: dense, int32 while they fit) and answers
   every question with both;
4. the pair's worker orients each pair towards its end higher in (degree,
   global number) order and sends the oriented edge, as two global
   numbers, to the owner of its lower end;
5. each owner indexes its block by source over the global numbers its
   edges name (CSR, int32 positions, a directory finding a number's
   position in O(1)), counts its block against itself, then in ``W - 1``
   rounds of an ``iterative()`` loop against the block of worker ``i -
   r``, which that worker sends it, keeping of each visiting edge only the
   target's position, and only for edges whose ends its own block names;
6. per vertex, the links found go to its owner, who sums them with the
   degree into ``(node, size, links)``; for the count alone, each worker's
   number of triangles is summed.

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

import ctypes
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from timely.algorithms._graph import (
    SortedIds,
    block_counts,
    block_edges,
    block_place,
    distinct_sorted,
    edge_hash,
    end_counts,
    merge_pairs,
    orient_pairs,
    pair_keys,
    simple_pairs,
    triangle_links,
    visiting_targets,
)
from timely.algorithms.edges import by_vertex, edge_ends, node_ids
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import loop_round, outer_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Addressed, Broadcast, Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import at_complete_times

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["local_clustering_coefficient", "triangle_count", "triangles"]

# Rows per message the stages send: about a megabyte at most.
ROWS = 1 << 16

_INT32_MAX = np.iinfo(np.int32).max


def _slices(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, ROWS):
        yield start, min(n, start + ROWS)


def _narrow(values: np.ndarray) -> np.ndarray:
    """Non-negative int64 ``values`` as int32 where all of them fit."""
    if len(values) and int(values.max()) > _INT32_MAX:
        return values
    return values.astype(np.int32)


def _distinct_in(buffer: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values (int64) of the integer arrays ``parts``,
    sorted and compacted in ``buffer`` (room for all of them, of a dtype
    that holds them), which stays the caller's to use again."""
    at = 0
    for p in parts:
        buffer[at:at + len(p)] = p
        at += len(p)
    values = buffer[:at]
    values.sort()
    return values[:distinct_sorted(values)].astype(np.int64)


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of two int64 arrays (not ``np.union1d``,
    whose hashing takes tens of bytes a value)."""
    values = np.concatenate([a, b])
    values.sort()
    values.resize(distinct_sorted(values), refcheck=False)
    return values


_malloc_trim: list[Callable[[int], object] | None] = []


def _give_back() -> None:
    """Returns the C heap's free pages to the system (glibc's
    ``malloc_trim``; nothing elsewhere). Once a large block was freed,
    glibc serves blocks of up to 32 MiB from its heap and keeps them when
    freed, so the pages of a stage's arrays stay resident after it lets
    them go and the next stage's peak would stack on them. Each stage
    calls this once it has let go of most of what it held."""
    if not _malloc_trim:
        try:
            found = ctypes.CDLL(None).malloc_trim
            found.argtypes = [ctypes.c_size_t]
            _malloc_trim.append(found)
        except (OSError, AttributeError):
            _malloc_trim.append(None)
    trim = _malloc_trim[0]
    if trim is not None:
        trim(0)


def _key_shift(n: int) -> int:
    """The bits of a position among ``n`` ids in a pair key."""
    return max(1, (n - 1).bit_length())


def _gid_type(largest: int) -> type:
    return np.int32 if largest <= _INT32_MAX else np.int64


class _Paced:
    """What an operator sends once a time is complete, handed out one
    message an activation while there are other workers, and none while
    one of them holds a full window of this worker's data
    (:mod:`timely.communication.allocator`): what is in flight stays about
    a window a peer, where giving every message at once would hold all of
    them, their parts per worker and their encoded frames until the peers
    took them in. With one worker every message is handed over at once.
    Once the messages of a time are all sent, their stage has let go of
    what it held for them: the heap's free pages go back to the system."""

    def __init__(self, scope: Any, info: Any) -> None:
        self._pending: deque = deque()
        self._allocator = scope.worker.allocator
        self._activate = info.activator.activate
        self._paced = scope.peers > 1

    def send(self, caps: list, messages: Iterator[tuple[Any, Any]]) -> None:
        """Queues ``messages``, ``(output, Batch or Addressed)`` pairs, to be
        sent at the time of ``caps`` (the capabilities of the outputs they
        use), which are dropped once the last is sent."""
        self._pending.append((caps, messages))

    def run(self) -> None:
        """Sends what may be sent now; call at the end of every activation."""
        pending = self._pending
        while pending:
            caps, messages = pending[0]
            if self._paced and self._allocator.congested():
                self._allocator.on_window(self._activate)
                return
            item = next(messages, None)
            if item is None:
                pending.popleft()
                for cap in caps:
                    cap.drop()
                del caps, messages
                _give_back()
                continue
            out, message = item
            out.give_at(caps[0].time, message)
            if self._paced:
                self._activate()
                return


def _both(ready: Any) -> tuple[Any, Any]:
    """The capabilities of outputs 0 and 1 that a notificator gives back
    together for a time at which both were requested, output 0's first."""
    first, second = ready
    return first, second


# -- 1. pairs -------------------------------------------------------------------------


def _pair_route(batch: Batch) -> np.ndarray:
    return edge_hash(batch["lo"], batch["hi"])


def _simple_pairs(edges: Stream[Batch], directed: bool, src: str, dst: str,
                  keep_loops: bool) -> tuple[Stream[Batch], Stream[Batch]]:
    """``(lo, hi)`` rows (``arcs`` too when ``directed``: see
    :func:`~timely.algorithms._graph.simple_pairs`) of every edge that is
    not a self-loop, bound for the worker of a hash of both ends, and
    (``keep_loops``) ``node`` rows of the self-loops' vertices."""
    b = OperatorBuilder("TrianglePairs", edges.scope)
    inp = b.new_input(edges, Pipeline(), notify=False)
    pairs_out, pairs = b.new_output()
    loops_out, loops = b.new_output()

    def messages(s: np.ndarray, d: np.ndarray) -> Iterator[tuple[Any, Batch]]:
        for start, stop in _slices(len(s)):
            lo, hi, arcs, looped = simple_pairs(s[start:stop], d[start:stop], directed)
            if len(lo):
                pairs_out_batch = (Batch(lo=lo, hi=hi) if arcs is None
                                   else Batch(lo=lo, hi=hi, arcs=arcs))
                yield pairs_out, pairs_out_batch
            if keep_loops and len(looped):
                yield loops_out, Batch(node=looped)

    def build(caps, info):
        caps.clear()
        paced = _Paced(edges.scope, info)

        def run(frontiers):
            for cap, data in inp:
                s, d = edge_ends(data, src, dst)
                if len(s):
                    paced.send([cap.retain_for_output(0), cap.retain_for_output(1)],
                               messages(np.ascontiguousarray(s), np.ascontiguousarray(d)))
            paced.run()

        return run

    b.build(build)
    return pairs, loops


# -- 2. numbered pairs and the questions for the degrees ------------------------------


def _degree_requests(pairs: Stream[Batch], directed: bool) -> tuple[Stream[Batch],
                                                                     Stream[Batch]]:
    """Per worker and time, its distinct pairs as ``key`` (uint64, the
    positions of both ends among its sorted distinct ids; ``weight``, the
    arcs between them, when ``directed``), passed on to the orientation on
    this worker; and per id, ``(node, count, ticket)`` to the id's owner:
    the pairs it is in here, and ``ticket``, its position here times the
    workers plus this worker's index, to answer to."""
    scope = pairs.scope
    index, peers = scope.index, scope.peers
    b = OperatorBuilder("TriangleDegrees", scope)
    inp = b.new_input(pairs, Exchange(batch=_pair_route))
    requests_out, requests = b.new_output()
    keys_out, keys = b.new_output()

    def numbered(held: list[Batch]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                             np.ndarray]:
        keys = np.empty(sum(len(p) for p in held), dtype=np.uint64)
        # The same bytes serve first to find the distinct ids.
        scratch = keys.view(np.int64)
        ids = _union(_distinct_in(scratch, [p["lo"] for p in held]),
                         _distinct_in(scratch, [p["hi"] for p in held]))
        del scratch
        shift = _key_shift(len(ids))
        numbers = SortedIds(ids)
        at = 0
        while held:
            p = held.pop()
            n = len(p)
            pair_keys(numbers, p["lo"], p["hi"], p["arcs"] if directed else None,
                      keys[at:at + n], shift)
            at += n
        del p
        keys.sort()
        count, weight = merge_pairs(keys, directed)
        keys.resize(count, refcheck=False)
        _give_back()
        return ids, keys, weight, end_counts(keys, shift, len(ids))

    def asked(ids: np.ndarray, counts: np.ndarray) -> Iterator[tuple[Any, Batch]]:
        for start, stop in _slices(len(ids)):
            tickets = np.arange(start, stop, dtype=np.int64) * peers + index
            yield requests_out, Batch(node=ids[start:stop], count=_narrow(counts[start:stop]),
                                      ticket=tickets)

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        paced = _Paced(scope, info)
        held: dict = {}

        def run(frontiers):
            for cap, data in inp:
                parts = held.get(cap.time)
                if parts is None:
                    parts = held[cap.time] = []
                    notificator.notify_at(cap.retain_for_output(0))
                    notificator.notify_at(cap.retain_for_output(1))
                if len(data):
                    parts.append(data)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                ask, keep = _both(ready)
                parts = held.pop(ready.time)
                if not parts:
                    ask.drop()
                    keep.drop()
                    continue
                ids, keys, weight, counts = numbered(parts)
                keys_out.give_at(keep.time, Batch(key=keys) if weight is None
                                 else Batch(key=keys, weight=weight))
                keep.drop()
                paced.send([ask], asked(ids, counts))
            paced.run()

        return run

    b.build(build)
    return requests, keys


# -- 3. owners: degrees and global numbers --------------------------------------------


def _owners(requests: Stream[Batch], extras: Stream[Batch] | None
            ) -> tuple[Stream[Batch], Stream[Batch]]:
    """Per owner and time: its ids (asked about, or named by ``extras``, the
    ``node`` rows of vertices without edges), each with its degree, the sum
    of the counts it was asked with; the answer to each question,
    ``(ticket, degree, gid)``, bound for the asking worker; and the ids with
    their degrees as one ``(node, degree)`` Batch on this worker."""
    scope = requests.scope
    index, peers = scope.index, scope.peers
    b = OperatorBuilder("TriangleOwners", scope)
    ports = [b.new_input(requests, by_vertex("node"))]
    if extras is not None:
        ports.append(b.new_input(extras, by_vertex("node")))
    replies_out, replies = b.new_output()
    table_out, table = b.new_output()

    def answers(asked: list[Batch], owned: SortedIds,
                degree: np.ndarray) -> Iterator[tuple[Any, Batch]]:
        narrow_degree = _gid_type(int(degree.max()) if len(degree) else 0)
        gid_type = _gid_type(len(degree) * peers)
        asked.reverse()
        while asked:
            p = asked.pop()
            at = owned.positions(np.ascontiguousarray(p["node"], dtype=np.int64))
            yield replies_out, Batch(ticket=p["ticket"],
                                     degree=degree[at].astype(narrow_degree),
                                     gid=(at * peers + index).astype(gid_type))

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        paced = _Paced(scope, info)
        held: dict = {}

        def run(frontiers):
            for port, inp in enumerate(ports):
                for cap, data in inp:
                    parts = held.get(cap.time)
                    if parts is None:
                        parts = held[cap.time] = ([], [])
                        notificator.notify_at(cap.retain_for_output(0))
                        notificator.notify_at(cap.retain_for_output(1))
                    if len(data):
                        parts[port].append(data)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                answer, keep = _both(ready)
                asked, named = held.pop(ready.time)
                given = [p["node"] for p in asked] + [node_ids(p) for p in named]
                ids = _distinct_in(np.empty(sum(len(g) for g in given), dtype=np.int64), given)
                del given, named
                owned = SortedIds(ids)
                degree = np.zeros(len(ids), dtype=np.int64)
                for p in asked:
                    np.add.at(degree, owned.positions(np.ascontiguousarray(p["node"],
                                                                           dtype=np.int64)),
                              p["count"])
                if len(ids):
                    table_out.give_at(keep.time, Batch(node=ids, degree=degree))
                keep.drop()
                paced.send([answer], answers(asked, owned, degree))
            paced.run()

        return run

    b.build(build)
    return replies, table


# -- 4. orientation --------------------------------------------------------------------


def _oriented(keys: Stream[Batch], replies: Stream[Batch], directed: bool) -> Stream[Batch]:
    """Per worker and time, its pairs (``keys``) oriented by the answers
    about their ends: ``(a, b)`` rows (``weight`` too when ``directed``), the
    global numbers of the edge's lower end and of its higher end, bound for
    the owner of ``a``."""
    scope = keys.scope
    peers = scope.peers
    b = OperatorBuilder("TriangleOrient", scope)
    keys_in = b.new_input(keys, Pipeline())
    replies_in = b.new_input(replies, Exchange("ticket"))
    out, oriented = b.new_output()

    def edges(pairs: Batch, answers: list[Batch]) -> Iterator[tuple[Any, Batch]]:
        n = sum(len(p) for p in answers)
        degree = np.empty(n, dtype=np.int64)
        gid = np.empty(n, dtype=np.int64)
        while answers:
            p = answers.pop()
            at = np.asarray(p["ticket"]) // peers
            degree[at] = p["degree"]
            gid[at] = p["gid"]
        shift = _key_shift(n)
        gid_type = _gid_type(int(gid.max()) if n else 0)
        key, weight = pairs["key"], (pairs["weight"] if directed else None)
        for start, stop in _slices(len(key)):
            a: np.ndarray = np.empty(stop - start, dtype=gid_type)
            c: np.ndarray = np.empty(stop - start, dtype=gid_type)
            orient_pairs(key[start:stop], shift, degree, gid, a, c)
            yield out, (Batch(a=a, b=c) if weight is None
                        else Batch(a=a, b=c, weight=weight[start:stop]))

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        paced = _Paced(scope, info)
        held: dict = {}

        def run(frontiers):
            for port, inp in enumerate((keys_in, replies_in)):
                for cap, data in inp:
                    parts = held.get(cap.time)
                    if parts is None:
                        parts = held[cap.time] = ([], [])
                        notificator.notify_at(cap)
                    if len(data):
                        parts[port].append(data)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                mine, answers = held.pop(ready.time)
                if not mine:
                    ready.drop()
                    continue
                paced.send([ready], edges(mine[0], answers))
            paced.run()

        return run

    b.build(build)
    return oriented


# -- 5. the ring -----------------------------------------------------------------------


class _Block:
    """One worker's oriented edges at one time, indexed by source over the
    positions of the global numbers they name (int32 targets, a uint8
    weight each when weighted), and the links (or the number) of the
    triangles found so far whose lowest vertex is this worker's."""

    def __init__(self, parts: list[Batch], weighted: bool, linked: bool) -> None:
        m = sum(len(p) for p in parts)
        wide = any(p["a"].dtype != np.int32 for p in parts)
        # The same bytes serve first to find the distinct gids, then as the
        # targets when the gids are int32.
        scratch = np.empty(m, dtype=np.int64 if wide else np.int32)
        self.ids = SortedIds(_union(_distinct_in(scratch, [p["a"] for p in parts]),
                                        _distinct_in(scratch, [p["b"] for p in parts])),
                             spread=True)
        n = len(self.ids)
        counts = np.zeros(n, dtype=np.int64)
        for p in parts:
            block_counts(self.ids, p["a"], counts)
        self.starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=self.starts[1:])
        place = counts
        place[:] = self.starts[:-1]
        self.targets = np.empty(m, dtype=np.int32) if wide else scratch
        del scratch
        self.weight = np.empty(m, dtype=np.uint8) if weighted else None
        while parts:
            p = parts.pop()
            block_place(self.ids, p["a"], p["b"], p["weight"] if weighted else None, place,
                        self.targets, self.weight)
        del p
        self.links = np.zeros(n, dtype=np.int64) if linked else None
        self.found = 0
        self.gid_type = _gid_type(int(self.ids.ids[-1]) if n else 0)
        _give_back()

    def meet(self, visiting: _Visiting | None) -> None:
        """Counts the triangles ``u -> v, u -> w, v -> w`` with ``u -> v`` and
        ``u -> w`` here and ``v -> w`` in ``visiting`` (None: this block)."""
        if visiting is None:
            other = (self.starts, self.targets, self.weight)
        else:
            other = visiting.indexed()
        self.found += triangle_links(self.starts, self.targets, self.weight, *other, self.links)
        if visiting is not None:
            del other
            visiting.release()
            _give_back()

    def sent(self, out: Any, dest: int) -> Iterator[tuple[Any, Addressed]]:
        """The block's edges as ``(a, b)`` rows (``weight`` too when weighted),
        global numbers in order of source, addressed to worker ``dest``."""
        for start, stop in _slices(len(self.targets)):
            a: np.ndarray = np.empty(stop - start, dtype=self.gid_type)
            c: np.ndarray = np.empty(stop - start, dtype=self.gid_type)
            block_edges(self.starts, self.targets, self.ids, start, a, c)
            rows = (Batch(a=a, b=c) if self.weight is None
                    else Batch(a=a, b=c, weight=self.weight[start:stop]))
            yield out, Addressed(dest, rows)

    def results(self) -> Batch:
        """``(gid, links)`` for the vertices in a triangle found here;
        without links, ``(total, triangles)``: the number found."""
        if self.links is None:
            return Batch(total=np.zeros(1, dtype=np.int64),
                         triangles=np.array([self.found], dtype=np.int64))
        there = np.flatnonzero(self.links)
        return Batch(gid=self.ids.ids[there], links=self.links[there])


class _Visiting:
    """The edges of a block visiting a :class:`_Block` that its ids can close
    a triangle with: the positions of their targets, in order of source,
    and how many each source has."""

    def __init__(self, block: _Block) -> None:
        self.block = block
        self.counts = np.zeros(len(block.ids), dtype=np.int64)
        self.targets: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.last = -1

    def add(self, rows: Batch) -> None:
        n = len(rows)
        targets = np.empty(n, dtype=np.int32)
        weighted = self.block.weight is not None
        weights = np.empty(n, dtype=np.uint8) if weighted else None
        kept, self.last = visiting_targets(self.block.ids, rows["a"], rows["b"],
                                           rows["weight"] if weighted else None, self.counts,
                                           targets, weights, self.last)
        if kept:
            self.targets.append(targets[:kept].copy())
            if weights is not None:
                self.weights.append(weights[:kept].copy())

    def release(self) -> None:
        self.counts = np.zeros(0, dtype=np.int64)
        self.targets = []
        self.weights = []

    def indexed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(starts, targets, weights)``: the kept edges indexed by source."""
        starts = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=starts[1:])
        targets = _joined(self.targets, np.int32)
        weights = _joined(self.weights, np.uint8) if self.block.weight is not None else None
        return starts, targets, weights


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """The arrays ``parts`` end to end, each let go once copied."""
    out: np.ndarray = np.empty(sum(len(p) for p in parts), dtype=dtype)
    at = 0
    parts.reverse()
    while parts:
        p = parts.pop()
        out[at:at + len(p)] = p
        at += len(p)
    return out


def _ring_step(own: Stream[Batch], visiting: Stream[Batch], weighted: bool, linked: bool,
               name: str) -> tuple[Stream[Batch], Stream[Batch]]:
    """The operator of :func:`_oriented_triangles`, in its loop: ``own``
    brings each worker its block at round 0, ``visiting`` the block of
    worker ``i - r`` at round ``r``. Returns the results of
    :meth:`_Block.results`, at the last round, and the blocks sent on."""
    scope = own.scope
    index, peers = scope.index, scope.peers
    last = peers - 1
    b = OperatorBuilder(name, scope)
    own_in = b.new_input(own, Exchange("a"))
    visiting_in = b.new_input(visiting, Broadcast())
    out, counted = b.new_output()
    ahead, passed = b.new_output()

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        paced = _Paced(scope, info)
        arriving: dict = {}      # per outer time: the block's rows, until round 0 is complete
        blocks: dict = {}        # per outer time: this worker's _Block
        rounds: dict = {}        # per time: a _Visiting, or rows that came before the block

        def run(frontiers):
            for cap, data in own_in:
                outer = outer_time(cap.time)
                parts = arriving.get(outer)
                if parts is None:
                    parts = arriving[outer] = []
                    # Every round: count, then send the block on (the last: the results).
                    for r in range(last):
                        notificator.notify_at(cap.delayed_for_output((*outer, r), 1))
                    notificator.notify_at(cap.delayed_for_output((*outer, last), 0))
                if len(data):
                    parts.append(data)
            for cap, data in visiting_in:
                time = cap.time
                outer = outer_time(time)
                block = blocks.get(outer)
                if block is not None:
                    held = rounds.get(time)
                    if held is None:
                        held = rounds[time] = _Visiting(block)
                    held.add(data)
                elif outer in arriving:
                    # The own rows are all here; the block is made at round 0.
                    rounds.setdefault(time, []).append(data)
                # else no edges of this worker's at that time: no triangle to close
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                time = ready.time
                outer, r = outer_time(time), loop_round(time)
                if r == 0:
                    block = blocks[outer] = _Block(arriving.pop(outer), weighted, linked)
                    for t in [t for t in rounds if outer_time(t) == outer]:
                        early = _Visiting(block)
                        for rows in rounds.pop(t):
                            early.add(rows)
                        rounds[t] = early
                    block.meet(None)
                else:
                    block = blocks[outer]
                    held = rounds.pop(time, None)
                    if held is not None:
                        block.meet(held)
                if r < last:
                    paced.send([ready], block.sent(ahead, (index + r + 1) % peers))
                else:
                    del blocks[outer]
                    paced.send([ready], iter([(out, block.results())]))
            paced.run()

        return run

    b.build(build)
    return counted, passed


def _oriented_triangles(oriented: Stream[Batch], weighted: bool, linked: bool,
                        name: str = "Triangles") -> Stream[Batch]:
    """The triangles of the ``(a, b[, weight])`` edges of
    :func:`_oriented`, oriented from lower to higher (degree, gid) end:
    ``(gid, links)`` rows (``linked``: per vertex in a triangle, the sum of
    the weights of the edges opposite it, 1 each unless ``weighted``, in
    rows that a sum by gid completes) or ``(total, triangles)`` rows, each
    worker's count.

    A triangle ``u -> v, u -> w, v -> w`` is counted by the worker that owns
    ``u`` (the edges are exchanged by ``a``), when it holds the out-edges
    of ``v``. Each worker's block goes round the others in an
    ``iterative()`` loop: at round ``r`` worker ``i`` counts, in C
    (:func:`~timely.algorithms._graph.triangle_links`), its own block
    against the block of worker ``i - r`` (mod ``peers``), which that
    worker sends it at round ``r - 1``; after ``peers`` rounds every block
    has met every other. The work, O(m sqrt(m)) in all, is split by owner
    of ``u``; each worker holds its own block, the block visiting it and
    at most the next one arriving, O(m / peers) edges when the blocks are
    even, and receives m edges in all over the rounds."""
    with oriented.scope.iterative("TriangleRing") as inner:
        handle, visiting = inner.feedback(1)
        counted, passed = _ring_step(oriented.enter(inner), visiting, weighted, linked, name)
        passed.connect_loop(handle)
        result = counted.leave()
    return result


# -- 6. per vertex ---------------------------------------------------------------------


def _vertex_sums(table: Stream[Batch], found: Stream[Batch], links_scale: int) -> Stream[Batch]:
    """Per owner and time, one ``(node, size, links)`` row per id of its
    ``table``: its degree and the links ``found`` for it (times
    ``links_scale``)."""
    peers = table.scope.peers

    def step(cap, held):
        tables, links = held
        if not tables:
            return None
        vertices = tables[0]
        summed = np.zeros(len(vertices), dtype=np.int64)
        for p in links:
            np.add.at(summed, np.asarray(p["gid"]) // peers, p["links"])
        return Batch(node=vertices["node"], size=vertices["degree"], links=summed * links_scale)

    return at_complete_times("Neighbourhoods", [(table, Pipeline()), (found, Exchange("gid"))],
                             step, whole=False)


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
    (its share by vertex) and receives m in all over ``peers`` rounds."""
    pairs, loops = _simple_pairs(edges, directed, src, dst, keep_loops=True)
    requests, keys = _degree_requests(pairs, directed)
    extras = loops
    if nodes is not None:
        extras = extras.concat(nodes.map_batch(lambda b: Batch(node=node_ids(b, "node"))))
    replies, table = _owners(requests, extras)
    found = _oriented_triangles(_oriented(keys, replies, directed), directed, True)
    return _vertex_sums(table, found, 1 if directed else 2)


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
    sqrt(2 m) once oriented, stay with it), as 4 bytes an edge (5 directed)
    plus a few int32 and int64 per vertex it names; every stage sends its
    messages a window at a time (see the module's docstring). The shares
    pass round the workers in ``peers`` rounds, so each worker receives m
    edges in all.

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

    Each triangle is found once, by the worker owning its lowest vertex
    (see the module's docstring), and the workers' counts are summed: no
    row per vertex is ever made.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src`` and ``dst``; the count holds no id.
    """
    v = VertexIds(ids, "triangle_count")
    (edges,) = v.inputs((edges, (src, dst)))
    return _triangle_count(edges, src=src, dst=dst)


def _triangle_count(edges: Stream[Batch], *, src: str = "src", dst: str = "dst") -> Stream[Batch]:
    pairs, _ = _simple_pairs(edges, False, src, dst, keep_loops=False)
    requests, keys = _degree_requests(pairs, False)
    replies, _ = _owners(requests, None)
    counts = _oriented_triangles(_oriented(keys, replies, False), False, False)

    def seen(b: Batch) -> Batch:
        # A graph with edges has a count, 0 included.
        rows = 1 if len(b) else 0
        return Batch(total=np.zeros(rows, dtype=np.int64), triangles=np.zeros(rows, dtype=np.int64))

    return counts.concat(edges.map_batch(seen)).aggregate("total", "triangles", how="sum").map_batch(
        lambda b: Batch(triangles=b["sum"]))
