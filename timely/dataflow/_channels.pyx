"""Compiled part of :mod:`timely.dataflow.channels`: the pipeline channel's
pusher, the counting pusher of every operator output (the Rust crate's
``pushers::Counter``), and the run loops of timely's own stateless record
operators, of the probe and of operators that keep a state per time. A
message pushed through a :class:`Counter` into a :class:`PipelinePusher` is
counted, queued and its consumer activated without a Python frame.
"""

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy

from timely.communication.allocator cimport Puller
from timely.dataflow._activate cimport ChildActivator, Schedulable
from timely.progress.change_batch cimport ChangeBatch
from timely.progress.frontier cimport MutableAntichain
from timely.progress.timestamp cimport TLY_MAX_ARITY, fill_row

from bisect import insort

from timely.container import Batch
from timely.errors import ColumnarError

cdef object _ABSENT = object()


cdef class PipelinePusher:
    """Delivers to a puller on this worker (its ``queue``) and activates the
    consumer (``on_data()``)."""

    def __init__(self, queue, on_data):
        self.queue = queue
        self.append = queue.append
        self.on_data = on_data

    cpdef push(self, object time, object data):
        self.append((time, data))
        on_data = self.on_data
        if type(on_data) is ChildActivator:
            (<ChildActivator>on_data).fire()
        else:
            on_data()

    def done(self):
        pass


cdef class RoutedCounter:
    """Counts the records an exchange sends to worker ``dest`` at each time,
    as rows ``(dest, time...)`` of ``routed`` (the edge's counts by
    destination, which its scope reports in place of the records produced:
    :meth:`timely.progress.Tracker.route_counts`), then hands the message to
    ``pusher``."""

    def __init__(self, pusher, Py_ssize_t dest, routed):
        if not isinstance(routed, ChangeBatch):
            raise TypeError(f"a RoutedCounter counts into a ChangeBatch, not "
                            f"{type(routed).__name__}")
        if dest < 0:
            raise ValueError(f"worker {dest}")
        self.pusher = pusher
        self.dest = dest
        self.routed = routed
        self.k = (<ChangeBatch>routed).k - 1
        if not 1 <= self.k <= TLY_MAX_ARITY:
            raise ValueError(f"routed counts of width {self.k + 1}")

    def push(self, message):
        cdef uint64_t row[TLY_MAX_ARITY + 1]
        cdef Py_ssize_t n
        time, data = message
        n = len(data)
        if n:
            row[0] = <uint64_t>self.dest
            fill_row(time, self.k, &row[1])
            (<ChangeBatch>self.routed).push_row(row, n)
        self.pusher.push(message)

    def done(self):
        self.pusher.done()

    def __getattr__(self, name):
        return getattr(self.pusher, name)


cdef class Counter:
    """Counts the records pushed at each time into ``produced`` (the output's
    ChangeBatch in its operator's shared progress), then hands the message
    to the tee's channels. An empty message is neither counted nor sent."""

    def __init__(self, tee, produced):
        if not isinstance(produced, ChangeBatch):
            raise TypeError(f"a Counter counts into a ChangeBatch, not {type(produced).__name__}")
        self.tee = tee
        self.produced = produced
        self.pushers = tee.pushers

    cpdef push(self, object time, object data):
        cdef Py_ssize_t n = len(data)
        if n == 0:
            return
        self.produced.update(time, n)
        if len(self.pushers) == 1:
            pusher = self.pushers[0]
            if type(pusher) is PipelinePusher:
                (<PipelinePusher>pusher).push(time, data)
            else:
                pusher.push(time, data)
        else:
            self.tee.push(time, data)


# What a RecordLogic does with each message (time, data) it takes.
cdef enum:
    PASS = 0         # (time, data) to output 0: exchange, concatenate
    MAP = 1          # (time, [fn(x) for x in data])
    BATCH = 2        # (time, fn(time, data)) if that is not empty
    ADVANCE = 3      # (fn(time), data) unless fn(time) is None: a feedback edge
    BRANCH_WHEN = 4  # (time, data) to output 1 if fn(time) else to output 0
    FILTER = 5       # (time, [x for x in data if fn(x)])

KINDS = {"pass": PASS, "map": MAP, "batch": BATCH, "advance": ADVANCE,
         "branch_when": BRANCH_WHEN, "filter": FILTER}


cdef list take_all(Puller puller, consumed):
    """Every message waiting at ``puller``, as ``(time, data)``, each counted
    as consumed in the ChangeBatch ``consumed``."""
    cdef list taken = []
    cdef tuple message
    item = puller.pull()
    while item is not None:
        message = <tuple>item
        consumed.update(message[0], len(message[1]))
        taken.append(message)
        item = puller.pull()
    return taken


cdef class RecordLogic(Schedulable):
    """The logic (``logic(frontiers)``) of a stateless operator whose inputs
    read compiled pullers (a local queue, or a channel from other workers,
    whose pulls credit the senders' windows): every waiting message is
    taken (counted as consumed at its input), in input order, and what
    ``kind`` makes of it is pushed through the output counters, at a time the message holds (its
    own, or the feedback summary's result), so no capability is made or
    checked. ``kind`` is one of ``"pass"``, ``"map"`` (``fn(record)``),
    ``"filter"`` (the records for which ``fn(record)`` is true),
    ``"batch"`` (``fn(time, data)``; an empty result is not sent),
    ``"advance"`` (``fn(time)``; ``None`` drops the message) and
    ``"branch_when"`` (``fn(time)`` true: output 1).

    With ``refuse`` (a message), a :class:`~timely.Batch` arriving is a
    :class:`~timely.ColumnarError` saying so: the logic of an operator on
    records, which a Batch stream misuses.

    An input of a logged channel, or one that checks every message against
    its frontier (``check_progress``), is read through a
    :class:`~timely.dataflow._handles.CheckingPuller`: the same loop runs."""

    def __init__(self, str kind, list pullers, list consumeds, fn, list counters,
                 refuse=None):
        if kind not in KINDS:
            raise ValueError(f"unknown record logic {kind!r}")
        if len(pullers) != len(consumeds):
            raise ValueError("one consumed ChangeBatch per input puller")
        for puller in pullers:
            if not isinstance(puller, Puller):
                raise TypeError(f"inputs are read by Pullers, not {type(puller).__name__}")
        self.kind = KINDS[kind]
        if len(counters) != (2 if self.kind == BRANCH_WHEN else 1):
            raise ValueError(f"{kind!r} logic has {2 if self.kind == BRANCH_WHEN else 1} outputs")
        for batch in consumeds:
            if not isinstance(batch, ChangeBatch):
                raise TypeError("consumeds are ChangeBatch es")
        for counter in counters:
            if not isinstance(counter, Counter):
                raise TypeError("counters are Counter s")
        self.pullers = pullers
        self.consumeds = consumeds
        self.fn = fn
        self.counters = counters
        self.refuse = refuse

    def __call__(self, frontiers):
        self.run()

    cdef int run(self) except -1:
        cdef Py_ssize_t i
        cdef list taken
        cdef Counter out = <Counter>self.counters[0]
        cdef object time, data, fn = self.fn
        for i in range(len(self.pullers)):
            # Everything waiting is taken (and counted) before anything is
            # pushed.
            taken = take_all(<Puller>self.pullers[i], self.consumeds[i])
            for time, data in taken:
                if self.refuse is not None and type(data) is Batch:
                    raise ColumnarError(self.refuse)
                if self.kind == PASS:
                    out.push(time, data)
                elif self.kind == MAP:
                    out.push(time, [fn(x) for x in data])
                elif self.kind == FILTER:
                    out.push(time, [x for x in data if fn(x)])
                elif self.kind == BATCH:
                    data = fn(time, data)
                    if data:
                        out.push(time, data)
                elif self.kind == ADVANCE:
                    time = fn(time)
                    if time is not None:
                        out.push(time, data)
                elif fn(time):
                    (<Counter>self.counters[1]).push(time, data)
                else:
                    out.push(time, data)
        return 0


cdef class ProbeLogic(Schedulable):
    """The logic of a probe whose input reads a compiled puller: takes
    every waiting message (counted as consumed; passed on through
    ``counter`` unless it is None), then, when the input's frontier (kept
    up to date by the scope) differs from the one last seen, moves the
    probe handle's counts from the old frontier to the new one, so the
    handle answers with this input's frontier. Initially ``low`` is seen
    (the minimum time, which the handle counts until the probe first runs).

    An input of a logged channel, or one that checks every message against
    its frontier (``check_progress``), is read through a
    :class:`~timely.dataflow._handles.CheckingPuller`: the same loop runs."""

    def __init__(self, Puller puller, consumed, counter, MutableAntichain frontier,
                 MutableAntichain shared, low):
        cdef MutableAntichain initial = MutableAntichain.from_elem(low)
        if not isinstance(consumed, ChangeBatch):
            raise TypeError("consumed is a ChangeBatch")
        if counter is not None and not isinstance(counter, Counter):
            raise TypeError("counter is a Counter or None")
        if frontier.k == 0 or frontier.k != shared.k or initial.k != frontier.k:
            raise ValueError("the input's frontier, the probe's and low have one arity")
        self.puller = puller
        self.consumed = consumed
        self.counter = counter
        self.frontier = frontier
        self.shared = shared
        self.cap = 1
        self.seen = <uint64_t *>realloc(NULL, frontier.k * sizeof(uint64_t))
        if self.seen == NULL:
            raise MemoryError()
        memcpy(self.seen, initial.m.front, frontier.k * sizeof(uint64_t))
        self.nseen = 1

    def __dealloc__(self):
        free(self.seen)

    def __call__(self, frontiers):
        self.run()

    cdef int run(self) except -1:
        cdef size_t i, k = <size_t>self.frontier.k, n = self.frontier.m.flen
        cdef const uint64_t *front = self.frontier.m.front
        cdef uint64_t *grown
        cdef tuple message
        cdef list taken
        taken = take_all(self.puller, self.consumed)
        if taken and self.counter is not None:
            for item in taken:
                message = <tuple>item
                (<Counter>self.counter).push(message[0], message[1])
        if n == self.nseen and (n == 0 or memcmp(front, self.seen, n * k * sizeof(uint64_t)) == 0):
            return 0
        for i in range(n):
            self.shared.update_row(&front[i * k], 1)
        for i in range(self.nseen):
            self.shared.update_row(&self.seen[i * k], -1)
        self.shared.m.clen = 0          # the handle reads counts, not changes
        if n > self.cap:
            grown = <uint64_t *>realloc(self.seen, n * k * sizeof(uint64_t))
            if grown == NULL:
                raise MemoryError()
            self.seen = grown
            self.cap = n
        if n:
            memcpy(self.seen, front, n * k * sizeof(uint64_t))
        self.nseen = n
        return 0


cdef class PerTimeLogic(Schedulable):
    """The logic of an operator that keeps a state per time and sends what
    it makes of it once the time is complete (no input can still bring
    data at it): per-time aggregations, accumulations and folds, whose
    input reads a compiled puller.

    Each waiting message is taken (counted as consumed); the first at a
    time holds a capability for it on the output (counted in the output's
    ``internal`` changes and ``held``, where the stall report finds it) and
    makes its state, ``start(time)``; every message then folds in,
    ``state = absorb(state, data)``. After the messages, every held time
    that the input's frontier has passed, in time order, is sent as
    ``finish(time, state)`` through ``counter`` (nothing when that is empty
    or None) and its capability let go. Python runs only in those three
    functions: once per message and twice per time.

    An input of a logged channel, or one that checks every message against
    its frontier (``check_progress``), is read through a
    :class:`~timely.dataflow._handles.CheckingPuller`: the same loop runs."""

    def __init__(self, Puller puller, consumed, Counter counter, internal, dict held,
                 MutableAntichain frontier, start, absorb, finish):
        if not isinstance(consumed, ChangeBatch) or not isinstance(internal, ChangeBatch):
            raise TypeError("consumed and internal are ChangeBatch es")
        self.puller = puller
        self.consumed = consumed
        self.counter = counter
        self.internal = internal
        self.held = held
        self.frontier = frontier
        self.start = start
        self.absorb = absorb
        self.finish = finish
        self.states = {}
        self.pending = []

    def __call__(self, frontiers):
        self.run()

    @property
    def times(self):
        """The times held, in order."""
        return list(self.pending)

    cdef int run(self) except -1:
        cdef tuple message
        cdef dict states = self.states
        cdef list pending = self.pending, ready
        cdef Py_ssize_t i
        for item in take_all(self.puller, self.consumed):
            message = <tuple>item
            time = message[0]
            data = message[1]
            state = states.get(time, _ABSENT)
            if state is _ABSENT:
                self.internal.update(time, 1)
                self.held[time] = self.held.get(time, 0) + 1
                insort(pending, time)
                state = self.start(time)
            states[time] = self.absorb(state, data)
        if not pending:
            return 0
        frontier = self.frontier
        ready = [t for t in pending if not frontier.less_equal(t)]
        for time in ready:
            pending.remove(time)
            out = self.finish(time, states.pop(time))
            if out is not None and len(out):
                self.counter.push(time, out)
            self.internal.update(time, -1)
            i = self.held[time] - 1
            if i:
                self.held[time] = i
            else:
                del self.held[time]
        return 0
