"""Running a computation on workers: the entry points, the launchers that
start workers, and their supervision, which stops them together.

:func:`execute_directly` runs one worker in the calling thread;
:func:`execute` runs several as processes or threads of this host;
:func:`execute_from_args` reads the Rust crate's ``-w -n -p -h`` options and
runs this host's share of a computation over several hosts. The transport
(:mod:`timely.communication`) moves data between workers; this module decides
where workers run and makes them fail together.

- :func:`execute_threads`: ``workers`` threads of this process on a
  :class:`~timely.communication.threads.ThreadGroupAllocator`.
- :func:`execute_processes`: forked worker processes on one host. The
  launcher owns one shared-memory segment with a ring for every ordered pair
  of its workers (:class:`~timely.communication.shm.Inboxes`) and one
  eventfd doorbell per worker; each worker runs on a
  :class:`~timely.communication.process.ProcessAllocator`.
- :func:`execute_cluster`: host ``-p`` of ``-n`` hosts: this host's workers
  as processes, linked to every worker on the other hosts over authenticated
  TCP (:mod:`timely.communication.tcp`), with the secret from
  ``TIMELY_SECRET`` and the addresses from the hostfile.

Every launcher takes a :class:`timely.config.Config` (``config=``), used
whole; without one it reads the environment's (:meth:`Config.from_env`).
Keyword options (``window=``, ``heartbeat=``, ``stall_warning=``, ...)
override its fields.

Fail-stop: when a worker raises or dies, the launcher stops the others, and
raises :class:`timely.errors.WorkerFailed` naming the worker and its
traceback or signal. Worker processes die with their launcher (parent-death
signal); the launcher unlinks its segment on the way out, and a launcher that
starts sweeps away segments whose owner is gone
(:func:`~timely.communication.shm.sweep_orphans`). On other hosts, a worker
that loses a link fails its own host the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

from timely.communication.allocator import Allocator, ThreadAllocator
from timely.communication.doorbell import EventfdDoorbell
from timely.communication.process import ProcessAllocator
from timely.communication.shm import Inboxes, Segment, sweep_orphans
from timely.communication.tcp import TLS, Link, connect, read_hostfile, worker_addresses
from timely.communication.threads import ThreadGroup, ThreadGroupAllocator
from timely.config import Config, configured
from timely.errors import ConfigurationError, WorkerFailed
from timely.worker import Worker

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from timely.dataflow.scope import Scope

log = logging.getLogger(__name__)

R = TypeVar("R")


def _worker(allocator: Allocator, config: Config) -> Worker:
    """A worker on ``allocator`` built with the worker settings of ``config``."""
    return Worker(allocator, **config.worker.options())


# -- threads --------------------------------------------------------------------


def execute_threads(work: Callable[[Worker], R], workers: int, *, config: Config | None = None,
                    **options: Any) -> list[R]:
    """Runs ``work`` on ``workers`` threads; returns the results in index order.

    If a worker raises, every other worker stops with :class:`WorkerFailed`
    and this raises the first failure, chained to the worker's exception.
    """
    config = configured(config, options)
    shared = ThreadGroup(workers)
    results: list[Any] = [None] * workers
    errors: list[BaseException | None] = [None] * workers

    def run(index: int) -> None:
        try:
            worker = _worker(ThreadGroupAllocator(index, workers, shared), config)
            results[index] = work(worker)
            worker.drain()
            worker.close()
        except BaseException as error:  # noqa: BLE001 - reported to the caller below
            errors[index] = error
            if shared.failure is None:
                log.error("worker %d failed: %s", index, error)
            shared.fail(index, "".join(traceback.format_exception(error)))

    threads = [threading.Thread(target=run, args=(i,), name=f"timely-worker-{i}", daemon=True)
               for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if shared.failure is not None:
        index, text = shared.failure
        raise WorkerFailed(f"worker {index} failed:\n{text}") from errors[index]
    return results


# -- processes ------------------------------------------------------------------


def _die_with_parent() -> None:
    """Asks Linux to kill this process when its parent dies."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG


def _worker_main(me: int, layout: tuple[int, int, int, Any], segment: Any,
                 doorbells: list[Any], work: Callable[[Worker], Any], config: Config,
                 spin: float, conn: Connection) -> None:
    """The body of a forked worker process: ``segment`` is the launcher's,
    inherited through fork (this process only unmaps it); ``spin`` is the
    one the launcher chose for its host."""
    _die_with_parent()
    first, local, peers, link = layout
    allocator = None
    try:
        allocator = ProcessAllocator(first + me, peers, segment, doorbells,
                                     first=first, local=local,
                                     window=config.communication.window, spin=spin)
        if link is not None:
            link(allocator)
        worker = _worker(allocator, config)
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


def execute_processes(work: Callable[[Worker], R], workers: int, *, first: int = 0,
                      peers: int | None = None, connect: Callable[[Any], None] | None = None,
                      config: Config | None = None, **options: Any) -> list[R]:
    """Runs ``work`` on ``workers`` forked processes; returns results in index order.

    The processes are workers ``first .. first + workers - 1`` of ``peers``
    (all of them by default); ``connect(allocator)``, when given, links each
    to the workers of other hosts (see :func:`execute_cluster`).

    The configuration's ``window`` (bytes per peer, None for no bound;
    ``TIMELY_WINDOW`` or 4 MiB by default) bounds the data a worker has sent
    to another and that one has not yet taken in
    (:mod:`timely.communication.allocator`); ``spin`` is how long a worker
    polls its rings before it parks, by default 100 µs while ``workers``
    (this host's) are no more than the cores this process may run on and
    10 µs beyond (:meth:`timely.config.CommunicationSettings.spin_for`);
    a worker process stopped for longer than ``liveness_timeout`` fails the
    computation."""
    config = configured(config, options)  # a bad setting fails before anything starts
    peers = workers if peers is None else peers
    spin = config.communication.spin_for(workers)
    sweep_orphans()
    context = multiprocessing.get_context("fork")
    segment = None
    bells: list[Any] = []
    processes, pipes = [], []
    try:
        if workers > 1:
            inboxes = Inboxes(workers, workers)
            segment = Segment.create(inboxes.size)
            inboxes.format(segment.buf)
            # The workers inherit the mapping through fork and never open the
            # segment by name: with the name gone at once, nothing is left in
            # /dev/shm however the launcher and its workers end (kill -9 too).
            segment.unlink()
        for _ in range(workers):
            bells.append(EventfdDoorbell.create())
        layout = (first, workers, peers, connect)
        log.info("starting workers %d to %d of %d as processes on shared-memory rings",
                 first, first + workers - 1, peers)
        for me in range(workers):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker_main, name=f"timely-worker-{first + me}",
                args=(me, layout, segment, [b.fd for b in bells], work, config, spin, sender))
            process.start()
            sender.close()
            processes.append(process)
            pipes.append(receiver)
        return _supervise(processes, pipes, first, config.liveness.timeout)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(5)
        for bell in bells:
            bell.close()
        if segment is not None:
            segment.close()
            segment.unlink()


def _stopped(pid: int | None) -> bool:
    """The process is stopped (state T or t in /proc); a process not started
    (no pid) is not."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # The command name, in parentheses, may hold spaces: the state follows the last ")".
    end = stat.rfind(b")")
    return stat[end + 2:end + 3] in (b"T", b"t")


def _supervise(processes: Sequence[BaseProcess], pipes: Sequence[Connection],
               first: int, timeout: float) -> list[Any]:
    """Collects every worker's result; on the first failure (a worker that
    raised, died, or stayed stopped (SIGSTOP, a debugger's stop) longer than
    ``timeout`` seconds) stops the others and raises WorkerFailed."""
    results: list[Any] = [None] * len(processes)
    done = [False] * len(processes)
    waiting = {pipe: i for i, pipe in enumerate(pipes)}
    sentinels = {p.sentinel: i for i, p in enumerate(processes)}
    stopped_since: dict[int, float] = {}
    while not all(done):
        # pipes and sentinels (ints), told apart by the dict that holds them
        ready: list[Any] = wait(list(waiting) + [s for s, i in sentinels.items() if not done[i]],
                     timeout=min(0.5, timeout / 4))
        now = time.monotonic()
        for index, process in enumerate(processes):
            if done[index] or not _stopped(process.pid):
                stopped_since.pop(index, None)
                continue
            since = stopped_since.setdefault(index, now)
            if now - since > timeout:
                log.error("worker %d has been stopped for %.1f s; stopping the others",
                          first + index, now - since)
                _stop(processes)
                raise WorkerFailed(f"worker {first + index} (pid {process.pid}) was stopped for "
                                   f"more than {timeout:g} s (liveness_timeout, "
                                   f"TIMELY_LIVENESS_TIMEOUT)")
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


def _stop(processes: Sequence[BaseProcess]) -> None:
    for process in processes:
        if process.is_alive() and process.pid is not None:     # alive: started, so a pid
            process.terminate()
            # A stopped process acts on SIGTERM only once continued.
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGCONT)
    deadline = time.monotonic() + 2
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1)


# -- several hosts --------------------------------------------------------------


def execute_cluster(work: Callable[[Worker], R], args: argparse.Namespace, *,
                    config: Config | None = None, **options: Any) -> list[R]:
    """Runs this host's ``args.workers`` workers (``-p`` of ``-n`` hosts) as
    forked processes; returns their results in index order.

    Host ``p``'s address comes from the hostfile ``args.hostfile``
    (``host:port`` per line; by default ``127.0.0.1:2101+p``) and its worker
    ``k`` listens on that port + ``k``. Every connection is authenticated with
    the configuration's ``secret`` (``TIMELY_SECRET``), which every process
    must share, and every frame carries a MAC under the connection's key
    (:mod:`timely.communication.tcp`). With ``tls_cert``, ``tls_key`` and
    ``tls_ca`` (``TIMELY_TLS_CERT``, ``TIMELY_TLS_KEY`` and
    ``TIMELY_TLS_CA``) set, links run inside mutually authenticated TLS.
    ``connect_timeout`` bounds start-up; ``heartbeat`` and
    ``liveness_timeout`` (seconds; ``TIMELY_HEARTBEAT`` and
    ``TIMELY_LIVENESS_TIMEOUT`` by default, 1 and 5) say how often an idle
    link proves it is alive and how long a silent peer is waited for before
    the computation fails naming it."""
    config = configured(config, options)
    communication, liveness = config.communication, config.liveness
    secret = communication.secret
    if not secret:
        raise ConfigurationError("set TIMELY_SECRET (or the secret of the configuration) "
                                 "to the secret shared by every process")
    if not 0 <= args.process < args.processes:
        raise ConfigurationError(f"-p {args.process} is not in [0, {args.processes})")
    if args.workers < 1:
        raise ConfigurationError(f"-w {args.workers}: each host runs at least one worker")
    w = args.workers
    addresses = worker_addresses(read_hostfile(args.hostfile, args.processes), w)
    first = args.process * w
    local = range(first, first + w)
    tls = TLS(*communication.tls) if communication.tls is not None else None

    def link(allocator: Any) -> None:
        sessions = connect(allocator.index, addresses, secret.encode(), local,
                           timeout=communication.connect_timeout, tls=tls)
        allocator.add_links({j: Link(s, allocator, heartbeat=liveness.heartbeat,
                                     liveness=liveness.timeout)
                             for j, s in sessions.items()})

    return execute_processes(work, w, first=first, peers=len(addresses), connect=link,
                             config=config)


__all__ = ["execute_cluster", "execute_processes", "execute_threads"]


# -- entry points -----------------------------------------------------------------


def execute_directly(work: Callable[[Worker], R], *, config: Config | None = None,
                     **options: Any) -> R:
    """Runs ``work(worker)`` on one worker in this thread; steps until every
    dataflow completes, then returns what ``work`` returned. The worker is
    built with the worker settings of ``config`` (keyword options override
    them; see :func:`execute`)."""
    worker = _worker(ThreadAllocator(), configured(config, options))
    result = work(worker)
    worker.drain()
    worker.close()
    return result


def example(build: Callable[[Scope], R], *, config: Config | None = None, **options: Any) -> R:
    """Builds ``build(scope)`` in one dataflow on one worker in this thread,
    runs it to completion and returns what ``build`` returned (the crate's
    ``timely::example``): a capture handle's ``extract()`` then holds the
    stream's records.

    >>> import timely
    >>> timely.example(lambda scope: scope.to_stream(range(3)).map(lambda x: x * 2).capture()).extract()
    [(0, [0, 2, 4])]
    """
    def work(worker: Worker) -> R:
        with worker.dataflow() as scope:
            result = build(scope)
        return result

    return execute_directly(work, config=config, **options)


def execute(work: Callable[[Worker], R], workers: int = 1, *, mode: str = "processes",
            config: Config | None = None, **options: Any) -> list[R]:
    """Runs ``work(worker)`` on ``workers`` workers; returns their results in
    index order.

    More than one worker run as forked processes exchanging through
    shared-memory rings (``mode="processes"``), or as threads of this process
    (``mode="threads"``: concurrency without parallelism, no fork).

    ``config`` (a :class:`timely.Config`; by default the environment's,
    :meth:`timely.Config.from_env`) is used whole; keyword options, named
    as its fields (``window=``, ``spin=``, ``check_progress=``,
    ``stall_warning=``, ``worker_config=``, ...), override it. A setting that
    cannot be used is a :class:`~timely.errors.ConfigurationError` before
    any worker starts. The window and the spin apply where workers exchange
    between processes.

    >>> import timely
    >>> timely.execute(lambda worker: worker.stall_warning, workers=2, mode="threads",
    ...                stall_warning=2.5)
    [2.5, 2.5]
    """
    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, not {workers}")
    config = configured(config, options)
    log.info("running %d worker(s)%s", workers, f" as {mode}" if workers > 1 else "")
    if workers == 1:
        return [execute_directly(work, config=config)]
    if mode == "threads":
        return execute_threads(work, workers, config=config)
    if mode != "processes":
        raise ConfigurationError(f"mode must be 'processes' or 'threads', not {mode!r}")
    return execute_processes(work, workers, config=config)


def parse_args(args: Iterable[str]) -> argparse.Namespace:
    """``-w`` workers per process, ``-n`` processes, ``-p`` this process, ``-h`` hostfile."""
    parser = argparse.ArgumentParser(prog="timely", add_help=False)
    parser.add_argument("-w", "--workers", type=int, default=1)
    parser.add_argument("-n", "--processes", type=int, default=1)
    parser.add_argument("-p", "--process", type=int, default=0)
    parser.add_argument("-h", "--hostfile", default=None)
    parsed, _rest = parser.parse_known_args(list(args))
    return parsed


def execute_from_args(args: Iterable[str], work: Callable[[Worker], R], *,
                      config: Config | None = None, **options: Any) -> list[R]:
    """Runs ``work`` with the workers and hosts in ``args`` (``-w -n -p -h``
    as in the Rust crate) and the settings of ``config`` with ``options``
    over them (see :func:`execute`); ``heartbeat``, ``connect_timeout``, the
    secret and TLS apply to the links between hosts (:func:`execute_cluster`)."""
    parsed = parse_args(args)
    config = configured(config, options)
    if parsed.processes != 1:
        return execute_cluster(work, parsed, config=config)
    return execute(work, workers=parsed.workers, config=config)
