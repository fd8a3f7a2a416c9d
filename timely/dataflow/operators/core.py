"""The record operators: map, filter, exchange, concat, partition, branch,
delay, reclock, accumulate, count, inspect, and friends.

Each works batch by batch; the only per-record Python is the user's function.
"""

from __future__ import annotations

import copy
import functools

from timely.dataflow._channels import PerTimeLogic, RecordLogic
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Addressed, Broadcast, Exchange, Pipeline, _share
from timely.dataflow.notificator import FrontierNotificator
from timely.errors import CapabilityError
from timely.progress.timestamp import less_equal


def _record_logic(kind: str, inputs, fn, outputs, refuse: str | None = None):
    """The compiled logic of a stateless operator (see
    :class:`~timely.dataflow._channels.RecordLogic`), reading its inputs
    through their ``compiled_puller``."""
    return RecordLogic(kind, [inp.compiled_puller for inp in inputs],
                       [inp.consumed for inp in inputs],
                       fn, [out.counter for out in outputs], refuse)


def per_time(builder, inp, out, start, absorb, finish):
    """The logic of an operator (one input ``inp``, one output ``out``, both
    of ``builder``) that keeps a state per time and sends what it makes of
    it once the time is complete: the first message at a time makes its
    state, ``start(time)``, and holds a capability for it; every message
    folds in, ``state = absorb(state, data)``; once no input can still
    bring data at the time, ``finish(time, state)`` is sent at it (nothing
    when empty or None) and the capability let go, times in order.

    Compiled: :class:`~timely.dataflow._channels.PerTimeLogic`, reading
    the input through its ``compiled_puller``."""
    return PerTimeLogic(inp.compiled_puller, inp.consumed, out.counter, out.internal,
                        out._held, builder.input_frontier(0), start, absorb, finish)


def _on_records(method: str, instead: str) -> str:
    """The error of record operator ``method`` given a Batch: which
    operator works on Batches instead."""
    return (f"{method}() works on records, one at a time, and a columnar Batch arrived: on a "
            f"stream of Batches use {instead}, or make records first with "
            f"map_batch(lambda batch: batch.to_records())")


def _pipeline_unary(stream, name: str, transform, pact=None, kind: str = "batch", fn=None,
                    refuse: str | None = None):
    """A stateless operator: ``transform(time, data)`` returns the output batch
    (``kind`` and ``fn`` say the same to the compiled loop, when it differs:
    ``"map"`` and ``"filter"`` with ``fn(record)``, ``"pass"``). With
    ``refuse`` (an operator on records), a Batch arriving is a
    :class:`~timely.ColumnarError` with that message."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, pact or Pipeline(), notify=False)
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        # One input, one output, identity connection: every message's own
        # time is held while it is processed, so no capability is made.
        return _record_logic(kind, [inp], transform if fn is None else fn, [out], refuse)

    b.build(build)
    return result


def map_(stream, fn, name=None):
    return _pipeline_unary(stream, operator_name(name, "Map"),
                           lambda t, data: [fn(x) for x in data], kind="map", fn=fn,
                           refuse=_on_records("map", "map_batch(fn), fn taking a whole Batch"))


def flat_map(stream, fn, name=None):
    return _pipeline_unary(stream, operator_name(name, "FlatMap"),
                           lambda t, data: [y for x in data for y in fn(x)],
                           refuse=_on_records("flat_map", "map_batch(fn), fn taking a whole Batch"))


def filter_(stream, pred, name=None):
    return _pipeline_unary(stream, operator_name(name, "Filter"),
                           lambda t, data: [x for x in data if pred(x)],
                           kind="filter", fn=pred,
                           refuse=_on_records("filter", "filter_batch(pred), pred giving a "
                                              "bool array"))


def inspect(stream, fn, name=None):
    name = operator_name(name, "Inspect")

    def each(t, data):
        for x in data:
            fn(x)
        return data

    return _pipeline_unary(stream, name, each,
                           refuse=_on_records("inspect", "inspect_batch(fn)"))


def inspect_time(stream, fn, name=None):
    name = operator_name(name, "InspectTime")

    def each(t, data):
        for x in data:
            fn(t, x)
        return data

    return _pipeline_unary(stream, name, each,
                           refuse=_on_records("inspect_time", "inspect_batch(fn)"))


def inspect_batch(stream, fn, name=None):
    name = operator_name(name, "InspectBatch")

    def each(t, data):
        fn(t, data)
        return data

    return _pipeline_unary(stream, name, each)


def exchange(stream, route=None, *, key=None, batch=None, name=None):
    return _pipeline_unary(stream, operator_name(name, "Exchange"), lambda t, data: data,
                           pact=Exchange(route, key=key, batch=batch), kind="pass")


def broadcast(stream, name=None):
    """Every worker gets every record: each message is produced once per
    worker, addressed, so produced counts equal what the workers consume.
    Two operators: the copies' (``BroadcastCopies``, or ``name (copies)``)
    and the broadcast's (``Broadcast``, or ``name``)."""
    peers = stream.scope.peers
    named = operator_name(name, "Broadcast")
    b = OperatorBuilder("BroadcastCopies" if name is None else f"{named} (copies)",
                        stream.scope)
    inp = b.new_input(stream, Pipeline(), notify=False)
    out, addressed = b.new_output()

    def build(caps, info):
        caps.clear()

        def run(frontiers):
            for cap, data in inp:
                if data:
                    for worker in range(peers):
                        copy = data if worker == peers - 1 else _share(data)
                        out.give_unchecked(cap.time, Addressed(worker, copy))

        return run

    b.build(build)
    return _pipeline_unary(addressed, named, lambda t, data: data, pact=Broadcast())


def concatenate(scope, streams, name=None):
    b = OperatorBuilder(operator_name(name, "Concatenate"), scope)
    inputs = [b.new_input(s, Pipeline(), notify=False) for s in streams]
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        # Identity connections: each message's own time is held while it is current.
        return _record_logic("pass", inputs, None, [out])

    b.build(build)
    return result


def partition(stream, parts: int, route, name=None):
    """``route(record)`` returns ``(part, value)``; ``value`` goes to stream ``part``."""
    b = OperatorBuilder(operator_name(name, "Partition"), stream.scope)
    inp = b.new_input(stream, Pipeline(), notify=False)
    outs = [b.new_output() for _ in range(parts)]

    def build(caps, info):
        caps.clear()

        def run(frontiers):
            for cap, data in inp:
                buckets: list[list] = [[] for _ in range(parts)]
                for record in data:
                    part, value = route(record)
                    buckets[part].append(value)
                for (out, _), bucket in zip(outs, buckets):
                    if bucket:
                        out.session(cap).give_owned(bucket)

        return run

    b.build(build)
    return [s for _, s in outs]


def _two_way(stream, name: str, split, when=None):
    """Two outputs; ``split(time, data)`` returns ``(first, second)`` batches
    (``when(time)``, if given, says the same to the compiled loop: true for
    ``((), data)``, false for ``(data, ())``)."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, Pipeline(), notify=False)
    (out0, s0), (out1, s1) = b.new_output(), b.new_output()

    def build(caps, info):
        caps.clear()
        if when is not None:
            return _record_logic("branch_when", [inp], when, [out0, out1])

        def run(frontiers):
            for cap, data in inp:
                first, second = split(cap.time, data)
                if first:
                    out0.give_unchecked(cap.time, first)
                if second:
                    out1.give_unchecked(cap.time, second)

        return run

    b.build(build)
    return s0, s1


def branch(stream, condition, name=None):
    """Records for which ``condition(time, record)`` is false go to the first
    stream, true to the second."""

    def split(t, data):
        no: list = []
        yes: list = []
        for record in data:
            (yes if condition(t, record) else no).append(record)
        return no, yes

    return _two_way(stream, operator_name(name, "Branch"), split)


def branch_when(stream, condition, name=None):
    """Batches whose time satisfies ``condition(time)`` go to the second stream."""
    return _two_way(stream, operator_name(name, "BranchWhen"),
                    lambda t, data: ((), data) if condition(t) else (data, ()), when=condition)


def _result_rank(r):
    # As the crate's Result: every Ok sorts before every Err, then by content.
    kind = type(r)
    if kind is Ok:
        return 0, r.value
    if kind is Err:
        return 1, r.error
    return None


def _result_lt(self, other):
    a, b = _result_rank(self), _result_rank(other)
    if b is None:
        return NotImplemented
    if a[0] != b[0]:
        return a[0] < b[0]
    return a[1] < b[1]


@functools.total_ordering
class Ok:
    """A successful result record (see ``Stream.ok``/``Stream.err``).
    Results order as the crate's: ``Ok(x) < Err(e)``, then by content."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is Ok and other.value == self.value

    def __hash__(self):
        return hash(("Ok", self.value))

    def __repr__(self):
        return f"Ok({self.value!r})"

    __lt__ = _result_lt


@functools.total_ordering
class Err:
    """A failed result record."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error

    def __eq__(self, other):
        return type(other) is Err and other.error == self.error

    def __hash__(self):
        return hash(("Err", self.error))

    def __repr__(self):
        return f"Err({self.error!r})"

    __lt__ = _result_lt


def ok(stream, name=None):
    return _pipeline_unary(stream, operator_name(name, "Ok"),
                           lambda t, data: [r.value for r in data if type(r) is Ok])


def err(stream, name=None):
    return _pipeline_unary(stream, operator_name(name, "Err"),
                           lambda t, data: [r.error for r in data if type(r) is Err])


def _stash_and_release(stream, name: str, assign):
    """Holds each record until its assigned time is complete, then sends it
    at that time. ``assign(time, data)`` yields ``(new_time, records)``."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, Pipeline())
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        stash: dict = {}

        def run(frontiers):
            for cap, data in inp:
                for new_time, records in assign(cap.time, data):
                    if not less_equal(cap.time, new_time):
                        raise CapabilityError(
                            f"{name}: cannot move records from {cap.time!r} back to {new_time!r}")
                    if new_time not in stash:
                        notificator.notify_at(cap._delayed(new_time, 0, None))
                        stash[new_time] = []
                    stash[new_time].extend(records)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                records = stash.pop(ready.time, None)
                if records:
                    out.session(ready).give_owned(records)
                ready.drop()

        return run

    b.build(build)
    return result


def delay(stream, fn, name=None):
    """Each record moves to ``fn(record, time)`` (not earlier than its time),
    and is sent once that time is complete."""

    def assign(time, data):
        groups: dict = {}
        for record in data:
            groups.setdefault(fn(record, time), []).append(record)
        return groups.items()

    return _stash_and_release(stream, operator_name(name, "Delay"), assign)


def delay_batch(stream, fn, name=None):
    """Each batch moves to ``fn(time)``, sent once that time is complete."""
    return _stash_and_release(stream, operator_name(name, "DelayBatch"),
                              lambda time, data: [(fn(time), data)])


def reclock(stream, clock, name=None):
    """Records are reported at the clock's times: each record, at the first
    clock time it is less than or equal to, once that time is complete."""
    b = OperatorBuilder(operator_name(name, "Reclock"), stream.scope)
    data_in = b.new_input(stream, Pipeline())
    clock_in = b.new_input(clock, Pipeline())
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        notificator = FrontierNotificator(b.arity)
        stash: list = []

        def run(frontiers):
            for cap, data in data_in:
                stash.append((cap.time, data))
            for cap, _ in clock_in:
                notificator.notify_at(cap)
            while True:
                item = notificator.next(frontiers)
                if item is None:
                    break
                ready, _ = item
                keep = []
                session = None
                for t, data in stash:
                    if less_equal(t, ready.time):
                        session = session or out.session(ready)
                        session.give_owned(data)
                    else:
                        keep.append((t, data))
                stash[:] = keep
                ready.drop()

        return run

    b.build(build)
    return result


def accumulate(stream, init, logic, name=None):
    """One record per complete time: ``logic(acc, batch)`` folds each batch into
    an accumulator that starts at ``init``."""
    b = OperatorBuilder(operator_name(name, "Accumulate"), stream.scope)
    inp = b.new_input(stream, Pipeline())
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        # Each time folds into its own copy of ``init``.
        return per_time(b, inp, out, lambda time: copy.deepcopy(init), logic,
                        lambda time, acc: [acc])

    b.build(build)
    return result


def count(stream, name=None):
    """The number of records at each complete time (an ``Accumulate``)."""
    return accumulate(stream, 0, lambda acc, data: acc + len(data), name)


def delay_total(stream, fn, name=None):
    """As :func:`delay`, for totally ordered times (the crate's
    ``delay_total``): each record moves to ``fn(record, time)``, sent once
    that time is complete."""
    return _stash_and_release(
        stream, operator_name(name, "DelayTotal"),
        lambda time, data: _group_by(data, lambda record: fn(record, time)).items())


def _group_by(data, key):
    groups: dict = {}
    for record in data:
        groups.setdefault(key(record), []).append(record)
    return groups


def inspect_core(stream, fn, name=None):
    """Calls ``fn(Ok((time, batch)))`` for every batch and ``fn(Err(frontier))``,
    with the input frontier's elements as a list, each time it changes; passes
    the batches on. The frontier starts at the minimum time, which is not
    reported."""
    from timely.dataflow.time import minimum

    b = OperatorBuilder(operator_name(name, "InspectCore"), stream.scope)
    inp = b.new_input(stream, Pipeline())
    out, result = b.new_output()

    def build(caps, info):
        caps.clear()
        last = [minimum(b.arity)]

        def run(frontiers):
            for cap, data in inp:
                fn(Ok((cap.time, data)))
                out.give_at(cap.time, data)
            now = frontiers[0].frontier().elements()
            if now != last:
                last[:] = now
                fn(Err(list(now)))

        return run

    b.build(build)
    return result


def empty(scope, name=None):
    """A stream with no records that completes at once (the crate's ``empty``)."""
    b = OperatorBuilder(operator_name(name, "Empty"), scope)
    _, stream = b.new_output()

    def build(caps, info):
        caps.clear()
        return lambda frontiers: False

    b.build(build)
    return stream
