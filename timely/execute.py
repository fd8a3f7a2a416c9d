"""Running a computation on workers: the entry points.

:func:`execute_directly` runs one worker in the calling thread;
:func:`execute` runs several as processes or threads of this host;
:func:`execute_from_args` reads the Rust crate's ``-w -n -p -h`` options and
runs this host's share of a computation over several hosts. The launchers
and their supervision are in :mod:`timely.launch`.
"""

from __future__ import annotations

import argparse
import logging

from timely.communication.allocator import ThreadAllocator
from timely.errors import TimelyError
from timely.worker import Worker

log = logging.getLogger(__name__)


def execute_directly(work, **options):
    """Runs ``work(worker)`` on one worker in this thread; steps until every
    dataflow completes, then returns what ``work`` returned."""
    worker = Worker(ThreadAllocator(), **options)
    result = work(worker)
    worker.drain()
    worker.close()
    return result


def execute(work, workers: int = 1, *, mode: str = "processes", **options):
    """Runs ``work(worker)`` on ``workers`` workers; returns their results in
    index order.

    More than one worker run as forked processes exchanging through
    shared-memory rings (``mode="processes"``), or as threads of this process
    (``mode="threads"``: concurrency without parallelism, no fork).
    """
    if workers < 1:
        raise TimelyError(f"workers must be at least 1, not {workers}")
    log.info("running %d worker(s)%s", workers, f" as {mode}" if workers > 1 else "")
    if workers == 1:
        return [execute_directly(work, **options)]
    if mode == "threads":
        from timely.launch import execute_threads

        return execute_threads(work, workers, **options)
    if mode != "processes":
        raise TimelyError(f"mode must be 'processes' or 'threads', not {mode!r}")
    from timely.launch import execute_processes

    return execute_processes(work, workers, **options)


def parse_args(args):
    """``-w`` workers per process, ``-n`` processes, ``-p`` this process, ``-h`` hostfile."""
    parser = argparse.ArgumentParser(prog="timely", add_help=False)
    parser.add_argument("-w", "--workers", type=int, default=1)
    parser.add_argument("-n", "--processes", type=int, default=1)
    parser.add_argument("-p", "--process", type=int, default=0)
    parser.add_argument("-h", "--hostfile", default=None)
    parsed, _rest = parser.parse_known_args(list(args))
    return parsed


def execute_from_args(args, work, **options):
    """Runs ``work`` with the configuration in ``args`` (``-w -n -p -h`` as in the
    Rust crate)."""
    config = parse_args(args)
    if config.processes != 1:
        from timely.launch import execute_cluster

        return execute_cluster(work, config, **options)
    return execute(work, workers=config.workers, **options)
