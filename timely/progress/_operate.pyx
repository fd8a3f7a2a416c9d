"""Compiled part of :mod:`timely.progress.operate`: an operator's shared
progress and the draining of it into a scope's pointstamp accumulation."""

from libc.stdint cimport int64_t

from timely.progress._change_batch cimport ChangeBatch
from timely.progress._timestamp cimport make_time


cdef inline bint pending_in(list batches) except -1:
    cdef ChangeBatch batch
    for batch in batches:
        if batch.len:
            batch.compact_now()
            if batch.len:
                return True
    return False


cdef class SharedProgress:
    """The progress one operator reports to its scope, per port, in compiled
    :class:`~timely.progress.ChangeBatch` es of its scope's timestamps.

    - ``consumeds[i]``: records taken at input ``i``, as ``+n`` at their time;
    - ``internals[o]``: capabilities for output ``o``, ``+1`` when one is
      created or cloned and ``-1`` when one is dropped or downgraded away;
    - ``produceds[o]``: records sent at output ``o``, as ``+n`` at their time.

    The scope drains all three after each scheduling of the operator
    (:meth:`drain_into`) and adds them to its pointstamp accumulation as one
    batch, so an operator's changes from one scheduling are never split.
    Writing costs one compiled ``ChangeBatch.update`` per message or
    capability change; draining an operator with nothing to report costs a
    few machine instructions per port.

    >>> shared = SharedProgress(1, 1, arity=1)
    >>> shared.consumeds[0].update(3, 2)
    >>> shared.produceds[0].update(3, 2)
    >>> into = {}
    >>> shared.drain_into(into, 7, [[(8, 0)]])
    >>> sorted(into.items()), bool(shared)
    ([((False, 7, 0, 3), -2), ((False, 8, 0, 3), 2)], False)
    """

    def __init__(self, Py_ssize_t inputs, Py_ssize_t outputs, arity):
        self.consumeds = [ChangeBatch(arity=arity) for _ in range(inputs)]
        self.internals = [ChangeBatch(arity=arity) for _ in range(outputs)]
        self.produceds = [ChangeBatch(arity=arity) for _ in range(outputs)]

    @classmethod
    def of(cls, list consumeds, list internals, list produceds):
        """Shared progress over change batches made already (one per port)."""
        cdef SharedProgress shared = cls.__new__(cls)
        for batch in consumeds + internals + produceds:
            if not isinstance(batch, ChangeBatch):
                raise TypeError(f"shared progress holds ChangeBatch es, not {type(batch).__name__}")
        shared.consumeds = consumeds
        shared.internals = internals
        shared.produceds = produceds
        return shared

    def __bool__(self):
        """Some port holds a change not yet drained."""
        return (pending_in(self.consumeds) or pending_in(self.internals)
                or pending_in(self.produceds))

    def __repr__(self):
        return (f"SharedProgress({len(self.consumeds)} inputs, "
                f"{len(self.internals)} outputs{', pending' if self else ''})")

    cpdef drain_into(self, dict into, Py_ssize_t node, list targets):
        """Adds the changes into ``into``, keyed ``(is_source, node, port,
        time)``: consumed records as ``-n`` at ``node``'s input, capability
        changes at its output, produced records as ``+n`` at every
        ``(node, port)`` in ``targets[output]`` (None: drop them, for records
        sent before the scope knew where its outputs lead); leaves every port
        empty."""
        cdef ChangeBatch batch
        cdef Py_ssize_t port = 0
        for batch in self.consumeds:
            if batch.len:
                add_port(into, batch, False, node, port, -1)
            port += 1
        port = 0
        for batch in self.internals:
            if batch.len:
                add_port(into, batch, True, node, port, 1)
            port += 1
        port = 0
        cdef list where
        cdef tuple reached
        for batch in self.produceds:
            if batch.len:
                if targets is None:
                    batch.len = 0
                    batch.clean = 0
                else:
                    where = targets[port]
                    if len(where) == 1:
                        reached = where[0]
                        add_port(into, batch, False, reached[0], reached[1], 1)
                    else:
                        add_targets(into, batch, where)
            port += 1


cdef int add_port(dict into, ChangeBatch batch, bint is_source, object node, object port,
                  int64_t sign) except -1:
    """Adds ``sign`` times each of ``batch``'s changes at one location; empties it."""
    cdef size_t i
    cdef object key, old
    batch.compact_now()
    for i in range(batch.len):
        key = (is_source, node, port, make_time(&batch.rows[i * batch.k], batch.k))
        old = into.get(key)
        into[key] = sign * batch.diffs[i] if old is None else old + sign * batch.diffs[i]
    batch.len = 0
    batch.clean = 0
    return 0


cdef int add_targets(dict into, ChangeBatch batch, list where) except -1:
    """Adds each of ``batch``'s changes at every ``(node, port)`` of ``where``; empties it."""
    cdef size_t i
    cdef object time, key, old
    cdef tuple reached
    batch.compact_now()
    for i in range(batch.len):
        time = make_time(&batch.rows[i * batch.k], batch.k)
        for reached in where:
            key = (False, reached[0], reached[1], time)
            old = into.get(key)
            into[key] = batch.diffs[i] if old is None else old + batch.diffs[i]
    batch.len = 0
    batch.clean = 0
    return 0
