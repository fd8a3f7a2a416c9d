"""Oracles for :mod:`timely.dataflow._activate` and :mod:`timely.dataflow._channels`:
a scope's activations, the counting pusher, the pipeline pusher and the
stateless record operators' loop, as the plain Python they replace."""

from __future__ import annotations

import heapq
from collections import deque


class Activations:
    """Children asked to run: into the running round's heap when above the
    current child, else deferred, the first deferral asking for the scope."""

    def __init__(self, on_first):
        self.deferred: set = set()
        self.heap: list = []
        self.scheduling = False
        self.current = -1
        self.on_first = on_first

    def activate(self, index: int) -> None:
        if self.scheduling and index > self.current:
            heapq.heappush(self.heap, index)
            return
        if index not in self.deferred:
            self.deferred.add(index)
            self.on_first()


class PipelinePusher:
    def __init__(self, queue: deque, on_data):
        self.queue = queue
        self.on_data = on_data

    def push(self, time, data) -> None:
        self.queue.append((time, data))
        self.on_data()


class Counter:
    """Counts ``len(data)`` at ``time`` in ``produced`` (a dict here), then
    hands non-empty messages on."""

    def __init__(self, pushers: list, produced: dict):
        self.pushers = pushers
        self.produced = produced

    def push(self, time, data) -> None:
        n = len(data)
        if n:
            self.produced[time] = self.produced.get(time, 0) + n
            for pusher in self.pushers:
                pusher.push(time, data)


def record_logic(kind: str, queues: list, consumeds: list, fn, counters: list) -> None:
    """One run of a stateless record operator: each input's waiting messages
    taken (counted in ``consumeds[i]``, dicts here), then turned into output."""
    for queue, consumed in zip(queues, consumeds):
        taken = []
        while queue:
            time, data = queue.popleft()
            consumed[time] = consumed.get(time, 0) + len(data)
            taken.append((time, data))
        for time, data in taken:
            if kind == "pass":
                counters[0].push(time, data)
            elif kind == "map":
                counters[0].push(time, [fn(x) for x in data])
            elif kind == "filter":
                counters[0].push(time, [x for x in data if fn(x)])
            elif kind == "batch":
                out = fn(time, data)
                if out:
                    counters[0].push(time, out)
            elif kind == "advance":
                later = fn(time)
                if later is not None:
                    counters[0].push(later, data)
            elif kind == "branch_when":
                counters[1 if fn(time) else 0].push(time, data)
            else:
                raise ValueError(kind)
