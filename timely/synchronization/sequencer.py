"""A shared ordered log, built from a dataflow.

Every worker may :meth:`~Sequencer.push` elements; every worker reads, with
:meth:`~Sequencer.next`, the same elements in the same order.

The sequencer is a dataflow of two operators. A source on every worker holds
a capability at its worker's *clock*, a logical time; on each run it sends
the elements pushed since its last run, tagged ``(worker index, counter)``,
to every worker at its clock's time, then moves its clock past that time.
A sink on every worker collects what arrives, ordered by ``(time, worker
index, counter)``, and releases an element once its input frontier has
passed the element's time: then no element that sorts before it can still
arrive, from any worker, so every worker releases the same sequence.

A clock moves only when its worker sends, or when its sink sees an element
at a time the clock has not passed: the sink then activates its source to
catch up beyond that time. Idle workers therefore do nothing until someone
pushes, and an element is released about one progress round trip after it
reaches the last worker. (The Rust crate uses elapsed wall-clock time as the
clock and reschedules the source until it has caught up; a logical clock
orders elements the same way for every worker and needs no timer.)

>>> import timely
>>> from timely.synchronization import Sequencer
>>> def work(worker):
...     sequencer = Sequencer(worker)
...     for word in ["a", "b", "c"]:
...         sequencer.push(word)
...     worker.step_while(lambda: sequencer.ready() < 3)
...     return [sequencer.next() for _ in range(3)]
>>> timely.execute_directly(work)
['a', 'b', 'c']
"""

from __future__ import annotations

import contextlib
import heapq
from collections import deque
from typing import TYPE_CHECKING

from timely.dataflow.channels import Exchange
from timely.errors import SequencerError

if TYPE_CHECKING:
    from timely.dataflow.builder import Activator

__all__ = ["Sequencer", "SequencerError"]


class _Shared:
    """What the sequencer object and its operators share. The operators hold
    this, never the :class:`Sequencer`, so that dropping the sequencer can
    close it."""

    __slots__ = ("activator", "clock", "closed", "recv", "send")

    def __init__(self):
        self.send: list = []  # pushed here, not yet sent by the source
        self.recv: deque = deque()  # released in the agreed order, not yet read
        self.closed = False
        self.clock = 0  # the source's clock must pass every time seen
        # the source's; None until the source is built (push() runs after that)
        self.activator: Activator = None  # type: ignore[assignment]


class Sequencer:
    """Orders elements pushed by any worker into one sequence that every
    worker reads in the same order.

    Every worker must create its sequencers at the same point of its
    sequence of dataflows (a sequencer *is* a dataflow), and must keep
    stepping (``worker.step()``, or any call that steps) for elements to move.

    Guarantees:

    - every worker's sequence is the same; a worker that reads long enough
      reads every element pushed by any worker, each once;
    - each worker's elements appear in the order that worker pushed them;
    - an element pushed after its worker read element ``e`` comes after ``e``;
    - an element is released only when no element before it in the order can
      still arrive, so the order never changes once read.

    An open sequencer keeps its dataflow alive: close it before draining the
    worker from inside ``work`` (when ``work`` returns, the sequencer is
    garbage and closes itself).

    Elements are Python values; between processes they travel pickled.
    ``next()`` returns None when nothing is ready, so when ``None`` itself is
    pushed, read with iteration or check :meth:`ready` first.

    Cost: each push sends the element to every worker (``peers`` copies). Each
    worker keeps the elements it has received but not yet released in a heap
    (O(log n) per element). An element is released about one progress round
    trip after the last worker receives it.
    """

    def __init__(self, worker):
        shared = self._shared = _Shared()
        index = worker.index
        with worker.dataflow("Sequencer") as scope:
            stream = scope.source("SequenceInput", _input_constructor(shared, index, worker.peers))
            # One copy per destination, routed by an Exchange, so that the
            # records produced equal the records consumed.
            stream.sink(Exchange(_destination), "SequenceOutput", _output_logic(shared))

    def push(self, element) -> None:
        """Adds ``element`` to the sequence; it is sent when this worker next steps."""
        shared = self._shared
        if shared.closed:
            raise SequencerError("cannot push to a closed Sequencer")
        shared.send.append(element)
        shared.activator.activate()

    def next(self, default=None):
        """The next element of the sequence, or ``default`` when none is ready yet."""
        shared = self._shared
        if shared.closed:
            raise SequencerError("cannot read from a closed Sequencer")
        recv = shared.recv
        return recv.popleft() if recv else default

    def ready(self) -> int:
        """How many elements can be read now without stepping."""
        shared = self._shared
        if shared.closed:
            raise SequencerError("cannot read from a closed Sequencer")
        return len(shared.recv)

    def __iter__(self):
        """Yields the elements that are ready, in order, and stops when none is
        ready; iterate again after stepping for more."""
        shared = self._shared
        if shared.closed:
            raise SequencerError("cannot read from a closed Sequencer")
        recv = shared.recv
        while recv:
            yield recv.popleft()

    @property
    def closed(self) -> bool:
        """``close()`` was called."""
        return self._shared.closed

    def close(self) -> None:
        """Leaves the sequencer for good: elements already pushed are still
        sent, unread elements are discarded, and this worker no longer holds
        back the release of others' elements. The sequencer's dataflow
        completes once every worker has closed. Idempotent; also done when
        the sequencer is garbage collected."""
        shared = self._shared
        if shared.closed:
            return
        shared.closed = True
        shared.recv.clear()
        if shared.activator is not None:
            shared.activator.activate()

    def __del__(self):
        # At interpreter shutdown the worker may already be gone.
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self):
        if self._shared.closed:
            return "Sequencer(closed)"
        return f"Sequencer(ready={len(self._shared.recv)}, unsent={len(self._shared.send)})"


def _destination(record) -> int:
    return record[0]


def _input_constructor(shared: _Shared, index: int, peers: int):
    def constructor(capability, info):
        shared.activator = info.activator
        held = [capability]
        counter = 0

        def logic(output):
            nonlocal counter
            if not held:
                return
            cap = held[0]
            now = cap.time
            later = now
            if shared.send:
                batch = shared.send
                shared.send = []
                tagged = [
                    (destination, index, counter + i, element)
                    for i, element in enumerate(batch)
                    for destination in range(peers)
                ]
                counter += len(batch)
                output.session(cap).give_container(tagged)
                output.flush()
                # Later pushes must sort after these, and these can be
                # released only once this worker's clock has passed them.
                later = now + 1
            if shared.closed:
                cap.drop()
                held.clear()
                return
            later = max(later, shared.clock)
            if later > now:
                cap.downgrade(later)

        return logic

    return constructor


def _output_logic(shared: _Shared):
    pending: list = []  # heap of (time, worker, counter, element)

    def logic(input):
        latest = -1
        for cap, data in input:
            time = cap.time
            latest = max(latest, time)
            for _destination, worker, counter, element in data:
                heapq.heappush(pending, (time, worker, counter, element))
        if latest >= shared.clock:
            # Catch this worker's clock up past the time seen, so that the
            # frontier, which waits on every worker's clock, can pass it.
            shared.clock = latest + 1
            if not shared.closed:
                shared.activator.activate()
        frontier = input.frontier
        released = []
        while pending and not frontier.less_equal(pending[0][0]):
            released.append(heapq.heappop(pending)[3])
        if released and not shared.closed:
            shared.recv.extend(released)

    return logic
