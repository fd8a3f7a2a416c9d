"""Relational operators on columnar streams, per time, for loops.

Each exchanges its inputs by key, so every key's rows meet on one worker and
the answer does not depend on the worker count; each acts on a time once it
is complete (no input can still bring rows at it), in time order. Keyed state
is held in arrays: a compiled :class:`KeyIndex` numbers the distinct keys
(one or several key columns, each of integers, bools, floats, datetimes,
timedeltas, bytes or text; see :class:`KeyEncoder` for what is equal) and
numpy arrays hold what belongs to them. Keys are compared exactly (text and
bytes byte for byte, never by hash alone); outputs carry the key columns as
the input rows held them (their values and dtypes), never the codes.

- ``join(left, right, on)``: the equi-join (hash join) of two Batch streams
  per time; ``persist="right"`` (or ``"left"``) keeps that side's rows and
  joins them with the other side's rows at every later time — the edges of a
  graph joined with the labels of each iteration.
- ``distinct(stream, columns)``: the distinct rows by ``columns`` per time
  (``persist=True``: only rows never sent before).
- ``improve(stream, key, value, how="min")``: per key, the least (greatest)
  value at each time where it improves on every value sent before — the
  state of a fixpoint loop (labels, distances).

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     seen = []
...     with worker.dataflow() as scope:
...         h1, edges = scope.new_input()
...         h2, labels = scope.new_input()
...         join(labels, edges, left_on="node", right_on="src").inspect_batch(
...             lambda t, b: seen.append(sorted(b.to_records())))
...     h1.send_batch(timely.Batch(src=np.array([1, 1, 2]), dst=np.array([2, 3, 3])))
...     h2.send_batch(timely.Batch(node=np.array([1, 2]), label=np.array([10, 20])))
...     h1.close(); h2.close(); worker.drain()
...     return seen
>>> timely.execute_directly(work)
[[(1, 10, 2), (1, 10, 3), (2, 20, 3)]]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast, overload

import numpy as np

from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator
from timely.dataflow.operators._relational import KeyEncoder, KeyIndex, bucket, expand, first_rows
from timely.dataflow.operators._relational import improve as _improve
from timely.dataflow.operators.columnar import _batch
from timely.errors import ColumnarError

__all__ = ["KeyEncoder", "KeyIndex", "Pace", "PacedSender", "PendingBatches", "at_complete_times",
           "distinct", "improve", "join"]


def _names(columns, what: str) -> tuple[str, ...]:
    names = (columns,) if isinstance(columns, str) else tuple(columns)
    if not names or not all(isinstance(n, str) for n in names):
        raise ColumnarError(f"{what} is a column name or a sequence of them, not {columns!r}")
    return names


def _keys(batch: Batch, names, operator: str) -> list:
    for name in names:
        if name not in batch:
            raise ColumnarError(
                f"{operator}: the batch has no column {name!r}; it has {list(batch.names)}")
    return [batch.column(name) for name in names]


def time_less_equal(a, b) -> bool:
    """The partial order of timestamps: integers, or tuples coordinate-wise."""
    if isinstance(a, tuple):
        return all(x <= y for x, y in zip(a, b))
    return a <= b


class PendingBatches:
    """The Batches of one input held per time until the time is complete,
    each time requested once from ``notificator`` (which several inputs of
    one operator may share)."""

    def __init__(self, notificator: FrontierNotificator):
        self.notificator = notificator
        self.times: dict = {}

    def add(self, cap, batch: Batch) -> None:
        """Holds ``batch`` at ``cap``'s time (an empty one only marks the
        time), asking for a notification the first time a time is seen."""
        held = self.times.get(cap.time)
        if held is None:
            held = self.times[cap.time] = []
            self.notificator.notify_at(cap)
        if len(batch):
            held.append(batch)

    def take(self, time) -> Batch | None:
        """The rows held at ``time`` as one Batch (None when none came), released."""
        held = self.times.pop(time, None)
        if not held:
            return None
        return held[0] if len(held) == 1 else Batch.concat(held)

    def take_parts(self, time) -> list:
        """The Batches held at ``time`` as they came (none empty), released."""
        return self.times.pop(time, None) or []

    def complete(self, inp, frontiers, operator: str):
        """Stashes what ``inp`` holds, then yields ``(capability, rows)``
        for every time that is complete (``rows`` None when nothing came);
        the caller drops each capability when done with it."""
        for cap, data in inp:
            self.add(cap, _batch(data, operator))
        notificator = self.notificator
        while True:
            item = notificator.next(frontiers)
            if item is None:
                return
            cap = item[0]
            yield cap, self.take(cap.time)


def _lexicographic_ready(time, frontiers) -> bool:
    """True when no input can still bring a time whose outer coordinates
    come before ``time``'s: every earlier outer time has finished."""
    outer = time[:-1]
    for frontier in frontiers:
        for element in frontier.frontier():
            if element[:-1] < outer:
                return False
    return True


def _first_in_line(time, frontiers, lexicographic: bool) -> bool:
    """True when every time any input can still bring comes no earlier than
    ``time`` (in the product order, or lexicographically): no other time
    can be acted on before ``time``."""
    for frontier in frontiers:
        for element in frontier.frontier():
            if not (time <= element if lexicographic else time_less_equal(time, element)):
                return False
    return True


@dataclass(frozen=True)
class Pace:
    """How a :class:`PacedSender` (:func:`at_complete_times` with a
    ``pace``) sends an operator's messages: at most ``messages`` non-empty
    ones an activation (the operator then activates itself again), and,
    while there are other workers, none while one of them holds a full
    send window of this worker's data
    (:meth:`~timely.communication.allocator.Allocator.congested`; the
    window's opening activates the operator) nor, with ``in_flight``,
    while more than ``in_flight`` bytes of this worker's data wait at the
    others (it looks again after ``look_again`` seconds). What is in flight
    then stays about a window a peer plus ``messages`` messages, where
    sending a time's output at once would hold all of it, its parts per
    worker and their encoded frames until the peers took them in.

    >>> Pace(messages=4)
    Pace(messages=4, in_flight=None, look_again=0.0002)
    """

    messages: int = 1
    in_flight: int | None = None
    look_again: float = 200e-6

    def __post_init__(self) -> None:
        if type(self.messages) is not int or self.messages < 1:
            raise ColumnarError(f"Pace needs messages >= 1, not {self.messages!r}")


class PacedSender:
    """Sends the messages of an operator's times in turn, as ``pace`` says
    (:class:`Pace`; None: all at once): what :func:`at_complete_times` uses
    for a paced ``step``, and what an operator that acts otherwise uses to
    send as it does. Made in an operator's constructor, from its scope and
    its :class:`~timely.dataflow.builder.OperatorInfo`.

    Cost: a look at the allocator and a call of the iterator per message;
    the iterators are held, not drained, so a message is made only when it
    is sent."""

    def __init__(self, scope: Any, info: Any, pace: Pace | None) -> None:
        self._queue: deque = deque()    # (capabilities, iterator, drop)
        self._activator = info.activator
        self._allocator = scope.worker.allocator
        self._spread = pace is not None and scope.peers > 1
        self._messages = pace.messages if pace is not None else -1
        self._in_flight = pace.in_flight if pace is not None else None
        self._look_again = pace.look_again if pace is not None else 0.0

    def __bool__(self) -> bool:
        """True while messages are queued."""
        return bool(self._queue)

    def add(self, caps: Sequence[Any], messages: Iterable[tuple[Any, Any]],
            drop: bool = True) -> None:
        """Queues ``messages``, ``(output handle, Batch or Addressed)``
        pairs, sent at the time of ``caps`` (the capabilities the operator
        holds for the outputs they use), after those queued before; with
        ``drop``, ``caps`` are dropped once the last is sent. Call
        :meth:`send` then."""
        self._queue.append((caps, iter(messages), drop))

    def send(self) -> bool:
        """Sends what the pace allows now, in the order queued; True once
        every message queued has been sent. Call it in every activation
        while messages are queued: when it stops early, it has arranged to
        be activated again (at once, after ``look_again``, or when a peer's
        window opens)."""
        queue = self._queue
        given = 0
        while queue:
            if self._spread:
                allocator = self._allocator
                if allocator.congested():
                    allocator.on_window(self._activator.activate)
                    return False
                if (self._in_flight is not None
                        and sum(allocator.in_flight.values()) > self._in_flight):
                    self._activator.activate_after(self._look_again)
                    return False
            if given == self._messages:
                self._activator.activate()
                return False
            caps, messages, drop = queue[0]
            item = next(messages, None)
            if item is None:
                queue.popleft()
                if drop:
                    for cap in caps:
                        cap.drop()
                del caps, messages
                continue
            out, message = item
            if len(message):
                out.give_at(caps[0].time, message)
                given += 1
        return True


Route = str | Any | None
"""How an input of :func:`at_complete_times` reaches the workers: a column
name (exchanged by it), a pact, or None (read only for its progress)."""

Take = Callable[[Any, Batch], object]
"""``take(time, batch)``: an input's Batch taken in as it arrives."""

Step = Callable[[Any, list],
                Batch | Iterable[Batch | None] | Iterable[tuple[int, Batch]] | None]
"""``step(cap, rows)``: what a complete time sends (see :func:`at_complete_times`)."""


@overload
def at_complete_times(name: str,
                      inputs: Sequence[tuple[Any, Route] | tuple[Any, Route, Take | None]],
                      step: Step, *, lexicographic: bool = ...,
                      after: Callable[[list], object] | None = ..., whole: bool = ...,
                      outputs: None = ..., pace: Pace | None = ...) -> Any: ...


@overload
def at_complete_times(name: str,
                      inputs: Sequence[tuple[Any, Route] | tuple[Any, Route, Take | None]],
                      step: Step, *, lexicographic: bool = ...,
                      after: Callable[[list], object] | None = ..., whole: bool = ...,
                      outputs: int, pace: Pace | None = ...) -> list[Any]: ...


def at_complete_times(name: str,
                      inputs: Sequence[tuple[Any, Route] | tuple[Any, Route, Take | None]],
                      step: Step, *, lexicographic: bool = False,
                      after: Callable[[list], object] | None = None, whole: bool = True,
                      outputs: int | None = None, pace: Pace | None = None) -> Any:
    """An operator over several Batch streams that acts on each time once
    it is complete (no input can still bring rows at it), in time order:
    the one home of the pattern behind the joins, the vertex programs and
    the graph algorithms' stages.

    ``inputs``: a sequence of ``(stream, route)`` or ``(stream, route,
    take)``: ``route`` a column name (the input is exchanged by it), a pact
    (``Pipeline()``, ``Exchange(...)``), or None (read only for its
    progress: its data are dropped); a None stream is an input that is not
    there (``step`` sees no rows for it). ``step(cap, rows)`` is called once
    per complete time with the time's capability (of output 0; the operator
    drops it) and, per input, its rows as one Batch (None when none came).
    The rows are held until the time completes, then released.

    What ``step`` returns is sent at that time, empty Batches left out:
    with neither ``outputs`` nor ``pace``, a Batch, an iterable of Batches
    or None, all at once on the one output. ``outputs``: the number of
    outputs (the list of their streams is returned, not the stream);
    ``step`` then returns None or an iterable of ``(output, Batch)`` pairs.
    ``pace``: so does ``step``, and the pairs are sent as :class:`Pace`
    says, a few an activation: a generator making each Batch as it is
    asked for never holds a whole time's output. No later time is acted on
    until the pairs of a time are all sent (a generator may read state the
    next ``step`` changes; code after its last ``yield`` runs once all is
    sent).

    ``take``: that input's Batches are taken in as they arrive, by
    ``take(time, batch)``, when no other time can be acted on before
    theirs (every time an input can still bring comes no earlier, no
    complete time waits and nothing is being sent), so they need not be
    held; the others are held and handed to ``take``, in the order they
    came, just before ``step`` at their time, which then sees no rows for
    that input. This is for state kept across times that takes in a time's
    rows in any order (a union-find, the arcs of a graph).

    ``lexicographic``: in a loop whose state is shared by all outer times,
    a complete time also waits until every time with earlier outer
    coordinates has finished (a linear extension of the product order), so
    a value found late for an earlier outer time still reaches a later
    one's state; ``take`` then compares times in that order.
    ``after(frontiers)``: called at the end of every activation.
    ``whole=False``: ``step`` gets, per input, the list of the Batches that
    came at the time (empty when none), not concatenated, and each Batch it
    returns is sent as a message of its own: no copy of a time's rows is
    made either way.

    Cost per message: a dict lookup of its time (and, for a ``take`` input,
    a look at every input's frontier); per time, a notification and one
    ``step``; the held Batches are the caller's, never copied.

    >>> import numpy as np
    >>> import timely
    >>> def halves(cap, rows):
    ...     (got,) = rows
    ...     for start in range(0, len(got), 2):            # two rows a message
    ...         part = got.slice(start, start + 2)
    ...         yield (0 if cap.time == 0 else 1), part
    >>> def work(worker):
    ...     seen = []
    ...     with worker.dataflow() as scope:
    ...         handle, stream = scope.new_input()
    ...         first, second = at_complete_times("Halves", [(stream, "x")], halves, outputs=2,
    ...                                           pace=Pace(messages=1))
    ...         first.inspect_batch(lambda t, b: seen.append((0, t, len(b))))
    ...         second.inspect_batch(lambda t, b: seen.append((1, t, len(b))))
    ...     handle.send_batch(timely.Batch(x=np.arange(5)))
    ...     handle.advance_to(1)
    ...     handle.send_batch(timely.Batch(x=np.arange(3)))
    ...     handle.close(); worker.drain()
    ...     return seen
    >>> timely.execute_directly(work)
    [(0, 0, 2), (0, 0, 2), (0, 0, 1), (1, 1, 2), (1, 1, 1)]
    """
    streams = [(spec[0], spec[1], spec[2] if len(spec) > 2 else None) for spec in inputs]
    scope = next(s for s, _, _ in streams if s is not None).scope
    b = OperatorBuilder(name, scope)
    ports = [(b.new_input(s, Exchange(r) if type(r) is str else
                          r if r is not None else Pipeline()), r is not None, take)
             for s, r, take in streams if s is not None]
    present = [s is not None for s, _, _ in streams]
    count = 1 if outputs is None else outputs
    made = [b.new_output() for _ in range(count)]
    outs = [handle for handle, _ in made]
    paired = outputs is not None or pace is not None

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        held: dict = {}             # time -> per port, the Batches held
        waiting: list = []          # complete times held for earlier outer times
        sending = PacedSender(scope, info, pace)

        def give(part, cap) -> None:
            if part is not None and len(part):
                outs[0].session(cap).give_container(part)

        def emit(ready) -> None:
            time_caps = list(ready) if count > 1 else [ready]
            cap = time_caps[0]
            lists = held.pop(cap.time)
            for (_, _, take), parts in zip(ports, lists):
                if take is not None:
                    while parts:
                        take(cap.time, parts.pop(0))
            if whole:
                got = iter([None if not parts else parts[0] if len(parts) == 1
                            else Batch.concat(parts) for parts in lists])
                produced = step(cap, [next(got) if here else None for here in present])
            else:
                got = iter(lists)
                produced = step(cap, [next(got) if here else [] for here in present])
            del lists, got
            if paired:
                if produced is None:
                    for each in time_caps:
                        each.drop()
                    return
                pairs = cast("Iterable[tuple[int, Batch]]", produced)
                sending.add(time_caps, ((outs[k], part) for k, part in pairs))
                sending.send()
                return
            if isinstance(produced, Batch):
                give(produced, cap)
            elif produced is not None:
                parts = [p for p in produced if p is not None and len(p)]
                if whole and len(parts) > 1:
                    give(Batch.concat(parts), cap)
                else:
                    for part in parts:
                        give(part, cap)
            for each in time_caps:
                each.drop()

        def run(frontiers):
            sending.send()
            while not sending:
                item = notificator.next(frontiers)
                if item is None:
                    break
                if lexicographic:
                    waiting.append(item[0])
                else:
                    emit(item[0])
            if waiting:
                waiting.sort(key=lambda c: (c[0] if count > 1 else c).time)
                while (waiting and not sending and _lexicographic_ready(
                        (waiting[0][0] if count > 1 else waiting[0]).time, frontiers)):
                    emit(waiting.pop(0))
            for i, (inp, keep, take) in enumerate(ports):
                for cap, data in inp:
                    time = cap.time
                    lists = held.get(time)
                    if lists is None:
                        lists = held[time] = [[] for _ in ports]
                        if count == 1:
                            notificator.notify_at(cap)
                        else:
                            for k in range(count):
                                notificator.notify_at(cap.retain_for_output(k))
                    if not keep:
                        continue
                    batch = _batch(data, name)
                    if not len(batch):
                        continue
                    if (take is not None and not sending and not waiting
                            and _first_in_line(time, frontiers, lexicographic)):
                        take(time, batch)
                    else:
                        lists[i].append(batch)
            if after is not None:
                after(frontiers)

        return run

    b.build(build)
    streams_out = [stream for _, stream in made]
    return streams_out[0] if outputs is None else streams_out


class _Built:
    """One side's rows of one time, grouped by key: the build side of a hash join."""

    def __init__(self, time, batch: Batch, names, encoders):
        self.time = time
        self.batch = batch
        self.index = KeyIndex(len(names), encoders)
        ids = self.index.insert(_keys(batch, names, "join"), names)
        self.order, self.starts = bucket(ids, len(self.index))

    def probe(self, codes) -> tuple[np.ndarray, np.ndarray]:
        """The pairs (probe row, build row) of keys ``codes`` (encoded by
        ``self.index.encode``, or an index sharing its encoders)."""
        return expand(self.index.lookup_codes(codes), self.order, self.starts)


def join(left, right, on=None, *, left_on=None, right_on=None, persist: str | None = None,
         name: str | None = None):
    """The equi-join of the Batch streams ``left`` and ``right`` per time.

    ``on`` names the key columns: one name or a sequence of names common to
    both sides; or ``left_on`` and ``right_on`` name them on each side
    (``left_on="node", right_on="src"``), as many on each. A key column
    is of any kind :class:`KeyEncoder` takes: integers (any width, bool as
    0/1), floats (``-0.0`` equals ``0.0``, all NaNs are one key; a float
    never equals an integer), datetime64/timedelta64 (one unit), bytes,
    text (a StringColumn, ``U`` or an object column of str: the same text
    matches whatever its column); kinds may differ between key positions,
    but a left and a right key column of one position whose kinds cannot be
    compared (text and integers, say) raise :class:`~timely.ColumnarError`
    naming both. The output at time ``t`` has every column of
    ``left``, then every column of ``right`` except its keys, one row per
    matching pair of rows at ``t``, in no particular order; a column name
    on both sides raises :class:`~timely.ColumnarError`. The key columns
    kept are the left rows' own (values and dtypes).

    ``persist="right"`` keeps every right row: a right row at time ``s``
    joins the left rows of every time ``t >= s`` (``"left"`` the other way
    round). Use it for a side that is given once and read in every
    iteration of a loop. Persisted rows are kept until the operator ends.

    Guarantees: both sides are exchanged by their first key column, so the
    answer is the same at any worker count; a time's output is sent once the
    time is complete, in time order. Cost: building a key index over the
    build side (the persisted side, else ``right``) once per time it
    receives rows, one probe per row of the other side, and a gather per
    output column, all in C or numpy; a text or bytes key costs a hash and
    an exact compare of its bytes where an integer costs a word.
    """
    if persist not in (None, "left", "right"):
        raise ColumnarError(f"persist is None, 'left' or 'right', not {persist!r}")
    if on is not None:
        if left_on is not None or right_on is not None:
            raise ColumnarError("join takes on=, or left_on= and right_on=, not both")
        left_on = right_on = on
    if left_on is None or right_on is None:
        raise ColumnarError("join needs on=, or left_on= and right_on=")
    left_on, right_on = _names(left_on, "left_on"), _names(right_on, "right_on")
    if len(left_on) != len(right_on):
        raise ColumnarError(f"join keys of different lengths: {left_on} and {right_on}")
    build_left = persist == "left"

    kept: list[_Built] = []          # the persisted side's rows, one entry per time
    # The persisted side's codes must stay valid across times: one encoder
    # per key position for the operator's life (the other side only looks
    # up, adding nothing). Without persist, fresh ones per time.
    kept_encoders = tuple(KeyEncoder() for _ in left_on)

    def combine(lrows: Batch, rrows: Batch, li, ri) -> Batch:
        columns = dict(lrows.take(li).columns)
        extra = [n for n in rrows.names if n not in right_on]
        for n in extra:
            if n in columns:
                raise ColumnarError(f"join: column {n!r} is on both sides; rename one")
        columns.update(rrows.select(extra).take(ri).columns)
        return Batch.from_columns(columns, len(li))

    def step(cap, rows) -> list[Batch]:
        t = cap.time
        lrows, rrows = rows
        parts = []
        if persist is None:
            if lrows is not None and rrows is not None:
                built = _Built(t, rrows, right_on, tuple(KeyEncoder() for _ in left_on))
                li, ri = built.probe(built.index.encode(_keys(lrows, left_on, "join"), left_on))
                if len(li):
                    parts.append(combine(lrows, rrows, li, ri))
            return parts
        kept_rows, other = (lrows, rrows) if build_left else (rrows, lrows)
        kept_on, other_on = (left_on, right_on) if build_left else (right_on, left_on)
        if kept_rows is not None:
            kept.append(_Built(t, kept_rows, kept_on, kept_encoders))
        if other is not None and kept:
            # Every kept index shares kept_encoders: encode once.
            codes = kept[0].index.encode(_keys(other, other_on, "join"), other_on)
            for built in kept:
                if not time_less_equal(built.time, t):
                    continue
                oi, ki = built.probe(codes)
                if len(oi):
                    parts.append(combine(built.batch, other, ki, oi) if build_left
                                 else combine(other, built.batch, oi, ki))
        return parts

    return at_complete_times(operator_name(name, "Join"),
                             [(left, left_on[0]), (right, right_on[0])], step)


def distinct(stream, columns, *, persist: bool = False, name: str | None = None):
    """The distinct rows of a Batch stream by ``columns``, per time.

    ``columns`` are key columns of any kind :class:`KeyEncoder` takes
    (integers, bools, floats with ``-0.0`` equal to ``0.0`` and all NaNs one
    key, datetimes, timedeltas, bytes, text), mixed freely. The output at
    ``t`` has the columns ``columns`` only, one row per distinct key seen at
    ``t`` (with ``persist``, seen at ``t`` and at no time completed before
    it: state kept across times, in the order times complete), each the
    first row of its key at ``t`` as the input held it (values and dtypes).
    Exchanged by the first column; exact at any worker count. Cost: one
    encoding pass and one hash and probe per row in C (a text key: a hash
    and an exact compare of its bytes)."""
    names = _names(columns, "columns")
    b = OperatorBuilder(operator_name(name, "Distinct"), stream.scope)
    inp = b.new_input(stream, Exchange(names[0]))
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        pending = PendingBatches(notificator)
        seen = KeyIndex(len(names))

        def run(frontiers):
            for cap, rows in pending.complete(inp, frontiers, "distinct"):
                if rows is not None:
                    index = seen if persist else KeyIndex(len(names))
                    before = len(index)
                    ids = index.insert(_keys(rows, names, "distinct"), names)
                    if len(index) > before:
                        out.session(cap).give_container(
                            rows.select(names).take(first_rows(ids, before)))
                cap.drop()

        return run

    b.build(build)
    return result


def improve(stream, key, value: str, how: str = "min", *, name: str | None = None):
    """Per key: the least (``how="min"``) or greatest (``"max"``) ``value``
    seen, sent at each time where it improves on every value sent before.

    The output at ``t`` has the columns ``key`` (one or several key
    columns of any kind :class:`KeyEncoder` takes: integers, floats, text,
    ...; as an input row at ``t`` held them) and ``value``, one row per key
    whose best value improved at
    ``t`` (state kept across times, in the order times complete: in a loop,
    the iterations). This is what a fixpoint loop keeps: labels that only
    decrease, distances that only shrink; once nothing improves the loop
    drains. ``value`` is an integer or float column (int64 / float64 state).

    Exchanged by the first key column: exact at any worker count. Cost per
    row: one hash and probe, one compare, in C; memory a key row and a value
    per distinct key, and the encoders' distinct strings for text keys."""
    names = _names(key, "key")
    if how not in ("min", "max"):
        raise ColumnarError(f"improve keeps a 'min' or a 'max', not {how!r}")
    minimize = how == "min"
    b = OperatorBuilder(operator_name(name, "Improve"), stream.scope)
    inp = b.new_input(stream, Exchange(names[0]))
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        pending = PendingBatches(notificator)
        index = KeyIndex(len(names))
        state: list[np.ndarray | None] = [None]

        def run(frontiers):
            for cap, rows in pending.complete(inp, frontiers, "improve"):
                if rows is not None:
                    ids = index.insert(_keys(rows, names, "improve"), names)
                    values = np.asarray(rows[value])
                    float_values = values.dtype.kind == "f"
                    values = values.astype(np.float64 if float_values else np.int64, copy=False)
                    held = state[0]
                    if held is None:
                        held = np.empty(0, dtype=values.dtype)
                    elif held.dtype != values.dtype:
                        raise ColumnarError(f"improve: {value!r} changed from {held.dtype} "
                                            f"to {values.dtype}")
                    if len(held) < len(index):
                        worst = (np.inf if minimize else -np.inf) if float_values else (
                            np.iinfo(np.int64).max if minimize else np.iinfo(np.int64).min)
                        grown = np.full(max(len(index), 2 * len(held)), worst, dtype=held.dtype)
                        grown[:len(held)] = held
                        held = grown
                    state[0] = held
                    better, where = _improve(held, ids, np.ascontiguousarray(values), minimize)
                    if len(better):
                        columns = dict(rows.select(names).take(where).columns)
                        columns[value] = held[better]
                        out.session(cap).give_container(Batch.from_columns(columns, len(better)))
                cap.drop()

        return run

    b.build(build)
    return result

