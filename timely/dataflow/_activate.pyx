"""Activation and scheduling, compiled (the Rust crate's
``scheduling::activate``): what is asked to run, and a scope's round.

- :class:`Activations`: the children of one scope asked to run; a child's
  :class:`ChildActivator` asks for it. Channels call it for every message
  they deliver, so activation is on the per-message path: with a compiled
  pusher (:mod:`timely.dataflow._channels`) it costs no Python frame.
- :class:`Activator` (an operator's ``info.activator``, now or after a
  delay) and :class:`SyncActivator` (from any thread) are what user code
  holds.
- :class:`WorkerActivations`: a worker's activations outside any scope's
  round: the dataflows to schedule at its next step, the requests from
  other threads and the delayed ones, by deadline.

A scope's round itself (what it does each time it is scheduled) is
:class:`timely.dataflow._subgraph.ScopeRound`.
"""

import time as _time
from collections import deque
from heapq import heapify, heappop, heappush

from timely.progress.operate cimport PerOperatorState


cdef class Schedulable:
    """Operator logic that is compiled code and needs nothing around it (no
    input message to retire, no output buffer to flush): a scope runs it
    straight from its round, with no Python frame."""

    cdef int run(self) except -1:
        raise NotImplementedError

    def schedule(self):
        """Runs the logic once; False: it holds no work of its own."""
        self.run()
        return False


cdef class Activations:
    """The children of one scope asked to run.

    While the scope runs a round (``scheduling``, child ``current`` running),
    a child with a higher index joins the round: it goes onto ``heap``, which
    the round pops in index order. Any other activation waits in ``deferred``
    for the scope's next scheduling, and the first one asks for that
    scheduling (``on_first()``, the scope's own activation). Activating a
    child twice before it runs runs it once.

    >>> asked = []
    >>> acts = Activations(lambda: asked.append(True))
    >>> acts.activate(3); acts.activate(3); acts.activate(1)
    >>> sorted(acts.deferred), len(asked)
    ([1, 3], 2)
    """

    def __init__(self, on_first):
        self.deferred = set()
        self.heap = []
        self.scheduling = False
        self.current = -1
        self.on_first = on_first

    cpdef activate(self, Py_ssize_t index):
        """Asks for child ``index`` to be scheduled."""
        if self.scheduling and index > self.current:
            heappush(self.heap, index)
            return
        if index not in self.deferred:
            self.deferred.add(index)
            on_first = self.on_first
            if type(on_first) is ChildActivator:
                (<ChildActivator>on_first).fire()
            else:
                on_first()

    def run_round(self, scope, list children, list compiled, Tracker tracker,
                  ChangeBatch local, ChangeBatch final, list order=None, logger=None):
        """Runs the scope's activated children, each once, then drains each
        one's shared progress into ``local`` (an operator's) or ``final`` (a
        child scope's) as located changes, notes its incompleteness in
        ``scope.incomplete_count``, and shuts it down once complete and
        quiet.

        The visiting order: with ``order`` None, the children on ``heap``
        in index order, children activated meanwhile with a higher index
        joining the round; with ``order`` (a permutation of what was
        activated, for adversarial schedules), that order, and whatever is
        activated meanwhile waits for the next round. ``compiled[index]``,
        when not None, is the child's :class:`Schedulable` logic, run in its
        place. ``logger``, when given, runs each child through
        ``logger.scheduled(id, operator)`` and hears of each shut-down."""
        cdef Py_ssize_t index, previous = -1, at = 0, n
        cdef list heap = self.heap
        cdef PerOperatorState child
        cdef bint incomplete
        if order is None:
            heapify(heap)
        else:
            heap.clear()
            self.current = len(children)
        n = len(order) if order is not None else 0
        while True:
            if order is None:
                if not heap:
                    break
                index = heappop(heap)
                if index <= previous:
                    continue
                self.current = previous = index
            else:
                if at == n:
                    break
                index = order[at]
                at += 1
            child = <PerOperatorState>children[index]
            operator = child.operator
            if operator is None:
                continue
            if logger is not None:
                incomplete = logger.scheduled(child.id, operator)
            else:
                logic = compiled[index]
                if logic is not None:
                    (<Schedulable>logic).run()
                    incomplete = False
                else:
                    incomplete = operator.schedule()
            tracker.drain_shared(child.shared, index, local if child.local else final, True)
            if incomplete != child.incomplete:
                scope.incomplete_count += 1 if incomplete else -1
                child.incomplete = incomplete
            if not incomplete and tracker.quiet(index):
                operator.shut_down()
                child.operator = None
                compiled[index] = None     # its logic may hold what user code waits to free
                if logger is not None:
                    logger.shutdown(child.id)


cdef class ChildActivator:
    """Calling it activates child ``index`` of ``activations``: what a channel
    calls when it delivers data to that child."""

    def __init__(self, Activations activations, Py_ssize_t index):
        self.activations = activations
        self.index = index

    cdef int fire(self) except -1:
        self.activations.activate(self.index)
        return 0

    def __call__(self):
        self.activations.activate(self.index)

    def __repr__(self):
        return f"ChildActivator({self.index})"


cdef class Activator:
    """Schedules one operator (child ``index`` of ``subgraph``) at the next
    opportunity; an operator's ``info.activator``."""

    def __init__(self, subgraph, Py_ssize_t index):
        self.subgraph = subgraph
        self.index = index

    def activate(self):
        """Schedules the operator at the worker's next step."""
        (<Activations>self.subgraph.activations).activate(self.index)

    def activate_after(self, double delay):
        """Schedules the operator once ``delay`` seconds have passed (at once
        when ``delay <= 0``), as the crate's ``activate_after``: a worker
        parked meanwhile wakes for it."""
        (<WorkerActivations>self.subgraph.worker.activations).activate_after(
            self.subgraph, self.index, delay)

    def __call__(self):
        (<Activations>self.subgraph.activations).activate(self.index)

    def __repr__(self):
        return f"Activator({self.index})"


cdef class SyncActivator:
    """Schedules one operator from any thread (``worker.sync_activator_for``):
    the request is queued for the worker's next step, and a parked worker
    wakes."""

    def __init__(self, queue, allocator, tuple address):
        self.queue = queue
        self.allocator = allocator
        self.address = address

    def activate(self):
        self.queue.append(self.address)      # deque.append is atomic
        self.allocator.unpark()

    def __call__(self):
        self.activate()

    def __repr__(self):
        return f"SyncActivator({self.address})"


cdef class WorkerActivations:
    """A worker's activations outside any scope's round: ``active``, the
    dataflows (by identifier) to schedule at its next step; ``sync``,
    the operator addresses other threads asked for (a deque, made by the
    first :class:`SyncActivator`); ``timers``, a heap of ``(deadline, seq,
    scope, child)`` asked for with a delay."""

    def __init__(self):
        self.active = set()
        self.sync = None
        self.timers = []
        self.seq = 0

    def sync_activator(self, tuple address, allocator):
        """A :class:`SyncActivator` for the operator at ``address``, waking
        ``allocator``'s parked worker."""
        if self.sync is None:
            self.sync = deque()
        return SyncActivator(self.sync, allocator, address)

    def activate_after(self, scope, Py_ssize_t index, double delay):
        """Schedules child ``index`` of ``scope`` once ``delay`` seconds have
        passed (at once if ``delay <= 0``)."""
        if not delay > 0:
            (<Activations>scope.activations).activate(index)
            return
        self.seq += 1
        heappush(self.timers, (_time.monotonic() + delay, self.seq, scope, index))

    def deadline(self):
        """The earliest delayed activation's deadline (monotonic), or None."""
        return self.timers[0][0] if self.timers else None

    def timers_pending(self):
        """True while a delayed activation of a live scope waits."""
        return any(not entry[2].done for entry in self.timers)

    def apply(self, list scopes):
        """Applies the activations asked for from other threads (each to the
        live scope in ``scopes`` whose path is its address's) and the delayed
        ones now due."""
        cdef list timers = self.timers
        queue = self.sync
        while queue:
            address = queue.popleft()
            for scope in scopes:
                if scope.path == address[:-1] and not scope.done:
                    (<Activations>scope.activations).activate(address[len(address) - 1])
                    break
        if timers:
            now = _time.monotonic()
            while timers and timers[0][0] <= now:
                entry = heappop(timers)
                scope = entry[2]
                if not scope.done:
                    (<Activations>scope.activations).activate(entry[3])
