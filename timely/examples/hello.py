"""Hello, timely: the smallest complete dataflow.

Worker 0 feeds one number per round into an input; ``exchange`` routes each
number to worker ``number % peers``, ``map`` doubles it and ``inspect`` prints
``worker index: value`` where it arrives. After each round the input advances
to the next round and every worker steps until its probe says that the round
is complete everywhere, so the rounds are printed in order.

Run: ``python -m timely.examples.hello [--rounds R] [--workers W]``

>>> hello(rounds=3, quiet=True)
[[0, 2, 4]]
"""

from __future__ import annotations

import argparse
import functools

import timely


def _work(worker, rounds: int, quiet: bool) -> list:
    seen: list = []

    def show(x) -> None:
        seen.append(x)
        if not quiet:
            print(f"worker {worker.index}: {x}", flush=True)

    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = stream.exchange(lambda x: x).map(lambda x: x * 2).inspect(show).probe()
    for r in range(rounds):
        if worker.index == 0:
            handle.send(r)
        handle.advance_to(r + 1)
        worker.step_while(lambda: probe.less_than(handle.time))
    handle.close()
    return seen


def hello(rounds: int = 10, workers: int = 1, quiet: bool = False, **options) -> list:
    """Runs the dataflow; returns, per worker, the doubled values it printed.

    ``options`` go to :func:`timely.execute` (e.g. ``schedule_seed``, ``check_progress``).
    """
    return timely.execute(
        functools.partial(_work, rounds=rounds, quiet=quiet), workers=workers, **options
    )


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds of input (default 10)")
    parser.add_argument("-w", "--workers", type=int, default=1, help="worker count (default 1)")
    parser.add_argument("--quiet", action="store_true", help="do not print the records")
    args = parser.parse_args(argv)
    seen = hello(args.rounds, args.workers, args.quiet)
    expected = sorted(2 * r for r in range(args.rounds))
    got = sorted(x for part in seen for x in part)
    if got != expected:
        raise SystemExit(f"wrong answer: {got} != {expected}")
    return seen


if __name__ == "__main__":
    main()
