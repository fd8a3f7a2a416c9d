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
   vertices a global number (its place among the owner's vertices by
   falling degree, times ``W``, plus the owner's index: dense, int32 while
   they fit, hubs first) and answers every question with both;
4. the pair's worker orients each pair towards its end higher in (degree,
   global number) order and sends the oriented edge, as two global
   numbers, to the owner of its lower end;
5. each owner indexes its block by source over the global numbers its
   edges name (CSR, int32 positions; :class:`~timely.algorithms._graph.SortedIds`
   finds a number's position in O(1)), counts its block against itself,
   then in ``W - 1`` rounds of an ``iterative()`` loop against the block
   of worker ``i - r``, which that worker sends it, keeping of each
   visiting edge only the target's position, and only for edges whose
   ends its own block names;
6. per vertex, the links found go to its owner, who sums them with the
   degree into ``(node, size, links)`` (vertices named only by ``nodes`` or
   self-loops get 0 and 0 there); for the count alone, each worker's
   number of triangles is summed.

Memory: the most a worker holds is while it numbers its pairs, 24 bytes
a pair (their two int64 ends and the uint64 keys they become) and 16 a
distinct id; afterwards 8 a pair until they are oriented, then 4 an edge
of its block (5 with weights), 4 to 5 an edge kept of the block visiting
it, and a few int32 and int64 per vertex it names.

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
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from timely.algorithms._graph import (
    SortedIds,
    block_edges,
    distinct_sorted,
    edge_hash,
    end_counts,
    find_positions,
    merge_pairs,
    orient_pairs,
    pair_keys,
    place_edges,
    simple_pairs,
    triangle_links,
    union_sorted,
    visiting_targets,
)
from timely.algorithms.edges import by_vertex, edge_ends, node_ids
from timely.algorithms.ids import Ids, VertexIds
from timely.algorithms.propagation import loop_round, outer_time
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Addressed, Broadcast, Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import Pace, PacedSender, at_complete_times

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
    """The sorted distinct values of the integer arrays ``parts``, sorted and
    compacted in ``buffer`` (room for all of them, of a dtype that holds
    them): a view of its front."""
    at = 0
    for p in parts:
        buffer[at:at + len(p)] = p
        at += len(p)
    values = buffer[:at]
    values.sort()
    return values[:distinct_sorted(values)]


def _distinct(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values (int64) of the integer arrays ``parts``,
    in one array as long as them all, shortened in place."""
    values = np.empty(sum(len(p) for p in parts), dtype=np.int64)
    values.resize(len(_distinct_in(values, parts)), refcheck=False)
    return values


def _distinct_of_both(buffer: np.ndarray, first: list[np.ndarray],
                      second: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values (int64) of the arrays ``first`` and
    ``second`` (each list no longer than ``buffer``), made in ``buffer``:
    besides it, only the first's distinct values and the answer are held."""
    firsts = _distinct_in(buffer, first).astype(np.int64)
    return union_sorted(firsts, _distinct_in(buffer, second))


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


def _trimmed(messages: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``messages``, then, once the last is sent and the iterator that made
    them is done, the heap's free pages given back (:func:`_give_back`):
    a stage that sends what it made lets go of most of what it held."""
    yield from messages
    _give_back()


# -- 1. pairs -------------------------------------------------------------------------


def _pair_route(batch: Batch) -> np.ndarray:
    return edge_hash(batch["lo"], batch["hi"])


def _simple_pairs(edges: Stream[Batch], nodes: Stream[Batch] | None, directed: bool,
                  src: str, dst: str, keep_vertices: bool) -> tuple[Stream[Batch],
                                                                  Stream[Batch]]:
    """``(lo, hi)`` rows (``arcs`` too when ``directed``: see
    :func:`~timely.algorithms._graph.simple_pairs`) of every edge that is
    not a self-loop, bound for the worker of a hash of both ends, and
    (``keep_vertices``) ``node`` rows of the self-loops' vertices and of
    ``nodes``, bound for their owners."""
    b = OperatorBuilder("TrianglePairs", edges.scope)
    inputs = [b.new_input(edges, Pipeline(), notify=False)]
    if nodes is not None:
        inputs.append(b.new_input(nodes, Pipeline(), notify=False))
    pairs_out, pairs = b.new_output()
    vertices_out, vertices = b.new_output()

    def edge_messages(s: np.ndarray, d: np.ndarray) -> Iterator[tuple[Any, Batch]]:
        for start, stop in _slices(len(s)):
            lo, hi, arcs, looped = simple_pairs(s[start:stop], d[start:stop], directed)
            if len(lo):
                yield pairs_out, (Batch(lo=lo, hi=hi) if arcs is None
                                  else Batch(lo=lo, hi=hi, arcs=arcs))
            if keep_vertices and len(looped):
                yield vertices_out, Batch(node=looped)

    def node_messages(ids: np.ndarray) -> Iterator[tuple[Any, Batch]]:
        for start, stop in _slices(len(ids)):
            yield vertices_out, Batch(node=ids[start:stop])

    def build(caps, info):
        caps.clear()
        paced = PacedSender(edges.scope, info, Pace(edges.scope.peers))

        def run(frontiers):
            for cap, data in inputs[0]:
                s, d = edge_ends(data, src, dst)
                if len(s):
                    paced.add([cap.retain_for_output(0), cap.retain_for_output(1)],
                              _trimmed(edge_messages(np.ascontiguousarray(s),
                                                     np.ascontiguousarray(d))))
            for inp in inputs[1:]:
                for cap, data in inp:
                    ids = node_ids(data)
                    if keep_vertices and len(ids):
                        paced.add([cap.retain_for_output(1)],
                                  _trimmed(node_messages(np.ascontiguousarray(ids))))
            paced.send()

        return run

    b.build(build)
    return pairs, vertices


# -- 2. numbered pairs and the questions for the degrees ------------------------------


def _degree_requests(pairs: Stream[Batch], directed: bool) -> tuple[Stream[Batch],
                                                                     Stream[Batch]]:
    """Per worker and time, its distinct pairs as ``key`` (uint64, the
    positions of both ends among its sorted distinct ids; ``weight``, the
    arcs between them, when ``directed``), passed on to the orientation on
    this worker; and per id, ``(node, count, ticket)`` to the id's owner:
    the pairs it is in here, and ``ticket``, its position here times the
    workers plus this worker's index, to answer to."""
    index, peers = pairs.scope.index, pairs.scope.peers

    def numbered(held: list[Batch]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                             np.ndarray]:
        keys = np.empty(sum(len(p) for p in held), dtype=np.uint64)
        # The same bytes serve first to find the distinct ids.
        scratch = keys.view(np.int64)
        ids = _distinct_of_both(scratch, [p["lo"] for p in held], [p["hi"] for p in held])
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

    def asked(ids: np.ndarray, counts: np.ndarray) -> Iterator[tuple[int, Batch]]:
        ticket_type = _gid_type(len(ids) * peers + index)
        for start, stop in _slices(len(ids)):
            tickets = np.arange(start, stop, dtype=np.int64) * peers + index
            yield 0, Batch(node=ids[start:stop], count=_narrow(counts[start:stop]),
                           ticket=tickets.astype(ticket_type))

    def step(_cap: Any, rows: list[list[Batch]]) -> Iterator[tuple[int, Batch]] | None:
        (parts,) = rows
        if not parts:
            return None
        ids, keys, weight, counts = numbered(parts)
        # The keys stay on this worker, whole; the questions go out paced.
        return _trimmed(chain([(1, Batch(key=keys) if weight is None
                                 else Batch(key=keys, weight=weight))], asked(ids, counts)))

    requests, keys = at_complete_times("TriangleDegrees", [(pairs, Exchange(batch=_pair_route))],
                                       step, whole=False, outputs=2, pace=Pace(peers))
    return requests, keys


# -- 3. owners: degrees and global numbers --------------------------------------------


def _owners(requests: Stream[Batch]) -> tuple[Stream[Batch], Stream[Batch]]:
    """Per owner and time: the ids asked about, each with its degree, the
    sum of the counts it was asked with; the answer to each question,
    ``(ticket, degree, gid)``, bound for the asking worker; and the ids with
    their degrees as one ``(node, degree)`` Batch on this worker, in the
    order of their global numbers (``gid // W``)."""
    index, peers = requests.scope.index, requests.scope.peers

    def answers(asked: list[tuple[np.ndarray, np.ndarray]], degree: np.ndarray,
                rank: np.ndarray) -> Iterator[tuple[int, Batch]]:
        narrow_degree = _gid_type(int(degree.max()) if len(degree) else 0)
        gid_type = _gid_type(len(degree) * peers)
        asked.reverse()
        while asked:
            tickets, at = asked.pop()
            gid = rank[at].astype(np.int64) * peers + index
            yield 0, Batch(ticket=tickets, degree=degree[at].astype(narrow_degree),
                           gid=gid.astype(gid_type))

    def step(_cap: Any, rows: list[list[Batch]]) -> Iterator[tuple[int, Batch]]:
        (asked,) = rows
        ids = _distinct([p["node"] for p in asked])
        owned = SortedIds(ids)
        degree = np.zeros(len(ids), dtype=np.int64)
        # Each question by the position of its id, found once.
        located = []
        asked.reverse()
        while asked:
            p = asked.pop()
            at = np.empty(len(p), dtype=np.int32)
            find_positions(owned, np.ascontiguousarray(p["node"], dtype=np.int64), at,
                           degree, p["count"])
            located.append((p["ticket"], at))
        del owned
        # Global numbers by falling degree: the blocks' hubs then come
        # first and together, which keeps the counting's marks and
        # rows in cache (half its time at 10^7 R-MAT edges).
        order = np.argsort(degree, kind="stable")[::-1]
        rank = np.empty(len(ids), dtype=np.int32)
        rank[order] = np.arange(len(ids), dtype=np.int32)
        table = ([(1, Batch(node=ids[order], degree=_narrow(degree[order])))] if len(ids)
                 else [])
        del order, ids
        # The table stays on this worker, whole; the answers go out paced.
        return _trimmed(chain(table, answers(located, degree, rank)))

    replies, table = at_complete_times("TriangleOwners", [(requests, by_vertex("node"))], step,
                                       whole=False, outputs=2, pace=Pace(peers))
    return replies, table


# -- 4. orientation --------------------------------------------------------------------


def _oriented(keys: Stream[Batch], replies: Stream[Batch], directed: bool) -> Stream[Batch]:
    """Per worker and time, its pairs (``keys``) oriented by the answers
    about their ends: ``(a, b)`` rows (``weight`` too when ``directed``), the
    global numbers of the edge's lower end and of its higher end, bound for
    the owner of ``a``."""
    peers = keys.scope.peers

    def edges(pairs: Batch, answers: list[Batch]) -> Iterator[tuple[int, Batch]]:
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
            yield 0, (Batch(a=a, b=c) if weight is None
                      else Batch(a=a, b=c, weight=weight[start:stop]))

    def step(_cap: Any, rows: list[list[Batch]]) -> Iterator[tuple[int, Batch]] | None:
        mine, answers = rows
        return _trimmed(edges(mine[0], answers)) if mine else None

    return at_complete_times("TriangleOrient", [(keys, Pipeline()), (replies, Exchange("ticket"))],
                             step, whole=False, pace=Pace(peers))


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
        self.ids = SortedIds(_distinct_of_both(scratch, [p["a"] for p in parts],
                                               [p["b"] for p in parts]))
        n = len(self.ids)
        # Each edge's ends as positions (over the rows' own gids where they
        # are int32: a block's rows are its own once they arrive), and the
        # edges from each position.
        counts = np.zeros(n, dtype=np.int64)
        ends = [(self._positions(p["a"], counts), self._positions(p["b"], None),
                 p["weight"] if weighted else None) for p in parts]
        parts.clear()
        self.starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=self.starts[1:])
        place = counts
        place[:] = self.starts[:-1]
        self.targets = np.empty(m, dtype=np.int32) if wide else scratch
        del scratch
        self.weight = np.empty(m, dtype=np.uint8) if weighted else None
        while ends:
            place_edges(*ends.pop(), place, self.targets, self.weight)
        self.links = np.zeros(n, dtype=np.int64) if linked else None
        self.found = 0
        self.gid_type = _gid_type(int(self.ids.ids[-1]) if n else 0)
        self.target_gids: np.ndarray | None = None
        _give_back()

    def _positions(self, gids: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
        out = (gids if gids.dtype == np.int32 and gids.flags.writeable
               else np.empty(len(gids), dtype=np.int32))
        find_positions(self.ids, gids, out, counts)
        return out

    def meet(self, visiting: _Visiting | None) -> None:
        """Counts the triangles ``u -> v, u -> w, v -> w`` with ``u -> v`` and
        ``u -> w`` here and ``v -> w`` in ``visiting`` (None: this block)."""
        if visiting is None:
            other = (self.starts, self.targets, self.weight)
        else:
            other = visiting.indexed()
        self.found += triangle_links(self.starts, self.targets, self.weight, *other, self.links)

    def sent(self, out: Any, dest: int) -> Iterator[tuple[Any, Addressed]]:
        """The block's edges as ``(a, b)`` rows (``weight`` too when weighted),
        global numbers in order of source, addressed to worker ``dest``."""
        if self.target_gids is None:
            # Made once for the peers - 1 rounds that send the block.
            self.target_gids = np.empty(len(self.targets), dtype=self.gid_type)
            names = self.ids.ids
            for start, stop in _slices(len(self.targets)):
                self.target_gids[start:stop] = names[self.targets[start:stop]]
        for start, stop in _slices(len(self.targets)):
            a: np.ndarray = np.empty(stop - start, dtype=self.gid_type)
            block_edges(self.starts, self.targets, self.ids, start, a, None)
            c = self.target_gids[start:stop]
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
        # Room for a block as large as this one: the blocks are about even,
        # and the pages of the room not written to are never resident.
        room = max(len(block.targets), ROWS)
        self.targets = np.empty(room, dtype=np.int32)
        self.weights = np.empty(room, dtype=np.uint8) if block.weight is not None else None
        self.kept = 0
        self.last = -1

    def add(self, rows: Batch) -> None:
        n, kept = len(rows), self.kept
        if kept + n > len(self.targets):
            self._grow(kept + n)
        weights = self.weights
        found, self.last = visiting_targets(
            self.block.ids, rows["a"], rows["b"], None if weights is None else rows["weight"],
            self.counts, self.targets[kept:], None if weights is None else weights[kept:],
            self.last)
        self.kept += found

    def _grow(self, need: int) -> None:
        room = max(need, len(self.targets) * 3 // 2)
        targets = np.empty(room, dtype=np.int32)
        targets[:self.kept] = self.targets[:self.kept]
        self.targets = targets
        if self.weights is not None:
            weights = np.empty(room, dtype=np.uint8)
            weights[:self.kept] = self.weights[:self.kept]
            self.weights = weights

    def indexed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(starts, targets, weights)``: the kept edges indexed by source."""
        starts = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=starts[1:])
        weights = None if self.weights is None else self.weights[:self.kept]
        return starts, self.targets[:self.kept], weights


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
        # The blocks go whole to one worker each: two an activation.
        paced = PacedSender(scope, info, Pace(2))
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
                    paced.add([ready], block.sent(ahead, (index + r + 1) % peers))
                else:
                    del blocks[outer]
                    paced.add([ready], _trimmed([(out, block.results())]))
                del block
            paced.send()

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


def _vertex_sums(table: Stream[Batch], found: Stream[Batch], extras: Stream[Batch],
                 links_scale: int) -> Stream[Batch]:
    """Per owner and time, one ``(node, size, links)`` row per id of its
    ``table`` (its degree and the links ``found`` for it, times
    ``links_scale``) and per other id named by ``extras`` (0 and 0)."""
    peers = table.scope.peers

    def step(cap, held):
        tables, links, named = held
        if not tables and not named:
            return None
        vertices = tables[0] if tables else Batch(node=np.zeros(0, dtype=np.int64),
                                                  degree=np.zeros(0, dtype=np.int64))
        summed = np.zeros(len(vertices), dtype=np.int64)
        for p in links:
            # Exact: float64 holds every sum of links below 2**53.
            summed += np.bincount(np.asarray(p["gid"]) // peers, weights=p["links"],
                                  minlength=len(summed)).astype(np.int64)
        node, size = vertices["node"], vertices["degree"]
        if named:
            # The ids without edges (or only self-loops): once each, 0 and 0.
            others = _distinct([node_ids(p) for p in named])
            at = np.empty(len(others), dtype=np.int32)
            find_positions(SortedIds(np.sort(node)), others, at)
            others = others[at < 0]
            node = np.concatenate([node, others])
            size = np.concatenate([size, np.zeros(len(others), dtype=size.dtype)])
            summed = np.concatenate([summed, np.zeros(len(others), dtype=np.int64)])
        return Batch(node=node, size=size, links=summed * links_scale)

    return at_complete_times("Neighbourhoods", [(table, Pipeline()), (found, Exchange("gid")),
                                                (extras, by_vertex("node"))], step, whole=False)


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
    pairs, extras = _simple_pairs(edges, nodes, directed, src, dst, keep_vertices=True)
    requests, keys = _degree_requests(pairs, directed)
    replies, table = _owners(requests)
    found = _oriented_triangles(_oriented(keys, replies, directed), directed, True)
    return _vertex_sums(table, found, extras, 1 if directed else 2)


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
    pairs, _ = _simple_pairs(edges, None, False, src, dst, keep_vertices=False)
    requests, keys = _degree_requests(pairs, False)
    replies, _ = _owners(requests)
    counts = _oriented_triangles(_oriented(keys, replies, False), False, False)

    def seen(b: Batch) -> Batch:
        # A graph with edges has a count, 0 included.
        rows = 1 if len(b) else 0
        return Batch(total=np.zeros(rows, dtype=np.int64), triangles=np.zeros(rows, dtype=np.int64))

    return counts.concat(edges.map_batch(seen)).aggregate("total", "triangles", how="sum").map_batch(
        lambda b: Batch(triangles=b["sum"]))
