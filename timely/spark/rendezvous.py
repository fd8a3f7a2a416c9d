"""How the tasks of one barrier stage find each other.

Each task has a short JSON description of itself (its listening address, its
segment, its doorbell) and needs everyone's, in partition order. Two ways:

- ``"allgather"``: ``BarrierTaskContext.allGather``. Nothing to run on the
  driver, but the JVM answers it on a one-second poll, so every stage pays
  about a second before its first record.
- ``"driver"`` (the default): a small server in the driver process, started
  by the first :func:`timely.spark.run` and reached at ``spark.driver.host``;
  every run registers with it under a random run id. Each task connects,
  proves it knows the server's secret (the HMAC challenge of
  :func:`timely.communication.tcp.authenticate`, both ways), sends its run id and
  description in a frame authenticated under the connection's key and waits; when all partitions of a round of that run have
  arrived the server answers every task with the list. A round starts over when a partition registers twice,
  which is what a retried stage does after tasks of the failed attempt died
  or were killed mid-rendezvous: the stale connections are closed, so any
  survivor of the old attempt fails fast; and a round is only completed by
  connections still open, so a killed task's registration never completes
  a round of the retry. Each execution of the DataFrame
  (each action, each retry) is one round.
"""

from __future__ import annotations

import contextlib
import json
import socket
import os
import threading
import time

from timely.communication.tcp import DATA, authenticate
from timely.errors import AuthenticationError, FrameError, RendezvousError

MAX_MESSAGE = 1 << 16
MAX_ROSTER = 1 << 26


def _recv(session, limit: int, timeout: float) -> bytes:
    kind, payload = session.recv_frame(limit, time.monotonic() + timeout)
    if kind != DATA:
        raise RendezvousError(f"an unexpected frame of kind {kind} in the rendezvous")
    return bytes(payload)


class DriverRendezvous:
    """The driver's side: collects every partition's description, per run and round."""

    def __init__(self, host: str = "127.0.0.1"):
        self.secret = os.urandom(32)
        self.listener = socket.create_server((host, 0))
        self.address = (host, self.listener.getsockname()[1])
        self.runs: dict = {}          # run id -> number of partitions
        self.rounds: dict = {}        # run id -> {partition: (socket, description)}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True,
                                       name="timely-rendezvous")
        self.thread.start()

    def new_run(self, peers: int) -> str:
        run = os.urandom(8).hex()
        with self.lock:
            self.runs[run] = peers
        return run

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._register, args=(sock,), daemon=True).start()

    def _register(self, sock) -> None:
        try:
            session = authenticate(sock, self.secret, -1, accepting=True)
            partition = session.peer
            message = json.loads(_recv(session, MAX_MESSAGE, 10))
            run, description = message["run"], json.dumps(message["me"]).encode()
            sock.settimeout(None)
        except (AuthenticationError, FrameError, OSError, ConnectionError, ValueError, KeyError,
                TypeError, RendezvousError):
            sock.close()
            return
        with self.lock:
            peers = self.runs.get(run)
            if peers is None or not 0 <= partition < peers:
                sock.close()
                return
            current = self.rounds.setdefault(run, {})
            if partition in current:
                for conn, _ in current.values():     # a stale, incomplete round
                    conn.close()
                current.clear()
            current[partition] = (session, description)
            if len(current) == peers:
                # A task killed while waiting (a failed attempt) left a closed
                # connection: it must not complete a round of the retry.
                for j in [j for j, (conn, _) in current.items() if not _alive(conn.sock)]:
                    current.pop(j)[0].close()
            if len(current) < peers:
                return
            complete = dict(current)
            current.clear()
        roster = b"[" + b",".join(complete[j][1] for j in range(len(complete))) + b"]"
        for conn, _ in complete.values():
            with contextlib.suppress(OSError):
                conn.send_frame([roster])
            conn.close()


def _alive(sock) -> bool:
    """False when the peer of a waiting connection has gone (EOF or error)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


_server: DriverRendezvous | None = None
_server_lock = threading.Lock()


def driver_server(host: str) -> DriverRendezvous:
    """This driver process's rendezvous server, started on first use."""
    global _server
    with _server_lock:
        if _server is None:
            _server = DriverRendezvous(host)
        return _server


def driver_gather(address, secret: bytes, run: str, partition: int, timeout: float = 600.0):
    """The task's side of :class:`DriverRendezvous`: a function like
    ``allGather`` that sends this task's description and returns everyone's."""

    def gather(description: str) -> list[str]:
        try:
            sock = socket.create_connection(tuple(address), timeout=10)
        except OSError as error:
            raise RendezvousError(f"cannot reach the driver's rendezvous at {address}: "
                                  f"{error}") from error
        try:
            session = authenticate(sock, secret, partition, accepting=False)
            session.send_frame([json.dumps({"run": run, "me": json.loads(description)}).encode()])
            roster = _recv(session, MAX_ROSTER, timeout)
        except FrameError as error:
            raise RendezvousError(f"the rendezvous of partition {partition} failed: "
                                  f"{error}") from error
        except (OSError, ConnectionError) as error:
            raise RendezvousError(f"the rendezvous of partition {partition} failed: "
                                  f"{error}") from error
        finally:
            sock.close()
        return [json.dumps(m) for m in json.loads(roster)]

    return gather
