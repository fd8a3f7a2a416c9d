"""Progress broadcast (the Rust crate's ``Progcaster``): each worker's progress batches reach every worker.

A :class:`Progcaster` serves one scope. ``send`` hands the batch of
accumulated pointstamp changes to every worker including this one, over one
channel per scope, FIFO per sender, and never splits a batch; ``recv`` adds
whatever batches have arrived into the caller's accumulation.
"""

from __future__ import annotations


from timely.errors import DataflowError


class Progcaster:
    """Every batch carries the scope's fingerprint: a worker that built a
    different scope is found at the first batch it sends, and named."""

    __slots__ = ("pushers", "puller", "sequence", "worker_index", "fingerprint", "scope",
                 "worker", "identifier", "owner")

    def __init__(self, worker, identifier, on_data, fingerprint: str = "", scope: str = "",
                 owner=None):
        self.pushers, self.puller = worker.allocator.allocate(identifier, on_data)
        self.worker = worker
        self.identifier = identifier
        self.owner = owner                # the Subgraph, for logs
        self.sequence = 0
        self.worker_index = worker.index
        self.fingerprint = fingerprint
        self.scope = scope

    def send(self, updates: dict) -> None:
        """Sends the non-zero entries of ``updates`` as one batch, and clears it."""
        batch = [(key, diff) for key, diff in updates.items() if diff]
        updates.clear()
        if not batch:
            return
        message = (self.worker_index, self.sequence, self.fingerprint, batch)
        self.sequence += 1
        if self.worker.logger is not None:
            self.worker.logger.progress(True, self, message)
        for pusher in self.pushers:
            pusher.push(message)
        for pusher in self.pushers:
            pusher.done()

    def recv(self, into: dict) -> None:
        """Adds every batch received so far into ``into``."""
        pull = self.puller.pull
        get = into.get
        logger = self.worker.logger
        while True:
            message = pull()
            if message is None:
                return
            if type(message) is not tuple or len(message) != 4 or message[2] != self.fingerprint:
                sender = message[0] if type(message) is tuple and message else "?"
                raise DataflowError(
                    f"worker {sender} built a different dataflow than worker "
                    f"{self.worker_index} (scope {self.scope!r}): every worker must build the "
                    "same operators, channels and scopes in the same order")
            if logger is not None:
                logger.progress(False, self, message)
            for key, diff in message[3]:
                into[key] = get(key, 0) + diff
