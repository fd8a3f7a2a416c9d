"""Allocators over shared-memory rings and TCP links.

:class:`RingAllocator` is worker ``index`` of ``peers``: it reaches each
peer on its host through a pair of rings (:mod:`timely.communication.ring`,
laid out in a segment by :mod:`timely.communication.shm`) and a doorbell
(:mod:`timely.communication.doorbell`), and each peer on another host
through a :class:`timely.communication.tcp.Link`. During a step a worker
queues what it sends to a peer (:class:`BatchingAllocator`); ``release``
encodes one frame per peer (:mod:`timely.communication.codec`), writes it
into the pair's ring and rings the peer's doorbell if it is parked, or hands
it to the link.
A full ring keeps the rest queued in its writer for the next release, so no
worker ever blocks on another; the writer asks the ring's reader for room
(``RingWriter.want_room``) and the reader, once it has read from that ring,
rings the writer's doorbell (``receive_frames``): a worker with queued bytes
parks until then, with no polling. ``park`` waits on the worker's own
doorbell.

Waking only who sleeps: with park flags (:class:`timely.communication.ring.ParkFlag`,
one per worker, in shared memory beside the rings), a worker about to park
sets its flag, looks at its rings once more and only then waits; a sender
rings a peer's doorbell only when that peer's flag is set, so that senders
to a busy peer make no system call. Without flags (``flag=None``) every
write rings. Link threads, failures and :meth:`RingAllocator.unpark` always
ring.

Fail-stop: a link that loses its peer calls :meth:`RingAllocator.fail`;
the next ``receive`` or ``park`` raises :class:`timely.errors.WorkerFailed`
naming the peer. Supervising processes (who started them, who stops them)
is the launcher's business (:mod:`timely.launch`), not this module's.

:class:`ProcessAllocator` is the ring allocator of a worker forked by the
process launcher: the rings of its host's workers in one segment laid out as
``Inboxes(local, local)``, with one park flag per worker, and one eventfd
doorbell per worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import time
from collections import deque

from timely.communication.allocator import DEFAULT_WINDOW, BatchingAllocator
from timely.communication.doorbell import EventfdDoorbell
from timely.communication.ring import (
    RingReader,
    RingWriter,
    receive_frames,
    release_frames,
    spin_until_data,
)
from timely.communication.shm import Inboxes
from timely.errors import ConfigurationError, WorkerFailed

# Seconds a worker with nothing to do polls its rings before it parks: on a
# virtual machine a round trip through doorbells (eventfd and select) took
# 44 us of wall time and 16 us of CPU on each side, against 0.5 us through
# shared memory, so a short spin that yields the core is cheaper than a
# wake-up whenever the peer answers within it. The default of
# ``CommunicationSettings.spin`` (``TIMELY_SPIN``) while a host runs no
# more workers than it has cores (:func:`default_spin`).
SPIN = 100e-6

# The default spin where a host runs more workers than it has cores: a few
# looks, each after yielding the core to whichever peer can run on it. On a
# shared 2-core host with 3 and 4 workers, no spin at all cost 10-40% more
# CPU per epoch than this or SPIN (a peer woken through its doorbell costs
# more than one handed the core by a yield); a short one keeps a worker
# that shares its core with other waiters from polling long.
SHARED_SPIN = 10e-6


def host_cores() -> int:
    """The processors this process may run on (its affinity mask; the
    machine's count where there is none), at least 1. One system call."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_spin(local_workers: int, cores: int | None = None) -> float:
    """The spin of a worker one of ``local_workers`` on a host with
    ``cores`` processors (by default :func:`host_cores`): ``SPIN`` while
    every worker can have a core of its own, else ``SHARED_SPIN``, so that
    a worker whose core other workers need parks after a few yields."""
    cores = host_cores() if cores is None else cores
    return SPIN if local_workers <= cores else SHARED_SPIN


log = logging.getLogger(__name__)


class RingAllocator(BatchingAllocator):
    """Worker ``index`` of ``peers`` exchanging with some peers through rings
    (``writers[j]`` to worker j, ``readers[j]`` from it) and with the others
    over links added with :meth:`add_links` (TCP). ``bell`` is this worker's
    doorbell (:class:`timely.communication.doorbell.Doorbell`);
    ``peer_bells[j]`` rings worker j's after data was written to it.
    ``flag`` is this worker's :class:`~timely.communication.ring.ParkFlag`
    and ``peer_flags[j]`` worker j's; a peer without one (or every peer,
    when ``flag`` is None) is rung after every write.

    ``window`` is the send window in bytes per peer (None: unbounded) and
    ``spin`` how long :meth:`park` first polls the rings, yielding the core
    between looks, before it announces the wait and sleeps (0: never); a
    launcher gives both from its configuration
    (:class:`timely.config.CommunicationSettings`).

    ``connection_log`` keeps ``(peer, state, detail)`` of every link made,
    for loggers registered later; ``logger``, when set, receives frame and
    connection events."""

    def __init__(self, index: int, peers: int, writers: dict, readers: dict, bell, peer_bells,
                 *, flag=None, peer_flags=None, window: int | None = DEFAULT_WINDOW,
                 spin: float = SPIN):
        super().__init__(index, peers, window)
        self.writers = writers
        self.readers = readers
        self.bell = bell
        self.peer_bells = peer_bells
        self.flag = flag
        self.peer_flags = peer_flags if peer_flags is not None else {}
        self.links: dict = {}
        # (peer, reader) pairs, and the writers holding bytes a full ring
        # has not taken yet (sent again on every release until it has).
        self._readers = list(readers.items())
        self._ring_readers = list(readers.values())
        if not spin >= 0:
            raise ConfigurationError(f"spin is a number of seconds, not {spin!r}")
        self.spin = float(spin)
        self._backlog: set = set()
        self.inbox: deque = deque()
        self.failure: str | None = None
        self.connection_log: list = []    # (peer, state, detail), for logs registered later

    def add_links(self, links: dict) -> None:
        """Connections to workers on other hosts, keyed by worker index; they
        call :meth:`deliver` and :meth:`fail` from their own threads."""
        self.links.update(links)
        for peer, link in links.items():
            detail = ""
            with contextlib.suppress(Exception):
                host, port = link.sock.getpeername()[:2]
                detail = f"{host}:{port}"
            self.connection_log.append((peer, "connected", detail))
            log.info("worker %d: linked to worker %d at %s", self.index, peer, detail)

    def deliver(self, peer: int, frame) -> None:
        """Queues a frame that a link received from ``peer`` and wakes the
        worker; called from the link's thread."""
        self.inbox.append((peer, frame))
        self.bell.ring()

    def fail(self, reason: str) -> None:
        """Records the first failure (a lost link) and wakes the worker,
        whose next ``receive`` or ``park`` raises WorkerFailed."""
        if self.failure is None:
            self.failure = reason
            log.error("worker %d: %s", self.index, reason)
            if self.logger is not None:
                self.logger.connection(-1, "failed", reason)
        self.bell.ring()

    def receive(self) -> None:
        """Delivers what the rings and the TCP links brought (what this worker
        pushed waits for :meth:`release`). Raises WorkerFailed once a link
        failed."""
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")
        logger = self.logger
        receive_frames(self._readers, self, logger, self.peer_bells)
        inbox = self.inbox
        while inbox:
            peer, frame = inbox.popleft()
            if logger is not None:
                logger.frame(False, peer, -1, len(frame))
            self.deliver_frame(frame, peer)

    def release(self) -> None:
        """Sends every outbox: into the peer's ring (ringing its doorbell
        only when it announced that it parks) or to its TCP link."""
        release_frames(self, self._encode, self.writers, self._backlog, self.links,
                       self.peer_flags, self.peer_bells, self.logger)

    def park(self, timeout) -> None:
        """Sleeps on this worker's doorbell until data or :meth:`unpark`
        arrives or ``timeout`` seconds pass, announcing the wait in its park
        flag so that peers ring only then; first polls the rings for up to
        ``spin`` seconds. Raises WorkerFailed once a link failed."""
        if self.inbox:
            return
        # A writer whose ring was full (the backlog) asked its reader for
        # room (release_frames): the reader rings once it has read.
        flag = self.flag
        # A peer that answers within the spin wakes this worker with no
        # system call on either side (it rings only a worker whose flag is up).
        spin = self.spin if timeout is None else min(self.spin, timeout)
        if spin > 0 and spin_until_data(self._ring_readers, spin, self.inbox):
            return
        if flag is None:
            ready, _, _ = select.select([self.bell], [], [], timeout)
        else:
            # Announce, then look: a sender that wrote before seeing the flag
            # left its data where this finds it; one that writes later rings.
            flag.announce()
            try:
                if self.inbox or any(r.used_bytes() for r in self.readers.values()):
                    return
                ready, _, _ = select.select([self.bell], [], [], timeout)
            finally:
                flag.clear()
        if ready:
            self.bell.clear()
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")

    def unpark(self) -> None:
        """Wakes this worker from :meth:`park`; callable from any thread."""
        self.bell.ring()

    def awake_peers(self) -> frozenset:
        """The peers sharing memory with this worker whose park flag is
        down: awake (read with the flag's fence; a look, not a wait)."""
        return frozenset(j for j, flag in self.peer_flags.items() if not flag.wanted())

    def close_links(self, timeout: float = 60.0) -> None:
        """Says goodbye to every linked worker, waits for theirs, then closes."""
        links = list(self.links.values())
        for link in links:
            link.goodbye()
        deadline = time.monotonic() + timeout
        for link in links:
            link.finished.wait(max(0.0, deadline - time.monotonic()))
        for link in links:
            link.close()
            if self.logger is not None:
                self.logger.connection(link.peer, "closed")
        self.links.clear()

    def shutdown(self) -> None:
        """Closes the TCP links at once and drops the rings and doorbells."""
        for link in self.links.values():
            link.close()
        self.links.clear()
        self.writers.clear()
        self.readers.clear()
        self._readers = []
        self._ring_readers = []
        self._backlog = set()
        self.flag = None
        self.peer_flags = {}


class ProcessAllocator(RingAllocator):
    """Worker ``index`` of ``peers``. The workers ``first .. first + local - 1``
    run on this host, forked by one launcher, and share the rings of
    ``segment`` (laid out as ``Inboxes(local, local)``, slots counted from
    ``first``) and the eventfd ``doorbells`` (one descriptor per local
    worker); any others are reached over links added with :meth:`add_links`
    (TCP, on other hosts)."""

    def __init__(self, index: int, peers: int, segment, doorbells, *,
                 first: int = 0, local: int | None = None, window: int | None = DEFAULT_WINDOW,
                 spin: float = SPIN):
        local = peers if local is None else local
        me = index - first
        layout = Inboxes(local, local)
        writers, readers = {}, {}
        for j in range(first, first + local):
            if j == index:
                continue
            layout.prefault(segment, j - first, me)
            layout.prefault(segment, me, j - first)
            writers[j] = RingWriter(layout.ring(segment.buf, j - first, me))
            readers[j] = RingReader(layout.ring(segment.buf, me, j - first))
        bells = {first + k: EventfdDoorbell(fd) for k, fd in enumerate(doorbells)}
        flags = {} if segment is None else {
            first + k: layout.flag(segment.buf, k) for k in range(local)}
        super().__init__(index, peers, writers, readers, bells[index], bells,
                         flag=flags.pop(index, None), peer_flags=flags, window=window, spin=spin)
        self.segment = segment


__all__ = ["SHARED_SPIN", "SPIN", "ProcessAllocator", "RingAllocator", "default_spin", "host_cores"]
