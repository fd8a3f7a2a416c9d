"""Capture to files, replay later with another worker count.

First ``--workers`` workers run a dataflow whose records are
``(epoch, word)`` pairs, exchanged by word, and each worker captures the
stream it sees into ``DIR/capture-<index>.tcap`` with an
:class:`~timely.capture.EventWriter` (records, then the stream's progress,
then the end frame). Later — another process, another day —
``--replay-workers`` workers replay those files: worker ``i`` of ``peers``
reads files ``i, i + peers, ...`` with an :class:`~timely.capture.EventReader`
(``follow=False``: a file that ends early is an error, not a wait), and
counts the records of each epoch with ``count()``, which reports an epoch only
once it is complete in the replayed stream. The counts match the captured
run's.

Run: ``python -m timely.examples.capture_file [--dir DIR] [-w W] [-r R] [--epochs E]``

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as directory:
...     paths = capture(directory, workers=1, epochs=3)
...     replay(paths, workers=1)
{0: 4, 1: 4, 2: 4}
"""

from __future__ import annotations

import functools
import os
import tempfile
import zlib

import timely
from timely.examples.cli import parser
from timely.capture import EventReader, EventWriter, replay_into, share

WORDS = ["capture", "replay", "frontier", "progress"]


def _route(record) -> int:
    return zlib.crc32(record[1].encode())


def capture_work(worker, directory: str, epochs: int) -> str:
    path = os.path.join(directory, f"capture-{worker.index}.tcap")
    with EventWriter(open(path, "wb")) as writer:
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange(_route).capture_into(writer)
        for epoch in range(epochs):
            if worker.index == 0:
                handle.send_batch([(epoch, word) for word in WORDS])
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        worker.drain()
    return path


def capture(directory: str, workers: int = 2, epochs: int = 5) -> list:
    """Captures the stream at ``workers`` workers; returns the files, one per worker."""
    work = functools.partial(capture_work, directory=directory, epochs=epochs)
    return timely.execute(work, workers=workers)


def replay_work(worker, paths: list) -> list:
    readers = [EventReader(open(path, "rb"), follow=False) for path in share(paths, worker)]
    counts: list = []
    with worker.dataflow() as scope:
        replay_into(readers, scope).count().inspect_time(lambda t, n: counts.append((t, n)))
    worker.drain()
    for reader in readers:
        reader.close()
    return counts


def replay(paths: list, workers: int = 3) -> dict:
    """Replays the files at ``workers`` workers; returns the records per epoch."""
    results = timely.execute(functools.partial(replay_work, paths=paths), workers=workers)
    totals: dict = {}
    for counts in results:
        for epoch, n in counts:
            totals[epoch] = totals.get(epoch, 0) + n
    return dict(sorted(totals.items()))


def main(argv=None) -> dict:
    p = parser("capture_file", __doc__, workers=2)
    p.add_argument("--dir", default=None,
                   help="keep the files here (default: a temporary directory, deleted at exit)")
    p.add_argument("-r", "--replay-workers", type=int, default=3,
                   help="replaying workers (default 3); -w is the capturing workers")
    p.add_argument("--epochs", type=int, default=5)
    args = p.parse_args(argv)
    if args.processes != 1:
        p.error("capture_file runs on one host: -n must be 1")
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.dir or scratch
        paths = capture(directory, args.workers, args.epochs)
        size = sum(os.path.getsize(p) for p in paths)
        where = (directory if args.dir else
                 "a temporary directory (deleted at exit; --dir DIR keeps them)")
        print(f"captured {args.workers} streams into {len(paths)} files ({size} bytes) in "
              f"{where}")
        totals = replay(paths, args.replay_workers)
        for epoch, n in totals.items():
            print(f"epoch {epoch}: {n} records")
    expected = {epoch: len(WORDS) for epoch in range(args.epochs)}
    if totals != expected:
        raise SystemExit(f"wrong answer: {totals} != {expected}")
    print(f"replayed by {args.replay_workers} workers: every epoch complete and correct")
    return totals


if __name__ == "__main__":
    main()
