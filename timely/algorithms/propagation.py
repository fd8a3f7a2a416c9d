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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from timely.algorithms._graph import Adjacency, lower
from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators.relational import KeyIndex, PendingBatches, bucket, expand
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["lowest", "settle"]

_INT64_MAX = np.iinfo(np.int64).max


class _Growing:
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
        self.targets = _Growing(np.int64)
        self.weights = _Growing(self.dtype)

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


def _lexicographic_ready(time: tuple, frontiers: list) -> bool:
    """True when no input can still bring a time whose outer coordinates
    come before ``time``'s: every earlier outer time has finished."""
    outer = time[:-1]
    for frontier in frontiers:
        for element in frontier.frontier():
            if element[:-1] < outer:
                return False
    return True


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
    b = OperatorBuilder(name, arcs.scope)
    ain = b.new_input(arcs, Exchange("src"))
    vin = b.new_input(vertices, Exchange("node")) if vertices is not None else None
    sin = b.new_input(seeds, Exchange("node")) if seeds is not None else None
    lin = b.new_input(loop, Exchange("node"))
    out, result = b.new_output()

    def build(caps, _info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        pending = {port: PendingBatches(notificator) for port in ("a", "v", "s", "l")}
        inputs = [("a", ain), ("v", vin), ("s", sin), ("l", lin)]
        state = _Values(floating, slot)
        waiting: list[Batch] = []          # seeds whose vertex is not named yet
        held: list = []                    # complete times, waiting for earlier outer times

        def proposals_from(cells: np.ndarray, arcs_: np.ndarray) -> Batch:
            """Along arc ``arcs_[i]``, the value of cell ``cells[i]`` plus its weight."""
            columns = state.columns(cells, state.targets.view[arcs_])
            columns[value] = state.cells[cells] + state.weights.view[arcs_]
            columns["sent"] = np.ones(len(arcs_), dtype=bool)
            return Batch(columns)

        def step(cap) -> None:
            t = cap.time
            a, v, s, lp = (pending[port].take(t) for port in ("a", "v", "s", "l"))
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
            if parts:
                out.session(cap).give_container(parts[0] if len(parts) == 1
                                                else Batch.concat(parts))

        def run(frontiers):
            for port, inp in inputs:
                if inp is not None:
                    for cap, data in inp:
                        pending[port].add(cap, data)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                held.append(item[0])
            if not held:
                return
            held.sort(key=lambda c: c.time)
            while held and _lexicographic_ready(held[0].time, frontiers):
                cap = held.pop(0)
                step(cap)
                cap.drop()

        return run

    b.build(build)
    return result


def settle(changes: Stream[Batch], keys: tuple[str, ...], value: str,
           name: str = "Settle") -> Stream[Batch]:
    """Per complete time, in time order: for each key, the least ``value``
    among its rows, sent when the key is new or the value is less than the
    one sent before. What :func:`lowest` lowered, as the answer's changes."""
    b = OperatorBuilder(name, changes.scope)
    inp = b.new_input(changes, Exchange(keys[0]))
    out, result = b.new_output()

    def build(caps, _info):
        caps.clear()
        pending = PendingBatches(FrontierNotificator(b.arity))
        index = KeyIndex(len(keys))
        best = _Growing(np.float64)
        best_int = _Growing(np.int64)

        def run(frontiers):
            for cap, rows in pending.complete(inp, frontiers, name):
                if rows is not None and len(rows):
                    before = len(index)
                    ids = index.insert([np.asarray(rows[k]) for k in keys], keys)
                    values = np.asarray(rows[value])
                    floating = values.dtype.kind == "f"
                    held = best if floating else best_int
                    held.reserve(len(index))
                    held.size = len(index)
                    order = np.lexsort((values, ids))
                    ids, values = ids[order], values[order]
                    first = np.concatenate([[True], ids[1:] != ids[:-1]])
                    where = np.flatnonzero(first)
                    ids, values = ids[where], values[where]
                    changed = (ids >= before) | (values < held.data[ids])
                    ids, values, where = ids[changed], values[changed], order[where[changed]]
                    if len(ids):
                        held.data[ids] = values
                        columns = dict(rows.select(list(keys)).take(where).columns)
                        columns[value] = values
                        out.session(cap).give_container(Batch(columns))
                cap.drop()

        return run

    b.build(build)
    return result


def check_weights(weights: np.ndarray, column: str) -> np.ndarray:
    """``weights`` as float64, refusing a negative or NaN one."""
    w = np.asarray(weights).astype(np.float64)
    if len(w) and not (w >= 0).all():
        raise ColumnarError(f"shortest paths need non-negative weights; {column!r} has "
                            f"{w[~(w >= 0)][0]}")
    return w
