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

import os
import threading
from collections import deque
from typing import Union

from timely.errors import ConfigurationError, FrameError

# A channel's identifier: an int for a data channel, a tuple naming a
# system channel (progress of a scope, the dataflow census, credits).
ChannelId = Union[int, tuple]

# The channel that carries window credit: a count of bytes.
CREDIT = ("credit",)
# Credit owed to an idle peer is sent on its own once this much has gathered
# (otherwise it rides along with data), so a window must be larger.
CREDIT_AT = 1 << 16
MIN_WINDOW = 2 * CREDIT_AT
_DROPPED = object()            # the callback of a channel whose operators are gone
DEFAULT_WINDOW = 4 << 20
DEFAULT = object()             # "the window of the environment", for keyword defaults
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def window_from_env() -> int | None:
    """The send window per peer from ``TIMELY_WINDOW``: bytes, with an
    optional ``k``, ``m`` or ``g`` (binary units), or ``none`` for no bound;
    4 MiB when unset.

    >>> import os
    >>> os.environ["TIMELY_WINDOW"] = "16m"
    >>> window_from_env()
    16777216
    >>> del os.environ["TIMELY_WINDOW"]
    """
    value = os.environ.get("TIMELY_WINDOW", "").strip().lower()
    if not value:
        return DEFAULT_WINDOW
    if value == "none":
        return None
    number, unit = (value[:-1], value[-1]) if value[-1] in "kmg" else (value, "")
    try:
        window = int(number) * _UNITS[unit]
    except ValueError:
        raise ConfigurationError(f"TIMELY_WINDOW is a number of bytes (like 4m) or none, "
                                 f"not {value!r}") from None
    if window < MIN_WINDOW:
        raise ConfigurationError(f"TIMELY_WINDOW={value} is below the least window, "
                                 f"{MIN_WINDOW} bytes")
    return window


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

    def drop_channels(self, identifiers) -> None:
        """Forgets channels whose operators are gone (a dropped dataflow):
        what they hold, and whatever still arrives for them, is discarded
        (and credited to its sender)."""

    def on_window(self, callback) -> None:
        """Calls ``callback()`` once, when the window next opens (at once if
        it is open)."""
        callback()


class LocalPusher:
    """Pushes into a puller of the same worker, and signals the consumer."""

    __slots__ = ("queue", "on_data")

    def __init__(self, queue: deque, on_data):
        self.queue = queue
        self.on_data = on_data

    def push(self, message) -> None:
        """Queues ``message`` for this worker's puller and activates its operator."""
        self.queue.append(message)
        self.on_data()

    def done(self) -> None:
        """Nothing to flush: a local message is queued at once."""
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
        self.channels: dict[ChannelId, deque] = {}

    def allocate(self, identifier: ChannelId, on_data):
        """As :meth:`Allocator.allocate`, for the one worker: a local queue."""
        if identifier in self.channels:
            raise ValueError(f"channel {identifier} allocated twice")
        queue: deque = deque()
        self.channels[identifier] = queue
        return [LocalPusher(queue, on_data)], Puller(queue)


class Credited:
    """A message from another worker with the bytes of its frame it
    stands for; its puller gives them back to the sender when it is pulled."""

    __slots__ = ("message", "peer", "weight")

    def __init__(self, message, peer: int, weight: int):
        self.message = message
        self.peer = peer
        self.weight = weight


class CreditingPuller(Puller):
    """A puller of a channel between workers: pulling a message from
    another worker credits its bytes to that worker's window."""

    __slots__ = ("allocator",)

    def __init__(self, queue: deque, allocator):
        self.queue = queue
        self.allocator = allocator

    def pull(self):
        q = self.queue
        if not q:
            return None
        message = q.popleft()
        if type(message) is Credited:
            self.allocator.owed[message.peer] += message.weight
            return message.message
        return message


class RemotePusher:
    """Queues messages for another worker; its allocator sends them as one
    batch per peer when the worker releases."""

    __slots__ = ("outbox", "identifier")

    def __init__(self, outbox: list, identifier):
        self.outbox = outbox
        self.identifier = identifier

    def push(self, message) -> None:
        """Adds ``message`` to the outbox of its worker; :meth:`Allocator.release` sends it."""
        self.outbox.append((self.identifier, message))

    def done(self) -> None:
        """Nothing to flush here: the allocator sends outboxes on release."""
        pass


class BatchingAllocator(Allocator):
    """The part of the process and cluster allocators that is not transport:
    channel queues, activation callbacks, and one outbox per peer.

    Subclasses move frames (:mod:`timely.communication.codec`) of
    ``[(identifier, message), ...]``; they call ``deliver_messages`` with
    the messages of each frame received and its size in bytes (or
    ``deliver_frame`` with a whole frame) and take ``take_outboxes()`` to
    send. Pickle crosses only between the computation's own workers.

    ``window`` is the send window in bytes per peer (``None``: unbounded).
    """

    def __init__(self, index: int, peers: int, window: int | None = None):
        # The frame codec (and the column serializer under it) loads with the
        # first allocator that moves frames, not with every import of this module.
        from timely.communication import codec

        self._encode = codec.encode
        self._decode = codec.decode
        self.index = index
        self.peers = peers
        self.queues: dict = {}
        self.callbacks: dict = {}
        self.outboxes: dict[int, list] = {j: [] for j in range(peers) if j != index}
        self.sources: dict = {}           # logged channels: identifier -> source of each queued message
        self.window = window
        self.in_flight = dict.fromkeys(self.outboxes, 0)   # bytes sent to a peer, not yet credited
        self.owed = dict.fromkeys(self.outboxes, 0)        # bytes pulled from a peer, not yet credited
        if window is not None and window < MIN_WINDOW:
            raise ConfigurationError(f"a send window of {window} bytes is below the least, "
                                     f"{MIN_WINDOW}")
        self._congested = False
        self._waiting: list = []          # on_window callbacks

    def _queue(self, identifier) -> deque:
        q = self.queues.get(identifier)
        if q is None:
            q = self.queues[identifier] = deque()
        return q

    def allocate(self, identifier, on_data):
        """As :meth:`Allocator.allocate`: a local queue for this worker,
        outboxes for the others, and a puller that credits what it takes
        back to the sender's window. Messages that arrived before the
        channel existed are kept and activate it at once."""
        if identifier in self.callbacks:
            raise ValueError(f"channel {identifier} allocated twice")
        self.callbacks[identifier] = on_data
        mine = self._queue(identifier)
        pushers = [LocalPusher(mine, on_data) if j == self.index
                   else RemotePusher(self.outboxes[j], identifier) for j in range(self.peers)]
        if mine:
            on_data()                     # data that arrived before the channel existed
        return pushers, CreditingPuller(mine, self)

    def track_sources(self, identifier) -> deque:
        """A deque that receives the sending worker of every message queued
        for channel ``identifier`` from now on, in queue order (for logs);
        messages already queued count as from worker -1 (not known)."""
        sources = self.sources.get(identifier)
        if sources is None:
            sources = self.sources[identifier] = deque([-1] * len(self._queue(identifier)))
        return sources

    def deliver_messages(self, messages, source: int = -1, nbytes: int = 0) -> None:
        """Queues the messages of one frame of ``nbytes`` bytes from
        worker ``source`` and activates their channels' operators."""
        if self.sources:
            self._note_sources(messages, source)
        callbacks = self.callbacks
        carried = len(messages)
        for identifier, message in messages:
            if identifier == CREDIT:
                carried -= 1
                self._credited(source, message)
        if not carried:
            return
        weight, extra = divmod(nbytes, carried) if source in self.owed else (0, 0)
        for identifier, message in messages:
            if identifier == CREDIT:
                continue
            callback = callbacks.get(identifier)
            share = weight + extra
            extra = 0
            if callback is _DROPPED:
                if share:
                    self.owed[source] += share
                continue
            if callback is None:
                # No channel yet: nobody may pull it for a while.
                self._queue(identifier).append(message)
                if share:
                    self.owed[source] += share
                continue
            self._queue(identifier).append(Credited(message, source, share) if share else message)
            callback()

    def drop_channels(self, identifiers) -> None:
        """Discards what channels ``identifiers`` hold and whatever still
        arrives for them, crediting each message's bytes to its sender."""
        owed = self.owed
        for identifier in identifiers:
            self.callbacks[identifier] = _DROPPED
            queue = self.queues.pop(identifier, None)
            while queue:
                message = queue.popleft()
                if type(message) is Credited:
                    owed[message.peer] += message.weight

    def _credited(self, peer: int, amount) -> None:
        if type(amount) is not int or amount < 0 or amount > self.in_flight.get(peer, 0):
            raise FrameError(f"worker {peer} returned a credit of {amount!r} bytes, "
                             f"more than the {self.in_flight.get(peer, 0)} in flight to it")
        self.in_flight[peer] -= amount
        if self._congested and not self._over_window():
            self._congested = False
            waiting, self._waiting = self._waiting, []
            for callback in waiting:
                callback()

    def _over_window(self) -> bool:
        window = self.window
        return window is not None and any(v >= window for v in self.in_flight.values())

    def congested(self) -> bool:
        """True while some peer holds ``window`` bytes or more of this
        worker's frames that it has not yet credited back."""
        return self._congested

    def full_windows(self) -> list:
        """The peers that hold a full window of this worker's data."""
        window = self.window
        if window is None:
            return []
        return [j for j, v in self.in_flight.items() if v >= window]

    def on_window(self, callback) -> None:
        """Calls ``callback()`` at once if no peer holds a full window,
        else once when a credit opens it (from ``receive``)."""
        if self._congested:
            self._waiting.append(callback)
        else:
            callback()

    def _note_sources(self, messages, source: int) -> None:
        sources = self.sources
        for identifier, _message in messages:
            noted = sources.get(identifier)
            if noted is not None:
                noted.append(source)

    def deliver_frame(self, frame, source: int = -1) -> None:
        """Delivers the messages of a frame held whole in one buffer."""
        self.deliver_messages(self._decode(frame), source, len(frame))

    def take_outboxes(self):
        """``(peer, frame parts)`` for every peer with something to send.
        Credit owed to a peer rides along; a frame that carries more than
        credit counts as in flight, whole."""
        owed = self.owed
        in_flight = self.in_flight
        encode = self._encode
        for j, outbox in self.outboxes.items():
            credit = owed[j]
            if outbox:
                if credit:
                    outbox.append((CREDIT, credit))
                    owed[j] = 0
                parts = encode(outbox)
                outbox.clear()
                in_flight[j] += sum(memoryview(p).nbytes for p in parts)
                yield j, parts
            elif credit >= CREDIT_AT:
                owed[j] = 0
                yield j, encode([(CREDIT, credit)])
        if not self._congested and self._over_window():
            self._congested = True


__all__ = ["CREDIT", "CREDIT_AT", "DEFAULT_WINDOW", "MIN_WINDOW", "window_from_env", "Allocator", "BatchingAllocator", "Credited", "CreditingPuller",
           "LocalPusher", "Puller", "RemotePusher", "ThreadAllocator"]
