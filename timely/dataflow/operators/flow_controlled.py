"""A source that reads its input only as fast as the dataflow keeps up: the
crate's ``flow_controlled::iterator_source``."""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from timely.dataflow.operators.generic import source
from timely.errors import CapabilityError
from timely.progress.timestamp import less_equal, less_than


class IteratorSourceInput(NamedTuple):
    """What the input function of :func:`iterator_source` returns.

    ``lower_bound``: no later call gives data before this time;
    ``data``: ``(time, records)`` pairs, times not decreasing;
    ``target``: the function is called again only once the probe has
    reached this time (its frontier is not less than it).
    """

    lower_bound: Any
    data: Iterable
    target: Any


def iterator_source(scope, name: str, input_fn, probe):
    """A source that calls ``input_fn(time)`` (``time``: the least time it may
    still send at) for more input, but only while ``probe`` is not behind the
    ``target`` the previous call named; ``None`` ends the input. For totally
    ordered times (the root scope). While another worker holds a full
    send window of this worker's data it asks for nothing either.

    >>> import timely
    >>> from timely.dataflow.operators.flow_controlled import IteratorSourceInput, iterator_source
    >>> def work(worker):
    ...     chunks = iter(range(0, 30, 10))
    ...     probe = timely.ProbeHandle()
    ...     def next_input(time):
    ...         start = next(chunks, None)
    ...         if start is None:
    ...             return None
    ...         # ten records at time `start`; the next call once the probe reached it
    ...         return IteratorSourceInput(start, [(start, range(start, start + 10))], start)
    ...     with worker.dataflow() as scope:
    ...         counts = iterator_source(scope, "Source", next_input, probe).probe_with(probe).count().capture()
    ...     worker.drain()
    ...     return counts.extract()
    >>> timely.execute_directly(work)
    [(0, [10]), (10, [10]), (20, [10])]
    """
    def constructor(capability, info):
        held = [capability]
        target = [capability.time]
        activate = info.activator.activate
        allocator = scope.worker.allocator
        # With other workers, one item an activation: what it sent is then
        # released, and counted against the window, before the next.
        one_each = scope.worker.peers > 1

        def logic(output):
            while held:
                cap = held[0]
                if probe.less_than(target[0]):
                    break
                if allocator.congested():
                    # Another worker holds a full window of our data: come
                    # back when it has taken some in.
                    output.flush()
                    allocator.on_window(activate)
                    return
                item = input_fn(cap.time)
                if item is None:
                    held.clear()
                    cap.drop()
                    return
                lower_bound, data, new_target = item
                target[0] = new_target
                sent = False
                for time, records in data:
                    if time != cap.time:
                        if not less_equal(cap.time, time):
                            raise CapabilityError(
                                f"{name}: data at {time!r} is before the source's time {cap.time!r}")
                        cap.downgrade(time)
                    output.session(cap).give_iterator(records)
                    sent = True
                if less_than(cap.time, lower_bound):
                    cap.downgrade(lower_bound)
                if not sent or one_each:
                    break
            if held:
                activate()

        return logic

    return source(scope, name, constructor)
