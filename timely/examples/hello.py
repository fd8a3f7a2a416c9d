"""Hello, timely: the smallest complete dataflow.

Worker 0 feeds one number per round into an input; ``exchange`` routes each
number to worker ``number % peers``, ``map`` doubles it and ``inspect`` prints
``worker index: value`` where it arrives. After each round the input advances
to the next round and every worker steps until its probe says that the round
is complete everywhere, so the rounds are printed in order.

Run: ``python -m timely.examples.hello [--rounds R] [-w W]``
(and the options every example shares: ``--help``)

>>> hello(rounds=3, quiet=True)
[[0, 2, 4]]
"""

from __future__ import annotations

import functools

import timely
from timely.examples.cli import parser, timely_args


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


def hello(rounds: int = 10, workers: int = 1, quiet: bool = False, args=None,
          **options) -> list:
    """Runs the dataflow; returns, per worker, the doubled values it printed.

    With ``args`` (a command line's ``-w -n -p -h``) it runs as
    :func:`timely.execute_from_args` does, else on ``workers`` workers.
    ``options`` go to :func:`timely.execute` (e.g. ``schedule_seed``, ``check_progress``).
    """
    work = functools.partial(_work, rounds=rounds, quiet=quiet)
    return timely.execute_from_args(args if args is not None else ["-w", str(workers)], work,
                                    **options)


def main(argv=None) -> list:
    p = parser("hello", __doc__, workers=2)
    p.add_argument("--rounds", type=int, default=10, help="rounds of input (default 10)")
    p.add_argument("--quiet", action="store_true", help="do not print the records")
    args = p.parse_args(argv)
    seen = hello(args.rounds, quiet=args.quiet, args=timely_args(args))
    expected = sorted(2 * r for r in range(args.rounds))
    got = sorted(x for part in seen for x in part)
    if got != expected:
        raise SystemExit(f"wrong answer: {got} != {expected}")
    return seen


if __name__ == "__main__":
    main()
