"""Least values spread along arcs, kept up to date as arcs arrive: the
fixpoint behind connected components, BFS, weighted shortest paths and
distances to landmarks.

:func:`lowest` computes, per vertex (and per slot, such as a landmark), the
least over seeds ``s`` and paths ``s -> ... -> v`` of the seed's value plus
the weights along the path. Arcs, vertices and seeds may arrive at many
times; the answer at a time counts everything given at that time and
before, and a time's output names only the vertices whose answer changed at
it. Each worker holds the values and out-arcs of the vertices it owns (by
a 64-bit mix of the id) in a compiled
:class:`~timely.algorithms._graph.LeastValues`, about 21 bytes a vertex and
4 an arc (plus 8 for a weight), so the work at a time is the arcs of the
vertices whose values fall, not the graph; a round sends each other worker
one row per target of its whose least offer fell.

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

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from timely.algorithms._graph import (
    Adjacency,
    LeastValues,
    LocalIds,
    arc_sums,
    scatter_add,
    tally,
)
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.core import Ok, per_time
from timely.dataflow.operators.relational import KeyIndex, Pace, PacedSender, at_complete_times
from timely.errors import ColumnarError
from timely.progress import less_equal

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["Growing", "each_time", "latest", "least_values", "loop_round", "lowest", "outer_done",
           "outer_time", "pieces", "pushed", "reported", "stepped"]

_INT64_MAX = np.iinfo(np.int64).max

# Rows of a round's proposals or of a time's changes sent at a time.
_SLICE = 1 << 16


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


def _rows(data: Any, operator: str) -> Batch:
    if type(data) is not Batch:
        raise ColumnarError(f"{operator} works on columnar Batches, not on a "
                            f"{type(data).__name__} of records")
    return data


def outer_done(outer: tuple, frontiers) -> bool:
    """No input can still bring a time of the outer time ``outer``."""
    return not any(less_equal(element[:-1], outer)
                   for frontier in frontiers for element in frontier.frontier())


def _outer_first(outer: tuple, frontiers) -> bool:
    """No input can still bring a time whose outer coordinates come before
    ``outer`` in lexicographic order."""
    return all(element[:-1] >= outer for frontier in frontiers for element in frontier.frontier())


def lowest(arcs: Stream[Batch], seeds: Stream[Batch] | None, loop: Stream[Batch], *,
           value: str, vertices: Stream[Batch] | None = None, slot: str | None = None,
           floating: bool = False, weighted: bool = True, self_seeded: bool = False,
           seeds_need_vertex: bool = False, report_new: bool = False,
           name_targets: bool = False, on_round: Callable[[int, int], object] | None = None,
           name: str = "Lowest") -> tuple[Stream[Batch], Stream[Batch]]:
    """The operator of the fixpoint, inside an ``iterative()`` scope; each
    worker holds its vertices' part in a compiled
    :class:`~timely.algorithms._graph.LeastValues`.

    ``arcs``: ``(src, dst[, weight])`` rows (int64 ends; with ``weighted``
    a ``weight`` column of non-negative int64 or, with ``floating``,
    float64 weights; else each arc weighs 1). ``vertices``: ``node`` rows
    naming vertices; with ``name_targets`` every arc's target is named too.
    ``seeds``: ``(node[, slot], value)`` rows, each a value a vertex starts
    from; with ``seeds_need_vertex`` a seed waits until its node is named.
    ``self_seeded``: every vertex is a seed of its own id (components).
    ``loop``: the operator's proposals fed back. ``slot``: the column of
    the slot (a landmark), or None for one value per vertex.

    Returns ``(proposals, changes)``: the ``(node[, slot], value)`` rows
    to feed back to ``loop``, one per vertex (and slot) of another worker
    whose least offer of the round fell (a worst value names a vertex), and
    once an outer time's rounds are over, a row per vertex (and slot) new
    at it (with ``report_new``; at its own id with ``self_seeded``) or
    lowered at it, with its value then. Every input is exchanged by a
    64-bit mix of its vertex (:func:`~timely.algorithms.edges.by_vertex`),
    so ids that share their low bits still spread; the answer is the same
    at any worker count. ``on_round(round, rows)``, when given, is called
    on each worker after each round in which it named (reporting them) or
    lowered ``rows`` vertices.

    Arcs and vertices of the outer time next in line are taken in as they
    arrive (the messages released at once); those of a later one wait as
    they came until its turn. A time's rounds begin once every earlier
    outer time (in lexicographic order) has finished its own. Proposals and
    changes go out a slice of ``_SLICE`` rows an activation, none while a
    peer holds a full send window of this worker's data."""
    from timely.algorithms.edges import by_vertex  # edges imports this module

    b = OperatorBuilder(name, loop.scope)
    one = loop.scope.peers == 1             # nothing to route (nor to hash)
    inputs = [(key, b.new_input(stream, Pipeline() if one else by_vertex(column)))
              for key, stream, column in (("a", arcs, "src"), ("v", vertices, "node"),
                                          ("s", seeds, "node"), ("l", loop, "node"))
              if stream is not None]
    proposals_out, proposals = b.new_output()
    changes_out, changes = b.new_output()
    dtype = np.float64 if floating else np.int64
    worst = np.inf if floating else _INT64_MAX

    def build(caps, info):
        caps.clear()
        state = LeastValues(info.worker_index, info.peers, floating=floating, weighted=weighted,
                            self_seeded=self_seeded, report_new=report_new)
        slots = KeyIndex(1) if slot is not None else None
        notificator = FrontierNotificator(b.arity)
        held: dict[Any, dict[str, list[Batch]]] = {}     # per time: what waits for its turn
        due: list = []                                    # complete times, in lexicographic turn
        waiting: list[Batch] = []                         # seeds whose vertex is not named yet
        reports: dict[tuple, Any] = {}                    # per outer time begun: its changes' capability
        job: list = []                  # output, capability, take, more, outer: what goes out
        allocator = loop.scope.worker.allocator
        activate = info.activator.activate

        def take_in(key: str, rows: Batch) -> None:
            if key == "a":
                weight = (np.ascontiguousarray(rows["weight"], dtype=dtype) if weighted
                          else None)
                state.absorb(np.ascontiguousarray(rows["src"], dtype=np.int64),
                             np.ascontiguousarray(rows["dst"], dtype=np.int64), weight,
                             name_targets=name_targets)
            else:
                state.name(np.ascontiguousarray(rows["node"], dtype=np.int64))

        def slot_numbers(rows: Batch, values: np.ndarray) -> np.ndarray | None:
            if slots is None or slot is None:
                return None
            numbers = np.zeros(len(rows), dtype=np.int64)
            real = values != worst                # a worst value only names its vertex
            if real.any():
                numbers[real] = slots.insert([np.asarray(rows[slot])[real].astype(np.int64)])
                if len(slots) > state.width:
                    state.widen(max(len(slots), 2 * state.width))
            return numbers

        def lowered(rows: Batch, need_vertex: bool) -> Batch | None:
            """Lowers by ``rows``; those whose vertex is not named yet, when they must wait."""
            values = np.ascontiguousarray(rows[value], dtype=dtype)
            left = state.lower(np.ascontiguousarray(rows["node"], dtype=np.int64),
                               slot_numbers(rows, values), values, need_vertex)
            return rows.take(left) if len(left) else None

        def columns(ids: np.ndarray, numbers: np.ndarray | None, values: np.ndarray) -> Batch:
            out = {"node": ids}
            if slot is not None and slots is not None:
                if numbers is None:
                    numbers = np.zeros(len(ids), dtype=np.int64)
                # Without slots yet, only worst values (naming) go out: any slot will do.
                out[slot] = (np.asarray(slots.take(numbers)[0], dtype=np.int64) if len(slots)
                             else numbers)
            out[value] = values
            return Batch(out)

        def send_some() -> bool:
            """Passes on a slice of what is going out (a round's proposals, an
            outer time's changes), one an activation and none while a peer
            holds a full send window of this worker's data; True once
            nothing is left to send."""
            if not job:
                return True
            if allocator.congested():
                allocator.on_window(activate)
                return False
            out, cap, take, more, outer = job
            got = take(_SLICE)
            if len(got[0]):
                out.session(cap).give_container(columns(*got))
            del got
            if more():
                activate()
                return False
            job.clear()
            cap.drop()
            if outer is not None:
                del reports[outer]
            return True

        def step(cap) -> None:
            rows = held.pop(cap.time, {})
            for key in ("a", "v"):
                for batch in rows.get(key, ()):
                    take_in(key, batch)
            for batch in rows.get("l", ()):
                lowered(batch, False)
            # After the proposals, which name far targets: a seed may wait for one.
            seeded = rows.get("s", []) + waiting
            waiting.clear()
            for batch in seeded:
                left = lowered(batch, seeds_need_vertex)
                if left is not None:
                    waiting.append(left)
            del rows, seeded
            count = state.expand()
            if on_round is not None and count:
                on_round(loop_round(cap.time), count)
            if state.has_pending:
                # Cells lowered here by this worker's own arcs go round here.
                notificator.notify_at(cap.delayed((*cap.time[:-1], cap.time[-1] + 1)))
            if state.has_proposals:
                job[:] = [proposals_out, cap, state.proposals, lambda: state.has_proposals, None]
                send_some()
            else:
                cap.drop()

        def finish(frontiers) -> None:
            """Reports the outer time under way once its rounds are over."""
            if job or not reports:
                return
            outer = min(reports)
            if outer_done(outer, frontiers):
                job[:] = [changes_out, reports[outer], state.report, lambda: state.has_report,
                          outer]
                send_some()

        def logic(frontiers):
            for key, inp in inputs:
                for cap, data in inp:
                    rows = _rows(data, name)
                    outer = outer_time(cap.time)
                    if outer not in reports:
                        reports[outer] = cap.retain_for_output(1)
                    if (key in "av" and min(reports) == outer
                            and _outer_first(outer, frontiers)):
                        take_in(key, rows)          # its turn: taken in now, the message let go
                    else:
                        held.setdefault(cap.time, {}).setdefault(key, []).append(rows)
                    notificator.notify_at(cap)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                due.append(item[0])
            due.sort(key=lambda c: c.time)
            if not send_some():
                return
            finish(frontiers)
            while not job and due and _outer_first(outer_time(due[0].time), frontiers):
                step(due.pop(0))
            finish(frontiers)

        return logic

    b.build(build)
    return proposals, changes


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
    state = _Arcs()
    rank = Growing(np.float64)

    def join(_time: Any, rows: Batch) -> None:
        state.join(rows)

    def step(cap: Any, rows: list[list[Batch]]) -> list[Batch]:
        got_nodes, got_sums, _ = rows
        i = int(cap.time[-1])
        for batch in got_nodes:
            state.nodes.insert(np.ascontiguousarray(batch["node"], dtype=np.int64))
        numbered = [state.nodes.insert(np.ascontiguousarray(batch["node"], dtype=np.int64))
                    for batch in got_sums]
        n = len(state.nodes)
        state.degree.resize(n)
        rank.resize(n)
        if i == 0:
            rank.view[:] = 1.0
        else:
            received = np.zeros(n)
            for ids, batch in zip(numbered, got_sums):
                scatter_add(received, ids, np.ascontiguousarray(batch["value"], dtype=np.float64))
            received *= damping
            received += reset
            rank.view[:] = received
            del received
        parts = []
        if every_round or i == iterations:
            parts.append(Batch(node=state.nodes.view().copy(), rank=rank.view.copy()))
        if i < iterations and n:
            degree = state.degree.view
            share = np.divide(rank.view, degree, out=np.zeros(n), where=degree > 0)
            parts.append(Batch(node=state.targets.view(), value=state.sums(share)))
            del share
            # One own vertex's zero keeps the rounds going here without arcs.
            parts.append(Batch(node=state.nodes.ids(np.zeros(1, np.int32)), value=np.zeros(1)))
        return parts

    # Arcs of the outer time next in line join at once and are dropped: a
    # time's arcs are never all held as rows.
    return at_complete_times(name, [(vertices, "node"), (loop, "node"), (arcs, "src", join)],
                             step, lexicographic=True, whole=False)


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

    def sliced(data: Batch) -> Iterator[tuple[Any, Batch]]:
        if len(data) <= rows:
            yield out, data
            return
        for at in range(0, len(data), rows):
            yield out, data.slice(at, at + rows)

    def build(caps, info):
        caps.clear()
        paced = PacedSender(stream.scope, info, Pace())

        def run(_frontiers):
            for cap, data in inp:
                if len(data):
                    paced.add([cap.retain()], sliced(data))
            paced.send()

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


def check_weights(weights: np.ndarray, column: str) -> np.ndarray:
    """``weights`` as float64 (float64 weights as they are, not copied),
    refusing a negative or NaN one."""
    w = np.asarray(weights).astype(np.float64, copy=False)
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
                 floating: bool = False, weighted: bool = True, self_seeded: bool = False,
                 seeds_need_vertex: bool = False, report_new: bool = False,
                 name_targets: bool = False, on_round=None, name: str = "Lowest"):
    """The least ``value`` per vertex (and ``slot``) over seeds and the
    weighted ``arcs`` (``src``, ``dst``, and ``weight`` unless ``weighted``
    is false), by :func:`~timely.algorithms.propagation.lowest` in an
    ``iterative()`` scope, kept across the times the arcs arrive at: per
    time, a row for each vertex whose value is new or changed at it. Arcs
    and vertices go to their owners a slice at a time."""
    with arcs.scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        arcs = pieces(arcs, name=f"{name}Arcs")
        if vertices is not None:
            vertices = pieces(vertices, name=f"{name}Vertices")
        proposals, changes = lowest(
            arcs.enter(inner), seeds.enter(inner) if seeds is not None else None, loop,
            value=value, vertices=vertices.enter(inner) if vertices is not None else None,
            slot=slot, floating=floating, weighted=weighted, self_seeded=self_seeded,
            seeds_need_vertex=seeds_need_vertex, report_new=report_new,
            name_targets=name_targets, on_round=on_round, name=name)
        proposals.connect_loop(handle)
        return changes.leave()
