"""TCP links on their own: the handshake, exact reads, links delivering
frames to a sink, and workers connecting to each other."""

from __future__ import annotations

import socket
import threading

import pytest

from timely.communication.tcp import (
    Link,
    authenticate,
    connect_with,
    handshake,
    read_hostfile,
    recv_exact,
    worker_addresses,
)
from timely.errors import AuthenticationError, TimelyError


def in_thread(fn, *args):
    """Runs ``fn(*args)`` in a thread; returns a function giving its result or raising its error."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            out["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result():
        thread.join(30)
        assert not thread.is_alive()
        if "error" in out:
            raise out["error"]
        return out["value"]

    return result


def test_recv_exact_reads_across_sends_and_reports_a_close():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"abc")
        pending = in_thread(recv_exact, b, 6)
        a.sendall(b"defg")
        assert pending() == bytearray(b"abcdef")
        assert recv_exact(b, 1) == bytearray(b"g")
        a.close()
        with pytest.raises(ConnectionError):
            recv_exact(b, 1)


def test_handshake_exchanges_indices_under_one_secret():
    a, b = socket.socketpair()
    with a, b:
        server = in_thread(handshake, a, b"secret", 3, True)
        assert handshake(b, b"secret", 5, False) == 3
        assert server() == 5


def test_handshake_refuses_a_wrong_secret_both_ways():
    a, b = socket.socketpair()
    with a, b:
        def serve():
            try:
                return handshake(a, b"secret", 0, True)
            finally:
                a.close()

        server = in_thread(serve)
        with pytest.raises(AuthenticationError):
            handshake(b, b"guess", 1, False)
        with pytest.raises(AuthenticationError, match="wrong"):
            server()


class Sink:
    def __init__(self):
        self.frames = []
        self.failures = []
        self.event = threading.Event()

    def deliver(self, peer, frame):
        self.frames.append((peer, bytes(frame)))
        self.event.set()

    def fail(self, reason):
        self.failures.append(reason)
        self.event.set()


def session_pair(heartbeat=None, liveness=None):
    """Two sessions over a socket pair, authenticated with one secret."""
    a, b = socket.socketpair()
    server = in_thread(authenticate, a, b"secret", 0, True)
    client = authenticate(b, b"secret", 1, False)
    return server(), client


def test_links_carry_frames_in_order_and_say_goodbye():
    a, b = session_pair()
    sink_a, sink_b = Sink(), Sink()
    link_a, link_b = Link(a, sink_a), Link(b, sink_b)
    assert (link_a.peer, link_b.peer) == (1, 0)
    link_a.send([b"one"])
    link_a.send([b"tw", memoryview(b"o parts")])
    link_b.send([b"back"])
    link_a.goodbye()
    link_b.goodbye()
    assert link_a.bye.wait(10) and link_b.bye.wait(10)
    assert sink_b.frames == [(0, b"one"), (0, b"two parts")]
    assert sink_a.frames == [(1, b"back")]
    link_a.close()
    link_b.close()
    assert sink_a.failures == sink_b.failures == []


def test_a_peer_that_leaves_without_goodbye_fails_the_sink():
    a, b = session_pair()
    sink = Sink()
    link = Link(a, sink)
    b.close()
    assert sink.event.wait(10)
    assert sink.failures and sink.failures[0].startswith("worker 1 disconnected")
    link.close()


def test_workers_connect_to_every_remote_worker():
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
    addresses = [s.getsockname() for s in listeners]
    pending = [in_thread(connect_with, listeners[i], i, addresses, b"k") for i in range(3)]
    sessions = [p() for p in pending]
    assert [sorted(s) for s in sessions] == [[1, 2], [0, 2], [0, 1]]
    # each pair holds the two ends of one connection
    sessions[0][1].send_frame([b"x"])
    assert sessions[1][0].recv_frame() == (0, bytearray(b"x"))
    for by_peer in sessions:
        for session in by_peer.values():
            session.close()


def test_local_workers_are_not_connected():
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
    addresses = [s.getsockname() for s in listeners]
    local = (0, 1)
    pending = [in_thread(connect_with, listeners[i], i, addresses, b"k", local)
               for i in range(2)]
    third = in_thread(connect_with, listeners[2], 2, addresses, b"k", (2,))
    sockets = [p() for p in pending] + [third()]
    assert [sorted(s) for s in sockets] == [[2], [2], [0, 1]]
    for by_peer in sockets:
        for session in by_peer.values():
            session.close()


def test_a_missing_worker_is_named_after_the_timeout():
    listener = socket.create_server(("127.0.0.1", 0))
    addresses = [listener.getsockname(), ("127.0.0.1", 1)]
    with pytest.raises(TimelyError, match=r"worker 0: workers \[1\] never connected"):
        connect_with(listener, 0, addresses, b"k", timeout=0.3)
    with pytest.raises(TimelyError, match="worker 1: cannot reach worker 0"):
        connect_with(socket.create_server(("127.0.0.1", 0)), 1, addresses, b"k", timeout=0.3)


def test_hostfile_and_worker_addresses(tmp_path):
    assert read_hostfile(None, 2) == [("127.0.0.1", 2101), ("127.0.0.1", 2102)]
    path = tmp_path / "hosts"
    path.write_text("# hosts\nhost-a:7000\n\n:7100\nhost-c:7200\n")
    assert read_hostfile(path, 2) == [("host-a", 7000), ("127.0.0.1", 7100)]
    with pytest.raises(TimelyError, match="3 addresses for 4 processes"):
        read_hostfile(path, 4)
    assert worker_addresses([("h", 10)], 3) == [("h", 10), ("h", 11), ("h", 12)]
