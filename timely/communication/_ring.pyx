"""Python ends of the shared-memory SPSC ring in csrc/ring.c.

A :class:`RingWriter` sends whole messages (any bytes-like object); a message
larger than one record travels as several chunks. When the ring is full the
writer keeps the rest queued and ``flush`` retries later: sending never blocks.
A :class:`RingReader` returns complete messages, reassembled, or None.

Ownership: both ends keep a reference to the buffer they were given; the
memory (an mmap or shared-memory segment) must outlive them, and its owner
unlinks it.
"""

from collections import deque

from libc.stdint cimport uint32_t, uint64_t

from timely.errors import TimelyError


class RingError(TimelyError, RuntimeError):
    """The ring's memory is too small, was not formatted, or holds a corrupt record."""


cdef unsigned char *address_of(object view, size_t *size) except NULL:
    cdef unsigned char[::1] bytes_view = view
    if bytes_view.shape[0] == 0:
        raise RingError("a ring needs a non-empty writable buffer")
    size[0] = bytes_view.shape[0]
    return &bytes_view[0]


cdef unsigned char *attach(object view) except NULL:
    """The address of a formatted ring held in ``view``."""
    cdef size_t size
    cdef unsigned char *mem = address_of(view, &size)
    if tly_ring_check(mem, size) != TLY_RING_OK:
        raise RingError("the buffer does not hold a formatted ring")
    return mem


def format_ring(buffer):
    """Formats ``buffer`` (writable, 8-byte aligned) as an empty ring; returns its capacity."""
    cdef size_t size
    cdef unsigned char *mem = address_of(memoryview(buffer).cast("B"), &size)
    cdef uint64_t cap = tly_ring_init(mem, size)
    if cap == 0:
        raise RingError(f"a ring needs at least {TLY_RING_HEADER + 64} aligned bytes, not {size}")
    return cap


cdef class RingWriter:
    """The producing end. ``send(data)`` queues a message and writes what fits."""

    def __init__(self, buffer):
        self._view = memoryview(buffer).cast("B")
        self._mem = attach(self._view)
        self._chunk = tly_ring_max_record(self._mem)
        self._pending = deque()
        self._offset = 0
        self._queued = 0

    def send(self, data) -> bool:
        """Queues one message; returns True when all queued messages are in the ring."""
        view = memoryview(data).cast("B")
        self._pending.append(view)
        self._queued += view.nbytes
        return self.flush()

    def flush(self) -> bool:
        """Writes queued chunks while there is room; True when nothing is left queued."""
        cdef const unsigned char[::1] msg
        cdef size_t n, total
        cdef uint32_t flags
        cdef int rc
        cdef const unsigned char *start
        pending = self._pending
        while pending:
            msg = pending[0]
            total = msg.shape[0]
            while True:
                n = total - self._offset
                if n > self._chunk:
                    n = self._chunk
                flags = TLY_RING_MORE if self._offset + n < total else 0
                start = &msg[self._offset] if total else NULL
                with nogil:
                    rc = tly_ring_push(self._mem, start, <uint32_t>n, flags)
                if rc == TLY_RING_FULL:
                    return False
                if rc != TLY_RING_OK:
                    raise RingError(f"ring push failed with code {rc}")
                self._offset += n
                self._queued -= n
                if self._offset >= total:
                    break
            pending.popleft()
            self._offset = 0
        return True

    @property
    def queued_bytes(self) -> int:
        """Bytes accepted by ``send`` that are not in the ring yet."""
        return self._queued

    @property
    def max_chunk(self) -> int:
        return self._chunk


cdef class RingReader:
    """The consuming end. ``recv()`` returns the next complete message or None."""

    def __init__(self, buffer):
        self._view = memoryview(buffer).cast("B")
        self._mem = attach(self._view)
        self._parts = []

    def recv(self):
        """The next complete message as bytes, or None when none is complete yet."""
        cdef const void *payload
        cdef uint32_t length, flags
        cdef int rc
        while True:
            with nogil:
                rc = tly_ring_peek(self._mem, &payload, &length, &flags)
            if rc == TLY_RING_EMPTY:
                return None
            if rc != TLY_RING_OK:
                raise RingError(f"corrupt ring record (code {rc})")
            part = (<const char *>payload)[:length]
            tly_ring_pop(self._mem)
            if flags & TLY_RING_MORE:
                self._parts.append(part)
                continue
            if self._parts:
                self._parts.append(part)
                whole = b"".join(self._parts)
                self._parts = []
                return whole
            return part

    def used_bytes(self) -> int:
        return tly_ring_used(self._mem)
