"""The Select and Count vertices of the Naiad model, as :class:`timely.Vertex` subclasses.

Naiad's vertices react to two callbacks: ``OnRecv(edge, message, time)`` for
every message, and ``OnNotify(time)`` once every message at or before
``time`` has been delivered, if the vertex asked with ``NotifyAt(time)``.
Messages and notifications never go back in time. ``Select`` needs only the
first callback; ``Count``, which outputs the number of records at each time,
needs both: it can only report a time's count once it has seen all of that
time's records.

Here lines of text are fed in ``--epochs`` epochs of ``--records`` lines
each; ``Select`` maps every line to its length, and ``Count`` reports the
number of records per epoch. ``Count`` declares an ``Exchange`` pact that
sends every record to worker 0, so at any worker count worker 0 reports the
whole epoch's count (as a Naiad "stage" of one vertex); Select runs on every
worker. The example checks the counts against a plain count and prints them.

Run: ``python -m timely.examples.count_vertex [--epochs E] [--records R] [-w W]``

>>> count_per_epoch([["a", "bb"], [], ["ccc"]])
[(0, 2), (2, 1)]
"""

from __future__ import annotations

import functools
import random
import string

import timely
from timely.examples.cli import parser, timely_args


class Select(timely.Vertex):
    """Applies ``selector`` to every record: ``OnRecv`` only."""

    def __init__(self, selector):
        self.selector = selector

    def on_recv(self, input, batch, time):
        self.send(0, [self.selector(m) for m in batch], time)


class Count(timely.Vertex):
    """Outputs the number of records received at each time, once the time is complete.

    State: one counter per time with a pending notification; ``on_notify``
    sends the count and forgets the time.
    """

    def __init__(self, pact=None):
        self.counts: dict = {}
        if pact is not None:
            self.pacts = [pact]

    def on_recv(self, input, batch, time):
        if time not in self.counts:
            self.counts[time] = len(batch)
            self.notify_at(time)  # request a notification for this time
        else:
            self.counts[time] += len(batch)

    def on_notify(self, time):
        self.send(0, [self.counts.pop(time)], time)


def _work(worker, epochs: list) -> list:
    results: list = []
    with worker.dataflow() as scope:
        handle, lines = scope.new_input()
        counts = lines.vertex(Select(len)).vertex(Count(timely.Exchange(lambda record: 0)))
        probe = counts.inspect_time(lambda t, n: results.append((t, n))).probe()
    for epoch, batch in enumerate(epochs):
        # Each worker introduces its share of the epoch's records.
        mine = batch[worker.index :: worker.peers]
        if mine:
            handle.send_batch(mine)
        handle.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(handle.time))
    handle.close()
    return results


def count_per_epoch(epochs: list, workers: int = 1, args=None, **options) -> list:
    """``(epoch, count)`` for every epoch with records, in epoch order, by the Count vertex.

    With ``args`` (a command line's ``-w -n -p -h``) it runs as
    :func:`timely.execute_from_args` does (the counts are on the first host),
    else on ``workers`` workers. ``options`` go to :func:`timely.execute`
    (e.g. ``schedule_seed``, ``check_progress``).
    """
    parts = timely.execute_from_args(args if args is not None else ["-w", str(workers)],
                                     functools.partial(_work, epochs=epochs), **options)
    # Count's pact sends every record to worker 0; the others report nothing.
    if any(parts[1:]):
        raise AssertionError(f"workers other than 0 reported counts: {parts[1:]}")
    return parts[0]


def make_epochs(epochs: int, records: int, seed: int = 1) -> list:
    """``epochs`` lists of about ``records`` random lines each (some epochs may be empty)."""
    rng = random.Random(seed)
    out = []
    for _ in range(epochs):
        n = rng.randint(0, 2 * records)
        out.append(
            [
                "".join(rng.choices(string.ascii_lowercase + " ", k=rng.randint(1, 40)))
                for _ in range(n)
            ]
        )
    return out


def main(argv=None) -> list:
    p = parser("count_vertex", __doc__, workers=2)
    p.add_argument("--epochs", type=int, default=10, help="epochs (default 10)")
    p.add_argument("--records", type=int, default=1000,
                   help="mean records per epoch (default 1000)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    epochs = make_epochs(args.epochs, args.records, args.seed)
    counts = count_per_epoch(epochs, args=timely_args(args))
    expected = [(e, len(b)) for e, b in enumerate(epochs) if b]
    if args.process != 0:       # every record went to worker 0, on the first host
        expected = []
    if counts != expected:
        raise SystemExit(f"wrong counts: {counts} != {expected}")
    for epoch, n in counts:
        print(f"epoch {epoch}: {n} records")
    print("counts match a plain count")
    return counts


if __name__ == "__main__":
    main()
