"""Authenticated TCP links between workers on different hosts.

- :func:`connect` / :func:`connect_with`: worker ``i`` of ``addresses``
  connects to every remote worker before it and accepts every remote worker
  after it; every connection is authenticated by :func:`handshake` before
  anything else is read, and connections that fail it are dropped while the
  worker keeps listening. Gives up after ``CONNECT_TIMEOUT`` seconds
  (``TIMELY_CONNECT_TIMEOUT``, 60 by default) naming the missing workers.
- :func:`handshake`: both sides prove knowledge of the shared secret by
  answering a random 32-byte challenge with HMAC-SHA256 (distinct roles for
  the two directions), reading exactly the bytes they expect, within
  ``HANDSHAKE_TIMEOUT``; then they exchange worker indices. Raises
  :class:`timely.errors.AuthenticationError`.
- :class:`Link`: one authenticated connection carrying frames, each an
  8-byte little-endian length (at most ``MAX_FRAME``) and the frame's bytes
  (:mod:`timely.communication.codec`: columns as raw buffers, the rest
  pickled, which is why only authenticated peers of the same computation
  may send them). A sender thread and a receiver thread per link, so a
  worker never blocks on a socket. A peer that disconnects without saying
  goodbye (``BYE``) fails the computation.
- :func:`recv_exact`: exactly ``n`` bytes into one buffer, or ConnectionError.
- :func:`read_hostfile` and :func:`worker_addresses`: the ``-h`` hostfile
  (``host:port`` per line; by default ``127.0.0.1:2101+p``) and worker
  ``p * w + k`` listening at host ``p``'s port + ``k``.

Costs: per frame one length header and the frame's buffers sent back to back
without being joined; each received frame is read into one buffer; two
threads per remote worker.

>>> worker_addresses([("10.0.0.1", 2101), ("10.0.0.2", 2101)], 2)
[('10.0.0.1', 2101), ('10.0.0.1', 2102), ('10.0.0.2', 2101), ('10.0.0.2', 2102)]
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import queue
import socket
import struct
import threading
import time

from timely.errors import AuthenticationError, TimelyError

HANDSHAKE_TIMEOUT = 5.0
CONNECT_TIMEOUT = float(os.environ.get("TIMELY_CONNECT_TIMEOUT", "60"))
MAX_FRAME = 1 << 30
BYE = b"timely-bye"

log = logging.getLogger(__name__)


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Exactly ``n`` bytes, received straight into one buffer."""
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], min(n - got, 1 << 22))
        if not k:
            raise ConnectionError("connection closed")
        got += k
    return buffer


def _prove(sock: socket.socket, secret: bytes, role: bytes) -> None:
    """Answers the peer's challenge for ``role``."""
    challenge = recv_exact(sock, 32)
    sock.sendall(hmac.new(secret, challenge + role, hashlib.sha256).digest())


def _verify(sock: socket.socket, secret: bytes, role: bytes) -> None:
    """Challenges the peer to prove ``role``; raises AuthenticationError."""
    challenge = os.urandom(32)
    sock.sendall(challenge)
    answer = recv_exact(sock, 32)
    expected = hmac.new(secret, challenge + role, hashlib.sha256).digest()
    if not hmac.compare_digest(answer, expected):
        raise AuthenticationError("the peer's answer to the challenge is wrong")


def handshake(sock: socket.socket, secret: bytes, me: int, accepting: bool) -> int:
    """Authenticates both ways, then exchanges worker indices; returns the peer's."""
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        if accepting:
            _verify(sock, secret, b"client")
            _prove(sock, secret, b"server")
        else:
            _prove(sock, secret, b"client")
            _verify(sock, secret, b"server")
        sock.sendall(struct.pack("<q", me))
        (peer,) = struct.unpack("<q", recv_exact(sock, 8))
    except (OSError, ConnectionError) as error:
        raise AuthenticationError(f"handshake failed: {error}") from error
    sock.settimeout(None)
    return peer


class Link:
    """One authenticated connection to worker ``peer``: a sender thread and
    a receiver thread.

    ``sink`` receives what arrives, from the receiver thread:
    ``sink.deliver(peer, frame)`` for every frame (a bytearray) and
    ``sink.fail(reason)`` when the peer goes away without saying goodbye or
    a send fails; :class:`timely.communication.process.RingAllocator` is
    one. ``bye`` is set when the peer said goodbye.
    """

    def __init__(self, sock: socket.socket, peer: int, sink):
        self.sock = sock
        self.peer = peer
        self.sink = sink
        self.outgoing: queue.SimpleQueue = queue.SimpleQueue()
        self.bye = threading.Event()
        self.sender = threading.Thread(target=self._send_loop, daemon=True,
                                       name=f"timely-send-{peer}")
        self.receiver = threading.Thread(target=self._recv_loop, daemon=True,
                                         name=f"timely-recv-{peer}")
        self.sender.start()
        self.receiver.start()

    def send(self, parts) -> None:
        """Queues one frame, given as a list of buffers sent back to back."""
        self.outgoing.put(parts)

    def _send_loop(self) -> None:
        try:
            while True:
                parts = self.outgoing.get()
                if parts is None:
                    return
                length = sum(memoryview(p).nbytes for p in parts)
                self.sock.sendall(struct.pack("<Q", length))
                for part in parts:
                    self.sock.sendall(part)
        except OSError as error:
            self.sink.fail(f"worker {self.peer} disconnected (a send failed: {error})")

    def _recv_loop(self) -> None:
        try:
            while True:
                (length,) = struct.unpack("<Q", recv_exact(self.sock, 8))
                if length > MAX_FRAME:
                    raise ConnectionError(f"frame of {length} bytes exceeds the limit")
                payload = recv_exact(self.sock, length)
                if payload == BYE:
                    self.bye.set()
                    return
                self.sink.deliver(self.peer, payload)
        except (OSError, ConnectionError, struct.error) as error:
            if not self.bye.is_set():
                self.sink.fail(f"worker {self.peer} disconnected: {error}")

    def goodbye(self) -> None:
        """Queues the goodbye: the peer stops expecting frames from here."""
        self.outgoing.put([BYE])

    def close(self) -> None:
        """Stops the sender after what is queued, then closes the socket."""
        self.outgoing.put(None)
        self.sender.join(5)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def read_hostfile(path, processes: int) -> list[tuple[str, int]]:
    """The first ``processes`` addresses of the hostfile at ``path``
    (``host:port`` per line, ``#`` comments), or ``127.0.0.1:2101+p`` when
    ``path`` is None."""
    if path is None:
        return [("127.0.0.1", 2101 + i) for i in range(processes)]
    addresses = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            host, _, port = line.rpartition(":")
            addresses.append((host or "127.0.0.1", int(port)))
    if len(addresses) < processes:
        raise TimelyError(f"hostfile {path} lists {len(addresses)} addresses for {processes} processes")
    return addresses[:processes]


def worker_addresses(hosts, workers: int) -> list[tuple[str, int]]:
    """Worker ``p * workers + k`` listens on host ``p``'s address, port + ``k``."""
    return [(host, port + k) for host, port in hosts for k in range(workers)]


def connect(index: int, addresses, secret: bytes, local=(), timeout: float = CONNECT_TIMEOUT) -> dict:
    """Authenticated sockets to every worker not in ``local`` (this host's,
    reached through shared memory), keyed by worker index."""
    listener = socket.create_server(addresses[index], reuse_port=False)
    return connect_with(listener, index, addresses, secret, local, timeout)


def connect_with(listener, index: int, addresses, secret: bytes, local=(),
                 timeout: float = CONNECT_TIMEOUT) -> dict:
    """:func:`connect` through a listening socket already open at ``addresses[index]``
    (closed on return)."""
    peers = len(addresses)
    remote = [j for j in range(peers) if j != index and j not in local]
    sockets: dict = {}
    listener.settimeout(0.2)
    deadline = time.monotonic() + timeout
    try:
        for j in (j for j in remote if j < index):
            while True:
                try:
                    sock = socket.create_connection(addresses[j], timeout=HANDSHAKE_TIMEOUT)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimelyError(f"worker {index}: cannot reach worker {j} at {addresses[j]}")
                    time.sleep(0.05)
            peer = handshake(sock, secret, index, accepting=False)
            log.info("worker %d: authenticated connection to worker %d at %s:%s",
                     index, j, *addresses[j][:2])
            if peer != j:
                raise TimelyError(f"worker {index}: {addresses[j]} answered as worker {peer}, not {j}")
            sockets[j] = sock
        while len(sockets) < len(remote):
            if time.monotonic() > deadline:
                missing = sorted(set(remote) - set(sockets))
                raise TimelyError(f"worker {index}: workers {missing} never connected")
            try:
                sock, _ = listener.accept()
            except socket.timeout:
                continue
            try:
                peer = handshake(sock, secret, index, accepting=True)
            except AuthenticationError as error:
                log.warning("worker %d: dropped a connection that failed to authenticate: %s",
                            index, error)
                sock.close()          # not one of ours: drop it, keep listening
                continue
            if peer not in remote or peer < index or peer in sockets:
                log.warning("worker %d: dropped a connection from unexpected worker %d",
                            index, peer)
                sock.close()
                continue
            log.info("worker %d: accepted an authenticated connection from worker %d",
                     index, peer)
            sockets[peer] = sock
    finally:
        listener.close()
    for sock in sockets.values():
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sockets


__all__ = ["BYE", "CONNECT_TIMEOUT", "HANDSHAKE_TIMEOUT", "MAX_FRAME", "Link", "connect",
           "connect_with", "handshake", "read_hostfile", "recv_exact", "worker_addresses"]
