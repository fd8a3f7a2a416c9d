"""Several worker processes on one host, exchanging through shared-memory rings.

The launcher creates one shared-memory segment holding a ring for every
ordered pair of workers and an eventfd doorbell per worker, then forks the
workers. Each worker pickles what it sends to a peer during a step into one
batch per peer (pickle travels only between these processes, which the
launcher forked itself), writes it into the pair's ring, and rings the
peer's doorbell; a full ring keeps the rest queued for the next step, so no
worker ever blocks on another. A worker that parks waits on its doorbell.

Fail-stop: the launcher watches every worker. When one raises or dies, it
stops the others, removes the segment and raises :class:`WorkerFailed` with
the worker's traceback or signal. Workers die with the launcher (parent-death
signal), and a launcher that starts sweeps away segments whose launcher is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import select
import signal
import time
import traceback
from collections import deque
from multiprocessing import shared_memory

from timely.communication._ring import RingReader, RingWriter, format_ring
from timely.communication.allocator import BatchingAllocator
from timely.communication.threads import WorkerFailed

PREFIX = "timely-"
RING_BYTES = (1 << 20) + 192      # per ordered pair of workers

log = logging.getLogger(__name__)


def _ring_offset(sender: int, receiver: int, peers: int) -> int:
    return (sender * peers + receiver) * RING_BYTES


def sweep_orphans(directory: str = "/dev/shm") -> list[str]:
    """Removes segments of launchers that no longer run; returns their names."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(PREFIX):
            continue
        try:
            pid = int(name[len(PREFIX):].split("-")[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
            continue                      # its launcher still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
            log.warning("removed shared-memory segment %s left by launcher %d, which is gone",
                        name, pid)
    return removed


class EventfdBell:
    """A doorbell on an eventfd shared by processes forked from one launcher."""

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def ring(self) -> None:
        os.eventfd_write(self.fd, 1)

    def clear(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self.fd)


class RingAllocator(BatchingAllocator):
    """Worker ``index`` of ``peers`` exchanging with some peers through rings
    (``writers[j]`` to worker j, ``readers[j]`` from it) and with the others
    over links added with :meth:`add_links` (TCP). ``bell`` is this worker's
    doorbell (``fileno``, ``ring``, ``clear``); ``peer_bells[j]`` rings worker
    j's after data was written to it."""

    def __init__(self, index: int, peers: int, writers: dict, readers: dict, bell, peer_bells):
        super().__init__(index, peers)
        self.writers = writers
        self.readers = readers
        self.bell = bell
        self.peer_bells = peer_bells
        self.links: dict = {}
        self.inbox: deque = deque()
        self.failure = None
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
        self.inbox.append((peer, frame))
        self.bell.ring()

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            log.error("worker %d: %s", self.index, reason)
            if self.logger is not None:
                self.logger.connection(-1, "failed", reason)
        self.bell.ring()

    def receive(self) -> None:
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")
        logger = self.logger
        for j, reader in self.readers.items():
            while True:
                messages = reader.recv_frame()
                if messages is None:
                    break
                if logger is not None:
                    logger.frame(False, j, len(messages), -1)
                self.deliver_messages(messages, j)
        inbox = self.inbox
        while inbox:
            peer, frame = inbox.popleft()
            if logger is not None:
                logger.frame(False, peer, -1, len(frame))
            self.deliver_frame(frame, peer)
        self.release()

    def release(self) -> None:
        rung = set()
        writers = self.writers
        logger = self.logger
        for j, parts in self.take_outboxes():
            if logger is not None:
                logger.frame(True, j, -1, sum(memoryview(p).nbytes for p in parts))
            writer = writers.get(j)
            if writer is None:
                self.links[j].send(parts)
                continue
            writer.send_parts(parts)
            rung.add(j)
        for j, writer in writers.items():
            if j not in rung and writer.queued_bytes:
                writer.flush()
                rung.add(j)
        bells = self.peer_bells
        for j in rung:
            bells[j].ring()

    def park(self, timeout) -> None:
        if self.inbox:
            return
        if any(w.queued_bytes for w in self.writers.values()):
            timeout = min(timeout, 0.0005) if timeout is not None else 0.0005
        ready, _, _ = select.select([self.bell], [], [], timeout)
        if ready:
            self.bell.clear()
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")

    def close_links(self, timeout: float = 60.0) -> None:
        """Says goodbye to every linked worker, waits for theirs, then closes."""
        links = list(self.links.values())
        for link in links:
            link.goodbye()
        deadline = time.monotonic() + timeout
        for link in links:
            link.bye.wait(max(0.0, deadline - time.monotonic()))
        for link in links:
            link.close()
            if self.logger is not None:
                self.logger.connection(link.peer, "closed")
        self.links.clear()

    def shutdown(self) -> None:
        for link in self.links.values():
            link.close()
        self.links.clear()
        self.writers.clear()
        self.readers.clear()


class ProcessAllocator(RingAllocator):
    """Worker ``index`` of ``peers``. The workers ``first .. first + local - 1``
    run on this host, forked by one launcher, and share the rings in
    ``segment`` and the eventfd ``doorbells``; any others are reached over
    links added with :meth:`add_links` (TCP, on other hosts)."""

    def __init__(self, index: int, peers: int, segment, doorbells, *,
                 first: int = 0, local: int | None = None):
        local = peers if local is None else local
        me = index - first
        writers, readers = {}, {}
        for j in range(first, first + local):
            if j == index:
                continue
            out = _ring_offset(me, j - first, local)
            inc = _ring_offset(j - first, me, local)
            writers[j] = RingWriter(segment.buf[out:out + RING_BYTES])
            readers[j] = RingReader(segment.buf[inc:inc + RING_BYTES])
        bells = {first + k: EventfdBell(fd) for k, fd in enumerate(doorbells)}
        super().__init__(index, peers, writers, readers, bells[index], bells)
        self.segment = segment


def _die_with_parent() -> None:
    """Asks Linux to kill this process when its parent dies."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG


def _worker_main(me, layout, name, doorbells, work, options, conn):
    _die_with_parent()
    from timely.worker import Worker

    first, local, peers, connect = layout
    segment = shared_memory.SharedMemory(name=name) if name else None
    allocator = None
    try:
        allocator = ProcessAllocator(first + me, peers, segment, doorbells,
                                     first=first, local=local)
        if connect is not None:
            connect(allocator)
        worker = Worker(allocator, **options)
        result = work(worker)
        worker.drain()
        allocator.close_links()
        worker.close()
        conn.send(("ok", result))
    except BaseException as error:  # noqa: BLE001 - reported to the launcher
        log.error("worker %d failed: %s", first + me, error)
        with contextlib.suppress(Exception):
            conn.send(("error", "".join(traceback.format_exception(error))))
    finally:
        if allocator is not None:
            allocator.shutdown()
        del allocator
        if segment is not None:
            with contextlib.suppress(Exception):
                segment.close()
        conn.close()


def execute_processes(work, workers: int, *, first: int = 0, peers: int | None = None,
                      connect=None, **options):
    """Runs ``work`` on ``workers`` forked processes; returns results in index order.

    The processes are workers ``first .. first + workers - 1`` of ``peers``
    (all of them by default); ``connect(allocator)``, when given, links each
    to the workers of other hosts."""
    peers = workers if peers is None else peers
    sweep_orphans()
    context = multiprocessing.get_context("fork")
    name = None
    segment = None
    if workers > 1:
        name = f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        segment = shared_memory.SharedMemory(name=name, create=True,
                                             size=workers * workers * RING_BYTES)
    doorbells = [os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(workers)]
    processes, pipes = [], []
    try:
        for i in range(workers):
            for j in range(workers):
                if i != j:
                    off = _ring_offset(i, j, workers)
                    format_ring(segment.buf[off:off + RING_BYTES])
        layout = (first, workers, peers, connect)
        log.info("starting workers %d to %d of %d as processes on shared-memory rings",
                 first, first + workers - 1, peers)
        for me in range(workers):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker_main, name=f"timely-worker-{first + me}",
                args=(me, layout, name, doorbells, work, options, sender))
            process.start()
            sender.close()
            processes.append(process)
            pipes.append(receiver)
        return _supervise(processes, pipes, first)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(5)
        for fd in doorbells:
            os.close(fd)
        if segment is not None:
            segment.close()
            with contextlib.suppress(FileNotFoundError):
                segment.unlink()


def _supervise(processes, pipes, first=0):
    from multiprocessing.connection import wait

    results: list = [None] * len(processes)
    done = [False] * len(processes)
    waiting = {pipe: i for i, pipe in enumerate(pipes)}
    sentinels = {p.sentinel: i for i, p in enumerate(processes)}
    while not all(done):
        ready = wait(list(waiting) + [s for s, i in sentinels.items() if not done[i]])
        for item in ready:
            if item in waiting:
                index = waiting[item]
                try:
                    status, value = item.recv()
                except EOFError:
                    del waiting[item]
                    continue
                del waiting[item]
                if status == "error":
                    log.error("worker %d failed; stopping the others", first + index)
                    _stop(processes)
                    raise WorkerFailed(f"worker {first + index} failed:\n{value}")
                results[index] = value
                done[index] = True
            else:
                index = sentinels[item]
                process = processes[index]
                process.join(0.05)
                if done[index]:
                    continue
                if item in sentinels and process.exitcode is not None:
                    # The result may still be in the pipe: read it first.
                    pipe = pipes[index]
                    if pipe in waiting and pipe.poll(0.2):
                        continue
                    _stop(processes)
                    code = process.exitcode
                    how = (f"killed by signal {signal.Signals(-code).name}" if code < 0
                           else f"exited with status {code}")
                    log.error("worker %d %s before finishing; the others were stopped",
                              first + index, how)
                    raise WorkerFailed(f"worker {first + index} {how} before finishing")
    for process in processes:
        process.join(5)
    return results


def _stop(processes) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 2
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1)
