"""Progress broadcast: each worker's progress batches reach every worker.

A :class:`Progcaster` serves one scope. ``send`` hands the batch of
accumulated pointstamp changes to every worker including this one, over one
channel per scope, FIFO per sender, and never splits a batch; ``recv`` adds
whatever batches have arrived into the caller's accumulation.
"""

from __future__ import annotations


class Progcaster:
    __slots__ = ("pushers", "puller", "sequence", "worker_index")

    def __init__(self, worker, identifier: int, on_data):
        self.pushers, self.puller = worker.allocator.allocate(identifier, on_data)
        self.sequence = 0
        self.worker_index = worker.index

    def send(self, updates: dict) -> None:
        """Sends the non-zero entries of ``updates`` as one batch, and clears it."""
        batch = [(key, diff) for key, diff in updates.items() if diff]
        updates.clear()
        if not batch:
            return
        message = (self.worker_index, self.sequence, batch)
        self.sequence += 1
        for pusher in self.pushers:
            pusher.push(message)
        for pusher in self.pushers:
            pusher.done()

    def recv(self, into: dict) -> None:
        """Adds every batch received so far into ``into``."""
        pull = self.puller.pull
        get = into.get
        while True:
            message = pull()
            if message is None:
                return
            for key, diff in message[2]:
                into[key] = get(key, 0) + diff
