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
- :class:`ScopeRound`: what a scope does each time it is scheduled.
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


cdef class ScopeRound:
    """What a scope does each time it is scheduled, compiled: one object per
    built scope (``scope.round``), holding typed references to the scope's
    activations, tracker, pointstamp accumulations and progress channel.

    :meth:`run` (a scope's ``schedule``) counts the records that entered
    through the scope's inputs, receives the progress batches every worker
    sent, applies them and activates the children whose frontiers moved,
    runs the activated children (:meth:`Activations.run_round`), and sends
    this worker's changes when they must be seen. When what it sent comes
    straight back to it (its own batch, or one worker's changes), it applies
    that at once and runs the children it activates, for at most
    ``passes`` rounds in all: a worker then needs fewer steps per epoch,
    and what others see is unchanged (a batch applied at once is the one
    the next scheduling would apply first).
    """

    def __init__(self, scope, Py_ssize_t passes=2):
        self.scope = scope
        self.worker = scope.worker
        self.acts = scope.activations
        self.tracker = scope.tracker
        self.local = scope.local_pointstamp
        self.final = scope.final_pointstamp
        self.boundary = scope.boundary
        self.progress = scope.progress
        self.nested = scope.nested
        self.outputs = scope.outputs > 0
        self.progcaster = None             # set once the scope has one
        self.children = scope.children
        self.input_messages = scope.input_messages
        self.solo = scope.solo
        self.eager = scope.eager
        self.root = scope.parent is None
        self.passes = passes if passes > 0 else 1

    cpdef bint run(self) except -1:
        """Schedules the scope once; True while it is incomplete."""
        cdef Py_ssize_t done = 0
        cdef Activations acts = self.acts
        cdef Tracker tracker = self.tracker
        cdef ChangeBatch final = self.final
        scope = self.scope
        cdef set waiting = None
        while True:
            if done:
                # A later pass runs only the children that what came back
                # activates: the others (a source that activated itself)
                # wait for the next scheduling, as they would have.
                waiting = set(acts.deferred)
                acts.deferred.clear()
            self.take_progress()
            self.run_children()
            if waiting:
                acts.deferred |= waiting
            self.send_progress()
            done += 1
            if done >= self.passes or not self.own_progress():
                break
        if final.len or tracker.changes.len or self.own_progress() or acts.deferred:
            acts.on_first()                # the scope's own activation
        elif self.root and not acts.deferred:
            # Activated during this scheduling for what it has done since.
            self.worker.active.discard(scope.dataflow_id)
        return scope.incomplete_count > 0 or tracker.tracking_anything()

    cdef bint own_progress(self) except -1:
        """Progress is waiting to be applied here: this worker's own (one
        worker, unlogged), or a batch in the progress channel."""
        return self.final.len != 0 or bool(self.progcaster.puller)

    cdef int take_progress(self) except -1:
        if self.input_messages:
            self.tracker.harvest(self.input_messages, self.local)
        if not self.solo or self.progcaster.puller:
            self.progcaster.recv(self.final)
        # With nothing to apply, propagating changes no frontier.
        if self.final.len or self.tracker.changes.len:
            self.propagate()
        return 0

    cpdef int propagate(self) except -1:
        """Applies the changes gathered in ``final`` (and those given to the
        tracker), propagates, reports what changed at the scope's boundary
        and outputs to the parent, brings the children's input frontiers up
        to date and activates the children notified of them or now quiet."""
        cdef Tracker tracker = self.tracker
        cdef ChangeBatch final = self.final, boundary = self.boundary
        cdef Activations acts = self.acts
        cdef PerOperatorState child
        cdef list activate, pushed, logged, quiet
        scope = self.scope
        logger = self.worker.logger if scope.logged else None
        if final.len or tracker.changes.len:
            scope.root.changes += 1        # progress, for the worker's stall watch
        if final.len:
            if logger is not None and logger.on_reach:
                logger.reachability(scope, tracker.located_items(final))
            tracker.absorb_located(final, boundary)
            if boundary.len:
                # Records leaving node 0's outputs were consumed at the scope's
                # inputs; records reaching its inputs were produced at its outputs.
                tracker.report_boundary(boundary, self.progress, self.nested)
        tracker.propagate_all()
        activate, pushed, logged, quiet = tracker.drain_frontiers(logger is not None)
        children = self.children
        for node, port, changes in pushed:
            child = <PerOperatorState>children[node]
            if child.operator is not None and child.watches[port]:
                child.operator.push_frontier(port, changes)
        if self.outputs:
            scope.report_outputs()
        if logger is not None:
            for node, port, changes in logged:
                child = <PerOperatorState>children[node]
                if child.operator is not None:
                    logger.push_progress(child.id, port, changes)
        for node in activate:
            if (<PerOperatorState>children[node]).operator is not None:
                acts.activate(node)
        for node in quiet:
            if (<PerOperatorState>children[node]).operator is not None:
                acts.activate(node)
        return 0

    cpdef bint extract_all(self) except -1:
        """Drains every child's shared progress (changes made outside any
        scheduling: a capability dropped by user code); True if the scope
        then holds changes it would apply or send if it ran."""
        cdef PerOperatorState child
        cdef Py_ssize_t index
        cdef list children = self.children
        cdef ChangeBatch local = self.local
        for index in range(1, len(children)):
            child = <PerOperatorState>children[index]
            if child.operator is not None and child.shared:
                self.tracker.drain_shared(child.shared, index,
                                          local if child.local else self.final, True)
        if self.final.len or self.tracker.changes.len:
            return True
        return local.len != 0 and (self.eager or self.tracker.must_send(local))

    cdef int run_children(self) except -1:
        cdef Activations acts = self.acts
        cdef list heap = acts.heap
        scope = self.scope
        heap.extend(acts.deferred)
        acts.deferred.clear()
        if not heap:
            return 0
        acts.scheduling = True
        logger = self.worker.logger if scope.logged else None
        # The children to run this round, each once, in index order;
        # children activated meanwhile with a higher index join the round.
        # With ``schedule_seed`` (adversarial testing): the activated
        # children in a random order, and whatever is activated meanwhile
        # waits.
        order = None
        rng = scope.rng
        if rng is not None:
            order = sorted(set(heap))
            rng.shuffle(order)
        try:
            acts.run_round(scope, self.children, scope.compiled, self.tracker, self.local,
                           self.final, order, logger)
        finally:
            acts.scheduling = False
            acts.current = -1
        if order is not None and acts.deferred:
            acts.on_first()
        return 0

    cdef int send_progress(self) except -1:
        cdef ChangeBatch local = self.local
        if not local.len:
            return 0
        if self.solo and self.worker.logger is None:
            # One worker: its batch would come straight back through the
            # progress channel; it is applied as received instead.
            local.drain_into(self.final)
        elif self.eager or self.tracker.must_send(local):
            self.progcaster.send(local)
        return 0
