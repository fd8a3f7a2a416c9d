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
:mod:`timely.communication.process`), with its send window (below).
``allocator.logger``, when a worker
logs communication events, is a :class:`timely.logging.registry.Logger`
with ``frame`` and ``connection`` hooks; allocators never import it.

The send window (backpressure between workers): a batching allocator counts
the bytes of every frame it sends to a peer as in flight until the peer
pulls their messages from its channels; the peer gives that credit back in
a later frame. ``congested()`` is true while the bytes in flight to some
peer reach ``window``: sources then wait (an input handle steps its worker,
parking, until the window opens; ``iterator_source`` is activated again by
:meth:`BatchingAllocator.on_window`), so a slow consumer holds at most
about a window of data from each peer, plus what a source gave in one go.
Operators driven by their inputs always run, so workers that send to each
other can always drain each other: the window never deadlocks. Messages for
a channel that does not exist yet are credited on arrival.

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
from typing import Union

from timely.communication._mailbox import (
    CREDIT,
    CREDIT_AT,
    MIN_WINDOW,
    Credited,
    CreditingPuller,
    LocalPusher,
    Mailbox,
    Puller,
    RemotePusher,
)

# A channel's identifier: an int for a data channel, a tuple naming a
# system channel (progress of a scope, the dataflow census, credits).
ChannelId = Union[int, tuple]

# The send window per peer, in bytes, unless a configuration sets another.
DEFAULT_WINDOW = 4 << 20


class Allocator:
    """The interface every allocator provides."""

    index: int
    peers: int
    logger = None          # a timely.logging.Logger while communication events are logged

    def allocate(self, identifier: ChannelId, on_data):  # pragma: no cover - interface
        """The channel ``identifier``: one pusher per worker (index ``j``
        reaches worker ``j``) and this worker's puller; ``on_data()`` is
        called when data arrives for it here. Raises ValueError when the
        channel was allocated before."""
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

    def congested(self) -> bool:
        """True while a peer holds a full window of this worker's data."""
        return False

    def full_windows(self) -> list:
        """The peers that hold a full window of this worker's data."""
        return []

    def awake_peers(self) -> frozenset:
        """The peers on this host that are awake now (not parked nor about
        to park: stepping, or busy within one step), as far as this worker
        can tell; the others, and peers it cannot see, are left out."""
        return frozenset()

    def drop_channels(self, identifiers) -> None:
        """Forgets channels whose operators are gone (a dropped dataflow):
        what they hold, and whatever still arrives for them, is discarded
        (and credited to its sender)."""

    def on_window(self, callback) -> None:
        """Calls ``callback()`` once, when the window next opens (at once if
        it is open)."""
        callback()


class ThreadAllocator(Allocator):
    """One worker in this thread: every channel is a local queue."""

    def __init__(self):
        self.index = 0
        self.peers = 1
        self.channels: dict[ChannelId, deque] = {}

    def allocate(self, identifier: ChannelId, on_data):
        """As :meth:`Allocator.allocate`, for the one worker: a local queue."""
        if identifier in self.channels:
            raise ValueError(f"channel {identifier} allocated twice")
        queue: deque = deque()
        self.channels[identifier] = queue
        return [LocalPusher(queue, on_data)], Puller(queue)


class BatchingAllocator(Mailbox, Allocator):
    """The part of the process and cluster allocators that is not transport:
    channel queues, activation callbacks, and one outbox per peer (compiled:
    :class:`Mailbox`).

    Subclasses move frames (:mod:`timely.communication.codec`) of
    ``[(identifier, message), ...]``; they call ``deliver_messages`` with
    the messages of each frame received and its size in bytes (or
    ``deliver_frame`` with a whole frame) and send what
    :meth:`take_frames` gives. Pickle crosses only between the
    computation's own workers.

    ``window`` is the send window in bytes per peer (``None``: unbounded).
    """

    def __init__(self, index: int, peers: int, window: int | None = None):
        # The frame codec (and the column serializer under it) loads with the
        # first allocator that moves frames, not with every import of this module.
        from timely.communication import codec

        super().__init__(index, peers, window)
        self._encode = codec.encode
        self._decode = codec.decode

    def deliver_frame(self, frame, source: int = -1) -> None:
        """Delivers the messages of a frame held whole in one buffer."""
        self.deliver_messages(self._decode(frame), source, len(frame))

    def take_frames(self) -> list:
        """``[(peer, frame parts)]`` for every peer with something to send
        (see :meth:`Mailbox.take_outboxes`)."""
        return self.take_outboxes(self._encode)


__all__ = ["CREDIT", "CREDIT_AT", "DEFAULT_WINDOW", "MIN_WINDOW", "Allocator", "BatchingAllocator", "Credited", "CreditingPuller", "Mailbox",
           "LocalPusher", "Puller", "RemotePusher", "ThreadAllocator"]
