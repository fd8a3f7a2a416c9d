"""Least values spread along arcs, kept up to date as arcs arrive: the
fixpoint behind connected components, BFS, weighted shortest paths and
distances to landmarks.

:func:`lowest` computes, per vertex (and per slot, such as a landmark), the
least over seeds ``s`` and paths ``s -> ... -> v`` of the seed's value plus
the weights along the path. Arcs, vertices and seeds may arrive at many
times; the answer at a time counts everything given at that time and
before, and a time's output names only the vertices whose answer changed at
it. Each worker holds its vertices' values and out-arcs in arrays (a
compiled adjacency, :class:`~timely.algorithms._graph.Adjacency`), so the
work at a time is the arcs of the vertices whose values fall, not the graph.

The state is shared by all times, so the loop handles them one outer time
after another: a time's rounds begin once every earlier outer time has
finished its own (the outer coordinates taken in lexicographic order, a
linear extension of the product order). Without that, a value lowered late
in an earlier time would never reach arcs added by a later one.

Breadth-first distances from vertex 0, as edges arrive at times 0 and 1:

>>> import numpy as np
>>> import timely
>>> from timely.algorithms import bfs
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         edges_in, edges = scope.new_input()
...         roots_in, roots = scope.new_input()
...         bfs(edges, roots).inspect_batch(
...             lambda t, b: got.extend((t, *row) for row in b.to_records()))
...     roots_in.send_batch(timely.Batch(node=np.array([0])))
...     edges_in.send_batch(timely.Batch(src=np.array([0, 1]), dst=np.array([1, 2])))
...     for handle in (edges_in, roots_in):
...         handle.advance_to(1)
...     edges_in.send_batch(timely.Batch(src=np.array([0]), dst=np.array([2])))
...     for handle in (edges_in, roots_in):
...         handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 2, 1)]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from timely.algorithms._graph import Adjacency, LocalIds, arc_sums, lower, scatter_add, tally
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.core import Ok, per_time
from timely.dataflow.operators.relational import KeyIndex, at_complete_times, bucket, expand
from timely.errors import ColumnarError
from timely.progress import less_equal

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["Growing", "each_time", "latest", "least_values", "loop_round", "lowest", "outer_time",
           "pieces", "pushed", "reported", "settle", "stepped"]

_INT64_MAX = np.iinfo(np.int64).max


class Growing:
    """A numpy array that grows by doubling; ``view`` is what it holds."""

    def __init__(self, dtype: Any, fill: Any = 0) -> None:
        self.data = np.full(16, fill, dtype=dtype)
        self.fill = fill
        self.size = 0

    def reserve(self, size: int) -> None:
        if size > len(self.data):
            grown = np.full(max(size, 2 * len(self.data)), self.fill, dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown

    def resize(self, size: int) -> None:
        """Holds ``size`` items; those added are the fill value (sizes only grow)."""
        self.reserve(size)
        self.size = size

    def extend(self, values: np.ndarray) -> None:
        self.reserve(self.size + len(values))
        self.data[self.size:self.size + len(values)] = values
        self.size += len(values)

    @property
    def view(self) -> np.ndarray:
        return self.data[:self.size]


class _Values:
    """One worker's part of the fixpoint: its vertices numbered by a
    :class:`KeyIndex`, ``width`` value cells per vertex (one per slot), the
    out-arcs of its vertices with their targets and weights."""

    def __init__(self, floating: bool, slot: str | None) -> None:
        self.dtype = np.float64 if floating else np.int64
        self.worst = np.inf if floating else _INT64_MAX
        self.nodes = KeyIndex(1)
        self.slot = slot
        self.slots = KeyIndex(1) if slot is not None else None
        self.width = 1
        self.cells = np.full(0, self.worst, dtype=self.dtype)
        self.mark = np.zeros(0, dtype=np.uint8)
        self.adjacency = Adjacency()
        self.targets = Growing(np.int64)
        self.weights = Growing(self.dtype)

    def fit(self) -> None:
        """Cells for every vertex and slot numbered so far."""
        width = self.width
        if self.slots is not None and len(self.slots) > width:
            width = max(len(self.slots), 2 * width)
            n = len(self.cells) // self.width
            table = np.full((n, width), self.worst, dtype=self.dtype)
            table[:, :self.width] = self.cells.reshape(n, self.width)
            self.cells, self.width = table.reshape(-1), width
            self.mark = np.zeros(len(self.cells), dtype=np.uint8)
        need = len(self.nodes) * width
        if need > len(self.cells):
            size = max(need, 2 * len(self.cells))
            grown = np.full(size - size % width, self.worst, dtype=self.dtype)
            grown[:len(self.cells)] = self.cells
            self.cells = grown
            self.mark = np.zeros(len(grown), dtype=np.uint8)

    def slot_numbers(self, rows: Batch) -> np.ndarray:
        """The slot number of each row, numbering new slots."""
        if self.slot is None or self.slots is None:
            return np.zeros(len(rows), dtype=np.int64)
        return self.slots.insert([np.asarray(rows[self.slot]).astype(np.int64, copy=False)])

    def columns(self, cells: np.ndarray, nodes: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The ``node`` (``nodes``, else the vertices of ``cells``) and slot
        columns of ``cells``."""
        if nodes is None:
            nodes = np.asarray(self.nodes.take(cells // self.width)[0])
        columns = {"node": nodes}
        if self.slot is not None and self.slots is not None:
            columns[self.slot] = np.asarray(self.slots.take(cells % self.width)[0])
        return columns

    def rows(self, cells: np.ndarray, values: np.ndarray, value: str) -> Batch:
        """``(node[, slot], value, sent=False)`` rows for ``cells``."""
        columns = self.columns(cells)
        columns[value] = values
        columns["sent"] = np.zeros(len(cells), dtype=bool)
        return Batch(columns)


def _in_order(name: str, inputs: Mapping[str, tuple[Stream[Batch] | None, str]],
              start: Callable[[], Callable[[Any, dict[str, Batch | None]], list[Batch]]]
              ) -> Stream[Batch]:
    """An operator inside an ``iterative()`` scope whose state is shared by
    all times: ``inputs`` maps a port to ``(stream or None, exchange
    column)``; ``start()`` makes the state and returns ``step(cap, rows)``,
    called for each complete time once every earlier outer time has
    finished, in lexicographic order, with the rows of each port at it (None
    where none came); the Batches it returns are the output at that time
    (:func:`~timely.dataflow.operators.relational.at_complete_times`)."""
    ports = list(inputs)
    step = start()
    return at_complete_times(name, [inputs[p] for p in ports],
                             lambda cap, rows: step(cap, dict(zip(ports, rows))),
                             lexicographic=True)


def lowest(arcs: Stream[Batch], seeds: Stream[Batch] | None, loop: Stream[Batch], *,
           value: str, vertices: Stream[Batch] | None = None, slot: str | None = None,
           floating: bool = False, self_seeded: bool = False, seeds_need_vertex: bool = False,
           report_new: bool = False, name: str = "Lowest") -> Stream[Batch]:
    """The operator of the fixpoint, inside an ``iterative()`` scope.

    ``arcs``: ``(src, dst, weight)`` rows (int64 ends; int64 or, with
    ``floating``, float64 non-negative weights). ``vertices``: ``node`` rows
    naming vertices. ``seeds``: ``(node[, slot], value)`` rows, each a value
    a vertex starts from; with ``seeds_need_vertex`` a seed waits until its
    node is named as a vertex. ``self_seeded``: every vertex is a seed of
    its own id (components). ``loop``: the operator's own proposals fed
    back, ``(node[, slot], value)``. ``slot``: the column of the slot (a
    landmark), or None for one value per vertex.

    Returns one stream of rows ``(node[, slot], value, sent)``: ``sent``
    false for a lowered value (the answer's changes; with ``report_new``
    also a vertex's first appearance, at the worst value), true for a
    proposal to feed back. Exchanged by vertex: exact at any worker count.
    """
    inputs = {"a": (arcs, "src"), "v": (vertices, "node"), "s": (seeds, "node"),
              "l": (loop, "node")}

    def start():
        state = _Values(floating, slot)
        waiting: list[Batch] = []          # seeds whose vertex is not named yet

        def proposals_from(cells: np.ndarray, arcs_: np.ndarray) -> Batch:
            """Along arc ``arcs_[i]``, the value of cell ``cells[i]`` plus its weight."""
            columns = state.columns(cells, state.targets.view[arcs_])
            columns[value] = state.cells[cells] + state.weights.view[arcs_]
            columns["sent"] = np.ones(len(arcs_), dtype=bool)
            return Batch(columns)

        def step(cap, rows_at: dict[str, Batch | None]) -> list[Batch]:
            a, v, s, lp = (rows_at[port] for port in ("a", "v", "s", "l"))
            first_new = len(state.nodes)
            new_arcs = None
            if a is not None:
                local = state.nodes.insert([a["src"]])
                start = state.adjacency.add(local)
                state.targets.extend(a["dst"])
                state.weights.extend(np.asarray(a["weight"]).astype(state.dtype, copy=False))
                new_arcs = np.arange(start, start + len(a), dtype=np.int64), local
            if v is not None:
                state.nodes.insert([v["node"]])
            starts: list[tuple[np.ndarray, Batch]] = []      # (vertex numbers, rows) proposed
            seeded = [s] if s is not None else []
            if waiting:
                seeded.extend(waiting)
                waiting.clear()
            for rows in seeded:
                if seeds_need_vertex:
                    ids = state.nodes.lookup([rows["node"]])
                    known = ids >= 0
                    if not known.all():
                        waiting.append(rows.filter(~known))
                        rows, ids = rows.filter(known), ids[known]
                else:
                    ids = state.nodes.insert([rows["node"]])
                if len(rows):
                    starts.append((ids, rows))
            if lp is not None:
                starts.append((state.nodes.insert([lp["node"]]), lp))
            slots = [state.slot_numbers(rows) for _, rows in starts]
            state.fit()
            new_nodes = np.arange(first_new, len(state.nodes), dtype=np.int64)
            parts = []
            if report_new and len(new_nodes):
                worst = np.full(len(new_nodes), state.worst, dtype=state.dtype)
                parts.append(state.rows(new_nodes * state.width, worst, value))
            cells_in = [ids * state.width + numbers for (ids, _), numbers in zip(starts, slots)]
            values_in = [np.asarray(rows[value]).astype(state.dtype, copy=False)
                         for _, rows in starts]
            if self_seeded and len(new_nodes):
                # Set, not lowered: an id may be the worst value itself. Its
                # arcs are new at this time, and carry it below.
                own = np.asarray(state.nodes.take(new_nodes)[0]).astype(state.dtype)
                state.cells[new_nodes * state.width] = own
                parts.append(state.rows(new_nodes * state.width, own, value))
            lowered = (lower(state.cells, np.concatenate(cells_in), np.concatenate(values_in),
                             state.mark) if cells_in else np.zeros(0, dtype=np.int64))
            if len(lowered):
                parts.append(state.rows(lowered, state.cells[lowered], value))
                # Each lowered cell goes along every arc of its vertex.
                owners, at = np.unique(lowered // state.width, return_inverse=True)
                arcs_, which = state.adjacency.gather(owners, len(state.nodes))
                order, begins = bucket(at.astype(np.int64, copy=False), len(owners))
                arc_at, cell_at = expand(which, order, begins)
                sent = proposals_from(lowered[cell_at], arcs_[arc_at])
                if len(sent):
                    parts.append(sent)
            if new_arcs is not None:
                # New arcs carry the values their sources already hold.
                numbers, sources = new_arcs
                held_cells = (sources[:, None] * state.width
                              + np.arange(state.width, dtype=np.int64)).reshape(-1)
                arc_of = np.repeat(numbers, state.width)
                known = state.cells[held_cells] != state.worst
                if known.any():
                    parts.append(proposals_from(held_cells[known], arc_of[known]))
            return parts

        return step

    return _in_order(name, inputs, start)


def pushed(arcs: Stream[Batch], vertices: Stream[Batch], loop: Stream[Batch], *,
           damping: float, tolerance: float, name: str = "PageRankPush") -> Stream[Batch]:
    """PageRank by residual pushing, kept across times, inside an
    ``iterative()`` scope: GraphX's ``r(v) = (1 - d) + d * sum(r(u) /
    outdeg(u) for u -> v)``.

    Each vertex holds a rank (the sum of what it has pushed) and a residual
    (what it has received since). A new vertex's residual starts at ``1 -
    d``; a vertex whose residual exceeds ``tolerance`` in magnitude adds it
    to its rank and sends ``residual / outdeg`` along each out-arc, where
    ``d`` times it joins the target's residual. When a vertex's out-degree
    grows from ``k`` to ``k'`` at a later time, what it pushed so far is
    redistributed: ``rank * (1/k' - 1/k)`` (negative) along each old arc
    and ``rank / k'`` along each new one. Residuals may then be negative;
    the ranks re-converge from where they were, and every residual left is
    below ``tolerance`` in magnitude.

    ``arcs``: ``(src, dst)`` rows; ``vertices``: ``node`` rows of every
    vertex (each edge end and any other); ``loop``: the operator's own
    ``(node, value)`` messages fed back. Returns rows ``(node, value,
    round, sent)``: ``sent`` false for a rank that changed at that round,
    true for a message.
    """
    reset = 1.0 - damping
    inputs = {"a": (arcs, "src"), "v": (vertices, "node"), "l": (loop, "node")}

    def start():
        nodes = KeyIndex(1)
        degree = Growing(np.int64)
        rank = Growing(np.float64)
        residual = Growing(np.float64)
        adjacency = Adjacency()
        targets = Growing(np.int64)

        def messages(amounts: np.ndarray, arcs_: np.ndarray, which: np.ndarray) -> Batch:
            """``amounts[i]`` along each arc ``arcs_[j]`` with ``which[j] == i``."""
            return Batch(node=targets.view[arcs_], value=amounts[which])

        def step(cap, rows_at: dict[str, Batch | None]) -> list[Batch]:
            a, v, lp = rows_at["a"], rows_at["v"], rows_at["l"]
            first_new = len(nodes)
            parts: list[Batch] = []
            if a is not None and len(a):
                local = nodes.insert([a["src"]])
                for grown in (degree, rank, residual):
                    grown.resize(len(nodes))
                added = np.bincount(local, minlength=len(nodes))
                sources = np.flatnonzero(added)
                before = degree.view[sources]
                after = before + added[sources]
                pushed_so_far = rank.view[sources]
                # What a source pushed along its old arcs, spread again over all.
                moved = (before > 0) & (pushed_so_far != 0)
                if moved.any():
                    olds = sources[moved]
                    arcs_, which = adjacency.gather(olds, len(nodes))
                    change = pushed_so_far[moved] * (1.0 / after[moved] - 1.0 / before[moved])
                    parts.append(messages(change, arcs_, which))
                start_arc = adjacency.add(local)
                targets.extend(a["dst"])
                degree.view[sources] = after
                share = np.zeros(len(nodes))
                share[sources] = pushed_so_far / after
                new_arcs = np.arange(start_arc, start_arc + len(a), dtype=np.int64)
                carried = share[local] != 0
                if carried.any():
                    parts.append(Batch(node=targets.view[new_arcs[carried]],
                                       value=share[local][carried]))
            if v is not None and len(v):
                nodes.insert([v["node"]])
            if lp is not None and len(lp):
                ids = nodes.insert([lp["node"]])
            for grown in (degree, rank, residual):
                grown.resize(len(nodes))
            residual.view[first_new:] += reset
            if lp is not None and len(lp):
                residual.view[:] += damping * np.bincount(ids, weights=lp["value"],
                                                          minlength=len(nodes))
            active = np.flatnonzero(np.abs(residual.view) > tolerance)
            if len(active):
                amounts = residual.view[active]
                rank.view[active] += amounts
                residual.view[active] = 0.0
                parts.append(Batch(node=np.asarray(nodes.take(active)[0]),
                                   value=rank.view[active].copy()).with_columns(
                    round=np.full(len(active), cap.time[-1], dtype=np.int64),
                    sent=np.zeros(len(active), dtype=bool)))
                sending = degree.view[active] > 0
                if sending.any():
                    senders = active[sending]
                    arcs_, which = adjacency.gather(senders, len(nodes))
                    parts.append(messages(amounts[sending] / degree.view[senders], arcs_,
                                          which))
            for i, part in enumerate(parts):
                if "sent" not in part:
                    parts[i] = part.with_columns(round=np.zeros(len(part), dtype=np.int64),
                                                 sent=np.ones(len(part), dtype=bool))
            return parts

        return step

    return _in_order(name, inputs, start)


def _outer_ready(time, frontiers) -> bool:
    """True when no frontier holds a time whose outer coordinates come
    before ``time``'s (every earlier outer time has finished)."""
    outer = time[:-1]
    return all(element[:-1] >= outer for frontier in frontiers
               for element in frontier.frontier())


def _outer_only(time, frontiers) -> bool:
    """True when every frontier holds times of ``time``'s outer time only."""
    outer = time[:-1]
    return all(element[:-1] == outer for frontier in frontiers
               for element in frontier.frontier())


class _Arcs:
    """One worker's arcs of PageRank, from the sources it owns: per arc the
    local numbers of its source (in ``nodes``) and of its target (in
    ``targets``, the distinct targets of these arcs), 8 bytes, in blocks of
    ``_BLOCK`` arcs (filled in turn: nothing is copied as arcs arrive, and
    at most one block is part empty); per source its out-degree (int32)."""

    def __init__(self) -> None:
        self.nodes = LocalIds()
        self.targets = LocalIds()
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []   # (sources, targets)
        self.filled = 0                 # arcs in the last block
        self.degree = Growing(np.int32)

    def join(self, rows: Batch) -> None:
        src = np.ascontiguousarray(rows["src"], dtype=np.int64)
        dst = np.ascontiguousarray(rows["dst"], dtype=np.int64)
        at = 0
        while at < len(src):
            if not self.blocks or self.filled == _BLOCK:
                self.blocks.append((np.empty(_BLOCK, np.int32), np.empty(_BLOCK, np.int32)))
                self.filled = 0
            sources, targets = self.blocks[-1]
            end = min(len(src), at + _BLOCK - self.filled)
            taken = self.nodes.insert(src[at:end])
            sources[self.filled:self.filled + len(taken)] = taken
            targets[self.filled:self.filled + len(taken)] = self.targets.insert(dst[at:end])
            self.filled += len(taken)
            self.degree.resize(len(self.nodes))
            tally(self.degree.view, taken)
            at = end

    def sums(self, share: np.ndarray) -> np.ndarray:
        """Per target number, the sum of ``share`` of the sources of its
        arcs, in the order the arcs came."""
        total = np.zeros(len(self.targets))
        for k, (sources, targets) in enumerate(self.blocks):
            size = self.filled if k == len(self.blocks) - 1 else _BLOCK
            arc_sums(total, targets[:size], sources[:size], share)
        return total


# Arcs per block of _Arcs: 2 MiB.
_BLOCK = 1 << 18


def stepped(vertices: Stream[Batch] | None, arcs: Stream[Batch], loop: Stream[Batch], *,
            iterations: int, damping: float, every_round: bool = False,
            name: str = "PageRank") -> Stream[Batch]:
    """GraphX's PageRank by fixed iterations inside an ``iterative()``
    scope: ``r_0 = 1``, ``r_{i+1}(v) = (1 - d) + d * sum(r_i(u) / outdeg(u)
    for u -> v)``, a dangling vertex's rank not passed on.

    ``arcs``: ``(src, dst)`` rows, taken in as they arrive (exchanged by
    ``src``): each worker keeps, per arc from a vertex it owns, the 32-bit
    local numbers of its source and of its target (8 bytes), and counts the
    out-degrees itself. ``vertices``: ``node`` rows naming vertices that
    may have no out-arc. A vertex named only as a target is introduced to
    its owner by the first round's sums (round 1): name it in ``vertices``
    for it to have a rank at round 0. ``loop``: the operator's own
    ``(node, value)`` sums fed back. Every round a worker sums what its
    vertices send along their arcs per distinct target (one pass in C) and
    sends one row per distinct target, so a round costs the arcs in C and
    the distinct targets on the wire; its memory is O(the arcs and vertices
    it holds), with no table sized to the range of the ids.

    Returns Batches of two kinds: ``(node, value)``, the sums to feed back;
    ``(node, rank)``, the ranks at the last round (``iterations``), or at
    every round with ``every_round``. The state is shared by all outer
    times, which are taken one after another."""
    reset = 1.0 - damping
    scope = arcs.scope
    b = OperatorBuilder(name, scope)
    named = b.new_input(vertices, Exchange("node")) if vertices is not None else None
    fed = b.new_input(loop, Exchange("node"))
    taken = b.new_input(arcs, Exchange("src"))
    out, result = b.new_output()

    def build(caps, _info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        state = _Arcs()
        rank = Growing(np.float64)
        held: dict = {}             # time -> [vertex Batches, loop Batches, arc Batches]
        waiting: list = []          # complete times held for earlier outer times

        def rows_at(cap):
            lists = held.get(cap.time)
            if lists is None:
                lists = held[cap.time] = ([], [], [])
                notificator.notify_at(cap)
            return lists

        def step(cap) -> None:
            got_nodes, got_sums, got_arcs = held.pop(cap.time, ([], [], []))
            i = int(cap.time[-1])
            for rows in got_arcs:
                state.join(rows)
            for rows in got_nodes:
                state.nodes.insert(np.ascontiguousarray(rows["node"], dtype=np.int64))
            numbered = [state.nodes.insert(np.ascontiguousarray(rows["node"], dtype=np.int64))
                        for rows in got_sums]
            n = len(state.nodes)
            state.degree.resize(n)
            rank.resize(n)
            if i == 0:
                rank.view[:] = 1.0
            else:
                received = np.zeros(n)
                for ids, rows in zip(numbered, got_sums):
                    scatter_add(received, ids, np.ascontiguousarray(rows["value"],
                                                                    dtype=np.float64))
                received *= damping
                received += reset
                rank.view[:] = received
                del received
            session = None
            if every_round or i == iterations:
                session = out.session(cap)
                session.give_container(Batch(node=state.nodes.view().copy(),
                                             rank=rank.view.copy()))
            if i < iterations and n:
                degree = state.degree.view
                share = np.divide(rank.view, degree, out=np.zeros(n), where=degree > 0)
                sums = state.sums(share)
                del share
                session = session or out.session(cap)
                if len(sums):
                    session.give_container(Batch(node=state.targets.view(), value=sums))
                # One own vertex's zero keeps the rounds going here without arcs.
                session.give_container(Batch(node=state.nodes.ids(np.zeros(1, np.int32)),
                                             value=np.zeros(1)))
            cap.drop()

        def run(frontiers):
            if named is not None:
                for cap, data in named:
                    if len(data):
                        rows_at(cap)[0].append(data)
                    else:
                        rows_at(cap)
            for cap, data in fed:
                if len(data):
                    rows_at(cap)[1].append(data)
                else:
                    rows_at(cap)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                waiting.append(item[0])
            waiting.sort(key=lambda c: c.time)
            while waiting and _outer_ready(waiting[0].time, frontiers):
                step(waiting.pop(0))
            for cap, data in taken:
                lists = rows_at(cap)
                if not len(data):
                    continue
                # Arcs of the only outer time still open join at once and
                # are dropped: a time's arcs are never all held as rows.
                if not waiting and _outer_only(cap.time, frontiers):
                    state.join(data)
                else:
                    lists[2].append(data)

        return run

    b.build(build)
    return result


def pieces(stream: Stream[Batch], rows: int = 1 << 17, name: str = "Pieces") -> Stream[Batch]:
    """``stream``'s Batches passed on in slices of at most ``rows`` rows (views,
    no copy), each at its Batch's time: one slice per activation, and none
    while another worker holds a full send window of this worker's data
    (the allocator calls back once it has taken some in). An exchange that
    follows then splits, routes and queues a slice at a time, so a worker
    holds O(rows + window) in flight to its peers rather than a copy of a
    whole Batch. Unchanged with one worker (nothing is exchanged)."""
    if stream.scope.peers == 1:
        return stream
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, Pipeline(), notify=False)
    out, result = b.new_output()
    allocator = stream.scope.worker.allocator

    def build(caps, info):
        caps.clear()
        queue: deque = deque()          # [capability, Batch, rows given]
        activate = info.activator.activate

        def run(_frontiers):
            for cap, data in inp:
                if len(data):
                    queue.append([cap.retain(), data, 0])
            if not queue:
                return
            if allocator.congested():
                allocator.on_window(activate)
                return
            held = queue[0]
            cap, data, at = held
            out.session(cap).give_container(data if at == 0 and len(data) <= rows
                                            else data.slice(at, at + rows))
            held[2] = at + rows
            if held[2] >= len(data):
                queue.popleft()
                cap.drop()
            if queue:
                activate()

        return run

    b.build(build)
    return result


def each_time(stream: Stream[Batch], pact: Any, body: Callable[[Batch], Batch | None],
              name: str) -> Stream[Batch]:
    """``body(rows)`` per worker and complete time, in time order, over the
    rows of that time that ``pact`` brings the worker (``Exchange(key)``:
    all the rows of a key meet in one call); what it returns is the output
    at that time. The shared per-time loop
    (:func:`~timely.dataflow.operators.core.per_time`) holds the rows."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, pact)
    out, result = b.new_output()

    def absorb(held: list[Batch], data: Batch) -> list[Batch]:
        if len(data):                   # the algorithms' own streams: Batches only
            held.append(data)
        return held

    def finish(_time: Any, held: list[Batch]) -> Batch | None:
        if not held:
            return None
        return body(held[0] if len(held) == 1 else Batch.concat(held))

    def build(caps: Any, _info: Any) -> Any:
        caps.clear()
        return per_time(b, inp, out, lambda time: [], absorb, finish)

    b.build(build)
    return result


def latest(changes: Stream[Batch], key: str, value: str, name: str = "Latest") -> Stream[Batch]:
    """Per complete time, for each ``key``, ``value`` of its row of the
    greatest ``round``: the last of the changes a loop made at that time."""

    def last(rows: Batch) -> Batch:
        keys, rounds = np.asarray(rows[key]), np.asarray(rows["round"])
        order = np.lexsort((-rounds, keys))
        keys = keys[order]
        first = order[np.concatenate([[True], keys[1:] != keys[:-1]])]
        return rows.select([key, value]).take(first)

    return each_time(changes, Exchange(key), last, name)


def settle(changes: Stream[Batch], keys: tuple[str, ...], value: str,
           name: str = "Settle") -> Stream[Batch]:
    """Per complete time, in time order: for each key, the least ``value``
    among its rows, sent when the key is new or the value is less than the
    one sent before. What :func:`lowest` lowered, as the answer's changes."""
    index = KeyIndex(len(keys))
    held = {"f": Growing(np.float64), "i": Growing(np.int64)}

    def changed(rows: Batch) -> Batch | None:
        before = len(index)
        ids = index.insert([np.asarray(rows[k]) for k in keys], keys)
        values = np.asarray(rows[value])
        best = held["f" if values.dtype.kind == "f" else "i"]
        best.resize(len(index))
        order = np.lexsort((values, ids))
        ids, values = ids[order], values[order]
        where = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
        ids, values = ids[where], values[where]
        fell = (ids >= before) | (values < best.data[ids])
        if not fell.any():
            return None
        best.data[ids[fell]] = values[fell]
        columns = dict(rows.select(list(keys)).take(order[where[fell]]).columns)
        columns[value] = values[fell]
        return Batch(columns)

    return each_time(changes, Exchange(keys[0]), changed, name)


def check_weights(weights: np.ndarray, column: str) -> np.ndarray:
    """``weights`` as float64, refusing a negative or NaN one."""
    w = np.asarray(weights).astype(np.float64)
    if len(w) and not (w >= 0).all():
        raise ColumnarError(f"shortest paths need non-negative weights; {column!r} has "
                            f"{w[~(w >= 0)][0]}")
    return w


def loop_round(time: Any) -> int:
    """The round of a time of an iterative scope: its last coordinate."""
    return int(time[-1])


def outer_time(time: Any) -> tuple:
    """The time outside an iterative scope of one of its times: all but the round."""
    return tuple(time[:-1])


def reported(stream, on_round):
    """``stream`` (inside a loop) passed on unchanged; when ``on_round`` is
    given, ``on_round(round, rows)`` is called once a round is complete on
    this worker, for every round in which ``stream`` carried rows here, with
    their count. Rounds are reported in order. Every worker must pass a
    callback or none: the reporting is an operator of the dataflow."""
    if on_round is None:
        return stream
    rows: dict = {}

    def seen(event) -> None:
        if type(event) is Ok:
            time, batch = event.value
            rows[time] = rows.get(time, 0) + len(batch)
            return
        frontier = event.error
        done = sorted(t for t in rows if not any(less_equal(f, t) for f in frontier))
        for time in done:
            on_round(time[-1], rows.pop(time))

    return stream.inspect_core(seen)


def least_values(arcs, seeds, value: str, *, vertices=None, slot: str | None = None,
            floating: bool = False, self_seeded: bool = False, seeds_need_vertex: bool = False,
            report_new: bool = False, on_round=None, name: str = "Lowest"):
    """The least ``value`` per vertex (and ``slot``) over seeds and the
    weighted ``arcs`` (``src``, ``dst``, ``weight``), by
    :func:`~timely.algorithms.propagation.lowest` in an ``iterative()``
    scope, kept across the times the arcs arrive at: per time, the vertices
    whose value changed at it."""
    keys = ("node",) if slot is None else ("node", slot)
    with arcs.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        rows = lowest(arcs.enter(inner), seeds.enter(inner) if seeds is not None else None,
                      loop, value=value,
                      vertices=vertices.enter(inner) if vertices is not None else None,
                      slot=slot, floating=floating, self_seeded=self_seeded,
                      seeds_need_vertex=seeds_need_vertex, report_new=report_new, name=name)
        rows.filter_batch(lambda b: b["sent"]).map_batch(
            lambda b: b.select([*keys, value])).connect_loop(handle)
        changes = rows.filter_batch(lambda b: ~b["sent"]).map_batch(
            lambda b: b.select([*keys, value]))
        changes = reported(changes, on_round).leave()
    return settle(changes, keys, value)
