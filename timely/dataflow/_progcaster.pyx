"""Progress broadcast (the Rust crate's ``Progcaster``): each worker's
progress batches reach every worker, as raw buffers.

A :class:`Progcaster` serves one scope. ``send`` hands the batch of the
scope's located pointstamp changes (a :class:`~timely.progress.ChangeBatch`
of rows ``(location, time...)``, see
:meth:`timely.progress.Tracker.absorb_located`) to every worker including
this one, over one channel per scope, and never splits it; ``recv`` appends
whatever batches have arrived to the caller's accumulation. Neither builds
a Python object per change.

A batch travels as one buffer (native byte order)::

    magic b"TLYP" | version u16 | width u16 | sender u32 | reserved u32
    sequence u64 | fingerprint u64 | count u64
    rows: count x width u64 | diffs: count x i64

``width`` is the scope's timestamp arity plus one (the location). The
receiver checks, before it touches a row, that the buffer holds exactly
what the header announces (without overflow), that the fingerprint is its
own scope's (a worker that built a different dataflow is named at its first
batch), and that the batch is the sender's next one: every batch reaches
every worker once and in order, or the receiver raises.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy

from timely.progress.change_batch cimport ChangeBatch

from timely.errors import DataflowError, FrameError

DEF HEADER = 40
DEF VERSION = 1

cdef const char *MAGIC = b"TLYP"


cdef class Progcaster:
    """The progress channel of one scope, from ``worker`` to every worker.

    ``fingerprint`` is the scope's digest (hex; its first 16 digits travel
    with each batch); ``owner`` the scope, for logs; ``on_data`` is called
    when a batch arrives (the scope's activation).
    """

    def __cinit__(self):
        self.expected = NULL
        self.tracker = None

    def __init__(self, worker, identifier, on_data, str fingerprint="", str scope="",
                 owner=None):
        self.pushers, self.puller = worker.allocator.allocate(identifier, on_data)
        self.worker = worker
        self.identifier = identifier
        self.owner = owner
        self.scope = scope
        self.fingerprint = fingerprint
        self.digest = int(fingerprint[:16], 16) if fingerprint else 0
        self.worker_index = worker.index
        self.peers = worker.peers
        self.sequence = 0
        self.expected = <uint64_t *>calloc(self.peers if self.peers > 0 else 1, sizeof(uint64_t))
        if self.expected == NULL:
            raise MemoryError("Progcaster: out of memory")

    def __dealloc__(self):
        free(self.expected)

    cpdef send(self, ChangeBatch updates):
        """Sends the changes of ``updates`` as one batch to every worker, and
        empties it (nothing is sent when they cancel out)."""
        cdef size_t n, w, nbytes
        cdef char *out
        cdef uint16_t u16
        cdef uint32_t u32
        updates.compact_now()
        n = updates.len
        if n == 0:
            return
        w = <size_t>updates.k
        nbytes = HEADER + n * (w + 1) * 8
        message = PyBytes_FromStringAndSize(NULL, nbytes)
        out = PyBytes_AS_STRING(message)
        memcpy(out, MAGIC, 4)
        u16 = VERSION
        memcpy(out + 4, &u16, 2)
        u16 = <uint16_t>w
        memcpy(out + 6, &u16, 2)
        u32 = <uint32_t>self.worker_index
        memcpy(out + 8, &u32, 4)
        u32 = 0
        memcpy(out + 12, &u32, 4)
        memcpy(out + 16, &self.sequence, 8)
        memcpy(out + 24, &self.digest, 8)
        memcpy(out + 32, &n, 8)
        memcpy(out + HEADER, updates.rows, n * w * 8)
        memcpy(out + HEADER + n * w * 8, updates.diffs, n * 8)
        updates.len = 0
        updates.clean = 0
        self.sequence += 1
        logger = self.worker.logger
        if logger is not None and logger.on_progress:
            logger.progress(True, self, self.describe(message))
        for pusher in self.pushers:
            pusher.push(message)
        for pusher in self.pushers:
            pusher.done()

    cpdef recv(self, ChangeBatch into):
        """Appends every batch received so far to ``into``."""
        pull = self.puller.pull
        logger = self.worker.logger
        while True:
            message = pull()
            if message is None:
                return
            if type(message) is not bytes and type(message) is not bytearray and \
                    type(message) is not memoryview:
                raise FrameError(f"a progress batch of scope {self.scope!r} is a "
                                 f"{type(message).__name__}, not a buffer")
            self.absorb(message, into)
            if logger is not None and logger.on_progress:
                logger.progress(False, self, self.describe(message))

    cdef int absorb(self, const unsigned char[::1] data, ChangeBatch into) except -1:
        cdef size_t nbytes = data.shape[0]
        cdef uint16_t version, width
        cdef uint32_t sender
        cdef uint64_t sequence, digest, count
        cdef size_t start
        cdef const unsigned char *p
        if nbytes < HEADER:
            raise FrameError(f"a progress batch of {nbytes} bytes is shorter than its header")
        p = &data[0]
        if memcmp(p, MAGIC, 4) != 0:
            raise FrameError("a progress batch does not start with b'TLYP'")
        memcpy(&version, p + 4, 2)
        memcpy(&width, p + 6, 2)
        memcpy(&sender, p + 8, 4)
        memcpy(&sequence, p + 16, 8)
        memcpy(&digest, p + 24, 8)
        memcpy(&count, p + 32, 8)
        if version != VERSION:
            raise FrameError(f"progress batch version {version} is not {VERSION}")
        if sender >= <uint64_t>self.peers:
            raise FrameError(f"a progress batch from worker {sender}, of {self.peers}")
        if digest != self.digest:
            raise DataflowError(
                f"worker {sender} built a different dataflow than worker "
                f"{self.worker_index} (scope {self.scope!r}): every worker must build the "
                "same operators, channels and scopes in the same order")
        if width != <uint64_t>into.k:
            raise FrameError(f"a progress batch of width {width} for scope {self.scope!r} "
                             f"of width {into.k}")
        # count x (width + 1) x 8 bytes must be exactly what follows the header.
        if count > (nbytes - HEADER) // ((<size_t>width + 1) * 8) or \
                HEADER + count * (width + 1) * 8 != nbytes:
            raise FrameError(f"a progress batch of {nbytes} bytes announces {count} changes")
        if sequence != self.expected[sender]:
            raise FrameError(f"progress batch {sequence} of worker {sender} arrived when "
                             f"batch {self.expected[sender]} was due (scope {self.scope!r})")
        self.expected[sender] += 1
        if count == 0:
            return 0
        into.reserve(count)
        start = into.len
        memcpy(&into.rows[into.len * width], p + HEADER, count * width * 8)
        memcpy(&into.diffs[into.len], p + HEADER + count * width * 8, count * 8)
        into.len += count
        if self.tracker is not None:
            try:
                self.tracker.localize(into, start, sender)
            except BaseException:
                into.len = start           # nothing of a refused batch stays
                if into.clean > start:
                    into.clean = start
                raise
        return 0

    def describe(self, message):
        """``(sender, sequence, fingerprint, [((is_source, node, port, time),
        diff)])`` of an encoded batch, for logs (a Python object per change)."""
        cdef const unsigned char[::1] data = message
        cdef uint32_t sender
        cdef uint64_t sequence
        cdef uint16_t width
        memcpy(&width, &data[6], 2)
        memcpy(&sender, &data[8], 4)
        memcpy(&sequence, &data[16], 8)
        batch = ChangeBatch(arity=width)
        saved = self.expected[sender]
        self.expected[sender] = sequence
        try:
            self.absorb(data, batch)
        finally:
            self.expected[sender] = saved
        return (sender, sequence, self.fingerprint, self.owner.tracker.located_items(batch))

    def __repr__(self):
        return f"Progcaster(scope={self.scope!r}, sent={self.sequence})"
