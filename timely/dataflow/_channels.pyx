"""Compiled part of :mod:`timely.dataflow.channels`: the pipeline channel's
pusher, the counting pusher of every operator output (the Rust crate's
``pushers::Counter``), and the run loops of timely's own stateless record
operators and of the probe. A message pushed through a :class:`Counter` into a
:class:`PipelinePusher` is counted, queued and its consumer activated
without a Python frame.
"""

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy

from timely.dataflow._activate cimport ChildActivator, Schedulable
from timely.progress.frontier cimport MutableAntichain

from timely.progress import ChangeBatch


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


cdef class RecordLogic(Schedulable):
    """The logic (``logic(frontiers)``) of a stateless operator whose inputs
    read plain local queues: every waiting message is taken (counted as
    consumed at its input), in input order, and what ``kind`` makes of it is
    pushed through the output counters, at a time the message holds (its
    own, or the feedback summary's result), so no capability is made or
    checked. ``kind`` is one of ``"pass"``, ``"map"`` (``fn(record)``),
    ``"filter"`` (the records for which ``fn(record)`` is true),
    ``"batch"`` (``fn(time, data)``; an empty result is not sent),
    ``"advance"`` (``fn(time)``; ``None`` drops the message) and
    ``"branch_when"`` (``fn(time)`` true: output 1).

    The operator's Python twin, for inputs that are not plain queues or that
    check every message against their frontier, is the same loop over
    ``InputHandle._take_all``."""

    def __init__(self, str kind, list queues, list consumeds, fn, list counters):
        if kind not in KINDS:
            raise ValueError(f"unknown record logic {kind!r}")
        if len(queues) != len(consumeds):
            raise ValueError("one consumed ChangeBatch per input queue")
        self.kind = KINDS[kind]
        if len(counters) != (2 if self.kind == BRANCH_WHEN else 1):
            raise ValueError(f"{kind!r} logic has {2 if self.kind == BRANCH_WHEN else 1} outputs")
        for batch in consumeds:
            if not isinstance(batch, ChangeBatch):
                raise TypeError("consumeds are ChangeBatch es")
        for counter in counters:
            if not isinstance(counter, Counter):
                raise TypeError("counters are Counter s")
        self.queues = queues
        self.consumeds = consumeds
        self.fn = fn
        self.counters = counters

    def __call__(self, frontiers):
        self.run()

    cdef int run(self) except -1:
        cdef Py_ssize_t i
        cdef list taken
        cdef Counter out = <Counter>self.counters[0]
        cdef object time, data, fn = self.fn
        for i in range(len(self.queues)):
            queue = self.queues[i]
            if not queue:
                continue
            consumed = self.consumeds[i]
            # Everything waiting is taken (and counted) before anything is
            # pushed, as InputHandle._take_all does.
            taken = []
            while queue:
                message = queue.popleft()
                time, data = message
                consumed.update(time, len(data))
                taken.append(message)
            for time, data in taken:
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
    """The logic of a probe whose input reads a plain local queue: takes
    every waiting message (counted as consumed; passed on through
    ``counter`` unless it is None), then, when the input's frontier (kept
    up to date by the scope) differs from the one last seen, moves the
    probe handle's counts from the old frontier to the new one, so the
    handle answers with this input's frontier. Initially ``low`` is seen
    (the minimum time, which the handle counts until the probe first runs).

    Its Python twin, for an input that checks every message against its
    frontier, is ``probe_with``'s loop."""

    def __init__(self, queue, consumed, counter, MutableAntichain frontier,
                 MutableAntichain shared, low):
        cdef MutableAntichain initial = MutableAntichain.from_elem(low)
        if not isinstance(consumed, ChangeBatch):
            raise TypeError("consumed is a ChangeBatch")
        if counter is not None and not isinstance(counter, Counter):
            raise TypeError("counter is a Counter or None")
        if frontier.k == 0 or frontier.k != shared.k or initial.k != frontier.k:
            raise ValueError("the input's frontier, the probe's and low have one arity")
        self.queue = queue
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
        queue = self.queue
        if queue:
            consumed = self.consumed
            counter = self.counter
            taken = []
            while queue:
                message = <tuple>queue.popleft()
                consumed.update(message[0], len(message[1]))
                taken.append(message)
            if counter is not None:
                for item in taken:
                    message = <tuple>item
                    (<Counter>counter).push(message[0], message[1])
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
