"""Python ends of the shared-memory SPSC ring in csrc/ring.c.

A :class:`RingWriter` sends whole messages (any bytes-like object); a message
larger than one record travels as several chunks. When the ring is full the
writer keeps the rest queued and ``flush`` retries later: sending never blocks.
A :class:`RingReader` returns complete messages, reassembled, or None.

Frames (:mod:`timely.communication.codec`) go through the same records:
``send_parts`` writes a frame's buffers back to back as one message without
joining them, and ``recv_frame`` copies each record's bytes straight into the
frame's final arrays, allocated from its header, so a column crosses with one
copy into the ring and one copy out of it. A frame that fits one record (a
small one) is copied out whole into one buffer that its columns view.

Ownership: both ends keep a reference to the buffer they were given; the
memory (an mmap or shared-memory segment) must outlive them, and its owner
unlinks it.
"""

from collections import deque

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from cpython.bytearray cimport PyByteArray_FromStringAndSize

from timely.communication._codec cimport Header, frame_length
from timely.communication._codec import decode
from timely.communication._mailbox cimport Mailbox

DEF PREFIX_BYTES = 32            # a frame's fixed prefix (timely.communication.codec)
from timely.errors import RingError, TimelyError


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
        self._pending.append((view, True))
        self._queued += view.nbytes
        return self.flush()

    def send_parts(self, parts) -> bool:
        """Queues one message made of ``parts`` (bytes-like, sent back to back
        without being joined); returns True when all of it is in the ring.
        The parts must not change until they are written."""
        cdef Py_ssize_t i, last = len(parts) - 1
        if last < 0:
            return self.send(b"")
        for i in range(last + 1):
            view = memoryview(parts[i]).cast("B")
            self._pending.append((view, i == last))
            self._queued += view.nbytes
        return self.flush()

    def flush(self) -> bool:
        """Writes queued chunks while there is room; True when nothing is left queued."""
        cdef const unsigned char[::1] msg
        cdef size_t n, total
        cdef uint32_t flags
        cdef int rc
        cdef const unsigned char *start
        cdef bint last
        pending = self._pending
        while pending:
            msg, last = pending[0]
            total = msg.shape[0]
            while True:
                n = total - self._offset
                if n > self._chunk:
                    n = self._chunk
                flags = TLY_RING_MORE if (self._offset + n < total or not last) else 0
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

    def want_room(self) -> None:
        """Asks the reader to tell this writer when it next frees room (its
        ``room_wanted()`` turns True once); call ``flush`` once more after
        it, and wait for the reader's wake-up only if bytes stay queued
        (``csrc/ring.h``)."""
        tly_ring_want_room(self._mem)

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
        self._borrowed = False
        self._reset_frame()

    cdef int _peek(self, const void **payload, uint32_t *length, uint32_t *flags) except -1:
        """0 with the next record's payload, length and flags; 1 when the ring is empty."""
        cdef int rc
        with nogil:
            rc = tly_ring_peek(self._mem, payload, length, flags)
        if rc == TLY_RING_EMPTY:
            return 1
        if rc != TLY_RING_OK:
            raise RingError(f"corrupt ring record (code {rc})")
        return 0

    def room_wanted(self) -> bool:
        """True, once per request, when the writer asked (``want_room``) to
        be woken when room is freed: the reader asks after it has read."""
        return tly_ring_room_wanted(self._mem) != 0

    cdef _reset_frame(self):
        self._frame_bytes = 0
        self._head = bytearray()
        self._head_need = -1
        self._header = None
        self._dests = None
        self._seg = 0
        self._seg_off = 0
        self._dst = NULL
        self._dst_len = 0
        self._dst_pad = 0
        self._dst_obj = None

    cdef int _enter_segment(self) except -1:
        """Points the copy at the current segment, skipping empty ones."""
        cdef unsigned char[::1] target
        cdef list sizes = self._header.sizes
        while self._seg < len(sizes):
            size = sizes[self._seg]
            self._dst_len = size
            self._dst_pad = size + (-size % 8)
            self._seg_off = 0
            if self._dst_pad:
                if size:
                    self._dst_obj = memoryview(self._dests[self._seg]).cast("B")
                    target = self._dst_obj
                    self._dst = &target[0]
                else:
                    self._dst = NULL
                return 0
            self._seg += 1
        self._dst = NULL
        self._dst_len = 0
        self._dst_pad = 0
        return 0

    cdef Py_ssize_t _take(self, const unsigned char *p, Py_ssize_t n) except -1:
        """Consumes up to ``n`` bytes of the frame from ``p``; returns how many."""
        cdef Py_ssize_t take, need, copy
        if self._header is None:
            need = (PREFIX_BYTES if self._head_need < 0 else self._head_need) - len(self._head)
            take = n if n < need else need
            self._head += (<const char *>p)[:take]
            if self._head_need < 0 and len(self._head) == PREFIX_BYTES:
                length = frame_length(self._head)
                self._head_need = length + ((8 - (length & 7)) & 7)
                if self._head_need == PREFIX_BYTES:
                    self._open_frame()
            elif len(self._head) == self._head_need:
                self._open_frame()
            return take
        if self._seg >= len(self._header.sizes):
            raise RingError("a frame carries more bytes than its header announces")
        take = self._dst_pad - self._seg_off
        if take > n:
            take = n
        if self._seg_off < self._dst_len:
            copy = self._dst_len - self._seg_off
            if copy > take:
                copy = take
            with nogil:
                memcpy(self._dst + self._seg_off, p, copy)
        self._seg_off += take
        if self._seg_off == self._dst_pad:
            self._seg += 1
            self._enter_segment()
        return take

    cdef int _open_frame(self) except -1:
        self._header = Header(self._head)
        self._dests = self._header.destinations()
        self._seg = 0
        self._enter_segment()
        return 0

    def recv_frame(self):
        """The next complete frame's messages ``[(identifier, message), ...]``,
        or None when none is complete yet (what arrived is kept)."""
        cdef const void *payload
        cdef const unsigned char *p
        cdef uint32_t length, flags
        cdef Py_ssize_t n, used
        self.release()
        while True:
            if self._peek(&payload, &length, &flags):
                return None
            p = <const unsigned char *>payload
            n = length
            if self._header is None and not self._head and not (flags & TLY_RING_MORE):
                # A whole frame in one record (a small one): one copy into
                # one writable buffer, which its columns and raw messages view.
                frame = PyByteArray_FromStringAndSize(<const char *>p, n)
                tly_ring_pop(self._mem)
                self.last_frame_bytes = n
                return decode(frame)
            self._frame_bytes += n
            while n:
                used = self._take(p, n)
                p += used
                n -= used
            tly_ring_pop(self._mem)
            if not (flags & TLY_RING_MORE):
                header = self._header
                if header is None or self._seg < len(header.sizes):
                    self._reset_frame()
                    raise RingError("a frame ended before all its bytes arrived")
                messages = header.messages(self._dests)
                self.last_frame_bytes = self._frame_bytes
                self._reset_frame()
                return messages

    def recv(self):
        """The next complete message as bytes, or None when none is complete yet."""
        cdef const void *payload
        cdef uint32_t length, flags
        self.release()
        while True:
            if self._peek(&payload, &length, &flags):
                return None
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

    def recv_view(self):
        """The next complete message without copying it out of the ring when
        it is one record: a read-only memoryview into the ring, valid only
        until the next ``recv``/``recv_view``/``recv_frame`` or ``release()``
        (after that the producer may overwrite those bytes). A message in
        several chunks is reassembled into bytes. None when none is complete."""
        cdef const void *payload
        cdef uint32_t length, flags
        self.release()
        if self._peek(&payload, &length, &flags):
            return None
        if (flags & TLY_RING_MORE) or self._parts:
            return self.recv()
        cdef Py_ssize_t offset = <const unsigned char *>payload - self._mem
        self._borrowed = True
        return self._view[offset:offset + length].toreadonly()

    def release(self) -> None:
        """Gives back the record lent by the last ``recv_view``."""
        if self._borrowed:
            self._borrowed = False
            tly_ring_pop(self._mem)

    def used_bytes(self) -> int:
        return tly_ring_used(self._mem)


def receive_frames(list readers, Mailbox mailbox, logger=None, dict bells=None):
    """Delivers every complete frame that ``readers`` (``(peer, RingReader)``
    pairs) hold to ``mailbox``, frame by frame, in each ring's order; an
    empty ring costs a look at its head. A writer that found its ring full
    and asked for room (``RingWriter.want_room``) is woken through
    ``bells[peer]`` once this has read from it."""
    cdef RingReader reader
    cdef tuple pair
    cdef list messages
    cdef bint read
    for item in readers:
        pair = <tuple>item
        reader = <RingReader>pair[1]
        read = False
        while reader._header is not None or tly_ring_used(reader._mem):
            read = True
            frame = reader.recv_frame()
            if frame is None:
                break
            messages = <list>frame
            if logger is not None:
                logger.frame(False, pair[0], len(messages), -1)
            mailbox.deliver_messages(messages, pair[0], reader.last_frame_bytes)
        if read and bells is not None and tly_ring_room_wanted(reader._mem):
            bells[pair[0]].ring()


def release_frames(Mailbox mailbox, encode, dict writers, set backlog, dict links,
                   dict peer_flags, dict peer_bells, logger=None):
    """Sends every outbox of ``mailbox`` as one frame (``encode``) per peer:
    into the peer's ring (``writers``; what a full ring does not take waits
    in ``backlog``, the peers whose writers hold bytes, and goes with the
    next release) or to its TCP link (``links``). A peer whose ring got
    bytes is rung only when its park flag is up (or it has none)."""
    cdef list rung = []
    cdef RingWriter writer
    cdef ParkFlag flag
    if not backlog and not mailbox.pending():
        return
    for item in mailbox.take_outboxes(encode):
        j, parts = <tuple>item
        if logger is not None:
            logger.frame(True, j, -1, sum(memoryview(p).nbytes for p in parts))
        entry = writers.get(j)
        if entry is None:
            links[j].send(parts)
            continue
        writer = <RingWriter>entry
        if not writer.send_parts(parts):
            backlog.add(j)
        rung.append(j)
    if backlog:
        for j in list(backlog):
            writer = <RingWriter>writers[j]
            if j not in rung:
                rung.append(j)
                writer.flush()
            if writer._queued:
                # Still full: the reader wakes this worker once it has read
                # (a look after the request, or the reader sees it).
                tly_ring_want_room(writer._mem)
                writer.flush()
            if not writer._queued:
                backlog.discard(j)
    for j in rung:
        # The data is in the ring: ring the peer only if it may sleep.
        entry = peer_flags.get(j)
        if entry is None:
            peer_bells[j].ring()
        else:
            flag = <ParkFlag>entry
            if tly_park_wanted(flag._mem):
                peer_bells[j].ring()


cdef extern from "<sched.h>" nogil:
    int sched_yield()


cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clock, timespec *ts)
    enum:
        CLOCK_MONOTONIC


cdef inline double monotonic() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


def spin_until_data(list readers, double seconds, inbox=None):
    """Polls ``readers`` (``RingReader`` s) for up to ``seconds``, yielding
    the processor between looks (``sched_yield``: a peer that shares this
    core runs meanwhile); True as soon as one holds data or ``inbox`` is
    non-empty. What a worker does before it parks: a peer that answers
    within the spin wakes it with no system call on either side (a wake-up
    through a doorbell costs both a few microseconds of kernel time on a
    virtual machine), and a wait longer than the spin costs at most the
    spin."""
    cdef Py_ssize_t i, n = len(readers)
    cdef RingReader reader
    cdef double until = monotonic() + seconds
    if n == 0 or seconds <= 0:
        return False
    while True:
        for i in range(n):
            reader = <RingReader>readers[i]
            if tly_ring_used(reader._mem):
                return True
        if inbox:
            return True
        if monotonic() >= until:
            return False
        with nogil:
            sched_yield()


def format_park_flag(buffer):
    """Formats ``buffer`` (writable, 8-byte aligned, at least
    ``PARK_FLAG_BYTES``) as a clear park flag."""
    cdef size_t size
    cdef unsigned char *mem = flag_address(memoryview(buffer).cast("B"), &size)
    tly_park_init(mem)


cdef unsigned char *flag_address(object view, size_t *size) except NULL:
    cdef unsigned char *mem = address_of(view, size)
    if size[0] < TLY_PARK_FLAG_BYTES or (<size_t>mem) % 8:
        raise RingError(f"a park flag needs {TLY_PARK_FLAG_BYTES} aligned bytes, not {size[0]}")
    return mem


#: Bytes of one park flag (a cache line).
PARK_FLAG_BYTES = TLY_PARK_FLAG_BYTES


cdef class ParkFlag:
    """A worker's park flag in shared memory (``csrc/ring.h``): its owner
    ``announce``s before it re-checks its rings and parks, and ``clear``s it
    once awake; a sender that wrote into one of the owner's rings asks
    ``wanted()`` and rings the owner's doorbell only when it is True."""

    def __init__(self, buffer):
        cdef size_t size
        self._view = memoryview(buffer).cast("B")
        self._mem = flag_address(self._view, &size)

    def announce(self) -> None:
        tly_park_announce(self._mem)

    def clear(self) -> None:
        tly_park_clear(self._mem)

    def wanted(self) -> bool:
        return tly_park_wanted(self._mem) != 0
