"""Barrier: workers that drift apart meet again at every round.

In each round every worker first sleeps for a time that depends on its index
and the round (``--delay`` ms times a number from 0 to peers - 1), so the
workers arrive at the barrier at different times, then calls
``barrier.wait()``. Each worker notes, on the system-wide monotonic clock,
when it arrived and when it left. The example prints, per round, how far
apart the arrivals were and checks that no worker left before the last one
arrived.

Run: ``python -m timely.examples.barrier [--rounds R] [--delay MS]``
and the options every example shares (``-w`` 2 by default, ``-n -p -h``, ``--help``).

>>> stamps = meet(rounds=2, delay_ms=1)
>>> len(stamps), len(stamps[0])
(1, 2)
>>> check(stamps)
"""

from __future__ import annotations

import functools
import time

import timely
from timely.examples.cli import parser, timely_args
from timely.synchronization import Barrier


def _work(worker, rounds: int, delay_ms: float) -> list:
    barrier = Barrier(worker)
    stamps = []
    for r in range(rounds):
        time.sleep(delay_ms / 1000 * ((worker.index + r) % worker.peers))
        arrived = time.monotonic()
        barrier.wait()
        stamps.append((arrived, time.monotonic()))
    barrier.close()
    return stamps


def meet(rounds: int = 5, delay_ms: float = 20.0, workers: int = 1, args=None, **options):
    """Runs the rounds; returns, per worker, ``[(arrived, left)]`` per round.

    With ``args`` (a command line's ``-w -n -p -h``) it runs as
    :func:`timely.execute_from_args` does, else on ``workers`` processes.
    """
    work = functools.partial(_work, rounds=rounds, delay_ms=delay_ms)
    return timely.execute_from_args(args if args is not None else ["-w", str(workers)], work,
                                    **options)


def check(stamps) -> None:
    """Raises unless, in every round, every worker left after the last arrived."""
    for r, row in enumerate(zip(*stamps)):
        last_arrival = max(arrived for arrived, _ in row)
        first_departure = min(left for _, left in row)
        if first_departure < last_arrival:
            raise AssertionError(f"round {r}: a worker left the barrier before the last arrived")


def main(argv=None):
    p = parser("barrier", __doc__, workers=2)
    p.add_argument("--rounds", type=int, default=5, help="barrier rounds (default 5)")
    p.add_argument(
        "--delay", type=float, default=20.0, help="ms of sleep per step of stagger (default 20)"
    )
    args = p.parse_args(argv)
    stamps = meet(args.rounds, args.delay, args=timely_args(args))
    check(stamps)
    for r, row in enumerate(zip(*stamps)):
        spread = max(a for a, _ in row) - min(a for a, _ in row)
        print(
            f"round {r}: {len(row)} workers arrived {spread * 1e3:.0f} ms apart; "
            f"none left before the last arrived"
        )
    return stamps


if __name__ == "__main__":
    main()
