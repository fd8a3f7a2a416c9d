"""Probes: observe, from outside the dataflow, which times may still reach a stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from timely.dataflow._channels import ProbeLogic
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Pipeline
from timely.dataflow.time import minimum
from timely.progress.frontier import MutableAntichain

if TYPE_CHECKING:
    from timely.dataflow.builder import OperatorInfo
    from timely.dataflow.capability import Capability

    Frontiers = list[MutableAntichain]
    from timely.dataflow.stream import Stream
    from timely.dataflow.time import Time
    from timely.progress.frontier import Antichain

R = TypeVar("R")


class ProbeHandle:
    """The frontier of the streams probed with this handle.

    ``less_than(t)``: some record at a time before ``t`` may still arrive;
    ``done()``: nothing more will arrive.
    """

    def __init__(self) -> None:
        self._frontier: MutableAntichain | None = None

    def _ensure(self, arity: int) -> MutableAntichain:
        if self._frontier is None:
            self._frontier = MutableAntichain(arity=arity)
        return self._frontier

    def less_than(self, time: Time) -> bool:
        """True while some time strictly before ``time`` may still arrive at the probe: the
        usual test of a driver loop, ``worker.step_while(lambda:
        probe.less_than(handle.time))``.
        """
        return self._frontier is not None and self._frontier.less_than(time)

    def less_equal(self, time: Time) -> bool:
        """True while some time at or before ``time`` may still arrive at the probe."""
        return self._frontier is not None and self._frontier.less_equal(time)

    def done(self) -> bool:
        """True when the probed streams are complete: no time can still arrive."""
        return self._frontier is None or self._frontier.is_empty()

    def frontier(self) -> Antichain:
        """The probed streams' frontier, as an :class:`~timely.progress.Antichain` (a copy)."""
        from timely.progress.frontier import Antichain

        return self._frontier.frontier() if self._frontier is not None else Antichain()

    def with_frontier(self, fn: Callable[[Antichain], R]) -> R:
        """``fn(frontier)`` for the current frontier; returns what ``fn`` returns."""
        return fn(self.frontier())

    def __repr__(self) -> str:
        return f"ProbeHandle({self.frontier().elements()!r})"


def probe_with(stream: Stream[Any], handle: ProbeHandle, passthrough: bool,
               name: str | None = None) -> Any:
    """Builds a ``Probe`` operator (or one called ``name``) that copies
    ``stream``'s frontier into ``handle``; returns the stream passed
    through when ``passthrough``, else None."""
    b = OperatorBuilder(operator_name(name, "Probe"), stream.scope)
    # A probe answers for the whole computation: every worker's copy.
    b.reads_every_copy = True
    inp = b.new_input(stream, Pipeline())
    out, result = b.new_output() if passthrough else (None, None)
    low = minimum(b.arity)
    shared = handle._ensure(b.arity)
    # Until the probe first runs, the handle counts the minimum time.
    shared.update(low, 1)

    def build(caps: list[Capability], info: OperatorInfo) -> Callable[[Frontiers], object]:
        caps.clear()
        # The compiled loop takes the messages and copies the frontier into
        # the handle.
        return ProbeLogic(inp.compiled_puller, inp.consumed,
                          out.counter if out is not None else None,
                          b.input_frontier(0), shared, low)

    b.build(build)
    return result
