"""Compiled part of :mod:`timely.communication.allocator`: channel queues,
pushers and pullers, and the per-peer outboxes and send window of an
allocator that moves frames.

Every message a worker sends or receives passes through here, so nothing on
the way costs a Python frame: a push appends to a deque or a list, a pull
pops one and credits its bytes to the sender's window (a C array per peer),
and a received frame's messages are queued and their channels activated in
one compiled loop.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free

from collections import deque

from timely.errors import ConfigurationError, FrameError

# The channel that carries window credit: a count of bytes.
CREDIT = ("credit",)
# Credit owed to an idle peer is sent on its own once this much has gathered
# (otherwise it rides along with data), so a window must be larger.
DEF CREDIT_BYTES = 65536
CREDIT_AT = CREDIT_BYTES
MIN_WINDOW = 2 * CREDIT_AT
DROPPED = object()             # the callback of a channel whose operators are gone


cdef class LocalPusher:
    """Pushes into a puller of the same worker, and signals the consumer."""

    def __init__(self, queue, on_data):
        self.queue = queue
        self.on_data = on_data

    cpdef push(self, message):
        """Queues ``message`` for this worker's puller and activates its operator."""
        self.queue.append(message)
        self.on_data()

    cpdef done(self):
        """Nothing to flush: a local message is queued at once."""


cdef class Puller:
    """The receiving end of a channel at one worker."""

    def __init__(self, queue):
        self.queue = queue

    cpdef pull(self):
        """The next message, or None."""
        q = self.queue
        return q.popleft() if q else None

    def __bool__(self):
        return bool(self.queue)


cdef class Credited:
    """A message from another worker with the bytes of its frame it
    stands for; its puller gives them back to the sender when it is pulled."""

    def __init__(self, message, Py_ssize_t peer, int64_t weight):
        self.message = message
        self.peer = peer
        self.weight = weight


cdef class CreditingPuller(Puller):
    """A puller of a channel between workers: pulling a message from
    another worker credits its bytes to that worker's window."""

    def __init__(self, queue, Mailbox allocator):
        self.queue = queue
        self.allocator = allocator

    cpdef pull(self):
        cdef Credited credited
        q = self.queue
        if not q:
            return None
        message = q.popleft()
        if type(message) is Credited:
            credited = <Credited>message
            self.allocator.owe(credited.peer, credited.weight)
            return credited.message
        return message


cdef class RemotePusher:
    """Queues messages for another worker; its allocator sends them as one
    batch per peer when the worker releases."""

    def __init__(self, list outbox, identifier):
        self.outbox = outbox
        self.identifier = identifier

    cpdef push(self, message):
        """Adds ``message`` to the outbox of its worker; the allocator's release sends it."""
        self.outbox.append((self.identifier, message))

    cpdef done(self):
        """Nothing to flush here: the allocator sends outboxes on release."""


cdef class Mailbox:
    """Channel queues, activation callbacks, one outbox per peer and the
    send window of worker ``index`` of ``peers``, for allocators that move
    frames (``window``: bytes per peer, None for no bound).

    Counts of bytes in flight to each peer and owed to each peer are C
    arrays; ``in_flight`` and ``owed`` show them as dicts by peer.
    """

    def __cinit__(self, Py_ssize_t index, Py_ssize_t peers, *args, **kwargs):
        if peers < 1 or not 0 <= index < peers:
            raise ConfigurationError(f"worker {index} of {peers} workers")
        self.flight = <int64_t *>calloc(peers, sizeof(int64_t))
        self.owing = <int64_t *>calloc(peers, sizeof(int64_t))
        if self.flight == NULL or self.owing == NULL:
            raise MemoryError("Mailbox: out of memory")

    def __init__(self, Py_ssize_t index, Py_ssize_t peers, window=None):
        if window is not None and window < MIN_WINDOW:
            raise ConfigurationError(f"a send window of {window} bytes is below the least, "
                                     f"{MIN_WINDOW}")
        self.index = index
        self.peers = peers
        self.queues = {}
        self.callbacks = {}
        self.outboxes = {j: [] for j in range(peers) if j != index}
        self.outbox_list = [self.outboxes.get(j) for j in range(peers)]
        self.sources = {}
        self.window = window
        self.limit = -1 if window is None else window
        self.congested_ = False
        self.waiting = []

    def __dealloc__(self):
        free(self.flight)
        free(self.owing)

    @property
    def in_flight(self):
        """Bytes sent to each peer that it has not credited back yet."""
        return {j: self.flight[j] for j in range(self.peers) if j != self.index}

    @property
    def owed(self):
        """Bytes pulled from each peer not yet credited back to it."""
        return {j: self.owing[j] for j in range(self.peers) if j != self.index}

    cdef int owe(self, Py_ssize_t peer, int64_t weight) except -1:
        self.owing[peer] += weight
        return 0

    cdef object queue_of(self, identifier):
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
        mine = self.queue_of(identifier)
        pushers = [LocalPusher(mine, on_data) if j == self.index
                   else RemotePusher(self.outbox_list[j], identifier) for j in range(self.peers)]
        if mine:
            on_data()                     # data that arrived before the channel existed
        return pushers, CreditingPuller(mine, self)

    def track_sources(self, identifier):
        """A deque that receives the sending worker of every message queued
        for channel ``identifier`` from now on, in queue order (for logs);
        messages already queued count as from worker -1 (not known)."""
        sources = self.sources.get(identifier)
        if sources is None:
            sources = self.sources[identifier] = deque([-1] * len(self.queue_of(identifier)))
        return sources

    cpdef deliver_messages(self, list messages, Py_ssize_t source=-1, Py_ssize_t nbytes=0):
        """Queues the messages of one frame of ``nbytes`` bytes from
        worker ``source`` and activates their channels' operators."""
        cdef Py_ssize_t carried = len(messages), weight = 0, extra = 0, share
        cdef bint remote = 0 <= source < self.peers and source != self.index
        cdef tuple entry
        if self.sources:
            for entry in messages:
                noted = self.sources.get(entry[0])
                if noted is not None:
                    noted.append(source)
        for entry in messages:
            if entry[0] == CREDIT:
                carried -= 1
                self.credited(source, entry[1])
        if not carried:
            return
        if remote:
            weight = nbytes // carried
            extra = nbytes - weight * carried
        callbacks = self.callbacks
        for entry in messages:
            identifier = entry[0]
            if identifier == CREDIT:
                continue
            callback = callbacks.get(identifier)
            share = weight + extra
            extra = 0
            if callback is DROPPED:
                if share:
                    self.owing[source] += share
                continue
            if callback is None:
                # No channel yet: nobody may pull it for a while.
                self.queue_of(identifier).append(entry[1])
                if share:
                    self.owing[source] += share
                continue
            self.queue_of(identifier).append(Credited(entry[1], source, share) if share
                                             else entry[1])
            callback()

    def drop_channels(self, identifiers):
        """Discards what channels ``identifiers`` hold and whatever still
        arrives for them, crediting each message's bytes to its sender."""
        cdef Credited credited
        for identifier in identifiers:
            self.callbacks[identifier] = DROPPED
            queue = self.queues.pop(identifier, None)
            while queue:
                message = queue.popleft()
                if type(message) is Credited:
                    credited = <Credited>message
                    self.owing[credited.peer] += credited.weight

    cpdef credited(self, Py_ssize_t peer, amount):
        """``peer`` gave back ``amount`` bytes of the window."""
        cdef int64_t n
        if (type(amount) is not int or not 0 <= peer < self.peers or peer == self.index
                or amount < 0 or amount > self.flight[peer]):
            have = self.flight[peer] if 0 <= peer < self.peers else 0
            raise FrameError(f"worker {peer} returned a credit of {amount!r} bytes, "
                             f"more than the {have} in flight to it")
        n = amount
        self.flight[peer] -= n
        if self.congested_ and not self.over_window():
            self.congested_ = False
            waiting, self.waiting = self.waiting, []
            for callback in waiting:
                callback()

    cdef bint over_window(self) noexcept:
        cdef Py_ssize_t j
        if self.limit < 0:
            return False
        for j in range(self.peers):
            if self.flight[j] >= self.limit:
                return True
        return False

    def congested(self):
        """True while some peer holds ``window`` bytes or more of this
        worker's frames that it has not yet credited back."""
        return self.congested_

    def full_windows(self):
        """The peers that hold a full window of this worker's data."""
        if self.limit < 0:
            return []
        return [j for j in range(self.peers) if j != self.index and self.flight[j] >= self.limit]

    def on_window(self, callback):
        """Calls ``callback()`` at once if no peer holds a full window,
        else once when a credit opens it (from ``receive``)."""
        if self.congested_:
            self.waiting.append(callback)
        else:
            callback()

    cpdef bint pending(self) except -1:
        """Something is queued to send: a message, or credit worth a frame."""
        cdef Py_ssize_t j
        cdef list outbox
        for j in range(self.peers):
            if j == self.index:
                continue
            outbox = self.outbox_list[j]
            if outbox or self.owing[j] >= CREDIT_BYTES:
                return True
        return False

    cpdef list take_outboxes(self, encode):
        """``[(peer, frame parts)]`` for every peer with something to send,
        each frame made by ``encode(messages)``. Credit owed to a peer rides
        along; a frame that carries more than credit counts as in flight,
        whole."""
        cdef Py_ssize_t j, nbytes
        cdef list outbox, parts, out = []
        for j in range(self.peers):
            if j == self.index:
                continue
            outbox = self.outbox_list[j]
            credit = self.owing[j]
            if outbox:
                if credit:
                    outbox.append((CREDIT, credit))
                    self.owing[j] = 0
                parts = encode(outbox)
                outbox.clear()
                nbytes = 0
                for part in parts:
                    nbytes += len(memoryview(part).cast("B"))
                self.flight[j] += nbytes
                out.append((j, parts))
            elif credit >= CREDIT_BYTES:
                self.owing[j] = 0
                out.append((j, encode([(CREDIT, credit)])))
        if not self.congested_ and self.over_window():
            self.congested_ = True
        return out
