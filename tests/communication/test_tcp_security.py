"""What a man in the middle, an unauthenticated peer or a silent one can do
to TCP links: frames tampered with, injected, replayed, reordered or dropped
are refused before decoding; start-up goes on past silent and slow sockets;
a silent peer fails the link within the liveness timeout, allocating
nothing big."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.communication.mitm import HEADER, Proxy
from tests.communication.test_tcp import Sink, in_thread
from timely.communication import codec
from timely.communication.tcp import (
    HANDSHAKE_TIMEOUT,
    Link,
    Session,
    authenticate,
    connect_with,
)
from timely.errors import AuthenticationError, FrameError

ROOT = Path(__file__).resolve().parent.parent.parent
SECRET = b"secret"


class DecodingSink(Sink):
    """Decodes every frame it is given, as a worker does."""

    def deliver(self, peer, frame):
        for _, message in codec.decode(frame):
            self.frames.append((peer, message))
        self.event.set()


class Marker:
    """Unpickling this creates the file ``path``."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def through_proxy(rewrite):
    """An authenticated session pair whose client-to-server frames pass ``rewrite``."""
    listener = socket.create_server(("127.0.0.1", 0))
    proxy = Proxy(listener.getsockname(), rewrite)

    def accept():
        sock, _ = listener.accept()
        listener.close()
        return authenticate(sock, SECRET, 0, True)

    server = in_thread(accept)
    client = authenticate(socket.create_connection(proxy.address), SECRET, 1, False)
    return proxy, server(), client


def send_records(client: Session, *batches):
    for i, records in enumerate(batches):
        client.send_frame(codec.encode([(7, (i, records))]))


def run_link(rewrite, batches, expect_failure=True):
    proxy, server, client = through_proxy(rewrite)
    sink = DecodingSink()
    link = Link(server, sink, heartbeat=30, liveness=30)
    try:
        send_records(client, *batches)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not sink.failures and \
                len(sink.frames) < len(batches):
            sink.event.wait(0.1)
            sink.event.clear()
        assert bool(sink.failures) == expect_failure, sink.failures
        return sink
    finally:
        link.close()
        client.close()
        proxy.close()


def forward(n, kind, header, payload):
    return [header, payload]


def test_frames_through_an_honest_proxy_arrive():
    sink = run_link(forward, [["a"], ["b"], ["c"]], expect_failure=False)
    assert [m for _, m in sink.frames] == [(0, ["a"]), (1, ["b"]), (2, ["c"])]


def test_a_tampered_frame_is_refused_and_nothing_after_it_is_delivered():
    def flip(n, kind, header, payload):
        if n == 2:
            payload = payload[:-1] + bytes([payload[-1] ^ 1])
        return [header, payload]

    sink = run_link(flip, [["a"], ["b"], ["c"]])
    assert [m for _, m in sink.frames] == [(0, ["a"])]
    assert "frame 2 from worker 1 fails its MAC" in sink.failures[0]


def test_a_replayed_frame_is_refused():
    def twice(n, kind, header, payload):
        return [header, payload] * (2 if n == 1 else 1)

    sink = run_link(twice, [["a"], ["b"]])
    assert [m for _, m in sink.frames] == [(0, ["a"])]
    assert "AuthenticationError" in sink.failures[0]


def test_reordered_frames_are_refused():
    held = []

    def swap(n, kind, header, payload):
        if n == 1:
            held.append([header, payload])
            return []
        if n == 2:
            return [header, payload, *held[0]]
        return [header, payload]

    sink = run_link(swap, [["a"], ["b"], ["c"]])
    assert sink.frames == []
    assert "frame 1 from worker 1 fails its MAC" in sink.failures[0]


def test_a_dropped_frame_is_detected_at_the_next():
    def drop(n, kind, header, payload):
        return [] if n == 1 else [header, payload]

    sink = run_link(drop, [["a"], ["b"], ["c"]])
    assert sink.frames == []
    assert "fails its MAC" in sink.failures[0]


def test_a_rewritten_frame_is_never_unpickled(tmp_path):
    marker = tmp_path / "marker"
    evil = b"".join(bytes(p) for p in codec.encode([(7, (0, [Marker(marker)]))]))
    # The control: a receiver that decoded this payload would create the marker.
    codec.decode(bytearray(evil))
    assert marker.exists()
    marker.unlink()

    def inject(n, kind, header, payload):
        if n == 1:
            kind, _, tag = HEADER.unpack(header)
            return [HEADER.pack(kind, len(evil), tag), evil]
        return [header, payload]

    sink = run_link(inject, [["a"], ["b"]])
    assert sink.frames == []
    assert "fails its MAC" in sink.failures[0]
    assert not marker.exists()


def test_a_header_of_unknown_kind_or_size_is_a_frame_error():
    a, b = socket.socketpair()
    server = in_thread(authenticate, a, SECRET, 0, True)
    client = authenticate(b, SECRET, 1, False)
    session = server()
    b.sendall(HEADER.pack(9, 0, bytes(32)))
    with pytest.raises(FrameError, match="unknown kind 9"):
        session.recv_frame()
    b.sendall(HEADER.pack(0, 1 << 20, bytes(32)))
    with pytest.raises(FrameError, match="exceeds the limit"):
        session.recv_frame(limit=1 << 10)
    client.close()
    session.close()


def test_keys_differ_per_connection_and_direction():
    pairs = []
    for _ in range(2):
        a, b = socket.socketpair()
        server = in_thread(authenticate, a, SECRET, 0, True)
        client = authenticate(b, SECRET, 1, False)
        pairs.append((server(), client))
    (s1, c1), (s2, c2) = pairs
    # a frame of connection 1 does not check on connection 2, nor in the other direction
    c1.send_frame([b"x"])
    s1.recv_frame()
    s1.send_frame([b"x"])
    frame = c1.sock.recv(1 << 10)
    c2.sock.sendall(frame)
    with pytest.raises(AuthenticationError):
        s2.recv_frame()
    for s in (s1, c1, s2, c2):
        s.close()


# -- start-up -------------------------------------------------------------------


def test_silent_and_slow_sockets_do_not_delay_start_up():
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
    addresses = [s.getsockname() for s in listeners]
    # Two silent sockets and a slowloris reach worker 0 before its real peers.
    silent = [socket.create_connection(addresses[0]) for _ in range(2)]
    slow = socket.create_connection(addresses[0])
    stop = threading.Event()

    def drip():
        while not stop.wait(0.5):
            try:
                slow.send(b"x")
            except OSError:
                return

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        time.sleep(0.3)                     # worker 0 has accepted them all by now
        first = in_thread(connect_with, listeners[0], 0, addresses, SECRET)
        time.sleep(0.2)
        start = time.monotonic()
        others = [in_thread(connect_with, listeners[i], i, addresses, SECRET) for i in (1, 2)]
        sessions = [first()] + [p() for p in others]
        elapsed = time.monotonic() - start
        assert [sorted(s) for s in sessions] == [[1, 2], [0, 2], [0, 1]]
        # Serial handshakes would have waited out each bad socket's deadline.
        print(f"start-up past 3 bad sockets: {elapsed:.3f} s")
        assert elapsed < HANDSHAKE_TIMEOUT, elapsed
        for by_peer in sessions:
            for session in by_peer.values():
                session.close()
    finally:
        stop.set()
        dripper.join(5)
        for s in [*silent, slow]:
            s.close()


def test_a_slowloris_is_dropped_at_its_deadline():
    listener = socket.create_server(("127.0.0.1", 0))
    addresses = [listener.getsockname(), ("127.0.0.1", 1)]
    slow = socket.create_connection(addresses[0])
    stop = threading.Event()
    closed = threading.Event()

    def drip():
        while not stop.wait(0.5):
            try:
                slow.send(b"x")
                if slow.recv(1 << 10, socket.MSG_DONTWAIT) == b"":
                    break
            except BlockingIOError:
                continue
            except OSError:
                break
        closed.set()

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    try:
        with pytest.raises(Exception, match=r"workers \[1\] never connected"):
            connect_with(listener, 0, addresses, SECRET, timeout=HANDSHAKE_TIMEOUT + 2)
        # one byte every half second did not keep the connection open past its deadline
        assert closed.wait(5)
    finally:
        stop.set()
        thread.join(5)
        slow.close()


# -- liveness -------------------------------------------------------------------


RECEIVER = textwrap.dedent("""
    import socket, sys, threading
    from timely.communication.tcp import Link, authenticate

    class Sink:
        def __init__(self):
            self.done = threading.Event()
            self.reason = None
        def deliver(self, peer, frame):
            pass
        def fail(self, reason):
            self.reason = reason
            self.done.set()

    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    sock, _ = listener.accept()
    session = authenticate(sock, b"secret", 0, True)
    sink = Sink()
    link = Link(session, sink, heartbeat=0.5, liveness=float(sys.argv[1]))
    sink.done.wait(60)
    print(sink.reason, flush=True)
    # The peak RSS of this program's memory (ru_maxrss would include the
    # parent's before exec).
    with open("/proc/self/status") as f:
        peak = next(line for line in f if line.startswith("VmHWM:"))
    print(int(peak.split()[1]) // 1024, flush=True)
""")


def test_a_length_prefix_then_silence_fails_within_the_timeout_allocating_little():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", RECEIVER, "1.5"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        session = authenticate(socket.create_connection(("127.0.0.1", port)), SECRET, 1, False)
        session.sock.sendall(HEADER.pack(0, 1 << 30, bytes(32)) + b"x" * 100)
        start = time.monotonic()
        reason = proc.stdout.readline().strip()
        elapsed = time.monotonic() - start
        rss_mb = int(proc.stdout.readline())
        assert proc.wait(10) == 0, proc.stderr.read()
        assert reason == "worker 1 was silent for more than 1.5 s (liveness timeout)"
        assert elapsed < 10
        assert rss_mb < 100, rss_mb
        session.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_heartbeats_keep_an_idle_link_alive_and_a_silent_one_fails():
    a, b = socket.socketpair()
    server = in_thread(authenticate, a, SECRET, 0, True)
    client = authenticate(b, SECRET, 1, False)
    sink_a, sink_b = Sink(), Sink()
    link_a = Link(server(), sink_a, heartbeat=0.2, liveness=1.0)
    link_b = Link(client, sink_b, heartbeat=0.2, liveness=1.0)
    time.sleep(2.0)                          # idle for twice the liveness timeout
    assert sink_a.failures == sink_b.failures == []
    link_b.closing = True
    link_b.outgoing.put(None)                # b's sender stops: b goes silent
    assert sink_a.event.wait(5)
    assert sink_a.failures == ["worker 1 was silent for more than 1 s (liveness timeout)"]
    link_a.close()
    link_b.close()
