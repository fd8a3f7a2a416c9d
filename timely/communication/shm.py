"""Shared-memory segments holding rings, and their owner.

A :class:`Segment` is a POSIX shared-memory segment (a file in ``/dev/shm``
on Linux) with exactly one owner: the process that created it, whose pid is
part of its name (``timely-<pid>-<tag>``). Only the owner unlinks it; any
other process on the host may :meth:`Segment.attach` it by name and must
only close its own mapping. An owner that dies without unlinking leaves the
file behind: :func:`sweep_orphans`, which every launcher and every Spark task
calls when it starts, removes the segments whose owner no longer runs and
spares every other file. Python's resource tracker also unlinks the segments
of an owner that dies, when the tracker itself survives it.

One layout, :class:`Inboxes`, places the rings in a segment: a segment holds
the inboxes of ``receivers`` workers, and each inbox one ring from each of
``senders`` workers, :data:`RING_BYTES` per ring, receiver-major, followed by
one park flag per receiver (:class:`timely.communication.ring.ParkFlag`, a
cache line each), which tells senders whether that receiver must be woken
after they wrote into its rings. The process
launcher makes one segment with the inboxes of all its workers
(``Inboxes(local, local)``); a Spark task makes one segment with its own
inbox (``Inboxes(1, peers)``) and writes into its local peers' segments.

Costs: a segment costs address space for every ring and memory only for the
pages that are written; formatting a ring writes its header only. A worker
maps the rings it uses (:meth:`Segment.prefault`) when it starts, a ring
(1 MiB) per pair of workers on one host that exchange, so that its sends
and receives take no page faults.

>>> layout = Inboxes(receivers=2, senders=2)
>>> layout.size == 4 * RING_BYTES + 2 * PARK_FLAG_BYTES
True
>>> layout.offset(receiver=1, sender=0) == 2 * RING_BYTES
True
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
from multiprocessing import resource_tracker, shared_memory

from timely.communication.ring import PARK_FLAG_BYTES, ParkFlag, format_park_flag, format_ring

#: The prefix of every segment's name; the owner's pid follows it.
PREFIX = "timely-"
#: Bytes per ring: 1 MiB of records and the ring's header.
RING_BYTES = (1 << 20) + 192
#: ``madvise`` advice to map a range's pages for writing (Linux 5.14 and later).
MADV_POPULATE_WRITE = 23
#: Where POSIX shared memory appears as files on Linux.
SHM_DIRECTORY = "/dev/shm"

log = logging.getLogger(__name__)


def segment_name(pid: int | None = None, tag: str | None = None) -> str:
    """``timely-<pid>-<tag>``: the name of a segment owned by process ``pid``
    (this one by default), made unique by ``tag`` (random by default)."""
    pid = os.getpid() if pid is None else pid
    tag = os.urandom(6).hex() if tag is None else tag
    return f"{PREFIX}{pid}-{tag}"


def owner_of(name: str) -> int | None:
    """The pid in a segment's name, or None for a name not made by :func:`segment_name`."""
    if not name.startswith(PREFIX):
        return None
    try:
        return int(name[len(PREFIX):].split("-")[0])
    except ValueError:
        return None


def sweep_orphans(directory: str = SHM_DIRECTORY) -> list[str]:
    """Removes segments whose owner no longer runs; returns their names.

    A segment is removed only when its name was made by :func:`segment_name`
    and no process has the pid in it; segments of live processes, of
    processes this user may not signal, and every other file are left alone.
    """
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        pid = owner_of(name)
        if pid is None:
            continue
        try:
            os.kill(pid, 0)
            continue                      # its owner still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
            log.warning("removed shared-memory segment %s left by process %d, which is gone",
                        name, pid)
    return removed


_DEFERRED: list = []      # segments whose unmapping waits for their last view


def _close_deferred() -> None:
    for segment in list(_DEFERRED):
        try:
            segment._memory.close()
        except BufferError:
            continue
        _DEFERRED.remove(segment)


class Segment:
    """A named shared-memory segment: ``buf`` is its memory, ``name`` its name.

    :meth:`create` makes a new one owned by this process; :meth:`attach` maps
    another's. ``close`` unmaps (every process, once it holds no view of
    ``buf`` any more); ``unlink`` removes the name (the owner only, once every
    process that needs it has attached). A process forked after ``create``
    shares the owner's mapping: it uses the same object and only closes it.
    """

    __slots__ = ("_memory", "name", "owner", "size")

    def __init__(self, memory: shared_memory.SharedMemory, owner: bool):
        self._memory = memory
        self.name: str = memory.name
        self.size: int = memory.size
        self.owner = owner

    @classmethod
    def create(cls, size: int) -> Segment:
        """A new zero-filled segment of ``size`` bytes owned by this process."""
        _close_deferred()
        memory = shared_memory.SharedMemory(name=segment_name(), create=True, size=size)
        return cls(memory, owner=True)

    @classmethod
    def attach(cls, name: str) -> Segment:
        """Maps the segment ``name`` that another process owns."""
        _close_deferred()
        memory = shared_memory.SharedMemory(name=name)
        # Opening registers the name with this process's resource tracker,
        # which would unlink it when this process ends: the owner does that.
        with contextlib.suppress(Exception):
            resource_tracker.unregister("/" + memory.name, "shared_memory")
        return cls(memory, owner=False)

    def prefault(self, start: int = 0, length: int | None = None) -> None:
        """Maps the pages of ``length`` bytes from ``start`` (the whole
        segment by default) into this process now, writable (Linux 5.14's
        ``MADV_POPULATE_WRITE``): a ring's writes then take no page fault
        one page at a time. On a kernel without that advice, pages are
        mapped as they are first touched instead."""
        length = self.size - start if length is None else length
        first = start - start % mmap.PAGESIZE
        try:
            self._memory._mmap.madvise(  # type: ignore[attr-defined]
                MADV_POPULATE_WRITE, first, min(self.size, start + length) - first)
        except (OSError, AttributeError, ValueError):
            pass

    @property
    def buf(self) -> memoryview:
        """The segment's memory, as a writable memoryview."""
        return self._memory.buf  # type: ignore[return-value]  # None only once closed

    def close(self) -> None:
        """Unmaps the segment from this process; raises BufferError while a
        view of ``buf`` (a ring end) is still alive."""
        self._memory.close()

    def close_when_free(self) -> None:
        """Unmaps the segment now, or, while a view of ``buf`` is still alive
        (a failed computation's ring ends, held by its traceback), as soon as
        a later segment is made, attached or closed here after the views
        are gone. The segment is held until then, so that the collector
        never finds it mapped and viewed."""
        _close_deferred()
        try:
            self._memory.close()
        except BufferError:
            _DEFERRED.append(self)

    def unlink(self) -> None:
        """Removes the segment's name (owner only); mappings stay valid."""
        if not self.owner:
            raise PermissionError(f"segment {self.name} belongs to process {owner_of(self.name)}")
        with contextlib.suppress(FileNotFoundError):
            self._memory.unlink()

    def __repr__(self) -> str:
        return f"Segment({self.name!r}, size={self.size}, owner={self.owner})"


class Inboxes:
    """The layout of rings in a segment: the inboxes of ``receivers``
    workers, each with one ring from each of ``senders`` workers."""

    __slots__ = ("receivers", "senders", "ring_bytes")

    def __init__(self, receivers: int, senders: int, ring_bytes: int = RING_BYTES):
        self.receivers = receivers
        self.senders = senders
        self.ring_bytes = ring_bytes

    @property
    def size(self) -> int:
        """Bytes of a segment holding this layout."""
        return self.receivers * self.senders * self.ring_bytes + self.receivers * PARK_FLAG_BYTES

    def offset(self, receiver: int, sender: int) -> int:
        """Where the ring from ``sender`` to ``receiver`` (slots in this layout) starts."""
        if not (0 <= receiver < self.receivers and 0 <= sender < self.senders):
            raise IndexError(f"no ring from slot {sender} to slot {receiver} in {self!r}")
        return (receiver * self.senders + sender) * self.ring_bytes

    def prefault(self, segment: Segment, receiver: int, sender: int) -> None:
        """Maps the ring from ``sender`` to ``receiver`` of ``segment`` into
        this process now (:meth:`Segment.prefault`)."""
        segment.prefault(self.offset(receiver, sender), self.ring_bytes)

    def ring(self, buf, receiver: int, sender: int) -> memoryview:
        """The bytes of that ring in ``buf`` (a segment's memory)."""
        start = self.offset(receiver, sender)
        return memoryview(buf)[start:start + self.ring_bytes]

    def flag_offset(self, receiver: int) -> int:
        """Where the park flag of ``receiver`` (a slot in this layout) starts."""
        if not 0 <= receiver < self.receivers:
            raise IndexError(f"no receiver slot {receiver} in {self!r}")
        return self.receivers * self.senders * self.ring_bytes + receiver * PARK_FLAG_BYTES

    def flag(self, buf, receiver: int) -> ParkFlag:
        """The park flag of ``receiver`` in ``buf`` (a segment's memory)."""
        start = self.flag_offset(receiver)
        return ParkFlag(memoryview(buf)[start:start + PARK_FLAG_BYTES])

    def format(self, buf) -> None:
        """Formats every ring of the layout in ``buf`` as empty and every
        park flag as clear."""
        for receiver in range(self.receivers):
            for sender in range(self.senders):
                format_ring(self.ring(buf, receiver, sender))
            start = self.flag_offset(receiver)
            format_park_flag(memoryview(buf)[start:start + PARK_FLAG_BYTES])

    def __repr__(self) -> str:
        return f"Inboxes(receivers={self.receivers}, senders={self.senders})"


__all__ = ["PREFIX", "RING_BYTES", "SHM_DIRECTORY", "Inboxes", "Segment", "owner_of",
           "segment_name", "sweep_orphans"]
