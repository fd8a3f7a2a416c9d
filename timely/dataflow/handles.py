"""What operator logic holds: input handles, output handles, sessions.

Ownership: a batch handed to an output is the dataflow's from then on. Lists
given to :meth:`Session.give_container` or :meth:`OutputHandle.give_at` are
copied (a shallow copy: one pointer per record), so the caller may clear or
reuse its list at once, the Rust crate's ``&mut Vec`` idiom; a columnar
:class:`~timely.Batch` is immutable and is passed on as it is. Records given
one by one go into the output's own buffer, which is handed on whole and
replaced by a fresh list, never copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Iterator, Literal, TypeVar

from timely.communication.allocator import Puller
from timely.container import Batch
from timely.dataflow.capability import Capability, InputCapability, _stale
from timely.errors import CapabilityError, ColumnarError, ProgressError
from timely.progress.timestamp import less_equal

if TYPE_CHECKING:
    from timely.container import Batch
    from timely.dataflow.time import Time
    from timely.progress.frontier import MutableAntichain

T = TypeVar("T")

# Records buffered by an output before they are pushed as one message.
BUFFER = 1024


class InputHandleCore(Generic[T]):
    """Reads the messages arriving at one operator input (``InputHandleCore[T]``
    on a ``Stream[T]``).

    ``for cap, data in input:`` yields each message's :class:`InputCapability`
    and its batch; taking a message records it as consumed. The capability is
    valid until the next message is taken, the loop ends or the operator's
    logic returns (``retain()`` it to keep one). ``input.frontier`` is the
    input's frontier (a MutableAntichain): the times that may still arrive are
    those it is less than or equal to.
    """

    __slots__ = ("_puller", "_queue", "_consumed", "_outputs", "_summaries", "frontier", "_check",
                 "_name", "_current")

    frontier: MutableAntichain

    def __init__(self, puller: Any, consumed: Any, outputs: list[OutputHandle[Any]],
                 summaries: list[Any], frontier: MutableAntichain | None, check: bool,
                 name: str) -> None:
        self._puller = puller
        # A plain puller's deque is read directly (no call per message).
        self._queue = puller.queue if type(puller) is Puller else None
        self._consumed = consumed
        self._outputs = outputs          # the operator's OutputHandles, filled in as they are made
        self._summaries = summaries
        # None when the operator neither watches nor checks this input's
        # frontier: its logic does not read it then.
        self.frontier = frontier  # type: ignore[assignment]
        self._check = check
        self._name = name
        self._current: InputCapability | None = None     # the current message's capability

    @property
    def compiled_puller(self) -> Puller | None:
        """The puller that compiled operator logic may read in place of this
        handle: a compiled one (a local queue's, or a channel's from other
        workers; not a logged channel's) of an input that checks no message
        against its frontier. None otherwise."""
        puller = self._puller
        return puller if isinstance(puller, Puller) and not self._check else None

    def next(self) -> tuple[InputCapability, Any] | None:
        """The next ``(capability, data)``, or None when nothing is waiting."""
        current = self._current
        if current is not None:
            current._live = False
            self._current = None
        message = self._puller.pull()
        if message is None:
            return None
        time, data = message
        self._consumed.update(time, len(data))
        if self._check and not self.frontier.less_equal(time):
            raise ProgressError(
                f"{self._name}: received data at {time!r}, but the input frontier "
                f"{self.frontier.frontier().elements()!r} had passed it")
        cap = self._current = InputCapability(time, self._outputs, self._summaries)
        return cap, data

    def __iter__(self) -> Iterator[tuple[InputCapability, Any]]:
        queue = self._queue
        if not (self._puller if queue is None else queue):
            return iter(())
        return self._messages()

    def _messages(self) -> Iterator[tuple[InputCapability, Any]]:
        queue = self._queue
        pull = self._puller.pull if queue is None else queue.popleft
        consumed = self._consumed
        outputs = self._outputs
        summaries = self._summaries
        cap = self._current
        try:
            while True:
                if cap is not None:
                    cap._live = False
                if queue is not None and not queue:
                    self._current = None
                    return
                message = pull()
                if message is None:
                    self._current = None
                    return
                time, data = message
                consumed.update(time, len(data))
                if self._check and not self.frontier.less_equal(time):
                    raise ProgressError(
                        f"{self._name}: received data at {time!r}, but the input frontier "
                        f"{self.frontier.frontier().elements()!r} had passed it")
                cap = self._current = InputCapability(time, outputs, summaries)
                yield cap, data
        finally:
            # The loop was left early (break, an exception): the message it
            # stopped at is no longer current.
            current = self._current
            if current is not None:
                current._live = False
                self._current = None

    def _take_all(self) -> list[tuple[Time, Any]]:
        """Every waiting message as ``(time, data)``, each recorded as
        consumed, and no capability made: for timely's own operators whose
        logic never sees one (map, filter, concat, feedback, ...)."""
        queue = self._queue
        if queue is None:
            return [(cap._time, data) for cap, data in self]
        if not queue:
            return []
        current = self._current
        if current is not None:
            current._live = False
            self._current = None
        consumed = self._consumed
        check = self._check
        taken = []
        while queue:
            message = queue.popleft()
            time, data = message
            consumed.update(time, len(data))
            if check and not self.frontier.less_equal(time):
                raise ProgressError(
                    f"{self._name}: received data at {time!r}, but the input frontier "
                    f"{self.frontier.frontier().elements()!r} had passed it")
            taken.append(message)
        return taken

    def _retire(self) -> None:
        """Ends the current message's validity (the operator's logic returned)."""
        current = self._current
        if current is not None:
            current._live = False
            self._current = None

    def for_each(self, logic: Callable[[InputCapability, Any], object]) -> None:
        """Calls ``logic(capability, data)`` for every waiting message."""
        for cap, data in self:
            logic(cap, data)

    def pending(self) -> bool:
        """Messages are waiting."""
        return bool(self._puller)

    def for_each_time(self, logic: Callable[[InputCapability, list[Any]], object]) -> None:
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
        staged: dict[Time, list[Any]] = {}
        for cap, data in self:
            batches = staged.get(cap.time)
            if batches is None:
                staged[cap.time] = [data]
            else:
                batches.append(data)
        # Each time's capability is current while its logic runs, as one
        # message's is in ``for cap, data in input``.
        for time in sorted(staged):
            cap = self._current = InputCapability(time, self._outputs, self._summaries)
            try:
                logic(cap, staged[time])
            finally:
                cap._live = False
                self._current = None


class OutputHandle(Generic[T]):
    """Sends data on one operator output, at times its capabilities allow
    (``OutputHandle[T]`` makes a ``Stream[T]``)."""

    __slots__ = ("_port", "_internal", "_counter", "_buffer", "_time", "_held", "_sites",
                 "_inputs", "_origin")

    def __init__(self, port: int, internal: Any, counter: Any,
                 inputs: list[InputHandleCore[Any]] | tuple[()] = (),
                 origin: tuple[str, tuple[int, ...], str | None] = ("operator", (), None)) -> None:
        self._port = port
        self._internal = internal
        self._counter = counter
        self._buffer: list[T] = []
        self._time: Time | None = None   # the time of the records in _buffer
        self._held: dict[Time, int] = {}  # time -> how many live Capabilities of this output are at it
        # (time, (code, line)) -> how many of them were made by that line (a
        # user's delayed/retain); the rest were made by the operator itself
        self._sites: dict[tuple[Time, tuple[Any, int]], int] = {}
        self._inputs = inputs            # the operator's InputHandles (their current messages)
        self._origin = origin            # (operator name, address, "file:line" it was built at)

    def session(self, capability: Capability | InputCapability) -> Session[T]:
        """A session sending at ``capability``'s time.

        ``capability`` is a :class:`Capability` of this output, or the
        :class:`InputCapability` of the current message of an input that
        reaches this output unchanged. The session sends at the
        capability's time at each use (a downgraded capability: its new
        time), and raises :class:`~timely.CapabilityError` once the
        capability is dropped or its message is no longer current.
        """
        # ``kind`` is tested once (this runs per message); mypy does not narrow
        # the union through it, hence the two ignores below.
        kind = type(capability)
        if kind is Capability:
            if capability._out is not self:  # type: ignore[union-attr]
                raise CapabilityError(
                    f"{capability!r} belongs to output {capability.port}, "  # type: ignore[union-attr]
                    f"not to output {self._port}")
            if not capability._live:
                raise CapabilityError(f"cannot send with {capability!r}: it was dropped")
        elif kind is InputCapability:
            if not capability._live:
                raise _stale(capability._time)
            if not capability.valid_for_output(self._port):  # type: ignore[union-attr]
                raise CapabilityError(
                    f"the message capability at {capability.time!r} is not valid for output "
                    f"{self._port}: retain or delay it for that output first")
        else:
            raise CapabilityError(f"{capability!r} is not a capability")
        return Session(self, capability)

    def _switch(self, capability: Capability | InputCapability) -> None:
        """Makes ``capability``'s time the buffer's, after checking it may
        still be used (the slow path of every session call)."""
        if not capability._live:
            if type(capability) is InputCapability:
                raise _stale(capability._time)
            raise CapabilityError(
                f"cannot send with a session on {capability!r}: the capability was dropped")
        if self._buffer:
            self.flush()
        self._time = capability._time

    def flush(self) -> None:
        """Pushes buffered records."""
        if self._buffer:
            buffer = self._buffer
            self._buffer = []
            self._counter.push(self._time, buffer)

    def holds(self, time: Time) -> bool:
        """The operator may send at ``time`` on this output: it holds a
        capability for it at or before ``time``, or an input's current
        message reaches it at or before ``time``."""
        held = self._held
        if time in held:
            return True
        for t in held:
            if less_equal(t, time):
                return True
        port = self._port
        for inp in self._inputs:
            current = inp._current
            if current is not None and current._live:
                for summary in current._summaries[port]:
                    reached = summary.results_in(current._time)
                    if reached is not None and less_equal(reached, time):
                        return True
        return False

    def give_at(self, time: Time, data: list[T] | Batch) -> None:
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
            data = data.copy()
        self.give_unchecked(time, data)

    def give_unchecked(self, time: Time, data: list[T] | Batch) -> None:
        """Sends a batch at ``time`` without a capability check, and without
        copying it. Only for operators whose structure guarantees the time is
        held (a message's own time on an output its input reaches unchanged,
        taken while the message is current), and for operators built with
        ``OperatorBuilder.build_raw`` that account their capabilities in their
        shared progress themselves. Misused, it lets a frontier pass data
        still in flight."""
        if self._buffer:
            self.flush()
        self._counter.push(time, data)

    @property
    def output_index(self) -> int:
        """This output's port on its operator (for ``cap.retain(output.output_index)``)."""
        return self._port


class Session(Generic[T]):
    """Sends records at one capability's time; obtained from ``output.session(cap)``.

    Each call checks that the capability is still usable and that the
    output's buffer holds its time (two slot reads; a switch between
    sessions flushes the other session's records first).
    """

    __slots__ = ("_out", "_cap")

    def __init__(self, out: OutputHandle[T], capability: Capability | InputCapability) -> None:
        self._out = out
        self._cap = capability

    @property
    def time(self) -> Time:
        """The time this session sends at."""
        return self._cap._time

    def give(self, record: T) -> None:
        """Sends one record. A columnar Batch is not a record: it raises
        :class:`~timely.ColumnarError` (send it with :meth:`give_container`)."""
        if type(record) is Batch:
            raise ColumnarError("give() sends one record, and this is a columnar Batch: send "
                                "it whole with give_container(batch)")
        out = self._out
        cap = self._cap
        if out._time is not cap._time or not cap._live:
            out._switch(cap)
        buffer = out._buffer
        buffer.append(record)
        if len(buffer) >= BUFFER:
            out.flush()

    def give_iterator(self, records: Iterable[T]) -> None:
        """Sends every record of ``records``."""
        out = self._out
        cap = self._cap
        if out._time is not cap._time or not cap._live:
            out._switch(cap)
        buffer = out._buffer
        buffer.extend(records)
        if len(buffer) >= BUFFER:
            out.flush()

    def give_container(self, data: list[T] | Batch) -> None:
        """Sends a whole batch as one message. A list is copied (the caller
        may clear or reuse it); a columnar Batch is passed on."""
        if type(data) is list:
            data = data.copy()
        self._give_owned(data)

    give_vec = give_container

    def _give_owned(self, data: list[T] | Batch) -> None:
        """``give_container`` for a batch the operator owns and will not touch
        again (a message it received, a list it just made): not copied."""
        out = self._out
        cap = self._cap
        if not cap._live:
            out._switch(cap)
        if out._buffer:
            out.flush()
        if data:
            out._counter.push(cap._time, data)

    def __enter__(self) -> Session[T]:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        return False
