"""Pictures: a nested iterative dataflow drawn from its logs.

Every record ``x`` runs its Collatz sequence (``x/2`` or ``3x+1``) to 1 in an
iterative scope ``Collatz``, whose loop body is a region ``Step`` that
exchanges records between the workers and takes one step; the number of
records that reached 1 is counted per epoch. Each worker writes its log with
:func:`timely.logging.capture_to` (``LOGDIR/log-W.tlog``); at the end the
logs of all workers are drawn into one page with :func:`timely.viz.write_html`
(the same as ``python -m timely.viz LOGDIR/log-*.tlog -o PAGE``), and with
``--dot`` as Graphviz DOT text too.

``--hold S`` shows what a hang looks like: after the last epoch the input is
left open, not advanced, for S seconds while the workers keep stepping; a
:class:`timely.viz.Snapshotter` on worker 0 draws the live page
(``PAGE`` with ``-live`` before the suffix) every half second, and its last
picture, taken just before the input closes, marks the operators whose
frontier has not moved for ``--stuck-after`` seconds, and the input's
capability that holds them.

Run: ``python -m timely.examples.viz [-w 2] [-o page.html] [--hold 2 --stuck-after 1]``

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     summary = run(workers=1, records=20, epochs=2, out=os.path.join(tmp, "p.html"))
...     os.path.exists(os.path.join(tmp, "p.html"))
True
>>> summary["counted"], summary["operators"] >= 9
([20, 20], True)
"""

from __future__ import annotations

import os
import tempfile
import time

import timely
from timely.examples.cli import parser
from timely.logging import capture_to
from timely.viz import Model, Snapshotter, render_dot, write_html


def collatz(x: int) -> int:
    return x // 2 if x % 2 == 0 else 3 * x + 1


def collatz_loop(scope, stream):
    """``stream`` through an iterative scope "Collatz": a loop around a region
    "Step" that exchanges and steps each record until it reaches 1; returns
    the records that reached 1, back in ``scope``."""
    with scope.iterative("Collatz") as inner:
        loop, looped = inner.feedback(1)
        body = stream.enter(inner).concat(looped)
        with inner.region("Step") as region:
            stepped = body.enter(region).exchange(lambda x: x).map(collatz).leave()
        more, done = stepped.branch(lambda t, x: x == 1)
        more.connect_loop(loop)
        return done.leave()


def build(scope):
    """The dataflow; returns its input handle and the captured counts."""
    handle, stream = scope.new_input()
    counts = collatz_loop(scope, stream).exchange(lambda x: 0).count().capture()
    return handle, counts


def _live_path(out: str) -> str:
    stem, ext = os.path.splitext(out)
    return f"{stem}-live{ext or '.html'}"


def _work(worker, logdir, records, epochs, hold, stuck_after, live):
    capture_to(worker, os.path.join(logdir, "log-{worker}.tlog"))
    snapshot = None
    if hold:
        snapshot = Snapshotter(worker, live, every=0.5, stuck_after=stuck_after,
                               title="timely dataflow (live, worker 0)")
    with worker.dataflow() as scope:
        handle, counts = build(scope)
    for epoch in range(epochs):
        if worker.index == 0:
            for x in range(2, records + 2):
                handle.send(x)
        handle.advance_to(epoch + 1)
        for _ in range(2):
            worker.step()
    if hold:
        deadline = time.monotonic() + hold
        while time.monotonic() < deadline:
            worker.step_or_park(0.05)
        if snapshot is not None:
            snapshot.close()
    handle.close()
    worker.drain()
    return [n for _, ns in counts.extract() for n in ns]


def run(workers: int = 2, records: int = 100, epochs: int = 3, out: str = "page.html",
        logdir: str | None = None, hold: float = 0.0, stuck_after: float = 1.0,
        dot: str | None = None) -> dict:
    """Runs the dataflow with logging, draws it; returns a summary."""
    tmp = tempfile.TemporaryDirectory() if logdir is None else None
    if tmp is not None:
        logdir = tmp.name
    assert logdir is not None
    try:
        live = _live_path(out)
        results = timely.execute(
            lambda worker: _work(worker, logdir, records, epochs, hold, stuck_after, live),
            workers=workers)
        paths = [os.path.join(logdir, f"log-{w}.tlog") for w in range(workers)]
        model = Model.from_logs(*paths)
        write_html(out, model, title=f"Collatz, {workers} worker(s)")
        if dot:
            with open(dot, "w", encoding="utf-8") as f:
                f.write(render_dot(model))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {
        "counted": [n for part in results for n in part],
        # As the page counts them: scopes are drawn as boxes around operators.
        "operators": sum(1 for op in model.operators.values() if not op.scope),
        "scopes": sum(1 for op in model.operators.values() if op.scope),
        "channels": len(model.channels),
        "events": model.events,
        "page": out,
        "live": live if hold else None,
    }


def main(argv=None) -> dict:
    p = parser("viz", __doc__, workers=2)
    p.add_argument("--records", type=int, default=100, help="records per epoch")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("-o", "--out", default="page.html", help="the page to write")
    p.add_argument("--logdir", help="keep the logs here (default: a temporary folder)")
    p.add_argument("--dot", help="also write Graphviz DOT text here")
    p.add_argument("--hold", type=float, default=0.0,
                   help="seconds to leave the input open at the end (a hang)")
    p.add_argument("--stuck-after", type=float, default=1.0,
                   help="frontiers unchanged this long are marked stuck (default 1 s)")
    args = p.parse_args(argv)
    if args.processes != 1:
        p.error("viz runs on one host: -n must be 1")
    summary = run(args.workers, args.records, args.epochs, args.out, args.logdir, args.hold,
                  args.stuck_after, args.dot)
    print(f"{summary['operators']} operators in {summary['scopes']} scopes, "
          f"{summary['channels']} channels, "
          f"{summary['events']:,} events from {args.workers} worker(s); "
          f"counted per epoch: {summary['counted']}")
    print(f"wrote {summary['page']}" + (f" and {summary['live']}" if summary["live"] else ""))
    return summary


if __name__ == "__main__":
    main()
