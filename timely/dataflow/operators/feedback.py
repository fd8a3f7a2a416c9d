"""Loops: a feedback edge whose records come back with their time advanced."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from timely.dataflow._channels import RecordLogic
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Pipeline
from timely.errors import DataflowError

if TYPE_CHECKING:
    from timely.dataflow.builder import OperatorInfo
    from timely.dataflow.capability import Capability
    from timely.progress.frontier import MutableAntichain

    Frontiers = list[MutableAntichain]
    from timely.dataflow.handles import OutputHandle
    from timely.dataflow.scope import Scope
    from timely.dataflow.stream import Stream
    from timely.progress.timestamp import PathSummary

T = TypeVar("T")


class LoopHandle(Generic[T]):
    """The end of a loop; ``stream.connect_loop(handle)`` feeds it
    (``LoopHandle[T]`` with its ``Stream[T]``)."""

    def __init__(self, builder: OperatorBuilder, summary: PathSummary, name: str,
                 output: OutputHandle[T]) -> None:
        self._builder = builder
        self._summary = summary
        self._name = name
        self._connected = False
        self._output = output

    @property
    def summary(self) -> PathSummary:
        """The path summary records gain around the loop."""
        return self._summary

    def connect(self, stream: Stream[T]) -> None:
        """Feeds the loop from ``stream`` (``stream.connect_loop(handle)``)."""
        if self._connected:
            raise DataflowError(f"{self._name} is already connected")
        b = self._builder
        scope_sub = b._subgraph
        if stream.scope.subgraph is not scope_sub:
            raise DataflowError(f"{self._name}: the stream belongs to another scope")
        self._connected = True
        scope_sub.unconnected_loops.remove(self._name)
        summary = self._summary
        inp = b.new_input(stream, Pipeline(), connection={0: [summary]}, notify=False)
        out = self._output

        def build(caps: list[Capability], info: OperatorInfo) -> Callable[[Frontiers], None]:
            caps.clear()
            # The input reaches the output through `summary`: the time it
            # gives is held while the message is current; a time whose loop
            # counter would overflow drops its records.
            return RecordLogic("advance", [inp.compiled_puller], [inp.consumed],
                               summary.results_in, [out.counter])

        b.build(build)


def feedback(scope: Scope, summary: PathSummary, name: str | None = None,
             ) -> tuple[LoopHandle[Any], Stream[Any]]:
    """A ``Feedback`` operator (or one called ``name``) and its loop handle."""
    b = OperatorBuilder(operator_name(name, "Feedback"), scope)
    out, stream = b.new_output()
    where = f"operator {b.index}, summary {summary.increments!r}"
    loop = f"Feedback({where})" if name is None else f"{b.name!r} (feedback {where})"
    handle: LoopHandle[Any] = LoopHandle(b, summary, loop, out)
    scope.subgraph.unconnected_loops.append(loop)
    return handle, stream
