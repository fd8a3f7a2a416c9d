"""Authenticated TCP links between workers on different hosts.

- :func:`authenticate` (and :func:`handshake`, which returns only the peer's
  index): both sides prove knowledge of the shared secret by answering a
  random 32-byte challenge of the other with HMAC-SHA256 (distinct roles for
  the two directions), all within one deadline (not one per read). Both
  challenges and the secret give the connection its :class:`Session`: one
  key per direction (HMAC-SHA256 of a key derived from the secret and both
  challenges, under the direction's label). The worker indices are then
  exchanged as the first authenticated frames. Raises
  :class:`timely.errors.AuthenticationError`.
- :class:`Session`: framing on an authenticated socket. A frame is a 41-byte
  header (kind, length, HMAC-SHA256 tag) and its payload; the tag covers
  the frame's sequence number (counted by both sides, never sent), kind,
  length and payload, and is checked with :func:`hmac.compare_digest` before
  a byte of the payload is handed on. A frame tampered with, injected,
  replayed, reordered or dropped fails the check of that or the next frame:
  :class:`~timely.errors.AuthenticationError`; a malformed header:
  :class:`~timely.errors.FrameError`. The payload of a frame is read in
  chunks of at most ``CHUNK`` bytes into a buffer that grows with what has
  arrived, so a length prefix alone allocates nothing big.
- :class:`Link`: one session carrying frames, with a sender thread and a
  receiver thread so that a worker never blocks on a socket. Frames are the
  codec's (:mod:`timely.communication.codec`: columns as raw buffers, the
  rest pickled, which is why only frames whose tag checks are decoded). An
  idle sender sends a heartbeat every ``heartbeat`` seconds
  (``HEARTBEAT``, 1, by default); a peer from which nothing arrives for
  ``liveness`` seconds (``LIVENESS_TIMEOUT``, 5, by default), or that
  disconnects without saying goodbye, fails the computation naming it.
- :func:`connect` / :func:`connect_with`: worker ``i`` of ``addresses``
  connects to every remote worker before it and accepts every remote worker
  after it. Connections handshake concurrently, each under one deadline of
  ``HANDSHAKE_TIMEOUT`` seconds, at most ``MAX_PENDING`` at once; one that
  fails or is too slow is dropped while the others go on. Start-up gives up
  after ``timeout`` seconds (``CONNECT_TIMEOUT``, 60, by default) naming
  the workers that never arrived.
- TLS, optional (:func:`tls_contexts`): every
  connection is wrapped in TLS with mutual certificate verification against
  one CA before the handshake, which still runs inside it. The frames' MAC
  authenticates; TLS adds confidentiality. :class:`TLSSocket` keeps the TLS
  state apart from the socket so that a link's two threads may use it at
  once.
- :func:`recv_exact`: exactly ``n`` bytes, or ConnectionError.
- :func:`read_hostfile` and :func:`worker_addresses`: the ``-h`` hostfile
  (``host:port`` per line; by default ``127.0.0.1:2101+p``) and worker
  ``p * w + k`` listening at host ``p``'s port + ``k``.

Costs: per frame one header and one HMAC-SHA256 pass over the payload (in
the link's thread; hashlib releases the GIL on large buffers); the payload's
buffers are sent back to back without being joined; two threads per remote
worker.

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
import select
import socket
import ssl
import struct
import threading
import time
from typing import overload

from timely.errors import AuthenticationError, ConfigurationError, FrameError, WorkerFailed

HANDSHAKE_TIMEOUT = 5.0
# The defaults of the settings a launcher gives from its configuration
# (timely.config: TIMELY_CONNECT_TIMEOUT, TIMELY_HEARTBEAT, TIMELY_LIVENESS_TIMEOUT).
CONNECT_TIMEOUT = 60.0
HEARTBEAT = 1.0
LIVENESS_TIMEOUT = 5.0
MAX_FRAME = 1 << 30
MAX_PENDING = 64
CHUNK = 1 << 22

# Frame kinds.
DATA = 0
HEARTBEAT_FRAME = 1
BYE = 2
HELLO = 3
_KINDS = (DATA, HEARTBEAT_FRAME, BYE, HELLO)

_HEADER = struct.Struct("<BQ32s")         # kind, payload length, tag
_MACED = struct.Struct("<QBQ")            # sequence number, kind, length
_INDEX = struct.Struct("<q")
_GOODBYE = object()                       # queued by Link.goodbye

log = logging.getLogger(__name__)


@overload
def _remaining(deadline: float) -> float: ...
@overload
def _remaining(deadline: None) -> None: ...


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


def recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytearray:
    """Exactly ``n`` bytes in one buffer, by ``deadline`` (a ``time.monotonic()``
    instant) when given. The buffer grows with what arrives, ``CHUNK`` bytes
    at a time: a peer that announces much and sends little costs little."""
    buffer = bytearray(min(n, CHUNK))
    got = 0
    while got < n:
        if got == len(buffer):
            buffer.extend(bytes(min(n - got, CHUNK)))
        if deadline is not None:
            sock.settimeout(_remaining(deadline))
        view = memoryview(buffer)
        try:
            k = sock.recv_into(view[got:], len(buffer) - got)
        finally:
            view.release()
        if not k:
            raise ConnectionError("connection closed")
        got += k
    return buffer


class Session:
    """An authenticated connection to worker ``peer``: ``sock`` with one
    HMAC-SHA256 key per direction and the two sequence counters.

    :meth:`send_frame` and :meth:`recv_frame` may be used from two threads
    (one each), not more.
    """

    def __init__(self, sock, send_key: bytes, recv_key: bytes, peer: int = -1):
        self.sock = sock
        self.peer = peer
        self._send_mac = hmac.new(send_key, digestmod=hashlib.sha256)
        self._recv_mac = hmac.new(recv_key, digestmod=hashlib.sha256)
        self.sent = 0
        self.received = 0
        self._send_lock = threading.Lock()

    def send_frame(self, parts, kind: int = DATA) -> None:
        """Sends one frame whose payload is ``parts`` (buffers), tagged."""
        views = [memoryview(p).cast("B") for p in parts]
        length = sum(v.nbytes for v in views)
        with self._send_lock:
            mac = self._send_mac.copy()
            mac.update(_MACED.pack(self.sent, kind, length))
            for v in views:
                mac.update(v)
            self.sent += 1
            sock = self.sock
            sock.sendall(_HEADER.pack(kind, length, mac.digest()))
            for v in views:
                for start in range(0, v.nbytes, CHUNK):
                    sock.sendall(v[start:start + CHUNK])

    def recv_frame(self, limit: int = MAX_FRAME, deadline: float | None = None):
        """The next frame as ``(kind, payload)``, once its tag checked.

        Raises FrameError for a malformed header, AuthenticationError for a
        tag that does not check (tampered, injected, replayed, reordered or
        a frame dropped before it), ConnectionError when the peer closed."""
        header = recv_exact(self.sock, _HEADER.size, deadline)
        kind, length, tag = _HEADER.unpack(header)
        if kind not in _KINDS:
            raise FrameError(f"a frame of unknown kind {kind} from worker {self.peer}")
        if length > limit:
            raise FrameError(f"a frame of {length} bytes from worker {self.peer} "
                             f"exceeds the limit of {limit}")
        payload = recv_exact(self.sock, length, deadline)
        mac = self._recv_mac.copy()
        mac.update(_MACED.pack(self.received, kind, length))
        mac.update(payload)
        if not hmac.compare_digest(mac.digest(), tag):
            raise AuthenticationError(
                f"frame {self.received} from worker {self.peer} fails its MAC "
                "(tampered, injected, replayed, reordered or one dropped before it)")
        self.received += 1
        return kind, payload

    def close(self) -> None:
        """Shuts the connection down both ways and closes it."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def _tag(secret: bytes, data: bytes) -> bytes:
    return hmac.new(secret, data, hashlib.sha256).digest()


def authenticate(sock: socket.socket, secret: bytes, me: int, accepting: bool,
                 timeout: float = HANDSHAKE_TIMEOUT) -> Session:
    """Authenticates both ways within ``timeout`` seconds in all, derives the
    session keys and exchanges worker indices; returns the :class:`Session`
    (``peer`` set)."""
    deadline = time.monotonic() + timeout
    try:
        sock.settimeout(timeout)
        if accepting:
            mine = os.urandom(32)
            sock.sendall(mine)
            answer = recv_exact(sock, 32, deadline)
            if not hmac.compare_digest(answer, _tag(secret, mine + b"client")):
                raise AuthenticationError("the peer's answer to the challenge is wrong")
            theirs = bytes(recv_exact(sock, 32, deadline))
            sock.sendall(_tag(secret, theirs + b"server"))
            server_nonce, client_nonce = mine, theirs
        else:
            theirs = bytes(recv_exact(sock, 32, deadline))
            sock.sendall(_tag(secret, theirs + b"client"))
            mine = os.urandom(32)
            sock.sendall(mine)
            answer = recv_exact(sock, 32, deadline)
            if not hmac.compare_digest(answer, _tag(secret, mine + b"server")):
                raise AuthenticationError("the peer's answer to the challenge is wrong")
            server_nonce, client_nonce = theirs, mine
        root = _tag(secret, b"timely session v1" + server_nonce + client_nonce)
        to_server = _tag(root, b"client to server")
        to_client = _tag(root, b"server to client")
        session = (Session(sock, to_client, to_server) if accepting
                   else Session(sock, to_server, to_client))
        session.send_frame([_INDEX.pack(me)], HELLO)
        kind, payload = session.recv_frame(_INDEX.size, deadline)
        if kind != HELLO or len(payload) != _INDEX.size:
            raise AuthenticationError("the peer did not introduce itself")
        (session.peer,) = _INDEX.unpack(payload)
    except (OSError, ConnectionError, FrameError) as error:
        if isinstance(error, AuthenticationError):
            raise
        raise AuthenticationError(f"handshake failed: {error}") from error
    sock.settimeout(None)
    return session


def handshake(sock: socket.socket, secret: bytes, me: int, accepting: bool,
              timeout: float = HANDSHAKE_TIMEOUT) -> int:
    """:func:`authenticate`, returning only the peer's index."""
    return authenticate(sock, secret, me, accepting, timeout).peer


# -- TLS --------------------------------------------------------------------------


class TLS:
    """A pair of :class:`ssl.SSLContext`: one to accept, one to connect, both
    requiring the other side's certificate signed by the same CA."""

    def __init__(self, cert: str, key: str, ca: str):
        self.server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        for context in (self.server, self.client):
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(cert, key)
            context.load_verify_locations(ca)
            context.verify_mode = ssl.CERT_REQUIRED
        # Workers are addressed by IP in hostfiles: membership is proven by a
        # certificate of the cluster's CA and by the shared secret, not by a name.
        self.client.check_hostname = False

    def wrap(self, sock: socket.socket, accepting: bool, deadline: float) -> TLSSocket:
        """``sock`` in TLS, its handshake done by ``deadline``."""
        context = self.server if accepting else self.client
        wrapped = TLSSocket(sock, context, accepting)
        try:
            wrapped.handshake(deadline)
        except (ssl.SSLError, OSError, ConnectionError) as error:
            wrapped.close()
            raise AuthenticationError(f"TLS handshake failed: {error}") from error
        return wrapped


class TLSSocket:
    """A socket in TLS that one thread may read while another writes.

    One :class:`ssl.SSLSocket` must not be read and written at once from two
    threads (OpenSSL's connection state is not thread-safe, and a link has a
    sender and a receiver thread). Here the TLS state is an
    :class:`ssl.SSLObject` over two memory buffers, touched only under a
    lock and only by calls that never block; the socket itself is read and
    written outside that lock. Bytes the TLS layer has to send while reading
    (a key update, a session ticket) wait for the next write.

    Offers what :class:`Session` and :func:`recv_exact` use: ``recv_into``,
    ``recv``, ``sendall``, ``settimeout``, ``setsockopt``, ``shutdown``,
    ``close``, ``fileno``. End of stream, with or without TLS's close
    notification, reads as 0 bytes, as on a plain socket.
    """

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, server_side: bool):
        self.raw = sock
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_side=server_side)
        self._lock = threading.Lock()          # the SSLObject and its buffers
        self._write_lock = threading.Lock()    # one writer of the socket at a time
        self._eof = False

    def handshake(self, deadline: float) -> None:
        while True:
            with self._lock:
                try:
                    self._tls.do_handshake()
                    done = True
                except ssl.SSLWantReadError:
                    done = False
                except ssl.SSLError:
                    # The alert that says why is worth trying to deliver.
                    pending = self._out.read()
                    if pending:
                        with contextlib.suppress(OSError):
                            self.raw.sendall(pending)
                    raise
            self._flush(deadline)
            if done:
                return
            self.raw.settimeout(_remaining(deadline))
            data = self.raw.recv(CHUNK)
            if not data:
                raise ConnectionError("connection closed during the TLS handshake")
            with self._lock:
                self._in.write(data)

    def _flush(self, deadline: float | None = None) -> None:
        with self._write_lock:
            with self._lock:
                pending = self._out.read()
            if pending:
                if deadline is not None:
                    self.raw.settimeout(_remaining(deadline))
                self.raw.sendall(pending)

    def recv_into(self, buffer, nbytes: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        n = nbytes or view.nbytes
        while True:
            with self._lock:
                try:
                    # with a buffer, read() returns the count (typeshed says bytes)
                    return self._tls.read(n, view)  # type: ignore[return-value]
                except ssl.SSLWantReadError:
                    pass
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    return 0
            if self._eof:
                return 0
            data = self.raw.recv(CHUNK)
            with self._lock:
                if data:
                    self._in.write(data)
                else:
                    self._eof = True
                    self._in.write_eof()

    def recv(self, nbytes: int) -> bytes:
        buffer = bytearray(nbytes)
        k = self.recv_into(buffer, nbytes)
        return bytes(buffer[:k])

    def sendall(self, data) -> None:
        view = memoryview(data).cast("B")
        with self._write_lock:
            start = 0
            while True:
                with self._lock:
                    while start < view.nbytes:
                        start += self._tls.write(view[start:start + CHUNK])
                        if self._out.pending >= CHUNK:
                            break
                    pending = self._out.read()
                if pending:
                    self.raw.sendall(pending)
                if start >= view.nbytes:
                    return

    def settimeout(self, timeout: float | None) -> None:
        self.raw.settimeout(timeout)

    def setsockopt(self, *args) -> None:
        self.raw.setsockopt(*args)

    def fileno(self) -> int:
        return self.raw.fileno()

    def shutdown(self, how: int) -> None:
        if how != socket.SHUT_RD:
            # Say so in TLS first (close_notify), then at the TCP level.
            with contextlib.suppress(ssl.SSLError, OSError, ValueError):
                with self._write_lock:
                    with self._lock:
                        with contextlib.suppress(ssl.SSLWantReadError):
                            self._tls.unwrap()
                        pending = self._out.read()
                    if pending:
                        self.raw.sendall(pending)
        self.raw.shutdown(how)

    def close(self) -> None:
        self.raw.close()


def tls_contexts(cert: str, key: str, ca: str) -> TLS:
    """TLS with this host's certificate and key and the CA that signed every
    host's certificate (paths to PEM files)."""
    return TLS(cert, key, ca)


# -- links ------------------------------------------------------------------------


class Link:
    """One authenticated session with worker ``session.peer``: a sender thread
    and a receiver thread.

    ``sink`` receives what arrives, from the receiver thread:
    ``sink.deliver(peer, frame)`` for every data frame (a bytearray whose tag
    checked) and ``sink.fail(reason)`` when the peer goes away without saying
    goodbye, stays silent longer than ``liveness`` seconds, sends a frame
    that fails its check, or a send fails;
    :class:`timely.communication.process.RingAllocator` is one. ``bye`` is
    set when the peer said goodbye, ``finished`` when the receiver stopped
    (after a goodbye or a failure). The sender sends a heartbeat after
    ``heartbeat`` idle seconds.
    """

    def __init__(self, session: Session, sink, *, heartbeat: float | None = None,
                 liveness: float | None = None):
        self.session = session
        self.sock = session.sock
        self.peer = session.peer
        self.sink = sink
        self.heartbeat = HEARTBEAT if heartbeat is None else heartbeat
        self.liveness = LIVENESS_TIMEOUT if liveness is None else liveness
        self.outgoing: queue.SimpleQueue = queue.SimpleQueue()
        self.bye = threading.Event()
        self.finished = threading.Event()     # the receiver stopped, for whatever reason
        self.closing = False
        # A send or a receive waiting longer than this has lost its peer.
        self.sock.settimeout(self.liveness)
        self.sender = threading.Thread(target=self._send_loop, daemon=True,
                                       name=f"timely-send-{self.peer}")
        self.receiver = threading.Thread(target=self._recv_loop, daemon=True,
                                         name=f"timely-recv-{self.peer}")
        self.sender.start()
        self.receiver.start()

    def send(self, parts) -> None:
        """Queues one frame, given as a list of buffers sent back to back."""
        self.outgoing.put(parts)

    def _send_loop(self) -> None:
        session = self.session
        outgoing = self.outgoing
        try:
            while True:
                try:
                    parts = outgoing.get(timeout=self.heartbeat)
                except queue.Empty:
                    session.send_frame((), HEARTBEAT_FRAME)
                    continue
                if parts is None:
                    return
                if parts is _GOODBYE:
                    # Nothing follows a goodbye, not even a heartbeat: the
                    # peer may stop reading once it has it.
                    session.send_frame((), BYE)
                    while outgoing.get() is not None:
                        pass
                    return
                session.send_frame(parts)
        except OSError as error:
            if not self.closing:
                self.sink.fail(f"worker {self.peer} disconnected (a send failed: {error})")

    def _recv_loop(self) -> None:
        session = self.session
        try:
            while True:
                kind, payload = session.recv_frame()
                if kind == DATA:
                    self.sink.deliver(self.peer, payload)
                elif kind == BYE:
                    self.bye.set()
                    self.finished.set()
                    # Read on until the peer closes, so that closing here
                    # never finds unread bytes (which would reset the
                    # connection and could destroy our own goodbye before
                    # the peer reads it).
                    self._drain()
                    return
                elif kind != HEARTBEAT_FRAME:
                    raise FrameError(f"an unexpected frame of kind {kind} from worker {self.peer}")
        except (AuthenticationError, FrameError) as error:
            self.sink.fail(f"worker {self.peer} sent a frame that was refused: "
                           f"{type(error).__name__}: {error}")
        except TimeoutError:
            if not self.closing:
                self.sink.fail(f"worker {self.peer} was silent for more than "
                               f"{self.liveness:g} s (liveness timeout)")
        except (OSError, ConnectionError) as error:
            if not self.bye.is_set() and not self.closing:
                self.sink.fail(f"worker {self.peer} disconnected: {error}")
        finally:
            self.finished.set()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while self.sock.recv(CHUNK):
                pass

    def goodbye(self) -> None:
        """Queues the goodbye: the peer stops expecting frames from here."""
        self.outgoing.put(_GOODBYE)

    def close(self) -> None:
        """Stops the sender after what is queued, says so to the peer (a
        half close), lets the receiver read to the end, then closes."""
        self.outgoing.put(None)
        self.sender.join(5)
        self.closing = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        if self.bye.is_set():
            self.receiver.join(2)
        self.session.close()


# -- addresses ------------------------------------------------------------------


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
        raise ConfigurationError(f"hostfile {path} lists {len(addresses)} addresses for {processes} processes")
    return addresses[:processes]


def worker_addresses(hosts, workers: int) -> list[tuple[str, int]]:
    """Worker ``p * workers + k`` listens on host ``p``'s address, port + ``k``."""
    return [(host, port + k) for host, port in hosts for k in range(workers)]


# -- start-up -------------------------------------------------------------------


def connect(index: int, addresses, secret: bytes, local=(), timeout: float = CONNECT_TIMEOUT,
            tls: TLS | None = None) -> dict:
    """Authenticated sessions with every worker not in ``local`` (this host's,
    reached through shared memory), keyed by worker index."""
    listener = socket.create_server(addresses[index], reuse_port=False)
    return connect_with(listener, index, addresses, secret, local, timeout, tls)


class _Attempt:
    """One connection being authenticated in its own thread."""

    def __init__(self, sock, deadline: float):
        self.sock = sock                   # the socket to shut down when too slow
        self.deadline = deadline
        self.session: Session = None  # type: ignore[assignment]  # set with done, unless error
        self.error: BaseException | None = None
        self.done = threading.Event()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


def _shake(attempt: _Attempt, secret: bytes, me: int, accepting: bool, tls, wake) -> None:
    try:
        sock = attempt.sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            sock = tls.wrap(sock, accepting, attempt.deadline)
            attempt.sock = sock
        left = _remaining(attempt.deadline)
        attempt.session = authenticate(sock, secret, me, accepting, left)
    except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
        attempt.error = error
        with contextlib.suppress(OSError):
            attempt.sock.close()
    finally:
        attempt.done.set()
        wake()


def connect_with(listener, index: int, addresses, secret: bytes, local=(),
                 timeout: float = CONNECT_TIMEOUT, tls: TLS | None = None) -> dict:
    """:func:`connect` through a listening socket already open at ``addresses[index]``
    (closed on return).

    Every connection, made or accepted, is authenticated in its own thread
    within ``HANDSHAKE_TIMEOUT``; at most ``MAX_PENDING`` accepted ones at
    once (more are closed at once). An accepted connection that fails or is
    too slow is dropped and the others go on; a connection this worker made
    that fails to authenticate is an error (the address is not our peer's)."""
    peers = len(addresses)
    remote = [j for j in range(peers) if j != index and j not in local]
    sessions: dict = {}
    deadline = time.monotonic() + timeout
    wake_r, wake_w = socket.socketpair()
    wake_w.setblocking(False)

    def wake() -> None:
        with contextlib.suppress(OSError):
            wake_w.send(b"\x01")

    accepted: list[_Attempt] = []
    outgoing: dict[int, _Attempt | None] = {j: None for j in remote if j < index}
    next_try: dict[int, float] = {j: 0.0 for j in outgoing}
    listener.setblocking(False)

    def start(sock, accepting: bool) -> _Attempt:
        attempt = _Attempt(sock, time.monotonic() + HANDSHAKE_TIMEOUT)
        threading.Thread(target=_shake, args=(attempt, secret, index, accepting, tls, wake),
                         daemon=True, name="timely-handshake").start()
        return attempt

    try:
        while len(sessions) < len(remote):
            now = time.monotonic()
            if now > deadline:
                unreachable = [j for j in outgoing if j not in sessions]
                if unreachable:
                    j = unreachable[0]
                    raise WorkerFailed(f"worker {index}: cannot reach worker {j} at "
                                       f"{addresses[j]} within {timeout:g} s")
                missing = sorted(set(remote) - set(sessions))
                raise WorkerFailed(f"worker {index}: workers {missing} never connected "
                                   f"within {timeout:g} s")
            for j, attempt in outgoing.items():
                if j in sessions or attempt is not None or now < next_try[j]:
                    continue
                try:
                    sock = socket.create_connection(addresses[j], timeout=0.5)
                except OSError:
                    next_try[j] = now + 0.05
                    continue
                outgoing[j] = start(sock, False)
            for j, attempt in list(outgoing.items()):
                if attempt is None or not attempt.done.is_set():
                    continue
                if attempt.error is not None:
                    if isinstance(attempt.error, AuthenticationError):
                        raise attempt.error
                    outgoing[j] = None      # a refused or reset connection: try again
                    next_try[j] = time.monotonic() + 0.05
                    continue
                session = attempt.session
                if session.peer != j:
                    session.close()
                    raise WorkerFailed(f"worker {index}: {addresses[j]} answered as worker "
                                       f"{session.peer}, not {j}")
                log.info("worker %d: authenticated connection to worker %d at %s:%s",
                         index, j, *addresses[j][:2])
                sessions[j] = session
                outgoing[j] = None
            for attempt in [a for a in accepted if a.done.is_set()]:
                accepted.remove(attempt)
                session = attempt.session
                if session is None:
                    log.warning("worker %d: dropped a connection that failed to "
                                "authenticate: %s", index, attempt.error)
                elif session.peer not in remote or session.peer < index or session.peer in sessions:
                    log.warning("worker %d: dropped a connection from unexpected worker %d",
                                index, session.peer)
                    session.close()
                else:
                    log.info("worker %d: accepted an authenticated connection from worker %d",
                             index, session.peer)
                    sessions[session.peer] = session
            now = time.monotonic()
            for attempt in accepted + [a for a in outgoing.values() if a is not None]:
                if now > attempt.deadline:
                    attempt.abort()         # too slow: its thread fails and reports
            if len(sessions) == len(remote):
                break
            ready, _, _ = select.select([listener, wake_r], [], [], 0.05)
            if wake_r in ready:
                with contextlib.suppress(OSError):
                    wake_r.recv(4096)
            if listener in ready:
                while True:
                    try:
                        sock, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    if len(accepted) >= MAX_PENDING:
                        log.warning("worker %d: %d handshakes pending; dropped a connection",
                                    index, len(accepted))
                        sock.close()
                        continue
                    sock.setblocking(True)
                    accepted.append(start(sock, True))
    except BaseException:
        for session in sessions.values():
            session.close()
        raise
    finally:
        listener.close()
        for attempt in accepted + [a for a in outgoing.values() if a is not None]:
            attempt.abort()
            attempt.done.wait(1)
            if attempt.session is not None:
                attempt.session.close()
        wake_r.close()
        wake_w.close()
    return sessions


__all__ = ["BYE", "CHUNK", "CONNECT_TIMEOUT", "DATA", "HEARTBEAT_FRAME", "HELLO", "HANDSHAKE_TIMEOUT", "HEARTBEAT", "LIVENESS_TIMEOUT",
           "MAX_FRAME", "MAX_PENDING", "TLS", "TLSSocket", "Link", "Session", "authenticate", "connect",
           "connect_with", "handshake", "read_hostfile", "recv_exact", "tls_contexts",
           "worker_addresses"]
