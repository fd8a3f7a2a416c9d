"""Several workers as threads of this process, exchanging through queues.

Every ordered pair of workers has one FIFO queue per channel. A push appends
to the receiver's queue and records the channel in the receiver's inbox;
``receive`` turns inbox entries into activations of the consuming operators,
and ``park`` waits on the receiver's doorbell. Data that arrives before the
receiver has allocated the channel waits in its queue.

Threads share the interpreter, so this mode gives concurrency, not
parallelism; it runs the same dataflows as any other allocator, which makes
multi-worker behaviour testable in one process.

Fail-stop: whoever runs a worker reports its failure with
:meth:`ThreadGroup.fail`, which rings every doorbell; every other worker
then raises :class:`timely.errors.WorkerFailed` from its next ``receive`` or
``park``. Starting and joining the threads is the launcher's business
(:func:`timely.launch.execute_threads`).

>>> shared = ThreadGroup(2)
>>> workers = [ThreadGroupAllocator(i, 2, shared) for i in range(2)]
>>> pushers, _ = workers[0].allocate(0, lambda: None)
>>> _, puller = workers[1].allocate(0, lambda: None)
>>> pushers[1].push("hello")
>>> puller.pull()
'hello'
"""

from __future__ import annotations

import threading
import time
from collections import deque

from timely.communication.allocator import Allocator, ChannelId, LocalPusher, Puller
from timely.errors import WorkerFailed


class ThreadGroup:
    """What the worker threads of one computation share: a queue per
    channel and receiver, an inbox of channel identifiers and a doorbell
    (a ``threading.Event``) per worker, and the first failure."""

    def __init__(self, peers: int):
        self.peers = peers
        self.lock = threading.Lock()
        self.queues: dict = {}                       # (identifier, receiver) -> deque
        self.inbox: list[deque] = [deque() for _ in range(peers)]  # identifiers with new data
        self.doorbell = [threading.Event() for _ in range(peers)]
        self.failure: tuple[int, str] | None = None  # (index, formatted traceback)

    def queue(self, identifier: ChannelId, receiver: int) -> deque:
        """The queue of channel ``identifier`` at worker ``receiver``, made on first use."""
        key = (identifier, receiver)
        q = self.queues.get(key)
        if q is None:
            with self.lock:
                q = self.queues.setdefault(key, deque())
        return q

    def fail(self, index: int, text: str) -> None:
        """Records that worker ``index`` failed (``text``: its traceback),
        unless another failed first, and wakes every worker."""
        with self.lock:
            if self.failure is None:
                self.failure = (index, text)
        for bell in self.doorbell:
            bell.set()


class _Pusher:
    """Pushes into another worker thread's queue and rings its doorbell."""

    __slots__ = ("queue", "inbox", "bell", "identifier")

    def __init__(self, shared: ThreadGroup, identifier: ChannelId, receiver: int):
        self.queue = shared.queue(identifier, receiver)
        self.inbox = shared.inbox[receiver]
        self.bell = shared.doorbell[receiver]
        self.identifier = identifier

    def push(self, message) -> None:
        self.queue.append(message)
        self.inbox.append(self.identifier)
        self.bell.set()

    def done(self) -> None:
        pass


class ThreadGroupAllocator(Allocator):
    """Worker ``index`` of ``peers`` threads sharing ``shared``."""

    def __init__(self, index: int, peers: int, shared: ThreadGroup):
        self.index = index
        self.peers = peers
        self.shared = shared
        self.callbacks: dict = {}
        self.early: set = set()                      # channels with data before allocation

    def allocate(self, identifier: ChannelId, on_data):
        """As :meth:`Allocator.allocate`, over queues shared by the threads."""
        if identifier in self.callbacks:
            raise ValueError(f"channel {identifier} allocated twice")
        self.callbacks[identifier] = on_data
        mine = self.shared.queue(identifier, self.index)
        pushers = [
            LocalPusher(mine, on_data) if j == self.index else _Pusher(self.shared, identifier, j)
            for j in range(self.peers)
        ]
        if mine:
            on_data()
        return pushers, Puller(mine)

    def check(self) -> None:
        """Raises WorkerFailed when another worker has failed."""
        failure = self.shared.failure
        if failure is not None and failure[0] != self.index:
            raise WorkerFailed(f"worker {failure[0]} failed:\n{failure[1]}")

    def receive(self) -> None:
        """Activates the channels that other threads pushed to. Raises
        WorkerFailed when another worker failed."""
        self.check()
        inbox = self.shared.inbox[self.index]
        if not inbox:
            # Let the other workers' threads run: without this a worker
            # polling for their progress holds the interpreter for a whole
            # switch interval.
            time.sleep(0)
        callbacks = self.callbacks
        while inbox:
            identifier = inbox.popleft()
            callback = callbacks.get(identifier)
            if callback is not None:
                callback()

    def park(self, timeout) -> None:
        """Waits on this thread's doorbell for ``timeout`` seconds at most,
        unless data is waiting. Raises WorkerFailed when another worker failed."""
        bell = self.shared.doorbell[self.index]
        if not self.shared.inbox[self.index]:
            bell.wait(timeout)
        bell.clear()
        self.check()

    def unpark(self) -> None:
        """Wakes this worker from :meth:`park`; callable from any thread."""
        self.shared.doorbell[self.index].set()


__all__ = ["ThreadGroupAllocator", "ThreadGroup"]
