"""Several workers as threads of this process, exchanging through queues.

Every ordered pair of workers has one FIFO queue per channel. A push appends
to the receiver's queue and records the channel in the receiver's inbox;
``receive`` turns inbox entries into activations of the consuming operators,
and ``park`` waits on the receiver's doorbell. Data that arrives before the
receiver has allocated the channel waits in its queue.

Threads share the interpreter, so this mode gives concurrency, not
parallelism; it runs the same dataflows as any other allocator, which makes
multi-worker behaviour testable in one process.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections import deque

from timely.communication.allocator import Allocator, LocalPusher, Puller
from timely.errors import WorkerFailed


class _Shared:
    """What the workers of one computation share."""

    def __init__(self, peers: int):
        self.peers = peers
        self.lock = threading.Lock()
        self.queues: dict = {}                       # (identifier, receiver) -> deque
        self.inbox = [deque() for _ in range(peers)]  # identifiers with new data
        self.doorbell = [threading.Event() for _ in range(peers)]
        self.failure = None                          # (index, formatted traceback)

    def queue(self, identifier: int, receiver: int) -> deque:
        key = (identifier, receiver)
        q = self.queues.get(key)
        if q is None:
            with self.lock:
                q = self.queues.setdefault(key, deque())
        return q

    def fail(self, index: int, text: str) -> None:
        with self.lock:
            if self.failure is None:
                self.failure = (index, text)
        for bell in self.doorbell:
            bell.set()


class _Pusher:
    __slots__ = ("queue", "inbox", "bell", "identifier")

    def __init__(self, shared: _Shared, identifier: int, receiver: int):
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


class ThreadsAllocator(Allocator):
    """Worker ``index`` of ``peers`` threads sharing ``shared``."""

    def __init__(self, index: int, peers: int, shared: _Shared):
        self.index = index
        self.peers = peers
        self.shared = shared
        self.callbacks: dict = {}
        self.early: set = set()                      # channels with data before allocation

    def allocate(self, identifier: int, on_data):
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
        failure = self.shared.failure
        if failure is not None and failure[0] != self.index:
            raise WorkerFailed(f"worker {failure[0]} failed:\n{failure[1]}")

    def receive(self) -> None:
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
        bell = self.shared.doorbell[self.index]
        if not self.shared.inbox[self.index]:
            bell.wait(timeout)
        bell.clear()
        self.check()


def execute_threads(work, workers: int, **options):
    """Runs ``work`` on ``workers`` threads; returns the results in index order.

    If a worker raises, every other worker stops with :class:`WorkerFailed`
    and this raises the first failure, chained to the worker's exception.
    """
    from timely.worker import Worker

    shared = _Shared(workers)
    results: list = [None] * workers
    errors: list = [None] * workers

    def run(index: int) -> None:
        try:
            worker = Worker(ThreadsAllocator(index, workers, shared), **options)
            results[index] = work(worker)
            worker.drain()
            worker.close()
        except BaseException as error:  # noqa: BLE001 - reported to the caller below
            errors[index] = error
            if shared.failure is None:
                logging.getLogger(__name__).error("worker %d failed: %s", index, error)
            shared.fail(index, "".join(traceback.format_exception(error)))

    threads = [threading.Thread(target=run, args=(i,), name=f"timely-worker-{i}", daemon=True)
               for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if shared.failure is not None:
        index, text = shared.failure
        raise WorkerFailed(f"worker {index} failed:\n{text}") from errors[index]
    return results


__all__ = ["ThreadsAllocator", "WorkerFailed", "execute_threads"]

if sys.version_info < (3, 10):  # pragma: no cover
    raise ImportError("timely needs Python 3.10 or later")
