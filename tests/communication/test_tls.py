"""Links in TLS: a sender and a receiver thread use one connection at once,
in both directions, and every frame arrives whole and in order."""

from __future__ import annotations

import hashlib
import socket
import time

import pytest

from tests.communication.test_tcp import Sink, in_thread
from tests.runtime.test_cluster_security import self_signed
from timely.communication.tcp import Link, authenticate, tls_contexts
from timely.errors import AuthenticationError

SECRET = b"secret"


def tls_pair(tmp_path, client_cert=None):
    cert, key = self_signed(tmp_path)
    server_tls = tls_contexts(cert, key, cert)
    client_tls = tls_contexts(*(client_cert or (cert, key)), cert)
    a, b = socket.socketpair()

    def accept():
        return authenticate(server_tls.wrap(a, True, time.monotonic() + 5), SECRET, 0, True)

    server = in_thread(accept)
    client = authenticate(client_tls.wrap(b, False, time.monotonic() + 5), SECRET, 1, False)
    return server(), client


def payloads(seed, count):
    """Frames of sizes from a few bytes to a few MiB, each its own content."""
    sizes = [7, 1 << 10, 3 << 20, 100, 1 << 16, 5 << 20, 1]
    return [hashlib.sha256(f"{seed}-{i}".encode()).digest() * (sizes[i % len(sizes)] // 32 + 1)
            for i in range(count)]


def wait_for(sink, count, timeout=60):
    deadline = time.monotonic() + timeout
    while len(sink.frames) < count and not sink.failures and time.monotonic() < deadline:
        sink.event.wait(0.1)
        sink.event.clear()


def test_frames_cross_both_ways_at_once_and_arrive_whole(tmp_path):
    server, client = tls_pair(tmp_path)
    sink_a, sink_b = Sink(), Sink()
    link_a = Link(server, sink_a, heartbeat=0.05, liveness=30)
    link_b = Link(client, sink_b, heartbeat=0.05, liveness=30)
    to_b, to_a = payloads("a", 40), payloads("b", 40)
    try:
        for x, y in zip(to_b, to_a):
            link_a.send([x])
            link_b.send([y])
        wait_for(sink_a, len(to_a))
        wait_for(sink_b, len(to_b))
        assert sink_a.failures == sink_b.failures == []
        assert [f for _, f in sink_a.frames] == to_a
        assert [f for _, f in sink_b.frames] == to_b
        link_a.goodbye()
        link_b.goodbye()
        assert link_a.finished.wait(10) and link_b.finished.wait(10)
        assert link_a.bye.is_set() and link_b.bye.is_set()
    finally:
        link_a.close()
        link_b.close()
    assert sink_a.failures == sink_b.failures == []


def test_a_certificate_of_another_ca_fails_the_handshake_naming_why(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(AuthenticationError, match="(?i)unknown ca|certificate"):
        tls_pair(tmp_path, client_cert=self_signed(other))
