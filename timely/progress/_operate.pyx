"""Compiled part of :mod:`timely.progress.operate`: an operator's shared
progress (the scope's tracker drains it, :meth:`Tracker.drain_shared`)."""

from timely.progress._change_batch cimport ChangeBatch


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
    (:meth:`timely.progress.Tracker.drain_shared`) into its pointstamp
    accumulation as one batch, so an operator's changes from one scheduling
    are never split.
    Writing costs one compiled ``ChangeBatch.update`` per message or
    capability change; draining an operator with nothing to report costs a
    few machine instructions per port.

    >>> shared = SharedProgress(1, 1, arity=1)
    >>> shared.consumeds[0].update(3, 2)
    >>> shared.produceds[0].update(3, 2)
    >>> bool(shared), shared.produceds[0].drain(), shared.consumeds[0].drain(), bool(shared)
    (True, [(3, 2)], [(3, 2)], False)
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


cdef class PerOperatorState:
    """A scope's record of one child: its operator and shared progress, what
    it asks to be told, whether it is incomplete.
    The scope's round reads it with no attribute lookup by name."""

    def __init__(self, Py_ssize_t index, operator, identifier=None):
        progress = operator.progress
        if not isinstance(progress, SharedProgress):
            raise TypeError(f"operator {operator.name!r} has no SharedProgress in .progress")
        self.index = index
        self.id = identifier              # worker-unique, for logs
        self.operator = operator
        self.shared = <SharedProgress>progress
        self.local = operator.local
        self.inputs = operator.inputs
        self.outputs = operator.outputs
        self.notify = list(operator.notify) if operator.notify else [True] * operator.inputs
        self.watches = (list(operator.watches) if operator.watches is not None
                        else [True] * operator.inputs)
        self.incomplete = False

    def __repr__(self):
        return f"PerOperatorState({self.index}, {self.operator!r})"
