"""Capabilities and the handles operator logic holds, compiled: the state of
what an operator may send, in one module.

- :class:`Capability`, :class:`InputCapability`, :class:`CapabilitySet`:
  the right to send at a time (see :mod:`timely.dataflow.capability`);
- :class:`OutputHandle` and :class:`Session`: where records go, buffered
  per time, and each output's live capabilities counted by time and by the
  line that made them (what the stall report reads);
- :class:`InputHandleCore`: the messages arriving at one input, each with
  its :class:`InputCapability`.

A capability's count lives in its output's change batch; it is written here
without a Python call (one row per update), as are the counts of records an
input takes. The public faces are :mod:`timely.dataflow.capability` and
:mod:`timely.dataflow.handles`.
"""

import sys
from types import GenericAlias

from libc.stdint cimport int64_t, uint64_t

from timely.communication.allocator cimport Puller
from timely.progress.change_batch cimport ChangeBatch
from timely.progress.timestamp cimport (
    TLY_MAX_ARITY,
    arity_of_time,
    fill_row,
    settle_arity,
    tly_row_le,
)

from timely.container import Batch
from timely.errors import CapabilityError, ColumnarError, ProgressError

cdef object _getframe = sys._getframe

# Records buffered by an output before they are pushed as one message.
BUFFER = 1024
cdef Py_ssize_t _BUFFER = BUFFER


# --- counts -----------------------------------------------------------------

cdef inline int _count(object batch, object time, int64_t diff) except -1:
    """Adds ``diff`` at ``time`` to a change batch: one row, no Python call
    for the compiled ChangeBatch."""
    cdef uint64_t row[TLY_MAX_ARITY]
    cdef ChangeBatch cb
    if type(batch) is ChangeBatch:
        cb = <ChangeBatch>batch
        cb.k = settle_arity(cb.k, time)
        fill_row(time, cb.k, row)
        cb.push_row(row, diff)
    else:
        batch.update(time, diff)
    return 0


cdef inline int _hold(dict counts, object key) except -1:
    n = counts.get(key)
    counts[key] = 1 if n is None else n + 1
    return 0


cdef inline int _release(dict counts, object key) except -1:
    n = counts[key] - 1
    if n:
        counts[key] = n
    else:
        del counts[key]
    return 0


cdef bint _le(object a, object b) except -1:
    """``a`` <= ``b`` in the product order."""
    cdef uint64_t ra[TLY_MAX_ARITY]
    cdef uint64_t rb[TLY_MAX_ARITY]
    cdef Py_ssize_t k = arity_of_time(a)
    settle_arity(k, b)
    fill_row(a, k, ra)
    fill_row(b, k, rb)
    return tly_row_le(ra, rb, k)


cdef object _caller():
    """``(code, line)`` of the Python code that called into this module (a
    compiled function has no frame of its own)."""
    f = _getframe(0)
    return (f.f_code, f.f_lineno)


def _stale(time):
    return CapabilityError(
        f"the capability of a message at {time!r} was used after its message: an "
        "InputCapability is valid only while its message is the current one (until the "
        "next message is taken or the operator's logic returns); call retain() or "
        "delayed() on it while the message is current to keep a Capability")


# --- capabilities -----------------------------------------------------------

cdef int _set_up(Capability cap, object time, OutputHandle out, object site,
                 bint counted) except -1:
    """Makes ``cap`` a live capability at ``time`` on ``out``, in the
    output's holders and (``counted``) +1 in its change batch."""
    cap._time = time
    cap._out = out
    cap._internal = out.internal
    cap._live = True
    cap._site = site
    if counted:
        _count(out.internal, time, 1)
    _hold(out._held, time)
    if site is not None:
        _hold(out._sites, (time, site))
    return 0


cdef Capability _new_capability(object time, OutputHandle out, object site):
    """A capability at ``time`` on ``out``, counted +1 in the output's change
    batch and in its holders."""
    cdef Capability cap = Capability.__new__(Capability)
    _set_up(cap, time, out, site, True)
    return cap


cdef int _let_go(Capability cap) except -1:
    """The -1 of a capability given up (dropped, or its last reference gone)."""
    cdef OutputHandle out = cap._out
    cap._live = False
    if out._buffer:
        out.flush()          # records given under it go before it is let go
    _count(cap._internal, cap._time, -1)
    _release(out._held, cap._time)
    if cap._site is not None:
        _release(out._sites, (cap._time, cap._site))
    return 0


cdef class Capability:
    """The right to send at ``time`` (and later) on one operator output.

    Made by operators and builders (the initial capabilities, ``delayed``,
    ``retain``); users never construct one. ``out`` is the output's
    :class:`~timely.dataflow.handles.OutputHandle`.
    """

    cdef readonly object _time
    cdef readonly OutputHandle _out
    cdef readonly object _internal
    cdef readonly bint _live
    cdef readonly object _site       # (code, line) of the user's call that made it, or None
    cdef object __weakref__

    def __init__(self, time, OutputHandle out not None, site=None):
        _set_up(self, time, out, site, True)

    @property
    def time(self):
        """The capability's time."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        return self._time

    @property
    def port(self):
        """The output this capability sends on."""
        return self._out._port

    @property
    def site(self):
        """``file:line`` of the call that created this capability (for the
        initial capabilities: where the operator was built)."""
        site = self._site
        if site is None:
            return self._out._origin[2]
        return f"{site[0].co_filename}:{site[1]}"

    @classmethod
    def _minted(cls, time, OutputHandle out not None):
        """A capability whose creation is common knowledge and is not counted
        in the output's change batch (every worker's scope starts with it)."""
        cdef Capability cap = Capability.__new__(Capability)
        _set_up(cap, time, out, None, False)
        return cap

    def valid(self):
        """True until the capability is dropped (or downgraded away by a set)."""
        return self._live

    def _check(self):
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")

    cdef int check_delay(self, object time) except -1:
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        if not _le(self._time, time):
            raise CapabilityError(
                f"cannot delay a capability at {self._time!r} to {time!r}: not greater or equal")
        return 0

    def delayed(self, time):
        """A new capability at ``time``, which must be >= this one's time."""
        self.check_delay(time)
        return _new_capability(time, self._out, _caller())

    def _delay(self, time):
        """``delayed`` for timely's own operators: the capability's site is
        left to be the operator's (no frame is looked up)."""
        self.check_delay(time)
        return _new_capability(time, self._out, None)

    def downgrade(self, time):
        """Moves this capability forward to ``time`` (>= its time)."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        old = self._time
        if not _le(old, time):
            raise CapabilityError(
                f"cannot downgrade a capability at {old!r} to {time!r}: not greater or equal")
        cdef OutputHandle out = self._out
        if out._buffer:
            out.flush()          # records given at the old time go before it is let go
        _count(self._internal, time, 1)
        _count(self._internal, old, -1)
        _hold(out._held, time)
        _release(out._held, old)
        site = self._site
        if site is not None:
            _hold(out._sites, (time, site))
            _release(out._sites, (old, site))
        self._time = time

    def drop(self):
        """Gives the capability up; using it afterwards raises CapabilityError."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        _let_go(self)

    def retain(self):
        """A clone (an extra count at the same time)."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        return _new_capability(self._time, self._out, _caller())

    def __del__(self):
        if self._live:
            try:
                _let_go(self)
            except Exception:  # interpreter shutdown: nothing is tracked any more
                self._live = False

    def __repr__(self):
        state = "" if self._live else ", dropped"
        return f"Capability({self._time!r}, output={self._out._port}{state})"

    def try_delayed(self, time):
        """As :meth:`delayed`, but None (not an error) when ``time`` is not
        at or after this capability's time.

        >>> import timely
        >>> def constructor(cap, info):                  # cap is at 0
        ...     later = cap.try_delayed(2)
        ...     moved = cap.try_downgrade(1)                # True: 0 <= 1
        ...     earlier = cap.try_delayed(0)                # None: 0 is before 1
        ...     back = later.try_downgrade(1)               # False: 1 is before 2
        ...     held = [later, cap]
        ...     def logic(output):
        ...         if held:
        ...             output.session(later).give((moved, earlier, back))
        ...             held.clear(); later.drop(); cap.drop()
        ...     return logic
        >>> def build(scope):
        ...     return scope.source("Try", constructor).capture()
        >>> timely.example(build).extract()
        [(2, [(True, None, False)])]
        """
        self._check()
        if not _le(self._time, time):
            return None
        return _new_capability(time, self._out, _caller())

    def try_downgrade(self, time):
        """As :meth:`downgrade`, but returns False (and leaves the capability
        as it was) when ``time`` is not at or after its time."""
        self._check()
        if not _le(self._time, time):
            return False
        self.downgrade(time)
        return True


cdef class InputCapability:
    """The capability that arrives with a message at an operator input; valid
    only while its message is the current one (see
    :mod:`timely.dataflow.capability`)."""

    cdef readonly object _time
    cdef readonly list _outputs      # per output: its OutputHandle
    cdef readonly list _summaries    # per output: list of PathSummary (empty: not connected)
    cdef readonly bint _live

    def __init__(self, time, list outputs not None, list summaries not None):
        self._time = time
        self._outputs = outputs
        self._summaries = summaries
        self._live = True

    @property
    def time(self):
        """The message's time (readable at any moment)."""
        return self._time

    def valid(self):
        """The message is still the current one."""
        return self._live

    def valid_for_output(self, Py_ssize_t port):
        """Data at this time may be sent on ``port`` without a new capability."""
        sums = self._summaries[port]
        return len(sums) == 1 and sums[0].is_zero()

    cdef Capability delayed_to(self, object time, Py_ssize_t output, object site):
        if not self._live:
            raise _stale(self._time)
        if not 0 <= output < len(self._outputs):
            raise CapabilityError(f"operator has no output {output}")
        summaries = self._summaries[output]
        for summary in summaries:
            reached = summary.results_in(self._time)
            if reached is not None and _le(reached, time):
                return _new_capability(time, self._outputs[output], site)
        if not summaries:
            raise CapabilityError(
                f"input is not connected to output {output}: no capability can be made for it")
        raise CapabilityError(
            f"cannot make a capability at {time!r} for output {output} from an input "
            f"message at {self._time!r}")

    def _delayed(self, time, Py_ssize_t output, site):
        """A capability at ``time`` for ``output``, whose site is ``site``
        (None: the operator's); for timely's own operators."""
        return self.delayed_to(time, output, site)

    def delayed(self, time, Py_ssize_t output=0):
        """A capability at ``time`` for ``output``; ``time`` must be at or beyond
        the input-to-output summary applied to this message's time."""
        return self.delayed_to(time, output, _caller())

    def delayed_for_output(self, time, Py_ssize_t output):
        """A capability at ``time`` (at or after this message's time) for output ``output``.

        Raises :class:`timely.CapabilityError` if the message is no longer current, ``time``
        is earlier than the message's time (after the input-to-output summary), or the input
        is not connected to ``output``.
        """
        return self.delayed_to(time, output, _caller())

    def retain(self, Py_ssize_t output=0):
        """A capability at this message's time for ``output``."""
        return self.delayed_to(self._time, output, _caller())

    def retain_for_output(self, Py_ssize_t output):
        """A capability at this message's time for output ``output``, kept after the message:
        as :meth:`retain` for another output.

        Raises :class:`timely.CapabilityError` as :meth:`delayed_for_output` does.
        """
        return self.delayed_to(self._time, output, _caller())

    def __repr__(self):
        state = "" if self._live else ", past its message"
        return f"InputCapability({self._time!r}{state})"


cdef class CapabilitySet:
    """A set of capabilities for one output, kept as an antichain of times.

    ``insert`` keeps only capabilities not dominated by others; ``delayed``
    finds one at or before a time; ``downgrade`` replaces the set with
    capabilities at the given frontier.
    """

    cdef list _caps

    def __init__(self, capabilities=()):
        self._caps = []
        for cap in capabilities:
            self.insert(cap)

    def insert(self, Capability capability not None):
        """Adds ``capability``, keeping the set an antichain: it is dropped if a held
        capability is at or before its time, and held ones at or after its time are dropped
        otherwise. Linear in the set's size.

        Raises :class:`timely.CapabilityError` if ``capability`` is no longer valid.
        """
        cdef Capability held
        capability._check()
        for held in self._caps:
            if _le(held._time, capability._time):
                capability.drop()
                return
        keep = []
        for held in self._caps:
            if _le(capability._time, held._time):
                held.drop()
            else:
                keep.append(held)
        keep.append(capability)
        self._caps = keep

    def delayed(self, time):
        """A new capability at ``time``, made from a capability in the set at or before it.

        Raises :class:`timely.CapabilityError` if no capability in the set is at or before
        ``time`` (see :meth:`try_delayed` for the form that returns None).
        """
        cdef Capability held
        for held in self._caps:
            if _le(held._time, time):
                held.check_delay(time)
                return _new_capability(time, held._out, None)
        raise CapabilityError(f"no capability in the set is at or before {time!r}")

    def downgrade(self, frontier):
        """Replaces the set with capabilities at the times of ``frontier``."""
        cdef Capability held
        new = [self.delayed(t) for t in frontier]
        for held in self._caps:
            held.drop()
        self._caps = []
        for cap in new:
            self.insert(cap)

    def first(self):
        """A capability of the set (the first held), or None when the set is empty."""
        return self._caps[0] if self._caps else None

    def times(self):
        """The times of the capabilities held, as a list."""
        return [c.time for c in self._caps]

    def clear(self):
        """Drops every capability in the set; the set is empty afterwards."""
        cdef Capability held
        for held in self._caps:
            held.drop()
        self._caps = []

    def __len__(self):
        return len(self._caps)

    def __iter__(self):
        return iter(list(self._caps))

    def __bool__(self):
        return bool(self._caps)

    def __repr__(self):
        return f"CapabilitySet({self.times()!r})"

    @classmethod
    def from_elem(cls, capability):
        """A set holding ``capability``.

        >>> import timely
        >>> def constructor(default_cap, info):
        ...     caps = timely.CapabilitySet.from_elem(default_cap)
        ...     def logic(input, output):
        ...         caps.downgrade(input.frontier.frontier())
        ...         for cap, data in input:
        ...             pass
        ...         first = caps.first()
        ...         if first is not None:
        ...             output.session(first).give(first.time)
        ...     return logic
        >>> timely.example(lambda scope: scope.to_stream([()]).unary_frontier(
        ...     timely.Pipeline, "example", constructor).capture()).extract()
        [(0, [0])]
        """
        return cls([capability])

    def try_delayed(self, time):
        """As :meth:`delayed`, but None when no capability in the set is at or before ``time``."""
        cdef Capability held
        for held in self._caps:
            if _le(held._time, time):
                held.check_delay(time)
                return _new_capability(time, held._out, _caller())
        return None

    def try_downgrade(self, frontier):
        """As :meth:`downgrade`, but returns False, leaving the set as it was,
        when some time of ``frontier`` is not at or after a capability in the set."""
        cdef Capability held
        frontier = list(frontier)
        for t in frontier:
            for held in self._caps:
                if _le(held._time, t):
                    break
            else:
                return False
        self.downgrade(frontier)
        return True


# --- inputs -----------------------------------------------------------------

cdef class CheckingPuller(Puller):
    """A compiled puller over another puller (``inner``: any object with
    ``pull()`` and a truth value, such as a logged channel's) that, given a
    ``frontier`` (a MutableAntichain), checks each message it hands on
    against it: a message at a time the frontier has passed is a
    :class:`~timely.errors.ProgressError` naming the input ``name``. What
    ``check_progress`` asks of every input, for compiled operator logic."""

    cdef object inner
    cdef object check_frontier
    cdef str name

    def __init__(self, inner, frontier, str name not None):
        self.queue = None
        self.inner = inner
        self.check_frontier = frontier
        self.name = name

    cpdef pull(self):
        message = self.inner.pull()
        if message is not None and self.check_frontier is not None:
            check_arrival(self.check_frontier, (<tuple>message)[0], self.name)
        return message

    def __bool__(self):
        return bool(self.inner)


cdef int check_arrival(frontier, time, str name) except -1:
    """Raises ProgressError when ``frontier`` has passed ``time``: a message
    arrived at input ``name`` at a time it promised no more of."""
    if not frontier.less_equal(time):
        raise ProgressError(
            f"{name}: received data at {time!r}, but the input frontier "
            f"{frontier.frontier().elements()!r} had passed it")
    return 0


cdef class InputHandleCore:
    """Reads the messages arriving at one operator input (``InputHandleCore[T]``
    on a ``Stream[T]``).

    ``for cap, data in input:`` yields each message's :class:`InputCapability`
    and its batch; taking a message records it as consumed. The capability is
    valid until the next message is taken, the loop ends or the operator's
    logic returns (``retain()`` it to keep one). ``input.frontier`` is the
    input's frontier (a MutableAntichain): the times that may still arrive are
    those it is less than or equal to.
    """

    cdef readonly object _puller
    cdef object _queue               # a plain puller's deque, read directly; else None
    cdef readonly object consumed   # ChangeBatch of the records taken
    cdef list _outputs               # the operator's OutputHandles, filled in as they are made
    cdef list _summaries             # per output: the input's summaries to it
    cdef public object frontier      # a MutableAntichain, or None when the logic never reads it
    cdef bint _check
    cdef str _name
    cdef readonly InputCapability _current   # the current message's capability

    def __init__(self, puller, consumed, list outputs not None, list summaries not None,
                 frontier, bint check, str name not None):
        self._puller = puller
        self._queue = puller.queue if type(puller) is Puller else None
        self.consumed = consumed
        self._outputs = outputs
        self._summaries = summaries
        self.frontier = frontier
        self._check = check
        self._name = name
        self._current = None

    def __class_getitem__(cls, item):
        return GenericAlias(cls, item)

    @property
    def compiled_puller(self):
        """The puller that compiled operator logic reads in place of this
        handle: the channel's own when it is compiled (a local queue's, or
        a channel's from other workers) and the input checks nothing; else
        a :class:`CheckingPuller` over the channel's puller (a logged
        channel's), checking each message against the input's frontier
        under ``check_progress``. So a debug or logged run runs the same
        compiled logic as any other."""
        puller = self._puller
        if isinstance(puller, Puller) and not self._check:
            return puller
        return CheckingPuller(puller, self.frontier if self._check else None, self._name)

    cdef inline int retire(self) except -1:
        cdef InputCapability current = self._current
        if current is not None:
            current._live = False
            self._current = None
        return 0

    cdef InputCapability take(self, tuple message):
        """Counts ``message`` as consumed, checks it against the frontier
        under ``check_progress``, and makes it the current one."""
        cdef InputCapability cap
        time, data = message
        _count(self.consumed, time, len(data))
        if self._check:
            check_arrival(self.frontier, time, self._name)
        cap = InputCapability.__new__(InputCapability)
        cap._time = time
        cap._outputs = self._outputs
        cap._summaries = self._summaries
        cap._live = True
        self._current = cap
        return cap

    def next(self):
        """The next ``(capability, data)``, or None when nothing is waiting."""
        self.retire()
        message = self._puller.pull()
        if message is None:
            return None
        cap = self.take(message)
        return cap, message[1]

    def __iter__(self):
        queue = self._queue
        if not (self._puller if queue is None else queue):
            return iter(())
        return self._messages()

    def _messages(self):
        queue = self._queue
        pull = self._puller.pull if queue is None else queue.popleft
        try:
            while True:
                self.retire()
                if queue is not None and not queue:
                    return
                message = pull()
                if message is None:
                    return
                cap = self.take(message)
                yield cap, message[1]
        finally:
            # The loop was left early (break, an exception): the message it
            # stopped at is no longer current.
            self.retire()

    def _retire(self):
        """Ends the current message's validity (the operator's logic returned)."""
        self.retire()

    def for_each(self, logic):
        """Calls ``logic(capability, data)`` for every waiting message."""
        for cap, data in self:
            logic(cap, data)

    def pending(self):
        """Messages are waiting."""
        return bool(self._puller)

    def for_each_time(self, logic):
        """Calls ``logic(capability, batches)`` once per distinct time among
        the waiting messages, in time order, with the list of that time's
        batches (the crate's ``for_each_time``: one output session per time).

        >>> import timely
        >>> def constructor(cap, info):
        ...     def logic(input, output):
        ...         input.for_each_time(lambda cap, batches: output.session(cap).give(
        ...             sum(len(b) for b in batches)))
        ...     return logic
        >>> def build(scope):
        ...     parts = scope.to_stream(range(3)).concatenate([scope.to_stream(range(4))])
        ...     return parts.unary(timely.Pipeline, "Counts", constructor).capture()
        >>> timely.example(build).extract()
        [(0, [7])]
        """
        cdef InputCapability cap
        staged = {}
        for message_cap, data in self:
            time = (<InputCapability>message_cap)._time
            batches = staged.get(time)
            if batches is None:
                staged[time] = [data]
            else:
                batches.append(data)
        # Each time's capability is current while its logic runs, as one
        # message's is in ``for cap, data in input``.
        for time in sorted(staged):
            cap = InputCapability(time, self._outputs, self._summaries)
            self._current = cap
            try:
                logic(cap, staged[time])
            finally:
                cap._live = False
                self._current = None


# --- outputs ----------------------------------------------------------------

cdef class OutputHandle:
    """Sends data on one operator output, at times its capabilities allow
    (``OutputHandle[T]`` makes a ``Stream[T]``)."""

    cdef readonly Py_ssize_t _port
    cdef readonly object internal    # ChangeBatch of the output's capability changes
    cdef readonly object counter    # counts what is pushed, and pushes it on
    cdef readonly list _buffer       # records given one by one at _time
    cdef readonly object _time       # the time of the records in _buffer
    cdef readonly dict _held         # time -> how many live Capabilities of this output are at it
    # (time, (code, line)) -> how many of them were made by that line (a
    # user's delayed/retain); the rest were made by the operator itself
    cdef readonly dict _sites
    cdef readonly object _inputs     # the operator's InputHandles (their current messages)
    cdef readonly tuple _origin      # (operator name, address, "file:line" it was built at)

    def __init__(self, Py_ssize_t port, internal, counter, inputs=(),
                 tuple origin not None=("operator", (), None)):
        self._port = port
        self.internal = internal
        self.counter = counter
        self._buffer = []
        self._time = None
        self._held = {}
        self._sites = {}
        self._inputs = inputs
        self._origin = origin

    def __class_getitem__(cls, item):
        return GenericAlias(cls, item)

    def session(self, capability):
        """A session sending at ``capability``'s time.

        ``capability`` is a :class:`Capability` of this output, or the
        :class:`InputCapability` of the current message of an input that
        reaches this output unchanged. The session sends at the
        capability's time at each use (a downgraded capability: its new
        time), and raises :class:`~timely.CapabilityError` once the
        capability is dropped or its message is no longer current.
        """
        cdef Session session
        kind = type(capability)
        if kind is Capability:
            if (<Capability>capability)._out is not self:
                raise CapabilityError(
                    f"{capability!r} belongs to output {capability.port}, "
                    f"not to output {self._port}")
            if not (<Capability>capability)._live:
                raise CapabilityError(f"cannot send with {capability!r}: it was dropped")
        elif kind is InputCapability:
            if not (<InputCapability>capability)._live:
                raise _stale((<InputCapability>capability)._time)
            if not capability.valid_for_output(self._port):
                raise CapabilityError(
                    f"the message capability at {capability.time!r} is not valid for output "
                    f"{self._port}: retain or delay it for that output first")
        else:
            raise CapabilityError(f"{capability!r} is not a capability")
        session = Session.__new__(Session)
        session._out = self
        session._cap = capability
        session._input = kind is InputCapability
        return session

    cdef int switch(self, object capability, object time, bint live) except -1:
        """Makes ``capability``'s time the buffer's, after checking it may
        still be used (the slow path of every session call)."""
        if not live:
            if type(capability) is InputCapability:
                raise _stale(time)
            raise CapabilityError(
                f"cannot send with a session on {capability!r}: the capability was dropped")
        if self._buffer:
            self.flush()
        self._time = time
        return 0

    cpdef flush(self):
        """Pushes buffered records."""
        if self._buffer:
            buffer = self._buffer
            self._buffer = []
            self.counter.push(self._time, buffer)

    def holds(self, time):
        """The operator may send at ``time`` on this output: it holds a
        capability for it at or before ``time``, or an input's current
        message reaches it at or before ``time``."""
        cdef InputHandleCore inp
        cdef InputCapability current
        held = self._held
        if time in held:
            return True
        for t in held:
            if _le(t, time):
                return True
        for inp in self._inputs:
            current = inp._current
            if current is not None and current._live:
                for summary in current._summaries[self._port]:
                    reached = summary.results_in(current._time)
                    if reached is not None and _le(reached, time):
                        return True
        return False

    def give_at(self, time, data):
        """Sends a batch at ``time``, which the operator must hold (see
        :meth:`holds`); raises :class:`~timely.CapabilityError` if it does
        not. A list is copied, so the caller may reuse it."""
        if not self.holds(time):
            name, address, _site = self._origin
            raise CapabilityError(
                f"{name} {list(address)} output {self._port}: cannot send at {time!r}: the "
                f"operator holds no capability at or before it (held: {sorted(self._held, key=repr)}"
                "), and no current input message reaches it")
        if type(data) is list:
            data = (<list>data).copy()
        self.give_unchecked(time, data)

    def give_unchecked(self, time, data):
        """Sends a batch at ``time`` without a capability check, and without
        copying it. Only for operators whose structure guarantees the time is
        held (a message's own time on an output its input reaches unchanged,
        taken while the message is current), and for operators built with
        ``OperatorBuilder.build_raw`` that account their capabilities in their
        shared progress themselves. Misused, it lets a frontier pass data
        still in flight."""
        if self._buffer:
            self.flush()
        self.counter.push(time, data)

    @property
    def output_index(self):
        """This output's port on its operator (for ``cap.retain(output.output_index)``)."""
        return self._port


cdef class Session:
    """Sends records at one capability's time; obtained from ``output.session(cap)``.

    Each call checks that the capability is still usable and that the
    output's buffer holds its time (two slot reads; a switch between
    sessions flushes the other session's records first).
    """

    cdef OutputHandle _out
    cdef object _cap
    cdef bint _input                 # _cap is an InputCapability (else a Capability)

    def __init__(self, OutputHandle out not None, capability):
        self._out = out
        self._cap = capability
        self._input = type(capability) is InputCapability
        if not self._input and type(capability) is not Capability:
            raise CapabilityError(f"{capability!r} is not a capability")

    def __class_getitem__(cls, item):
        return GenericAlias(cls, item)

    cdef inline object cap_time(self):
        if self._input:
            return (<InputCapability>self._cap)._time
        return (<Capability>self._cap)._time

    cdef inline bint cap_live(self):
        if self._input:
            return (<InputCapability>self._cap)._live
        return (<Capability>self._cap)._live

    cdef inline int ready(self) except -1:
        """Makes the output's buffer hold this session's time."""
        time = self.cap_time()
        cdef bint live = self.cap_live()
        if self._out._time is not time or not live:
            self._out.switch(self._cap, time, live)
        return 0

    @property
    def time(self):
        """The time this session sends at."""
        return self.cap_time()

    def give(self, record):
        """Sends one record. A columnar Batch is not a record: it raises
        :class:`~timely.ColumnarError` (send it with :meth:`give_container`)."""
        if type(record) is Batch:
            raise ColumnarError("give() sends one record, and this is a columnar Batch: send "
                                "it whole with give_container(batch)")
        self.ready()
        cdef list buffer = self._out._buffer
        buffer.append(record)
        if len(buffer) >= _BUFFER:
            self._out.flush()

    def give_iterator(self, records):
        """Sends every record of ``records``."""
        self.ready()
        cdef list buffer = self._out._buffer
        buffer.extend(records)
        if len(buffer) >= _BUFFER:
            self._out.flush()

    def give_container(self, data):
        """Sends a whole batch as one message. A list is copied (the caller
        may clear or reuse it); a columnar Batch is passed on."""
        if type(data) is list:
            data = (<list>data).copy()
        self.give_owned(data)

    def give_vec(self, data):
        """As :meth:`give_container` (the crate's older name)."""
        self.give_container(data)

    def give_owned(self, data):
        """``give_container`` for a batch the operator owns and will not touch
        again (a message it received, a list it just made): not copied."""
        time = self.cap_time()
        cdef bint live = self.cap_live()
        if not live:
            self._out.switch(self._cap, time, live)
        if self._out._buffer:
            self._out.flush()
        if data:
            self._out.counter.push(time, data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def settle(list inputs not None, list outputs not None):
    """What follows an operator's logic: each input's current message stops
    being current, and each output's buffered records are pushed."""
    cdef InputHandleCore inp
    cdef OutputHandle out
    for inp in inputs:
        inp.retire()
    for out in outputs:
        if out._buffer:
            out.flush()
