"""Workers in several processes, possibly on several hosts, over TCP.

``execute_from_args(["-n", N, "-p", P, "-h", hostfile], work)`` runs worker P
of N (one worker per process). Process P listens on its own address from the
hostfile (``host:port`` per line; by default ``127.0.0.1:2101+P``), connects
to every process before it and accepts every process after it.

Every connection is authenticated before anything else is read: both sides
prove knowledge of the shared secret (``TIMELY_SECRET``) by answering a
random challenge with HMAC-SHA256, reading exactly the bytes they expect,
with a timeout. Peers that fail are dropped. Only then do frames flow: an
8-byte length (bounded) and a payload that is a pickled batch, which crosses
only these authenticated connections between the computation's own workers.

Each connection has a sender thread and a receiver thread, so a worker never
blocks on a socket: it queues batches and reads what the receiver collected.
A peer that disconnects without saying goodbye fails the computation.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import queue
import socket
import struct
import threading
import time
from collections import deque

from timely.communication.allocator import BatchingAllocator
from timely.communication.threads import WorkerFailed
from timely.errors import TimelyError

HANDSHAKE_TIMEOUT = 5.0
CONNECT_TIMEOUT = float(os.environ.get("TIMELY_CONNECT_TIMEOUT", "60"))
MAX_FRAME = 1 << 30
BYE = b"timely-bye"


class AuthenticationError(TimelyError, ConnectionError):
    """A peer did not prove knowledge of the shared secret."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


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

    def __init__(self, sock: socket.socket, peer: int, allocator: "ClusterAllocator"):
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

    def send(self, payload: bytes) -> None:
        self.outgoing.put(payload)

    def _send_loop(self) -> None:
        try:
            while True:
                payload = self.outgoing.get()
                if payload is None:
                    return
                self.sock.sendall(struct.pack("<Q", len(payload)) + payload)
        except OSError as error:
            self.allocator.fail(f"sending to worker {self.peer} failed: {error}")

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

    def close(self) -> None:
        self.outgoing.put(None)
        self.sender.join(5)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


class ClusterAllocator(BatchingAllocator):
    """Worker ``index`` of ``peers``, one per process, linked by TCP."""

    def __init__(self, index: int, peers: int, sockets: dict):
        super().__init__(index, peers)
        self.inbox: deque = deque()
        self.doorbell = threading.Event()
        self.failure = None
        self.links = {j: _Link(sock, j, self) for j, sock in sockets.items()}

    # called from the receiver threads
    def deliver(self, peer: int, payload: bytes) -> None:
        self.inbox.append(payload)
        self.doorbell.set()

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self.doorbell.set()

    def receive(self) -> None:
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")
        inbox = self.inbox
        while inbox:
            self.deliver_batch(inbox.popleft())

    def release(self) -> None:
        for j, batch in self.take_outboxes():
            self.links[j].send(batch)

    def park(self, timeout) -> None:
        if not self.inbox:
            self.doorbell.wait(timeout)
        self.doorbell.clear()
        if self.failure is not None:
            raise WorkerFailed(f"worker {self.index}: {self.failure}")

    def shutdown(self) -> None:
        """Says goodbye to every peer and waits for theirs, then closes."""
        for link in self.links.values():
            link.send(BYE)
        deadline = time.monotonic() + CONNECT_TIMEOUT
        for link in self.links.values():
            link.bye.wait(max(0.0, deadline - time.monotonic()))
        for link in self.links.values():
            link.close()


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


def connect(index: int, addresses, secret: bytes, timeout: float = CONNECT_TIMEOUT) -> dict:
    """Authenticated sockets to every other process, keyed by worker index."""
    peers = len(addresses)
    sockets: dict = {}
    listener = socket.create_server(addresses[index], reuse_port=False)
    listener.settimeout(0.2)
    deadline = time.monotonic() + timeout
    try:
        for j in range(index):
            while True:
                try:
                    sock = socket.create_connection(addresses[j], timeout=HANDSHAKE_TIMEOUT)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimelyError(f"worker {index}: cannot reach worker {j} at {addresses[j]}")
                    time.sleep(0.05)
            peer = handshake(sock, secret, index, accepting=False)
            if peer != j:
                raise TimelyError(f"worker {index}: {addresses[j]} answered as worker {peer}, not {j}")
            sockets[j] = sock
        while len(sockets) < peers - 1:
            if time.monotonic() > deadline:
                missing = sorted(set(range(peers)) - set(sockets) - {index})
                raise TimelyError(f"worker {index}: workers {missing} never connected")
            try:
                sock, _ = listener.accept()
            except socket.timeout:
                continue
            try:
                peer = handshake(sock, secret, index, accepting=True)
            except AuthenticationError:
                sock.close()          # not one of ours: drop it, keep listening
                continue
            if not index < peer < peers or peer in sockets:
                sock.close()
                continue
            sockets[peer] = sock
    finally:
        listener.close()
    for sock in sockets.values():
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sockets


def execute_cluster(work, config, **options):
    """Runs worker ``config.process`` of ``config.processes``; returns ``[result]``."""
    from timely.worker import Worker

    if config.workers != 1:
        raise TimelyError("with -n, each process runs one worker: use -w 1")
    secret = os.environ.get("TIMELY_SECRET")
    if not secret:
        raise TimelyError("set TIMELY_SECRET to the secret shared by every process")
    addresses = read_hostfile(config.hostfile, config.processes)
    if not 0 <= config.process < config.processes:
        raise TimelyError(f"-p {config.process} is not in [0, {config.processes})")
    sockets = connect(config.process, addresses, secret.encode())
    allocator = ClusterAllocator(config.process, config.processes, sockets)
    try:
        worker = Worker(allocator, **options)
        result = work(worker)
        worker.drain()
    except BaseException:
        for link in allocator.links.values():
            link.close()
        raise
    allocator.shutdown()
    return [result]
