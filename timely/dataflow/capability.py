"""Capabilities: the right to send data at a time on an operator output.

A :class:`Capability` counts +1 at its time in its output's internal change
batch when created or cloned, and -1 when dropped or downgraded away (or when
the last reference to it goes). Capabilities only move forward. An
:class:`InputCapability` is the capability that comes with a message; it can
be used directly for outputs the input reaches unchanged, and retained or
delayed into a :class:`Capability` for any connected output at a time at least
the input's summary applied to the message time.
"""

from __future__ import annotations

from timely.errors import CapabilityError
from timely.progress.timestamp import less_equal


class Capability:
    """The right to send at ``time`` (and later) on one operator output."""

    __slots__ = ("_time", "_internal", "_port", "_live", "__weakref__")

    def __init__(self, time, internal, port: int):
        # Made by operators and builders; users get capabilities from them.
        self._time = time
        self._internal = internal
        self._port = port
        self._live = True
        internal.update(time, 1)

    @property
    def time(self):
        """The capability's time."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        return self._time

    @property
    def port(self) -> int:
        """The output this capability sends on."""
        return self._port

    @classmethod
    def _minted(cls, time, internal, port: int) -> "Capability":
        """A capability whose creation is common knowledge and is not counted."""
        cap = cls.__new__(cls)
        cap._time = time
        cap._internal = internal
        cap._port = port
        cap._live = True
        return cap

    def valid(self) -> bool:
        return self._live

    def _check(self):
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")

    def delayed(self, time) -> "Capability":
        """A new capability at ``time``, which must be >= this one's time."""
        self._check()
        if not less_equal(self._time, time):
            raise CapabilityError(
                f"cannot delay a capability at {self._time!r} to {time!r}: not greater or equal")
        return Capability(time, self._internal, self._port)

    def downgrade(self, time) -> None:
        """Moves this capability forward to ``time`` (>= its time)."""
        self._check()
        if not less_equal(self._time, time):
            raise CapabilityError(
                f"cannot downgrade a capability at {self._time!r} to {time!r}: not greater or equal")
        self._internal.update(time, 1)
        self._internal.update(self._time, -1)
        self._time = time

    def drop(self) -> None:
        """Gives the capability up; using it afterwards raises CapabilityError."""
        self._check()
        self._live = False
        self._internal.update(self._time, -1)

    def retain(self) -> "Capability":
        """A clone (an extra count at the same time)."""
        self._check()
        return Capability(self._time, self._internal, self._port)

    def __del__(self):
        if self._live:
            self._live = False
            try:
                self._internal.update(self._time, -1)
            except Exception:  # interpreter shutdown: nothing is tracked any more
                pass

    def __repr__(self):
        state = "" if self._live else ", dropped"
        return f"Capability({self._time!r}, output={self._port}{state})"

    def try_delayed(self, time) -> "Capability | None":
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
        if not less_equal(self._time, time):
            return None
        return Capability(time, self._internal, self._port)

    def try_downgrade(self, time) -> bool:
        """As :meth:`downgrade`, but returns False (and leaves the capability
        as it was) when ``time`` is not at or after its time."""
        self._check()
        if not less_equal(self._time, time):
            return False
        self.downgrade(time)
        return True


class InputCapability:
    """The capability that arrives with a message at an operator input."""

    __slots__ = ("_time", "_internals", "_summaries")

    def __init__(self, time, internals, summaries):
        self._time = time
        self._internals = internals      # per output: internal change batch
        self._summaries = summaries      # per output: list of PathSummary (empty: not connected)

    @property
    def time(self):
        return self._time

    def valid_for_output(self, port: int) -> bool:
        """Data at this time may be sent on ``port`` without a new capability."""
        sums = self._summaries[port]
        return len(sums) == 1 and sums[0].is_zero()

    def delayed(self, time, output: int = 0) -> Capability:
        """A capability at ``time`` for ``output``; ``time`` must be at or beyond
        the input-to-output summary applied to this message's time."""
        if not 0 <= output < len(self._internals):
            raise CapabilityError(f"operator has no output {output}")
        for summary in self._summaries[output]:
            reached = summary.results_in(self._time)
            if reached is not None and less_equal(reached, time):
                return Capability(time, self._internals[output], output)
        if not self._summaries[output]:
            raise CapabilityError(
                f"input is not connected to output {output}: no capability can be made for it")
        raise CapabilityError(
            f"cannot make a capability at {time!r} for output {output} from an input "
            f"message at {self._time!r}")

    def delayed_for_output(self, time, output: int) -> Capability:
        return self.delayed(time, output)

    def retain(self, output: int = 0) -> Capability:
        """A capability at this message's time for ``output``."""
        return self.delayed(self._time, output)

    def retain_for_output(self, output: int) -> Capability:
        return self.delayed(self._time, output)

    def __repr__(self):
        return f"InputCapability({self._time!r})"


class CapabilitySet:
    """A set of capabilities for one output, kept as an antichain of times.

    ``insert`` keeps only capabilities not dominated by others; ``delayed``
    finds one at or before a time; ``downgrade`` replaces the set with
    capabilities at the given frontier.
    """

    def __init__(self, capabilities=()):
        self._caps: list[Capability] = []
        for cap in capabilities:
            self.insert(cap)

    def insert(self, capability: Capability) -> None:
        capability._check()
        for held in self._caps:
            if less_equal(held.time, capability.time):
                capability.drop()
                return
        keep = []
        for held in self._caps:
            if less_equal(capability.time, held.time):
                held.drop()
            else:
                keep.append(held)
        keep.append(capability)
        self._caps = keep

    def delayed(self, time) -> Capability:
        for held in self._caps:
            if less_equal(held.time, time):
                return held.delayed(time)
        raise CapabilityError(f"no capability in the set is at or before {time!r}")

    def downgrade(self, frontier) -> None:
        """Replaces the set with capabilities at the times of ``frontier``."""
        new = [self.delayed(t) for t in frontier]
        for held in self._caps:
            held.drop()
        self._caps = []
        for cap in new:
            self.insert(cap)

    def first(self):
        return self._caps[0] if self._caps else None

    def times(self):
        return [c.time for c in self._caps]

    def clear(self) -> None:
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
    def from_elem(cls, capability: Capability) -> "CapabilitySet":
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

    def try_delayed(self, time) -> "Capability | None":
        """As :meth:`delayed`, but None when no capability in the set is at or before ``time``."""
        for held in self._caps:
            if less_equal(held.time, time):
                return held.delayed(time)
        return None

    def try_downgrade(self, frontier) -> bool:
        """As :meth:`downgrade`, but returns False, leaving the set as it was,
        when some time of ``frontier`` is not at or after a capability in the set."""
        frontier = list(frontier)
        if not all(any(less_equal(held.time, t) for held in self._caps) for t in frontier):
            return False
        self.downgrade(frontier)
        return True
