"""Allocators: the worker's view of the communication layer.

``allocate(identifier, on_data)`` returns ``(pushers, puller)``: ``pushers[j]``
delivers to worker ``j``'s puller of the same channel, FIFO and at most once;
``on_data()`` is called on the receiving worker whenever data arrives for it,
so the consuming operator can be activated instead of polled. ``receive()``
brings in what other workers sent, ``release()`` flushes what this worker
sent, ``park(timeout)`` sleeps until something arrives.

This module holds the interface and the allocators that are not transport:
:class:`ThreadAllocator` (one worker, local queues) and
:class:`BatchingAllocator` (channel queues, activation callbacks and one
outbox per peer, for allocators that move frames: rings and TCP links in
:mod:`timely.communication.process`). ``allocator.logger``, when a worker
logs communication events, is a :class:`timely.logging.registry.Logger`
with ``frame`` and ``connection`` hooks; allocators never import it.

>>> allocator = ThreadAllocator()
>>> woken = []
>>> (pusher,), puller = allocator.allocate(0, lambda: woken.append(True))
>>> pusher.push([1, 2])
>>> puller.pull(), woken
([1, 2], [True])
"""

from __future__ import annotations

import threading
from collections import deque

from timely.communication import codec


class Allocator:
    """The interface every allocator provides."""

    index: int
    peers: int
    logger = None          # a timely.logging.Logger while communication events are logged

    def allocate(self, identifier: int, on_data):  # pragma: no cover - interface
        raise NotImplementedError

    def receive(self) -> None:
        """Moves data that other workers sent into the channels' pullers."""

    def release(self) -> None:
        """Flushes data pushed by this worker."""

    def park(self, timeout: float | None) -> None:
        """Waits until data may have arrived, :meth:`unpark` is called, or
        ``timeout`` seconds pass (None: no limit; 0: returns at once). An
        :meth:`unpark` that came since the last park ends this one at once."""
        if timeout is None or timeout > 0:
            event = self._unpark_event()
            event.wait(timeout)
            event.clear()

    def unpark(self) -> None:
        """Wakes the worker from :meth:`park`; callable from any thread."""
        self._unpark_event().set()

    def _unpark_event(self) -> threading.Event:
        event = self.__dict__.get("_unparked")
        if event is None:
            # setdefault: two threads creating it at once agree on one.
            event = self.__dict__.setdefault("_unparked", threading.Event())
        return event

    def shutdown(self) -> None:
        """Releases the allocator's resources."""


class LocalPusher:
    """Pushes into a puller of the same worker, and signals the consumer."""

    __slots__ = ("queue", "on_data")

    def __init__(self, queue: deque, on_data):
        self.queue = queue
        self.on_data = on_data

    def push(self, message) -> None:
        self.queue.append(message)
        self.on_data()

    def done(self) -> None:
        pass


class Puller:
    """The receiving end of a channel at one worker."""

    __slots__ = ("queue",)

    def __init__(self, queue: deque):
        self.queue = queue

    def pull(self):
        """The next message, or None."""
        q = self.queue
        return q.popleft() if q else None

    def __bool__(self):
        return bool(self.queue)


class ThreadAllocator(Allocator):
    """One worker in this thread: every channel is a local queue."""

    def __init__(self):
        self.index = 0
        self.peers = 1
        self.channels: dict[int, deque] = {}

    def allocate(self, identifier: int, on_data):
        if identifier in self.channels:
            raise ValueError(f"channel {identifier} allocated twice")
        queue: deque = deque()
        self.channels[identifier] = queue
        return [LocalPusher(queue, on_data)], Puller(queue)


class RemotePusher:
    """Queues messages for another worker; its allocator sends them as one
    batch per peer when the worker releases."""

    __slots__ = ("outbox", "identifier")

    def __init__(self, outbox: list, identifier):
        self.outbox = outbox
        self.identifier = identifier

    def push(self, message) -> None:
        self.outbox.append((self.identifier, message))

    def done(self) -> None:
        pass


class BatchingAllocator(Allocator):
    """The part of the process and cluster allocators that is not transport:
    channel queues, activation callbacks, and one outbox per peer.

    Subclasses move frames (:mod:`timely.communication.codec`) of
    ``[(identifier, message), ...]``; they call ``deliver`` with the messages
    of each frame received (or ``deliver_frame`` with a whole frame) and take
    ``take_outboxes()`` to send. Pickle crosses only between the
    computation's own workers.
    """

    def __init__(self, index: int, peers: int):
        self.index = index
        self.peers = peers
        self.queues: dict = {}
        self.callbacks: dict = {}
        self.outboxes = {j: [] for j in range(peers) if j != index}
        self.sources: dict = {}           # logged channels: identifier -> source of each queued message

    def _queue(self, identifier) -> deque:
        q = self.queues.get(identifier)
        if q is None:
            q = self.queues[identifier] = deque()
        return q

    def allocate(self, identifier, on_data):
        if identifier in self.callbacks:
            raise ValueError(f"channel {identifier} allocated twice")
        self.callbacks[identifier] = on_data
        mine = self._queue(identifier)
        pushers = [LocalPusher(mine, on_data) if j == self.index
                   else RemotePusher(self.outboxes[j], identifier) for j in range(self.peers)]
        if mine:
            on_data()                     # data that arrived before the channel existed
        return pushers, Puller(mine)

    def track_sources(self, identifier) -> deque:
        """A deque that receives the sending worker of every message queued
        for channel ``identifier`` from now on, in queue order (for logs);
        messages already queued count as from worker -1 (not known)."""
        sources = self.sources.get(identifier)
        if sources is None:
            sources = self.sources[identifier] = deque([-1] * len(self._queue(identifier)))
        return sources

    def deliver_messages(self, messages, source: int = -1) -> None:
        if self.sources:
            self._note_sources(messages, source)
        callbacks = self.callbacks
        for identifier, message in messages:
            self._queue(identifier).append(message)
            callback = callbacks.get(identifier)
            if callback is not None:
                callback()

    def _note_sources(self, messages, source: int) -> None:
        sources = self.sources
        for identifier, _message in messages:
            noted = sources.get(identifier)
            if noted is not None:
                noted.append(source)

    def deliver_frame(self, frame, source: int = -1) -> None:
        """Delivers the messages of a frame held whole in one buffer."""
        self.deliver_messages(codec.decode(frame), source)

    def take_outboxes(self):
        """``(peer, frame parts)`` for every peer with something to send."""
        for j, outbox in self.outboxes.items():
            if outbox:
                parts = codec.encode(outbox)
                outbox.clear()
                yield j, parts


__all__ = ["Allocator", "BatchingAllocator", "LocalPusher", "Puller", "RemotePusher",
           "ThreadAllocator"]
