"""What operator logic holds: input handles, output handles, sessions."""

from __future__ import annotations

from timely.dataflow.capability import Capability, InputCapability
from timely.errors import CapabilityError, ProgressError

# Records buffered by an output before they are pushed as one message.
BUFFER = 1024


class InputHandle:
    """Reads the messages arriving at one operator input.

    ``for cap, data in input:`` yields each message's :class:`InputCapability`
    and its batch; taking a message records it as consumed. ``input.frontier``
    is the input's frontier (a MutableAntichain): the times that may still
    arrive are those it is less than or equal to.
    """

    __slots__ = ("_puller", "_consumed", "_internals", "_summaries", "frontier", "_check", "_name")

    def __init__(self, puller, consumed, internals, summaries, frontier, check: bool, name: str):
        self._puller = puller
        self._consumed = consumed
        self._internals = internals
        self._summaries = summaries
        self.frontier = frontier
        self._check = check
        self._name = name

    def next(self):
        """The next ``(capability, data)``, or None when nothing is waiting."""
        message = self._puller.pull()
        if message is None:
            return None
        time, data = message
        self._consumed.update(time, len(data))
        if self._check and not self.frontier.less_equal(time):
            raise ProgressError(
                f"{self._name}: received data at {time!r}, but the input frontier "
                f"{self.frontier.frontier().elements()!r} had passed it")
        return InputCapability(time, self._internals, self._summaries), data

    def __iter__(self):
        if not self._puller:
            return iter(())
        return self._messages()

    def _messages(self):
        pull = self._puller.pull
        consumed = self._consumed
        internals = self._internals
        summaries = self._summaries
        while True:
            message = pull()
            if message is None:
                return
            time, data = message
            consumed.update(time, len(data))
            if self._check and not self.frontier.less_equal(time):
                raise ProgressError(
                    f"{self._name}: received data at {time!r}, but the input frontier "
                    f"{self.frontier.frontier().elements()!r} had passed it")
            yield InputCapability(time, internals, summaries), data

    def for_each(self, logic) -> None:
        """Calls ``logic(capability, data)`` for every waiting message."""
        for cap, data in self:
            logic(cap, data)

    def pending(self) -> bool:
        """Messages are waiting."""
        return bool(self._puller)

    def for_each_time(self, logic) -> None:
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
        staged: dict = {}
        for cap, data in self:
            entry = staged.get(cap.time)
            if entry is None:
                staged[cap.time] = (cap, [data])
            else:
                entry[1].append(data)
        for time in sorted(staged):
            cap, batches = staged[time]
            logic(cap, batches)


class OutputHandle:
    """Sends data on one operator output, at times its capabilities allow."""

    __slots__ = ("_port", "_internal", "_counter", "_buffer", "_time")

    def __init__(self, port: int, internal, counter):
        self._port = port
        self._internal = internal
        self._counter = counter
        self._buffer = []
        self._time = None

    def session(self, capability) -> "Session":
        """A session sending at ``capability.time``.

        ``capability`` is a :class:`Capability` of this output, or the
        :class:`InputCapability` of a message whose input reaches this output
        unchanged.
        """
        if type(capability) is Capability:
            if capability._internal is not self._internal:
                raise CapabilityError(
                    f"{capability!r} belongs to output {capability.port}, not to output {self._port}")
            if not capability._live:
                raise CapabilityError(f"cannot send with {capability!r}: it was dropped")
        elif type(capability) is InputCapability:
            if not capability.valid_for_output(self._port):
                raise CapabilityError(
                    f"the message capability at {capability.time!r} is not valid for output "
                    f"{self._port}: retain or delay it for that output first")
        else:
            raise CapabilityError(f"{capability!r} is not a capability")
        time = capability._time
        if self._time != time:
            self.flush()
            self._time = time
        return Session(self)

    def flush(self) -> None:
        """Pushes buffered records."""
        if self._buffer:
            buffer = self._buffer
            self._buffer = []
            self._counter.push(self._time, buffer)

    def _give_container(self, data) -> None:
        if data:
            self.flush()
            self._counter.push(self._time, data)

    def give_at(self, time, data) -> None:
        """Sends a batch at ``time`` without a capability check: only for
        operators whose structure guarantees the time is held (a message's own
        time on an output its input reaches unchanged)."""
        if self._buffer:
            self.flush()
        self._counter.push(time, data)

    @property
    def output_index(self) -> int:
        """This output's port on its operator (for ``cap.retain(output.output_index)``)."""
        return self._port


class Session:
    """Sends records at one time; obtained from ``output.session(cap)``."""

    __slots__ = ("_out",)

    def __init__(self, out: OutputHandle):
        self._out = out

    def give(self, record) -> None:
        out = self._out
        buffer = out._buffer
        buffer.append(record)
        if len(buffer) >= BUFFER:
            out.flush()

    def give_iterator(self, records) -> None:
        out = self._out
        buffer = out._buffer
        buffer.extend(records)
        if len(buffer) >= BUFFER:
            out.flush()

    def give_container(self, data) -> None:
        """Sends a whole batch as one message (the list is handed over, not copied)."""
        self._out._give_container(data)

    give_vec = give_container

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
