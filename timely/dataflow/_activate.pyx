"""Compiled part of a scope's scheduling: which of its children are asked to
run (the Rust crate's ``scheduling::activate``).

Channels call a consumer's :class:`ChildActivator` for every message they
deliver, so activation is on the per-message path: with a compiled pusher
(:mod:`timely.dataflow._channels`) it costs no Python frame.
"""

from heapq import heapify, heappop, heappush

from timely.progress.change_batch cimport ChangeBatch
from timely.progress.reachability cimport Tracker
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
