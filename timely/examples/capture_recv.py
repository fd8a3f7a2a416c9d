"""Capture, receiving side: replays streams captured elsewhere, at another
worker count.

``--sources`` sending workers each capture a stream into a TCP connection
(``capture_send``). The receiving workers divide the sources between them,
worker ``i`` of ``peers`` taking sources ``i, i + peers, ...``: for each it
listens on ``port + source``, accepts the connection and wraps it in an
:class:`~timely.capture.EventReader`. Each worker then replays its readers
with :func:`~timely.capture.replay_into`, printing ``replayed: x`` for every
record. The replay operators together account for one initial capability per
source, so the replayed stream completes once every sender's stream has.

    python -m timely.examples.capture_recv -w 3 --port 8000 --sources 5
    python -m timely.examples.capture_send -w 5 --port 8000

prints 50 lines: five copies of 0 .. 9, interleaved variously. With no
``--port``, ``--sources`` senders (3) run first in this process, on free ports.

:func:`run_pair` runs both sides in this process: the listening sockets are
bound first (on free ports) and inherited by the receiving workers.

>>> per_worker = run_pair(senders=3, receivers=2, records=4)
>>> sorted(x for part in per_worker for x in part)
[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
"""

from __future__ import annotations

import functools
import socket

import timely
from timely.examples.cli import parser
from timely.capture import EventReader, replay_into, share
from timely.examples.capture_send import send


def recv_work(worker, sources: int, host: str, port: int, quiet: bool, listeners=None) -> list:
    """Replays this worker's share of ``sources`` connections; returns the records."""
    readers = []
    for source in share(range(sources), worker):
        if listeners is not None:
            listener = listeners[source]
        else:
            listener = socket.create_server((host, port + source))
        connection, _ = listener.accept()
        listener.close()
        readers.append(EventReader(connection))
    seen: list = []

    def show(x) -> None:
        seen.append(x)
        if not quiet:
            print(f"replayed: {x}", flush=True)

    with worker.dataflow() as scope:
        replay_into(readers, scope).inspect(show)
    worker.drain()
    for reader in readers:
        reader.close()
    return seen


def receive(sources: int, workers: int = 1, port: int = 8000, host: str = "127.0.0.1",
            quiet: bool = False, listeners=None) -> list:
    """Runs the receivers; returns each worker's replayed records."""
    work = functools.partial(recv_work, sources=sources, host=host, port=port, quiet=quiet,
                             listeners=listeners)
    return timely.execute(work, workers=workers)


def run_pair(senders: int = 5, receivers: int = 3, records: int = 10, quiet: bool = True) -> list:
    """Both sides in this process, on free loopback ports: returns each
    receiving worker's records.

    The senders run first: their connections wait in the listening sockets'
    queues and their few events in the kernel's socket buffers, so nothing
    blocks; then the receivers accept and replay them. (For streams larger
    than the socket buffers, run the two sides at once, as two commands.)
    """
    listeners = [socket.create_server(("127.0.0.1", 0), backlog=4) for _ in range(senders)]
    try:
        addresses = [listener.getsockname()[:2] for listener in listeners]
        send(senders, records=records, addresses=addresses)
        return receive(senders, receivers, quiet=quiet, listeners=listeners)
    finally:
        for listener in listeners:
            listener.close()


def main(argv=None) -> list:
    p = parser("capture_recv", __doc__, workers=2)
    p.add_argument("--port", type=int, default=None,
                   help="source i is heard on port + i (default: no port; the senders run "
                        "in this process first, on free ports)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--sources", type=int, default=3, help="sending workers (default 3)")
    p.add_argument("--quiet", action="store_true", help="do not print the records")
    args = p.parse_args(argv)
    if args.processes != 1:
        p.error("capture_recv runs on one host: -n must be 1")
    if args.port is None:
        per_worker = run_pair(args.sources, args.workers, quiet=True)
        if not args.quiet:
            for part in per_worker:
                for x in part:
                    print(f"replayed: {x}")
        return per_worker
    return receive(args.sources, args.workers, args.port, args.host, args.quiet)


if __name__ == "__main__":
    main()
