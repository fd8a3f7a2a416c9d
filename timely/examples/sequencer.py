"""Sequencer: announcements made by every worker, read by all in one order.

Every worker makes ``--rounds`` announcements (``"worker i, round r"``),
sleeping ``(1 + i) * --delay`` ms before each, so the workers push at
different rates and their announcements interleave differently from run to
run. Each worker reads the sequencer while it works, and keeps stepping after
its last announcement until it has read every worker's. The example prints
the sequence as worker 0 read it and checks that every worker read the same
sequence, with each worker's announcements in the order it made them.

Run: ``python -m timely.examples.sequencer [--rounds R] [--delay MS] [-w W]``
(``-w -n -p -h`` as for every timely computation).

>>> announce(rounds=3, delay_ms=0)
[['worker 0, round 0', 'worker 0, round 1', 'worker 0, round 2']]
"""

from __future__ import annotations

import functools
import time

import timely
from timely.examples.cli import parser, timely_args
from timely.errors import SequencerError
from timely.synchronization import Sequencer

# Generous: a worker that has not read everything by then reports it.
TIMEOUT = 60.0


def _work(worker, rounds: int, delay_ms: float) -> list:
    sequencer = Sequencer(worker)
    read: list = []
    for r in range(rounds):
        time.sleep(delay_ms / 1000 * (1 + worker.index))
        sequencer.push(f"worker {worker.index}, round {r}")
        worker.step()
        read.extend(sequencer)
    expected = rounds * worker.peers
    deadline = time.monotonic() + TIMEOUT
    while len(read) < expected:
        if time.monotonic() > deadline:
            raise SequencerError(
                f"worker {worker.index} read {len(read)} of {expected} announcements in {TIMEOUT} s"
            )
        worker.step_or_park(0.01)
        read.extend(sequencer)
    sequencer.close()
    return read


def announce(rounds: int = 5, delay_ms: float = 10.0, workers: int = 1, args=None, **options):
    """Runs the announcements; returns, per worker, the sequence it read.

    With ``args`` (a command line's ``-w -n -p -h``) it runs as
    :func:`timely.execute_from_args` does, else on ``workers`` processes.
    """
    work = functools.partial(_work, rounds=rounds, delay_ms=delay_ms)
    return timely.execute_from_args(args if args is not None else ["-w", str(workers)], work,
                                    **options)


def check(sequences) -> None:
    """Raises unless every worker read the same sequence, which holds each
    worker's announcements once and in the order they were made."""
    first = sequences[0]
    for index, seq in enumerate(sequences):
        if seq != first:
            raise AssertionError(f"worker {index} read another sequence than worker 0")
    by_worker: dict = {}
    for item in first:
        who, r = item.split(", round ")
        by_worker.setdefault(who, []).append(int(r))
    for who, made in by_worker.items():
        if made != list(range(len(made))):
            raise AssertionError(f"{who}'s announcements were read as rounds {made}")


def main(argv=None):
    p = parser("sequencer", __doc__, workers=2)
    p.add_argument(
        "--rounds", type=int, default=5, help="announcements per worker (default 5)"
    )
    p.add_argument(
        "--delay",
        type=float,
        default=10.0,
        help="ms of sleep per announcement, times 1 + worker index (default 10)",
    )
    args = p.parse_args(argv)
    sequences = announce(args.rounds, args.delay, args=timely_args(args))
    check(sequences)
    for item in sequences[0]:
        print(item)
    print(
        f"{len(sequences)} workers read the same {len(sequences[0])} announcements "
        f"in the same order"
    )
    return sequences


if __name__ == "__main__":
    main()
