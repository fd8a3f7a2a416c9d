"""The shared-memory ring: one producer, one consumer, whole messages.

The ring itself is plain C (``csrc/ring.c``: C11 atomics, cache-line padded
head and tail, wrap-around, caller-provided memory); this module re-exports
its compiled Python ends:

- :func:`format_ring` ``(buffer) -> capacity`` formats writable, 8-byte
  aligned memory (a slice of a :class:`timely.communication.shm.Segment`) as
  an empty ring.
- :class:`RingWriter` ``(buffer)``: ``send(data)``, ``send_parts(parts)``
  (one message made of several buffers, never joined) and ``flush()``. A
  message larger than a record travels as several chunks; when the ring is
  full the rest stays queued in the writer (``queued_bytes``) until a later
  ``flush``: sending never blocks and never drops.
- :class:`RingReader` ``(buffer)``: ``recv()`` a whole message or None,
  ``recv_view()``/``release()`` to read one in place, and ``recv_frame()``,
  which decodes a frame (:mod:`timely.communication.codec`) straight into
  its final arrays.
- :class:`ParkFlag` ``(buffer)``: a worker's "parked" flag in shared memory
  (:data:`PARK_FLAG_BYTES`, formatted by :func:`format_park_flag`): the
  worker ``announce``s it, re-checks its rings and only then parks, and
  ``clear``s it once awake; a sender that wrote into one of its rings rings
  its doorbell only when ``wanted()``. Fences on both sides (C11 seq_cst)
  make sure that either the worker sees the data or the sender sees the
  flag: no wake-up is lost, and an awake worker costs its senders no
  system call.

Guarantees: FIFO, at most once, no torn messages, between exactly one writer
and one reader (threads or processes). Costs: one copy into the ring and one
out of it; no lock and no system call (waking the reader is the doorbell's
job, :mod:`timely.communication.doorbell`). Both ends keep a reference to
their buffer; the memory must outlive them and its owner unlinks it.
:class:`timely.errors.RingError` reports memory that holds no ring.

>>> buffer = bytearray(4096)
>>> capacity = format_ring(buffer)
>>> writer, reader = RingWriter(buffer), RingReader(buffer)
>>> writer.send(b"hello")
True
>>> reader.recv(), reader.recv()
(b'hello', None)
"""

from timely.communication._ring import (
    PARK_FLAG_BYTES,
    ParkFlag,
    RingReader,
    RingWriter,
    format_park_flag,
    format_ring,
    receive_frames,
    release_frames,
    spin_until_data,
)

__all__ = ["PARK_FLAG_BYTES", "ParkFlag", "RingReader", "RingWriter", "format_park_flag",
           "format_ring", "receive_frames", "release_frames", "spin_until_data"]
