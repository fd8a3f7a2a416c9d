"""Loops: a feedback edge whose records come back with their time advanced."""

from __future__ import annotations

from timely.dataflow._channels import RecordLogic
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Pipeline
from timely.errors import DataflowError


class LoopHandle:
    """The end of a loop; ``stream.connect_loop(handle)`` feeds it."""

    def __init__(self, builder: OperatorBuilder, summary, name: str):
        self._builder = builder
        self._summary = summary
        self._name = name
        self._connected = False

    @property
    def summary(self):
        return self._summary

    def connect(self, stream) -> None:
        if self._connected:
            raise DataflowError(f"{self._name} is already connected")
        b = self._builder
        scope_sub = b._subgraph
        if stream.scope._sub is not scope_sub:
            raise DataflowError(f"{self._name}: the stream belongs to another scope")
        self._connected = True
        scope_sub.unconnected_loops.remove(self._name)
        summary = self._summary
        inp = b.new_input(stream, Pipeline(), connection={0: [summary]}, notify=False)
        out = self._output

        def build(caps, info):
            caps.clear()
            if inp._queue is not None and not inp._check:
                return RecordLogic("advance", [inp._queue], [inp._consumed], summary.results_in,
                                   [out._counter])

            def run(frontiers):
                # The input reaches the output through `summary`: the time it
                # gives is held while the message is current.
                results_in = summary.results_in
                give = out.give_unchecked
                for time, data in inp._take_all():
                    time = results_in(time)
                    if time is None:
                        continue   # the loop counter would overflow: the records leave
                    give(time, data)

            return run

        b.build(build)


def feedback(scope, summary):
    b = OperatorBuilder("Feedback", scope)
    out, stream = b.new_output()
    name = f"Feedback(operator {b.index}, summary {summary.increments!r})"
    handle = LoopHandle(b, summary, name)
    handle._output = out
    scope._sub.unconnected_loops.append(name)
    return handle, stream
