"""Capture, sending side: each worker captures a stream into a TCP connection.

Worker ``i`` connects to ``host:port + i``, wraps the socket in an
:class:`~timely.capture.EventWriter`, and captures ``0 .. records - 1`` (all
at time 0) into it; when the dataflow is complete it closes the writer, which
writes the end frame. Start ``capture_recv`` first, with ``--sources`` equal
to this side's worker count (the sender waits up to ``--wait`` seconds for
each listener):

    python -m timely.examples.capture_recv -w 3 --port 8000 --sources 5
    python -m timely.examples.capture_send -w 5 --port 8000

With no ``--port``, a receiver with as many workers runs in this process too,
on free ports (:func:`timely.examples.capture_recv.run_pair`).

The receivers then print 50 lines, ``replayed: x``: five copies of 0 .. 9.
:func:`timely.examples.capture_recv.run_pair` runs both sides in one process.

>>> import socket
>>> from timely.capture import EventReader, Messages
>>> listener = socket.create_server(("127.0.0.1", 0))
>>> send(1, records=3, addresses=[listener.getsockname()[:2]])
[3]
>>> reader = EventReader(listener.accept()[0])
>>> [e.data for e in reader if type(e) is Messages], reader.terminated
([[0, 1, 2]], True)
>>> reader.close(); listener.close()
"""

from __future__ import annotations

import functools
import socket
import time

import timely
from timely.examples.cli import parser
from timely.capture import EventWriter


def connect(address, wait: float) -> socket.socket:
    """A connection to ``address``, retried until ``wait`` seconds have passed."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return socket.create_connection(address)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def send_work(worker, addresses, records: int, wait: float) -> int:
    """Captures ``range(records)`` into a connection to ``addresses[worker.index]``."""
    writer = EventWriter(connect(addresses[worker.index], wait))
    with worker.dataflow() as scope:
        scope.to_stream(range(records)).capture_into(writer)
    worker.drain()
    writer.close()
    return records


def send(workers: int = 1, port: int = 8000, host: str = "127.0.0.1", records: int = 10,
         wait: float = 30.0, addresses=None) -> list:
    """Runs the senders; ``addresses`` (one per worker) overrides ``host:port + i``."""
    if addresses is None:
        addresses = [(host, port + i) for i in range(workers)]
    work = functools.partial(send_work, addresses=addresses, records=records, wait=wait)
    return timely.execute(work, workers=workers)


def main(argv=None) -> list:
    p = parser("capture_send", __doc__, workers=2)
    p.add_argument("--port", type=int, default=None,
                   help="worker i connects to port + i (default: no port; a receiver with "
                        "as many workers runs in this process too, on free ports)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--records", type=int, default=10, help="records per worker (10)")
    p.add_argument("--wait", type=float, default=30.0,
                   help="seconds to wait for each listener (30)")
    args = p.parse_args(argv)
    if args.processes != 1:
        p.error("capture_send runs on one host: -n must be 1")
    if args.port is None:
        from timely.examples.capture_recv import run_pair

        per_worker = run_pair(args.workers, args.workers, args.records, quiet=True)
        got = sum(len(part) for part in per_worker)
        print(f"{args.workers} workers captured {args.records} records each; "
              f"{args.workers} workers in this process replayed all {got}")
        return [args.records] * args.workers
    try:
        return send(args.workers, args.port, args.host, args.records, args.wait)
    except (OSError, timely.WorkerFailed) as failed:
        raise SystemExit(
            f"capture_send: no receiver listening on {args.host}:{args.port}.."
            f"{args.port + args.workers - 1} within {args.wait:g} s (start capture_recv "
            f"first, with --sources {args.workers})") from failed


if __name__ == "__main__":
    main()
