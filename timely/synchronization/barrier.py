"""Barrier synchronization, built from a dataflow.

A :class:`Barrier` is a dataflow of its own: one input, which every worker
advances by one round each time it arrives at the barrier, and a probe on
that input's stream. The probe passes round ``r`` only when every worker's
input has passed it, that is, when every worker has arrived ``r`` times. The
waiting worker keeps stepping, so its other dataflows go on running while it
waits.

>>> import timely
>>> from timely.synchronization import Barrier
>>> def work(worker):
...     barrier = Barrier(worker)
...     for _ in range(3):
...         barrier.wait()
...     return barrier.round
>>> timely.execute_directly(work)
3
"""

from __future__ import annotations

from timely.errors import BarrierError

__all__ = ["Barrier", "BarrierError"]

class Barrier:
    """A reusable barrier across all the workers of a computation.

    Every worker must create its barriers at the same point of its sequence
    of dataflows (a barrier *is* a dataflow). ``wait()`` returns in round
    ``r`` once every worker has called ``wait()`` (or ``advance()``) ``r``
    times, or has closed its barrier: a worker that closes its barrier, or
    whose barrier is garbage collected, stops holding the others back.

    Guarantees: no worker returns from its ``r``-th ``wait()`` before the
    last worker has entered its ``r``-th ``wait()``; while waiting, the
    worker keeps stepping every dataflow it has.

    An open barrier keeps its dataflow alive: close it before draining the
    worker from inside ``work`` (when ``work`` returns, the barrier is garbage
    and closes itself).

    Cost: one dataflow with two operators; each round is one progress
    update from every worker to every other worker (no records are sent),
    so a round costs about one progress round trip between the workers.
    """

    def __init__(self, worker):
        self._worker = worker
        with worker.dataflow("Barrier") as scope:
            handle, stream = scope.new_input()
            self._probe = stream.probe()
        self._input = handle

    @property
    def round(self) -> int:
        """How many times this worker has arrived at the barrier."""
        return self._input.time

    @property
    def closed(self) -> bool:
        """``close()`` was called."""
        return self._input.closed

    def _check(self) -> None:
        if self._input.closed:
            raise BarrierError("this Barrier was closed")

    def advance(self) -> None:
        """Arrives at the barrier without waiting: starts the next round.

        The arrival reaches the other workers when this worker next steps.
        Pair with :meth:`reached` to wait without blocking.
        """
        self._check()
        self._input.advance_to(self._input.time + 1)

    def reached(self) -> bool:
        """Every worker has arrived (or closed) as many times as this one.

        Changes only when the worker steps.
        """
        self._check()
        return not self._probe.less_than(self._input.time)

    def wait(self) -> None:
        """Arrives at the barrier and steps the worker until every worker has
        arrived as many times (or closed its barrier).

        Blocks the calling code but not the dataflows: every dataflow of this
        worker is stepped while waiting. Raises :class:`BarrierError` after
        ``close()``, and :class:`timely.DataflowError` when called from
        operator logic (a worker cannot step inside a step).
        """
        self.advance()
        probe = self._probe
        target = self._input.time
        # Parks whenever nothing is runnable: a worker waiting for a slow
        # peer leaves the core to it, and wakes when the peer's progress
        # arrives.
        self._worker.step_while(lambda: probe.less_than(target))

    def close(self) -> None:
        """Leaves the barrier for good: the other workers no longer wait for
        this one, and the barrier's dataflow can complete. Idempotent; also
        done when the barrier is garbage collected."""
        self._input.close()

    def __repr__(self):
        state = "closed" if self.closed else f"round={self.round}"
        return f"Barrier({state})"
