"""Workers in several processes, possibly on several hosts, over TCP.

``execute_from_args(["-w", W, "-n", N, "-p", P, "-h", hostfile], work)``
runs host P of N with W worker processes, workers ``P*W .. P*W+W-1`` of
``N*W``. Workers on one host exchange through shared-memory rings (see
:mod:`timely.communication.process`); each worker also connects to every
worker on the other hosts. Host P's address comes from the hostfile
(``host:port`` per line; by default ``127.0.0.1:2101+P``) and its worker k
listens on that port + k; a worker connects to every remote worker before it
and accepts every remote worker after it.

Every connection is authenticated before anything else is read: both sides
prove knowledge of the shared secret (``TIMELY_SECRET``) by answering a
random challenge with HMAC-SHA256, reading exactly the bytes they expect,
with a timeout. Peers that fail are dropped. Only then do frames flow: an
8-byte length (bounded) and a frame (:mod:`timely.communication.codec`:
columns as raw buffers, the rest pickled), which crosses only these
authenticated connections between the computation's own workers.

Each connection has a sender thread and a receiver thread, so a worker never
blocks on a socket: it queues batches and reads what the receiver collected.
A peer that disconnects without saying goodbye fails the computation.
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


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
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
    challenge = _recv_exact(sock, 32)
    sock.sendall(hmac.new(secret, challenge + role, hashlib.sha256).digest())


def _verify(sock: socket.socket, secret: bytes, role: bytes) -> None:
    """Challenges the peer to prove ``role``; raises AuthenticationError."""
    challenge = os.urandom(32)
    sock.sendall(challenge)
    answer = _recv_exact(sock, 32)
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
        (peer,) = struct.unpack("<q", _recv_exact(sock, 8))
    except (OSError, ConnectionError) as error:
        raise AuthenticationError(f"handshake failed: {error}") from error
    sock.settimeout(None)
    return peer


class _Link:
    """One authenticated connection: a sender thread and a receiver thread."""

    def __init__(self, sock: socket.socket, peer: int, allocator):
        self.sock = sock
        self.peer = peer
        self.allocator = allocator
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
            self.allocator.fail(f"worker {self.peer} disconnected (a send failed: {error})")

    def _recv_loop(self) -> None:
        try:
            while True:
                (length,) = struct.unpack("<Q", _recv_exact(self.sock, 8))
                if length > MAX_FRAME:
                    raise ConnectionError(f"frame of {length} bytes exceeds the limit")
                payload = _recv_exact(self.sock, length)
                if payload == BYE:
                    self.bye.set()
                    return
                self.allocator.deliver(self.peer, payload)
        except (OSError, ConnectionError, struct.error) as error:
            if not self.bye.is_set():
                self.allocator.fail(f"worker {self.peer} disconnected: {error}")

    def goodbye(self) -> None:
        self.outgoing.put([BYE])

    def close(self) -> None:
        self.outgoing.put(None)
        self.sender.join(5)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def read_hostfile(path, processes: int) -> list[tuple[str, int]]:
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


def execute_cluster(work, config, **options):
    """Runs this host's ``config.workers`` workers (``-p`` of ``-n`` hosts) as
    forked processes; returns their results in index order."""
    from timely.communication.process import execute_processes

    secret = os.environ.get("TIMELY_SECRET")
    if not secret:
        raise TimelyError("set TIMELY_SECRET to the secret shared by every process")
    if not 0 <= config.process < config.processes:
        raise TimelyError(f"-p {config.process} is not in [0, {config.processes})")
    if config.workers < 1:
        raise TimelyError(f"-w {config.workers}: each host runs at least one worker")
    w = config.workers
    addresses = worker_addresses(read_hostfile(config.hostfile, config.processes), w)
    first = config.process * w
    local = range(first, first + w)

    def link(allocator):
        sockets = connect(allocator.index, addresses, secret.encode(), local)
        allocator.add_links({j: _Link(sock, j, allocator) for j, sock in sockets.items()})

    return execute_processes(work, w, first=first, peers=len(addresses), connect=link, **options)
