"""Capabilities: the right to send data at a time on an operator output.

A :class:`Capability` counts +1 at its time in its output's internal change
batch when created or cloned, and -1 when dropped or downgraded away (or when
the last reference to it goes). Capabilities only move forward.

An :class:`InputCapability` is the capability that comes with a message. As
in the Rust crate, where it borrows from the input handle, it is valid only
while its message is the current one: from the moment ``for cap, data in
input:`` (or ``input.next()``) hands it out until the next message is taken,
the loop ends, or the operator's logic returns. While valid it can be used
directly for outputs the input reaches unchanged (``output.session(cap)``),
and retained or delayed into a :class:`Capability` for any connected output
at a time at least the input's summary applied to the message time. Used
later, it raises :class:`~timely.CapabilityError`: keep ``cap.retain()``
instead, taken while the message is current.

What these checks cost: a session checks, per record, that its capability is
still live and its time is the one being buffered (two slot reads); creating
or dropping a capability updates a per-output count of held times (one dict
update) and records the line that created it (one frame look-up), which is
what :meth:`timely.Worker.holds` reports.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Hashable, Iterable, Iterator, TypeVar

from timely.errors import CapabilityError
from timely.progress.timestamp import less_equal

if TYPE_CHECKING:
    from types import CodeType

    from timely.dataflow.handles import OutputHandle
    from timely.dataflow.time import Time

_getframe = sys._getframe


_K = TypeVar("_K", bound=Hashable)


def _hold(held: dict[_K, int], time: _K) -> None:
    held[time] = held.get(time, 0) + 1


def _release(held: dict[_K, int], time: _K) -> None:
    n = held[time] - 1
    if n:
        held[time] = n
    else:
        del held[time]


def _stale(time: Time) -> CapabilityError:
    return CapabilityError(
        f"the capability of a message at {time!r} was used after its message: an "
        "InputCapability is valid only while its message is the current one (until the "
        "next message is taken or the operator's logic returns); call retain() or "
        "delayed() on it while the message is current to keep a Capability")


class Capability:
    """The right to send at ``time`` (and later) on one operator output.

    Made by operators and builders (the initial capabilities, ``delayed``,
    ``retain``); users never construct one. ``out`` is the output's
    :class:`~timely.dataflow.handles.OutputHandle`.
    """

    __slots__ = ("_time", "_out", "_internal", "_live", "_site", "__weakref__")

    def __init__(self, time: Time, out: OutputHandle[Any],
                 site: tuple[CodeType, int] | None = None) -> None:
        self._time = time
        self._out = out
        self._live = True
        self._site = site
        internal = self._internal = out._internal
        internal.update(time, 1)
        held = out._held
        held[time] = held.get(time, 0) + 1
        if site is not None:
            _hold(out._sites, (time, site))

    @property
    def time(self) -> Time:
        """The capability's time."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        return self._time

    @property
    def port(self) -> int:
        """The output this capability sends on."""
        return self._out._port

    @property
    def site(self) -> str | None:
        """``file:line`` of the call that created this capability (for the
        initial capabilities: where the operator was built)."""
        site = self._site
        if site is None:
            return self._out._origin[2]
        return f"{site[0].co_filename}:{site[1]}"

    @classmethod
    def _minted(cls, time: Time, out: OutputHandle[Any]) -> Capability:
        """A capability whose creation is common knowledge and is not counted
        in the output's change batch (every worker's scope starts with it)."""
        cap = cls.__new__(cls)
        cap._time = time
        cap._out = out
        cap._internal = out._internal
        cap._live = True
        cap._site = None
        _hold(out._held, time)
        return cap

    def valid(self) -> bool:
        """True until the capability is dropped (or downgraded away by a set)."""
        return self._live

    def _check(self) -> None:
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")

    def delayed(self, time: Time) -> Capability:
        """A new capability at ``time``, which must be >= this one's time."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        if not less_equal(self._time, time):
            raise CapabilityError(
                f"cannot delay a capability at {self._time!r} to {time!r}: not greater or equal")
        f = _getframe(1)
        return Capability(time, self._out, (f.f_code, f.f_lineno))

    def _delay(self, time: Time) -> Capability:
        """``delayed`` for timely's own operators: the capability's site is
        left to be the operator's (no frame is looked up)."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        if not less_equal(self._time, time):
            raise CapabilityError(
                f"cannot delay a capability at {self._time!r} to {time!r}: not greater or equal")
        return Capability(time, self._out)

    def downgrade(self, time: Time) -> None:
        """Moves this capability forward to ``time`` (>= its time)."""
        self._check()
        old = self._time
        if not less_equal(old, time):
            raise CapabilityError(
                f"cannot downgrade a capability at {old!r} to {time!r}: not greater or equal")
        out = self._out
        if out._buffer:
            out.flush()          # records given at the old time go before it is let go
        internal = self._internal
        internal.update(time, 1)
        internal.update(old, -1)
        held = out._held
        _hold(held, time)
        _release(held, old)
        site = self._site
        if site is not None:
            sites = out._sites
            _hold(sites, (time, site))
            _release(sites, (old, site))
        self._time = time

    def drop(self) -> None:
        """Gives the capability up; using it afterwards raises CapabilityError."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        self._live = False
        out = self._out
        if out._buffer:
            out.flush()          # records given under it go before it is let go
        time = self._time
        self._internal.update(time, -1)
        held = out._held
        n = held[time] - 1
        if n:
            held[time] = n
        else:
            del held[time]
        if self._site is not None:
            _release(out._sites, (time, self._site))

    def retain(self) -> Capability:
        """A clone (an extra count at the same time)."""
        if not self._live:
            raise CapabilityError(f"capability at {self._time!r} was dropped")
        f = _getframe(1)
        return Capability(self._time, self._out, (f.f_code, f.f_lineno))

    def __del__(self) -> None:
        if self._live:
            self._live = False
            try:
                out = self._out
                if out._buffer:
                    out.flush()
                self._internal.update(self._time, -1)
                _release(out._held, self._time)
                if self._site is not None:
                    _release(out._sites, (self._time, self._site))
            except Exception:  # interpreter shutdown: nothing is tracked any more
                pass

    def __repr__(self) -> str:
        state = "" if self._live else ", dropped"
        return f"Capability({self._time!r}, output={self._out._port}{state})"

    def try_delayed(self, time: Time) -> Capability | None:
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
        f = _getframe(1)
        return Capability(time, self._out, (f.f_code, f.f_lineno))

    def try_downgrade(self, time: Time) -> bool:
        """As :meth:`downgrade`, but returns False (and leaves the capability
        as it was) when ``time`` is not at or after its time."""
        self._check()
        if not less_equal(self._time, time):
            return False
        self.downgrade(time)
        return True


class InputCapability:
    """The capability that arrives with a message at an operator input; valid
    only while its message is the current one (see the module's docstring)."""

    __slots__ = ("_time", "_outputs", "_summaries", "_live")

    def __init__(self, time: Time, outputs: list[OutputHandle[Any]],
                 summaries: list[list[Any]]) -> None:
        self._time = time
        self._outputs = outputs          # per output: its OutputHandle
        self._summaries = summaries      # per output: list of PathSummary (empty: not connected)
        self._live = True

    @property
    def time(self) -> Time:
        """The message's time (readable at any moment)."""
        return self._time

    def valid(self) -> bool:
        """The message is still the current one."""
        return self._live

    def valid_for_output(self, port: int) -> bool:
        """Data at this time may be sent on ``port`` without a new capability."""
        sums = self._summaries[port]
        return len(sums) == 1 and sums[0].is_zero()

    def _delayed(self, time: Time, output: int,
                 site: tuple[CodeType, int] | None) -> Capability:
        if not self._live:
            raise _stale(self._time)
        if not 0 <= output < len(self._outputs):
            raise CapabilityError(f"operator has no output {output}")
        for summary in self._summaries[output]:
            reached = summary.results_in(self._time)
            if reached is not None and less_equal(reached, time):
                return Capability(time, self._outputs[output], site)
        if not self._summaries[output]:
            raise CapabilityError(
                f"input is not connected to output {output}: no capability can be made for it")
        raise CapabilityError(
            f"cannot make a capability at {time!r} for output {output} from an input "
            f"message at {self._time!r}")

    def delayed(self, time: Time, output: int = 0) -> Capability:
        """A capability at ``time`` for ``output``; ``time`` must be at or beyond
        the input-to-output summary applied to this message's time."""
        f = _getframe(1)
        return self._delayed(time, output, (f.f_code, f.f_lineno))

    def delayed_for_output(self, time: Time, output: int) -> Capability:
        """A capability at ``time`` (at or after this message's time) for output ``output``.

        Raises :class:`timely.CapabilityError` if the message is no longer current, ``time``
        is earlier than the message's time (after the input-to-output summary), or the input
        is not connected to ``output``.
        """
        f = _getframe(1)
        return self._delayed(time, output, (f.f_code, f.f_lineno))

    def retain(self, output: int = 0) -> Capability:
        """A capability at this message's time for ``output``."""
        f = _getframe(1)
        return self._delayed(self._time, output, (f.f_code, f.f_lineno))

    def retain_for_output(self, output: int) -> Capability:
        """A capability at this message's time for output ``output``, kept after the message:
        as :meth:`retain` for another output.

        Raises :class:`timely.CapabilityError` as :meth:`delayed_for_output` does.
        """
        f = _getframe(1)
        return self._delayed(self._time, output, (f.f_code, f.f_lineno))

    def __repr__(self) -> str:
        state = "" if self._live else ", past its message"
        return f"InputCapability({self._time!r}{state})"


class CapabilitySet:
    """A set of capabilities for one output, kept as an antichain of times.

    ``insert`` keeps only capabilities not dominated by others; ``delayed``
    finds one at or before a time; ``downgrade`` replaces the set with
    capabilities at the given frontier.
    """

    def __init__(self, capabilities: Iterable[Capability] = ()) -> None:
        self._caps: list[Capability] = []
        for cap in capabilities:
            self.insert(cap)

    def insert(self, capability: Capability) -> None:
        """Adds ``capability``, keeping the set an antichain: it is dropped if a held
        capability is at or before its time, and held ones at or after its time are dropped
        otherwise. Linear in the set's size.

        Raises :class:`timely.CapabilityError` if ``capability`` is no longer valid.
        """
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

    def delayed(self, time: Time) -> Capability:
        """A new capability at ``time``, made from a capability in the set at or before it.

        Raises :class:`timely.CapabilityError` if no capability in the set is at or before
        ``time`` (see :meth:`try_delayed` for the form that returns None).
        """
        for held in self._caps:
            if less_equal(held.time, time):
                return held._delay(time)
        raise CapabilityError(f"no capability in the set is at or before {time!r}")

    def downgrade(self, frontier: Iterable[Time]) -> None:
        """Replaces the set with capabilities at the times of ``frontier``."""
        new = [self.delayed(t) for t in frontier]
        for held in self._caps:
            held.drop()
        self._caps = []
        for cap in new:
            self.insert(cap)

    def first(self) -> Capability | None:
        """A capability of the set (the first held), or None when the set is empty."""
        return self._caps[0] if self._caps else None

    def times(self) -> list[Time]:
        """The times of the capabilities held, as a list."""
        return [c.time for c in self._caps]

    def clear(self) -> None:
        """Drops every capability in the set; the set is empty afterwards."""
        for held in self._caps:
            held.drop()
        self._caps = []

    def __len__(self) -> int:
        return len(self._caps)

    def __iter__(self) -> Iterator[Capability]:
        return iter(list(self._caps))

    def __bool__(self) -> bool:
        return bool(self._caps)

    def __repr__(self) -> str:
        return f"CapabilitySet({self.times()!r})"

    @classmethod
    def from_elem(cls, capability: Capability) -> CapabilitySet:
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

    def try_delayed(self, time: Time) -> Capability | None:
        """As :meth:`delayed`, but None when no capability in the set is at or before ``time``."""
        for held in self._caps:
            if less_equal(held.time, time):
                return held.delayed(time)
        return None

    def try_downgrade(self, frontier: Iterable[Time]) -> bool:
        """As :meth:`downgrade`, but returns False, leaving the set as it was,
        when some time of ``frontier`` is not at or after a capability in the set."""
        frontier = list(frontier)
        if not all(any(less_equal(held.time, t) for held in self._caps) for t in frontier):
            return False
        self.downgrade(frontier)
        return True
