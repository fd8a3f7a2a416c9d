"""Notificators: deliver capabilities for requested times once no input can
still bring data at them, in time order, with requests for one time coalesced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from timely.dataflow.capability import Capability, InputCapability
from timely.errors import CapabilityError
from timely.progress.notificator import NotificationQueue as _Core

if TYPE_CHECKING:
    from timely.dataflow.time import Time
    from timely.progress.frontier import Antichain, MutableAntichain


class FrontierNotificator:
    """Requests held as capabilities; ``next(frontiers)`` releases them.

    ``notify_at(cap)`` keeps the capability (an :class:`InputCapability` is
    retained for output 0 first) until its time is complete with respect to
    the frontiers given to ``next``/``drain``.
    """

    def __init__(self, arity: int | None = None) -> None:
        # Without an arity, the first requested time fixes it.
        self._core = _Core(arity=arity)
        self._caps: dict[Time, Any] = {}      # a Capability, or a _Multi of several

    @classmethod
    def from_capabilities(cls, capabilities: Iterable[Capability]) -> FrontierNotificator:
        """A notificator with a request at each capability's time (the crate's ``from``)."""
        notificator = cls()
        for cap in capabilities:
            notificator.notify_at(cap)
        return notificator

    def notify_at(self, capability: Capability | InputCapability) -> None:
        """Asks for a notification at ``capability``'s time; the notificator holds the
        capability (an input message's capability is retained) until it yields it back.
        Logarithmic in the pending times.

        Raises :class:`timely.CapabilityError` if ``capability`` is not a capability or is
        no longer valid.
        """
        self._core.notify_at(self._hold(capability))

    def _hold(self, capability: Capability | InputCapability) -> Time:
        """Keeps ``capability`` until its time is yielded; returns the time."""
        if type(capability) is InputCapability:
            capability = capability._delayed(capability._time, 0, None)
        elif type(capability) is not Capability:
            raise CapabilityError(f"notify_at needs a capability, not {capability!r}")
        time = capability.time
        held = self._caps.get(time)
        if held is None:
            self._caps[time] = capability
        elif held.port != capability.port:
            # One capability per (time, output): keep both by chaining them.
            self._caps[time] = _Multi.of(held, capability)
        return time

    def next(self, frontiers: list[MutableAntichain]) -> tuple[Capability, int] | None:
        """The next ``(capability, count)`` whose time no frontier can still reach, or None."""
        item = self._core.next(frontiers)
        if item is None:
            return None
        time, count = item
        return self._caps.pop(time), count

    def drain(self, frontiers: list[MutableAntichain]) -> list[tuple[Capability, int]]:
        """Every ``(capability, count)`` whose time no frontier in ``frontiers`` can still
        reach, in time order, as a list (as calling :meth:`next` until it returns None).
        """
        out: list[tuple[Capability, int]] = []
        while True:
            item = self.next(frontiers)
            if item is None:
                return out
            out.append(item)

    def pending(self) -> list[tuple[Time, int]]:
        """Times requested and not yet delivered, with counts."""
        return self._core.pending()

    def is_empty(self) -> bool:
        """True when no notification is pending."""
        return self._core.is_empty()

    def make_available(self, frontiers: list[MutableAntichain]) -> None:
        """Moves every requested time no frontier can still reach to the
        available ones (``next`` then yields them in time order)."""
        self._core.make_available(frontiers)

    def notify_at_frontiered(self, capability: Capability | InputCapability,
                             frontiers: list[MutableAntichain]) -> None:
        """As :meth:`notify_at`, knowing the input frontiers (the crate's
        ``notify_at_frontiered``): asked for while notifications are being
        delivered, a time no frontier can still reach is delivered among
        them, in time order (asking for 1 while handling 0, with 2 available,
        yields 1 before 2). Costs a look at each frontier."""
        self._core.notify_at_frontiered(self._hold(capability), frontiers)

    def for_each(self, frontiers: list[MutableAntichain],
                 logic: Callable[[Capability, FrontierNotificator], object]) -> None:
        """Calls ``logic(capability, notificator)`` for every time that no
        frontier in ``frontiers`` can still reach, in time order.

        >>> import timely
        >>> from timely import FrontierNotificator
        >>> done = []
        >>> def constructor(cap, info):
        ...     notificator = FrontierNotificator()         # the arity comes with the first time
        ...     def logic(input, output):
        ...         for cap, data in input:
        ...             output.session(cap).give_container(data)
        ...             notificator.notify_at(cap.delayed(cap.time + 1))
        ...         notificator.for_each([input.frontier], lambda cap, n: done.append(cap.time))
        ...     return logic
        >>> _ = timely.example(lambda scope: scope.to_stream(range(10)).unary_frontier(
        ...     timely.Pipeline, "example", constructor))
        >>> done
        [1]
        """
        self._core.make_available(frontiers)
        while True:
            item = self.next(frontiers)
            if item is None:
                return
            logic(item[0], self)


class _Multi(list[Capability]):
    """Capabilities for several outputs requested at one time."""

    @classmethod
    def of(cls, a: Capability | _Multi, b: Capability) -> _Multi:
        out = cls(a if isinstance(a, _Multi) else [a])
        out.append(b)
        return out

    @property
    def time(self) -> Time:
        return self[0].time


class Notificator:
    """A notificator bound to an operator's input frontiers.

    ``for cap, count in notificator:`` yields every available notification in
    time order; ``notify_at(cap)`` requests one.
    """

    def __init__(self, frontiers: list[MutableAntichain], inner: FrontierNotificator) -> None:
        self._frontiers = frontiers
        self._inner = inner

    def notify_at(self, capability: Capability | InputCapability) -> None:
        """Asks to be notified when ``capability``'s time is complete at every input; the
        notificator holds the capability until then.

        A time no input can still reach, asked for while notifications are
        being delivered, is delivered among them in time order, as in the
        Rust crate.

        Raises :class:`timely.CapabilityError` if ``capability`` is not a valid capability.
        """
        self._inner.notify_at_frontiered(capability, self._frontiers)

    def next(self) -> tuple[Capability, int] | None:
        """The next ``(capability, count)`` whose time is complete at every input, in time
        order, or None.
        """
        return self._inner.next(self._frontiers)

    def __iter__(self) -> Iterator[tuple[Capability, int]]:
        while True:
            item = self._inner.next(self._frontiers)
            if item is None:
                return
            yield item

    def for_each(self, logic: Callable[[Capability, int, Notificator], object]) -> None:
        """Calls ``logic(capability, count, notificator)`` for each available notification."""
        for cap, count in self:
            logic(cap, count, self)

    def frontier(self, input_port: int = 0) -> Antichain:
        """The frontier of input ``input_port`` (an :class:`~timely.progress.Antichain`)."""
        return self._frontiers[input_port].frontier()

    def pending(self) -> list[tuple[Time, int]]:
        """The times asked for and not yet delivered."""
        return self._inner.pending()
