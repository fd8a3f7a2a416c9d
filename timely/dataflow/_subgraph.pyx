"""A scope's round, compiled: what a scope (:class:`timely.dataflow.subgraph.Subgraph`)
does each time it is scheduled, with no Python frame of its own between
receiving progress and sending it.
"""

from timely.dataflow._activate cimport Activations
from timely.progress.operate cimport PerOperatorState


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
        self.capabilities = scope.output_capabilities
        self.internals = scope.progress.internals
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
            tracker.report_outputs(self.capabilities, self.internals, self.nested)
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
