"""Naiad-style vertices: ``on_recv`` and ``on_notify`` callbacks.

Subclass :class:`Vertex`, implement ``on_recv(input, batch, time)`` and, if it
asks for notifications, ``on_notify(time)``. Inside a callback, ``send(output,
records, time)`` sends at any time not earlier than the callback's, and
``notify_at(time)`` asks for ``on_notify(time)`` once no input can still bring
data at or before ``time``; notifications come in time order.

The Select and Count vertices of the Naiad model:

>>> import timely
>>> class Select(Vertex):
...     def __init__(self, selector):
...         self.selector = selector
...     def on_recv(self, input, batch, time):
...         self.send(0, [self.selector(m) for m in batch], time)
>>> class Count(Vertex):
...     def __init__(self):
...         self.counts = {}
...     def on_recv(self, input, batch, time):
...         if time not in self.counts:
...             self.counts[time] = 0
...             self.notify_at(time)
...         self.counts[time] += len(batch)
...     def on_notify(self, time):
...         self.send(0, [self.counts.pop(time)], time)
>>> def work(worker):
...     with worker.dataflow() as scope:
...         handle, stream = scope.new_input()
...         words = stream.vertex(Select(str.upper))
...         counts = words.vertex(Count()).capture()
...     for epoch, batch in enumerate([["a", "b"], ["c"], ["d", "e", "f"]]):
...         handle.send_batch(batch)
...         handle.advance_to(epoch + 1)
...     handle.close()
...     worker.drain()
...     return counts.extract()
>>> timely.execute_directly(work)
[(0, [2]), (1, [1]), (2, [3])]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Pipeline
from timely.errors import CapabilityError
from timely.progress.notificator import NotificationQueue as _Core
from timely.progress.timestamp import less_equal

if TYPE_CHECKING:
    from timely.dataflow.channels import PactLike


class Vertex:
    """A stateful vertex with ``on_recv``/``on_notify`` callbacks.

    Class attributes ``inputs`` and ``outputs`` give its shape (default 1, 1);
    ``pacts`` may list one pact per input (default Pipeline).
    """

    inputs = 1
    outputs = 1
    pacts: list[PactLike] | None = None
    name: str | None = None

    # Bound by vertex(), which hosts it, before any callback runs.
    _host: _Host = None  # type: ignore[assignment]

    def on_recv(self, input: int, batch: list, time) -> None:
        """Called for every batch arriving at ``input`` at ``time``."""

    def on_notify(self, time) -> None:
        """Called once for each time requested with ``notify_at``, when it is complete."""

    def send(self, output: int, records, time) -> None:
        """Sends ``records`` on ``output`` at ``time`` (not earlier than the callback's time)."""
        self._host.send(output, records, time)

    def notify_at(self, time) -> None:
        """Requests ``on_notify(time)``; ``time`` is not earlier than the callback's time."""
        self._host.notify_at(time)


class _Host:
    """Runs a vertex inside an operator: turns its calls into capabilities."""

    def __init__(self, vertex: Vertex, outputs, arity: int):
        self.vertex = vertex
        self.outputs = outputs               # OutputHandles
        self.core = _Core(arity=arity)
        self.held: dict = {}                 # time -> capabilities, one per output
        self.context: Any = None             # InputCapability or {output: Capability}
        self.context_time: Any = None

    def _capability(self, output: int, time):
        if self.context is None:
            raise CapabilityError("send/notify_at may only be called inside on_recv or on_notify")
        if not less_equal(self.context_time, time):
            raise CapabilityError(
                f"cannot act at {time!r} from a callback at {self.context_time!r}: times never go back")
        if type(self.context) is dict:
            return self.context[output]._delay(time)
        return self.context._delayed(time, output, None)

    def send(self, output: int, records, time) -> None:
        if not 0 <= output < len(self.outputs):
            raise CapabilityError(f"vertex has no output {output}")
        # A list of the vertex's is copied (it may reuse it); anything else
        # becomes a list of the host's own.
        records = records.copy() if isinstance(records, list) else list(records)
        if not records:
            return
        cap = self._capability(output, time)
        self.outputs[output].session(cap).give_owned(records)
        cap.drop()

    def notify_at(self, time) -> None:
        if self.context is None:
            raise CapabilityError("notify_at may only be called inside on_recv or on_notify")
        if time not in self.held:
            self.held[time] = [self._capability(o, time) for o in range(len(self.outputs))]
            if not self.outputs and not less_equal(self.context_time, time):
                raise CapabilityError(f"cannot notify at {time!r} from a callback at {self.context_time!r}")
        self.core.notify_at(time)


def vertex(streams, v: Vertex, name=None):
    """Hosts ``v`` on ``streams`` (one per vertex input); returns its output
    streams. The operator is called ``name``, else ``v.name``, else the
    vertex's class name."""
    if not streams:
        raise ValueError("a vertex needs at least one input stream")
    if len(streams) != v.inputs:
        raise ValueError(f"vertex {type(v).__name__} has {v.inputs} inputs; {len(streams)} streams given")
    scope = streams[0].scope
    b = OperatorBuilder(operator_name(name, v.name or type(v).__name__), scope)
    pacts = v.pacts or [Pipeline()] * v.inputs
    inputs = [b.new_input(s, p) for s, p in zip(streams, pacts)]
    outs = [b.new_output() for _ in range(v.outputs)]
    host = _Host(v, [o for o, _ in outs], b.arity)
    v._host = host

    def build(caps, info):
        caps.clear()

        def run(frontiers):
            for port, inp in enumerate(inputs):
                for cap, data in inp:
                    host.context, host.context_time = cap, cap.time
                    try:
                        v.on_recv(port, data, cap.time)
                    finally:
                        host.context = host.context_time = None
            while True:
                item = host.core.next(frontiers)
                if item is None:
                    break
                time, _count = item
                caps_at = host.held.pop(time)
                host.context, host.context_time = dict(enumerate(caps_at)), time
                try:
                    v.on_notify(time)
                finally:
                    host.context = host.context_time = None
                    for c in caps_at:
                        c.drop()

        return run

    b.build(build)
    return [s for _, s in outs]
