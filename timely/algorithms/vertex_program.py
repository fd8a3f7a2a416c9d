"""Vertex programs over streams of edge Batches: :func:`pregel`, the
Pregel / GraphFrames ``aggregateMessages`` model, and
:func:`strongly_connected_components`, built on it.

A vertex program keeps a state per vertex (one or more numeric columns).
In each round, every edge whose source vertex is *active* carries a
message computed from the edge and the states of its two ends; the
messages to each vertex are merged (a sum, a minimum, a maximum or a
count per message column), and the vertices that received messages update
their state from them and say whether they stay active. Rounds repeat in
an ``iterative()`` scope until no message is sent, or for ``max_rounds``.
Everything a round does is vectorized: ``send`` and ``update`` are called
with whole Batches, never per row.

Single-source shortest paths, written with :func:`pregel`:

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         h1, edges = scope.new_input()
...         h2, vertices = scope.new_input()
...         pregel(edges, vertices,
...                send=lambda b: timely.Batch(dst=b["dst"], dist=b["src_dist"] + b["weight"]),
...                merge="min",
...                update=lambda states, got: timely.Batch(
...                    dist=np.minimum(states["dist"], got["dist"])),
...                ).inspect_batch(lambda t, b: got.extend(b.to_records()))
...     h1.send_batch(timely.Batch(src=np.array([1, 1, 2]), dst=np.array([2, 3, 3]),
...                                weight=np.array([1.0, 5.0, 2.0])))
...     ids = np.array([1, 2, 3, 4])
...     h2.send_batch(timely.Batch(id=ids, dist=np.where(ids == 1, 0.0, np.inf),
...                                active=ids == 1))
...     h1.close(); h2.close(); worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[(1, 0.0), (2, 1.0), (3, 3.0), (4, inf)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Union, cast

import numpy as np

from timely.algorithms.edges import int64_column
from timely.algorithms.ids import Ids, VertexIds
from timely.container import Batch
from timely.container.aggregate import GroupBy
from timely.dataflow.operators.relational import KeyIndex, at_complete_times, join
from timely.errors import AggregateError, ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["pregel", "strongly_connected_components"]

Merge = Union[str, Mapping[str, str], Callable[[Batch], Batch]]

_MERGES = ("sum", "min", "max", "count")
_ACTIVE = "active"
_ROUND = "pregel round"


def _finished(frontiers: list, outer: tuple) -> bool:
    """True when no frontier can still bring a time whose outer part is ``outer``."""
    for frontier in frontiers:
        for time in frontier.frontier():
            if all(a <= b for a, b in zip(time[:-1], outer)):
                return False
    return True


def _per_time(name: str, inputs: list, body: Callable[[Any, list], Batch | None],
              after: Callable[[list], None] | None = None) -> Stream[Batch]:
    """An operator with one input per ``(stream, key)`` of ``inputs``, each
    exchanged by its column ``key`` (``None``: not moved, and its data
    dropped: an input read only for its progress). Once a time is complete,
    ``body(time, rows)`` is called with one Batch (or None) per input, in
    time order; what it returns is sent at that time. ``after(frontiers)``
    is called at the end of every activation
    (:func:`~timely.dataflow.operators.relational.at_complete_times`)."""
    return at_complete_times(name, inputs, lambda cap, rows: body(cap.time, rows), after=after)


class _Table:
    """The states of one worker's vertices of one graph: a KeyIndex over
    the vertex ids and one numpy array per state column."""

    def __init__(self, batch: Batch, key: str, names: tuple[str, ...]):
        ids = int64_column(batch, key, "the vertices")
        self.index = KeyIndex(1)
        rows = self.index.insert([ids])
        if len(self.index) < len(ids):
            counts = np.bincount(rows, minlength=len(self.index))
            twice = ids[np.flatnonzero(counts[rows] > 1)[0]]
            raise ColumnarError(f"pregel: vertex {int(twice)} is given more than once "
                                f"among the vertices")
        self.ids = ids
        self.columns = {n: np.array(batch[n]) for n in names}

    def find(self, ids: np.ndarray, what: str) -> np.ndarray:
        """The rows of the vertices ``ids``; an id that is not a vertex
        raises :class:`ColumnarError` saying it came from ``what``."""
        rows = self.index.lookup([ids])
        if len(rows) and rows.min() < 0:
            missing = ids[np.flatnonzero(rows < 0)[0]]
            raise ColumnarError(f"pregel: {what} {int(missing)}, which is not among the vertices")
        return rows


def _state_names(batch: Batch, key: str) -> tuple[str, ...]:
    """The state columns of a Batch of vertices, checked."""
    names = tuple(n for n in batch.names if n not in (key, _ACTIVE))
    for n in names:
        if n == _ROUND:
            raise ColumnarError(f"pregel: {_ROUND!r} is not a state column name")
        kind = np.asarray(batch[n]).dtype.kind
        if kind not in "biuf":
            raise ColumnarError(f"pregel: the state column {n!r} is numeric or bool, "
                                f"not of dtype kind {kind!r}")
    return names


def _merge_spec(merge: Merge) -> Callable[[Batch], dict[str, str]] | None:
    """What to do with each message column, as a function of a Batch of
    messages; None for a callable merge."""
    if callable(merge):
        return None
    if isinstance(merge, str):
        if merge not in _MERGES:
            raise AggregateError(f"pregel: merge is one of {_MERGES}, a dict of them per "
                                 f"message column, or a function, not {merge!r}")
        return lambda messages: {n: merge for n in messages.names}
    if isinstance(merge, Mapping):
        spec = dict(merge)
        for column, how in spec.items():
            if not isinstance(column, str) or how not in _MERGES:
                raise AggregateError(f"pregel: merge maps message columns to one of "
                                     f"{_MERGES}, not {column!r} to {how!r}")
        return lambda messages: spec
    raise TypeError(f"pregel: merge is one of {_MERGES}, a dict of them per message column, "
                    f"or a function, not {type(merge).__name__}")


def _message_values(values: Any) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind == "b":
        return values.astype(np.int64)
    if values.dtype.kind not in "iuf":
        raise ColumnarError(f"pregel: message columns merged by name are numeric, "
                            f"not {values.dtype}")
    return values


def _merged(targets: np.ndarray, messages: Batch, spec: dict[str, str],
            target: str) -> Batch:
    """One row per distinct ``targets``: each column of ``spec`` merged by
    its aggregate. A float sum adds its values in the order of the values
    (sorted per target), so its result does not depend on the order the
    messages came in."""
    index = KeyIndex(1)
    ids = index.insert([targets])
    n = len(index)
    columns: dict[str, Any] = {target: index.keys()[0]}
    for column, how in spec.items():
        values = _message_values(messages[column])
        if how == "sum" and values.dtype.kind == "f":
            order = np.lexsort((values, ids))
            keys, values = ids[order], values[order]
        else:
            keys = ids
        group = GroupBy((how,))
        group.update(keys, values)
        at, result = group.result()
        values = np.asarray(result[how])
        merged = np.empty(n, dtype=values.dtype)
        merged[np.asarray(at, dtype=np.int64)] = values
        columns[column] = merged
    return Batch(columns)


def _checked_messages(produced: Any, target: str, spec_of: Callable[[Batch], dict[str, str]]
                      | None) -> tuple[Batch, dict[str, str] | None] | None:
    """What ``send`` returned, checked: a Batch with an integer ``target``
    column and the message columns ``merge`` names (None: no messages)."""
    if produced is None:
        return None
    if type(produced) is not Batch:
        raise ColumnarError(f"pregel: send returns a Batch of messages, not "
                            f"{type(produced).__name__}")
    int64_column(produced, target, "send's messages")
    messages = produced.select([n for n in produced.names if n != target])
    if spec_of is None:
        return produced, None
    spec = spec_of(messages)
    if not spec:
        raise ColumnarError(f"pregel: send's messages have no column besides {target!r}")
    unknown = [n for n in messages.names if n not in spec]
    absent = [n for n in spec if n not in messages]
    if unknown or absent:
        raise ColumnarError(f"pregel: send's message columns {list(messages.names)} are not "
                            f"the columns merge names, {list(spec)}")
    return produced, spec


def _partials(produced: Batch, spec: dict[str, str], target: str) -> Batch:
    """The messages of one Batch, merged where they are when that is exact
    (no float sum among them), with every count turned into a partial count:
    what the vertices' workers merge with ``count`` read as ``sum``."""
    targets = produced[target].astype(np.int64, copy=False)
    floats = any(how == "sum" and np.asarray(produced[c]).dtype.kind == "f"
                 for c, how in spec.items())
    if floats:
        columns: dict[str, Any] = {target: targets}
        for c, how in spec.items():
            columns[c] = (np.ones(len(produced), dtype=np.int64) if how == "count"
                          else _message_values(produced[c]))
        return Batch(columns)
    return _merged(targets, produced, spec, target)


def _changed(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    if new.dtype.kind == "f" or old.dtype.kind == "f":
        return ~((new == old) | (np.isnan(new) & np.isnan(old)))
    return new != old


def _superstep(vertices: Stream[Batch], messages: Stream[Batch], tables: dict, key: str,
               target: str, merge: Merge, spec_of: Callable[[Batch], dict[str, str]] | None,
               update: Callable[[Batch, Batch], Batch], max_rounds: int | None) -> Stream[Batch]:
    """The vertices' states, by round: at round 0 every vertex, later the
    vertices whose state changed or that stay active, with columns ``key``,
    the state, ``active`` and the round."""
    names_of: dict = {}

    def emitted(ids: np.ndarray, columns: dict, active: np.ndarray, round_: int) -> Batch:
        if max_rounds is not None and round_ >= max_rounds:
            active = np.zeros(len(ids), dtype=bool)
        return Batch({key: ids, **columns, _ACTIVE: active,
                      _ROUND: np.full(len(ids), round_, dtype=np.int64)})

    def body(time: Any, rows: list) -> Batch | None:
        outer, round_ = time[:-1], int(time[-1])
        given, got = rows
        parts = []
        if given is not None:
            names = names_of[outer] = _state_names(given, key)
            table = tables[outer] = _Table(given, key, names)
            active = (np.asarray(given[_ACTIVE]).astype(bool) if _ACTIVE in given
                      else np.ones(len(given), dtype=bool))
            parts.append(emitted(table.ids, {n: table.columns[n].copy() for n in names},
                                 active, round_))
        if got is not None:
            found = tables.get(outer)
            targets = got[target].astype(np.int64, copy=False)
            if found is None:
                raise ColumnarError(f"pregel: send gave a message to vertex {int(targets[0])}, "
                                    f"which is not among the vertices")
            names = names_of[outer]
            if spec_of is None:
                order = np.lexsort([np.asarray(got[n]) for n in reversed(got.names)
                                    if n != target] + [targets])
                ordered = got.take(order)
                merged = cast(Callable[[Batch], Batch], merge)(ordered)
                if type(merged) is not Batch or target not in merged:
                    raise ColumnarError(f"pregel: merge returns a Batch with the column "
                                        f"{target!r}, one row per vertex messaged")
                ids = int64_column(merged, target, "merge's result")
                if len(ids) != len(np.unique(ids)) or not np.array_equal(
                        np.sort(ids), np.unique(targets)):
                    raise ColumnarError("pregel: merge returns one row per vertex messaged, "
                                        "each once")
            else:
                spec = {c: ("sum" if how == "count" else how)
                        for c, how in spec_of(got.select(
                            [n for n in got.names if n != target])).items()}
                merged = _merged(targets, got, spec, target)
                ids = merged[target]
            where = found.find(ids, "send gave a message to vertex")
            states = Batch({key: ids, **{n: found.columns[n][where] for n in names}})
            received = Batch({key: ids, **{n: merged[n] for n in merged.names if n != target}})
            result = update(states, received)
            if type(result) is not Batch:
                raise ColumnarError(f"pregel: update returns a Batch of states, not "
                                    f"{type(result).__name__}")
            unknown = [n for n in result.names if n not in names and n not in (key, _ACTIVE)]
            absent = [n for n in names if n not in result]
            if unknown or absent:
                raise ColumnarError(f"pregel: update returns the state columns {list(names)} "
                                    f"(and optionally {_ACTIVE!r}), not {list(result.names)}")
            if len(result) != len(ids):
                raise ColumnarError(f"pregel: update returns one row per vertex given "
                                    f"({len(ids)}), not {len(result)}")
            changed = np.zeros(len(ids), dtype=bool)
            for n in names:
                held = found.columns[n]
                new = np.asarray(result[n])
                if not np.can_cast(new.dtype, held.dtype, "same_kind"):
                    raise ColumnarError(f"pregel: update gives the state column {n!r} as "
                                        f"{new.dtype}, which does not fit its {held.dtype}")
                changed |= _changed(new, held[where])
                held[where] = new
            active = (np.asarray(result[_ACTIVE]).astype(bool) if _ACTIVE in result
                      else changed)
            keep = changed | active
            kept = where[keep]
            parts.append(emitted(ids[keep], {n: found.columns[n][kept] for n in names},
                                 active[keep], round_))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Batch.concat(parts)

    def after(frontiers: list) -> None:
        for outer in [o for o in tables if _finished(frontiers, o)]:
            del tables[outer]
            names_of.pop(outer, None)

    return _per_time("PregelUpdate", [(vertices, key), (messages, target)], body, after)


def _out_edges(edges: Stream[Batch], sources: Stream[Batch], src: str,
               prefix: str) -> Stream[Batch]:
    """The edges of each active source (rows of ``sources``: ``src`` and
    its state columns, named with ``prefix``), with the source's state: a
    join kept per graph (the edges of a time join the sources of that time
    and of its later rounds, and of no other time)."""
    held: dict = {}

    def body(time: Any, rows: list) -> Batch | None:
        outer = time[:-1]
        given, active = rows
        if given is not None:
            for n in given.names:
                if n.startswith(prefix):
                    raise ColumnarError(f"pregel: the edge column {n!r} starts with "
                                        f"{prefix!r}, which names the ends' states")
            given = Batch.concat([held[outer], given]) if outer in held else given
            held[outer] = given.take(np.argsort(given[src], kind="stable"))
        if active is None or outer not in held:
            return None
        kept = held[outer]
        ends = kept[src]
        starts = int64_column(active, src, "the active vertices")
        lo = np.searchsorted(ends, starts, "left")
        count = np.searchsorted(ends, starts, "right") - lo
        total = int(count.sum())
        if not total:
            return None
        first = np.cumsum(count) - count
        which = np.repeat(np.arange(len(starts)), count)
        at = np.repeat(lo, count) + np.arange(total) - np.repeat(first, count)
        states = active.select([n for n in active.names if n != src]).take(which)
        return Batch({**kept.take(at).columns, **states.columns})

    def after(frontiers: list) -> None:
        for outer in [o for o in held if _finished(frontiers, o)]:
            del held[outer]

    return _per_time("PregelEdges", [(edges, src), (sources, src)], body, after)


def _with_destinations(rows: Stream[Batch], states: Stream[Batch], tables: dict, dst: str,
                       prefix: str) -> Stream[Batch]:
    """``rows`` with the state of the vertex in ``dst`` in columns named
    with ``prefix``: read from the states kept by this worker's update
    operator (``tables``), once a round is complete there (``states``, its
    output, is an input here for its progress only)."""

    def body(time: Any, got: list) -> Batch | None:
        batch = got[0]
        if batch is None:
            return None
        table = tables.get(time[:-1])
        ids = int64_column(batch, dst, "the edges")
        if table is None:
            raise ColumnarError(f"pregel: an edge leads to vertex {int(ids[0])}, which is not "
                                f"among the vertices")
        where = table.find(ids, "an edge leads to vertex")
        extra = {prefix + n: column[where] for n, column in table.columns.items()}
        return Batch({**batch.columns, **extra})

    return _per_time("PregelDestinations", [(rows, dst), (states, None)], body)


def _latest(changes: Stream[Batch], key: str) -> Stream[Batch]:
    """Per vertex and time, its last state (the row of the highest round),
    without the ``active`` and round columns, in vertex order."""

    def body(time: Any, rows: list) -> Batch | None:
        got = rows[0]
        if got is None:
            return None
        ids = got[key]
        order = np.lexsort((got[_ROUND], ids))
        ids = ids[order]
        last = np.ones(len(ids), dtype=bool)
        last[:-1] = ids[1:] != ids[:-1]
        return got.select([n for n in got.names if n not in (_ACTIVE, _ROUND)]).take(
            order[last])

    return _per_time("PregelFinal", [(changes, key)], body)


def _pregel(edges: Stream[Batch], vertices: Stream[Batch], send: Callable[[Batch], Batch | None],
            merge: Merge, update: Callable[[Batch, Batch], Batch], max_rounds: int | None,
            src: str, dst: str, key: str, with_dst: bool) -> Stream[Batch]:
    """:func:`pregel` without the check of the vertex set."""
    spec_of = _merge_spec(merge)
    scope = edges.scope
    tables: dict = {}
    src_prefix, dst_prefix = "src_", "dst_"

    def messages_of(rows: Batch) -> Batch | None:
        checked = _checked_messages(send(rows), dst, spec_of)
        if checked is None:
            return None
        produced, spec = checked
        if spec is None or not len(produced):
            return produced.with_columns({dst: int64_column(produced, dst, "send's messages")})
        return _partials(produced, spec, dst)

    def sources(b: Batch) -> Batch:
        live = b.filter(np.asarray(b[_ACTIVE]))
        names = [n for n in live.names if n not in (key, _ACTIVE, _ROUND)]
        return Batch({src: live[key], **{src_prefix + n: live[n] for n in names}})

    def vertex_ids(b: Batch) -> Batch:
        return b.with_columns({key: int64_column(b, key, "the vertices")})

    def edge_ends(b: Batch) -> Batch:
        return b.with_columns({src: int64_column(b, src, "the edges"),
                                dst: int64_column(b, dst, "the edges")})

    vertices = vertices.map_batch(vertex_ids)
    edges = edges.map_batch(edge_ends)
    with scope.iterative() as inner:
        handle, loop = inner.feedback(1)
        changes = _superstep(vertices.enter(inner), loop, tables, key, dst, merge, spec_of,
                             update, max_rounds)
        rows = _out_edges(edges.enter(inner), changes.map_batch(sources), src, src_prefix)
        if with_dst:
            rows = _with_destinations(rows, changes, tables, dst, dst_prefix)
        rows.map_batch(messages_of).connect_loop(handle)
        final = changes.leave()
    return _latest(final, key)


def _check_vertex_set(edges: Stream[Batch], vertices: Stream[Batch], src: str, dst: str,
                      key: str) -> None:
    """Raises :class:`ColumnarError` (once the graph's time is complete)
    for an edge end that is not among the vertices, or a vertex given twice."""

    def ends(b: Batch) -> Batch:
        both = np.concatenate([int64_column(b, src, "the edges"),
                               int64_column(b, dst, "the edges")])
        return Batch(id=both, n=np.zeros(len(both), dtype=np.int64))

    def named(b: Batch) -> Batch:
        ids = int64_column(b, key, "the vertices")
        return Batch(id=ids, n=np.ones(len(ids), dtype=np.int64))

    def check(_time: Any, b: Batch) -> None:
        counts = b["sum"]
        if (counts == 0).any():
            missing = b["id"][np.flatnonzero(counts == 0)[0]]
            raise ColumnarError(f"pregel: an edge touches vertex {int(missing)}, which is not "
                                f"among the vertices")
        if (counts > 1).any():
            twice = b["id"][np.flatnonzero(counts > 1)[0]]
            raise ColumnarError(f"pregel: vertex {int(twice)} is given more than once among "
                                f"the vertices")

    edges.map_batch(ends).concat(vertices.map_batch(named)).aggregate(
        "id", "n", how="sum", name="PregelVertexSet").inspect_batch(check)


def pregel(edges: Stream[Batch], vertices: Stream[Batch], *,
           send: Callable[[Batch], Batch | None], merge: Merge,
           update: Callable[[Batch, Batch], Batch], max_rounds: int | None = None,
           src: str = "src", dst: str = "dst", key: str = "id", with_dst: bool = True,
           ids: Ids = "int64") -> Stream[Batch]:
    """A vertex program (Pregel, GraphFrames' ``aggregateMessages`` in
    rounds): the final state of every vertex, as Batches with the column
    ``key`` and the state columns, one row per vertex, exchanged by vertex.

    ``edges``: Batches with integer columns ``src`` and ``dst`` and any
    other columns (edge attributes). ``vertices``: Batches with the integer
    column ``key`` (each vertex once; every edge's ends among them), the
    state columns (numeric or bool numpy columns: the initial state), and
    optionally a bool column ``active`` saying which vertices send in the
    first round (without it, all do). Vertex ids are any int64 values.
    Self-loops and duplicate edges are allowed: each edge sends its own
    message. A graph is its edges and vertices given at one time; graphs at
    different times run apart.

    Each round:

    1. ``send(batch)`` is called with the edges whose source is active: a
       Batch with every edge column, then ``src_<c>`` and ``dst_<c>`` for
       each state column ``c`` (the source's and the destination's state;
       ``with_dst=False`` leaves out the destination's, saving a lookup per
       row). It returns a Batch of messages (or None): an integer column
       named like ``dst`` (the vertex each message goes to: usually
       ``batch[dst]``, but any vertex, ``batch[src]`` for instance), and
       the message columns.
    2. The messages to each vertex are merged: ``merge`` is one of
       ``"sum"``, ``"min"``, ``"max"``, ``"count"`` for every message
       column, or a dict naming one per message column (the compiled
       aggregates; results int64 for integer and bool messages, float64 for
       float ones; ``count`` counts messages); or a function given a Batch
       of the messages a worker's vertices received in the round (sorted by
       target, then by the message columns) returning one row per target,
       with the ``dst`` column.
    3. ``update(states, merged)`` is called once per worker with the
       vertices that received messages: ``states`` (``key`` and the state
       columns) and ``merged`` (``key`` and the merged message columns),
       row for row. It returns a Batch with every state column (the new
       states, row for row; a column's dtype may not widen, say from int to
       float) and optionally a bool column ``active``; without it, a vertex
       stays active when its state changed. Vertices that received nothing
       keep their state and become inactive.

    Rounds run in an ``iterative()`` scope until a round sends no message,
    or ``max_rounds`` rounds have sent (then the messages of the last one
    are still merged and applied): a program that never settles needs
    ``max_rounds``. ``max_rounds=0`` gives the initial states.

    Guarantees: every step is exchanged by vertex, so the answer is the
    same at any worker count. Integer sums, minima, maxima and counts are
    exact (messages are first merged on the sending worker); a float sum
    adds each vertex's messages on its worker in the order of their values,
    whatever order they came in, so it too is the same bit for bit at any
    worker count (and float-summed messages are not merged before they
    travel). Errors: a :class:`~timely.ColumnarError` names a missing or
    misnamed column, an edge to a vertex not given, a vertex given twice, a
    message to a vertex not given, or an update of the wrong shape; an
    unknown merge name is an :class:`~timely.AggregateError`.

    Cost per round: a binary search per active vertex in its worker's
    sorted edges, one gather per edge column and state column of the edges
    sent along (and a hash probe per row for the destinations' states), the
    calls to ``send`` and ``update``, a hash aggregation of the messages,
    and their exchange. Memory: the edges and states, once.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and the vertices' ``key``; ``key`` maps back. With
    ``"string"``, ``send`` and ``update`` see the numbers (int64, in the
    order of the strings), messages go to numbers, and errors name numbers;
    state columns that hold vertex ids stay numbers (map them with
    :func:`~timely.algorithms.ids.number_ids` and
    :func:`~timely.algorithms.ids.decode_ids`).
    """
    v = VertexIds(ids, "pregel")
    edges, vertices = v.inputs((edges, (src, dst)), (vertices, (key,)))
    return v.output(_pregel_program(edges, vertices, send=send, merge=merge, update=update,
                                          max_rounds=max_rounds, src=src, dst=dst, key=key,
                                          with_dst=with_dst), (key,))


def _pregel_program(edges: Stream[Batch], vertices: Stream[Batch], *,
                    send: Callable[[Batch], Batch | None], merge: Merge,
                    update: Callable[[Batch, Batch], Batch], max_rounds: int | None = None,
                    src: str = "src", dst: str = "dst", key: str = "id",
                    with_dst: bool = True) -> Stream[Batch]:
    for what, fn in (("send", send), ("update", update)):
        if not callable(fn):
            raise TypeError(f"pregel: {what} is a function of Batches, not "
                            f"{type(fn).__name__}")
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int)
                                   or max_rounds < 0):
        raise ValueError(f"pregel: max_rounds is None or an int >= 0, not {max_rounds!r}")
    for what, column in (("src", src), ("dst", dst), ("key", key)):
        if not isinstance(column, str) or not column:
            raise TypeError(f"pregel: {what} is a column name, not {column!r}")
    if src == dst:
        raise ValueError(f"pregel: src and dst name two columns, not both {src!r}")
    _merge_spec(merge)
    _check_vertex_set(edges, vertices, src, dst, key)
    return _pregel(edges, vertices, send, merge, update, max_rounds, src, dst, key, with_dst)


def strongly_connected_components(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                  src: str = "src", dst: str = "dst",
                                  ids: Ids = "int64") -> Stream[Batch]:
    """Per node, its strongly connected component, as Batches with columns
    ``node`` and ``component``, one row per node: the component is named by
    its least node id. (GraphFrames' ``stronglyConnectedComponents`` names
    components by other ids; the partition is the same.)

    ``edges``: Batches with integer columns ``src`` and ``dst``, the graph
    given at one time; ``nodes``: optionally Batches with a column ``node``
    naming nodes that may have no edges (each is then a component of its
    own). Node ids are any int64 values; self-loops and duplicate edges are
    allowed.

    The colouring algorithm, in phases of an ``iterative()`` scope, each
    two :func:`pregel` programs over the nodes not yet placed: every node
    takes the least id among the nodes that reach it (forward min-label
    propagation); a node whose colour is its own id is a root, the least
    node of its component; going backwards from each root along edges
    whose ends have its colour reaches exactly its component. Those nodes
    leave; the next phase runs on the rest. A phase places at least every
    component no remaining node reaches from outside it, so the phases are
    at most the number of components on the longest path between
    components (one for a graph without edges between components); each
    phase's rounds are at most the longest path of the nodes left. A long
    chain of components in ascending id order is the worst case: one phase
    per component, each as long as the chain, so quadratic in its length.
    Exchanged by node at every step: the answer is the same at any worker
    count.

    ``ids``: ``"int64"`` (default) or ``"string"`` (text ids, numbered in
    sorted order by :mod:`~timely.algorithms.ids`): the id columns are
    ``src``, ``dst`` and ``node``; ``node`` and ``component`` map back, a
    component named by its least string.
    """
    v = VertexIds(ids, "strongly_connected_components")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(_strongly_connected_components(edges, nodes, src=src, dst=dst),
                    ("node", "component"))


def _strongly_connected_components(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                   src: str = "src", dst: str = "dst") -> Stream[Batch]:
    def arcs(b: Batch) -> Batch:
        return Batch(src=int64_column(b, src, "the edges"), dst=int64_column(b, dst, "the edges"))

    links = edges.map_batch(arcs)
    ends = links.map_batch(lambda b: Batch(node=np.concatenate([b["src"], b["dst"]])))
    if nodes is not None:
        ends = ends.concat(nodes.map_batch(
            lambda b: Batch(node=int64_column(b, "node", "the nodes"))))
    everyone = ends.distinct(["node"])

    def forward(b: Batch) -> Batch:
        return Batch(dst=b["dst"], colour=b["src_colour"])

    def least(states: Batch, got: Batch) -> Batch:
        return Batch(colour=np.minimum(states["colour"], got["colour"]))

    def backward(b: Batch) -> Batch:
        return Batch(dst=b["dst"], reached=np.ones(len(b), dtype=np.int64))

    def reach(states: Batch, got: Batch) -> Batch:
        return Batch(colour=states["colour"],
                     reached=np.maximum(states["reached"], got["reached"]))

    def roots(b: Batch) -> Batch:
        root = b["id"] == b["colour"]
        return Batch(id=b["id"], colour=b["colour"], reached=root.astype(np.int64), active=root)

    def coloured(which: str) -> Callable[[Batch], Batch]:
        return lambda b: Batch({which: b["id"], f"{which} colour": b["colour"]})

    def named(which: str) -> Callable[[Batch], Batch]:
        return lambda b: Batch({which: b["id"]})

    with links.scope.iterative() as phases:
        nodes_back, nodes_loop = phases.feedback(1)
        links_back, links_loop = phases.feedback(1)
        alive = everyone.enter(phases).concat(nodes_loop)
        among = links.enter(phases).concat(links_loop)
        colours = _pregel(among, alive.map_batch(lambda b: Batch(id=b["node"], colour=b["node"])),
                          forward, "min", least, None, "src", "dst", "id", False)
        tagged = join(join(among, colours.map_batch(coloured("src")), on="src"),
                      colours.map_batch(coloured("dst")), on="dst")
        inside = tagged.filter_batch(lambda b: b["src colour"] == b["dst colour"]).map_batch(
            lambda b: Batch(src=b["dst"], dst=b["src"]))
        placed = _pregel(inside, colours.map_batch(roots), backward, "max", reach, None,
                         "src", "dst", "id", False)
        found = placed.filter_batch(lambda b: b["reached"] == 1).map_batch(
            lambda b: Batch(node=b["id"], component=b["colour"]))
        rest = placed.filter_batch(lambda b: b["reached"] == 0)
        rest.map_batch(named("node")).connect_loop(nodes_back)
        kept = join(join(among, rest.map_batch(named("src")), on="src"),
                    rest.map_batch(named("dst")), on="dst")
        kept.connect_loop(links_back)
        return found.leave()
