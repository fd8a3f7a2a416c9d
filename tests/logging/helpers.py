"""A known dataflow, run with logging on."""

from __future__ import annotations

import collections

import timely

N = 100          # records worker 0 sends
PER_WORKER = 10  # records every other worker sends


def sent_total(workers: int) -> int:
    return N + PER_WORKER * (workers - 1)


def known_dataflow(worker, epochs: int = 3):
    """input -> exchange -> map -> probe, fed in ``epochs`` epochs; returns the probe."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = stream.exchange(lambda x: x).map(lambda x: x * 2).probe()
    mine = range(N) if worker.index == 0 else range(1000 * worker.index,
                                                     1000 * worker.index + PER_WORKER)
    mine = list(mine)
    for epoch in range(epochs):
        for x in mine[epoch::epochs]:
            handle.send(x)
        handle.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(handle.time))
    handle.close()
    return probe


def logged_run(workers: int, kinds=None, mode: str = "processes"):
    """Runs the known dataflow with a logger on every worker; returns each
    worker's events, in order, after every dataflow completed."""

    def work(worker):
        events = []
        worker.logging.register(lambda time, batch: events.extend(batch), kinds)
        known_dataflow(worker)
        worker.drain()
        worker.logging.flush()
        return events

    return timely.execute(work, workers=workers, mode=mode)


def of_type(events, cls):
    return [e for _, _, e in events if type(e) is cls]


def by_kind(events) -> collections.Counter:
    return collections.Counter(type(e).__name__ for _, _, e in events)
