"""Doorbells: a ring from another process wakes a ``select`` on the owner's
``fileno``; ``clear`` drains every ring; ringing never blocks."""

from __future__ import annotations

import multiprocessing
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from timely.communication.doorbell import Doorbell, EventfdDoorbell, SocketDoorbell

ROOT = Path(__file__).resolve().parent.parent.parent


def readable(bell, timeout=0.0) -> bool:
    return select.select([bell], [], [], timeout)[0] == [bell]


def _ring_after(bell_or_address, delay, kind):
    time.sleep(delay)
    if kind == "eventfd":
        EventfdDoorbell(bell_or_address).ring()
    else:
        SocketDoorbell.connect(bell_or_address).ring()


@pytest.fixture(params=["eventfd", "socket"])
def kind(request):
    return request.param


def new_bell(kind):
    return EventfdDoorbell.create() if kind == "eventfd" else SocketDoorbell.create()


def handle_for_peer(bell):
    """What another process needs to ring ``bell``: the descriptor it inherits
    through fork, or the socket's name."""
    return bell.fd if isinstance(bell, EventfdDoorbell) else bell.address


def test_both_implement_the_interface(kind):
    bell = new_bell(kind)
    try:
        assert isinstance(bell, Doorbell)
        assert bell.fileno() >= 0
    finally:
        bell.close()


def test_a_ring_from_another_process_wakes_select(kind):
    bell = new_bell(kind)
    context = multiprocessing.get_context("fork")
    try:
        assert not readable(bell)
        ringer = context.Process(target=_ring_after, args=(handle_for_peer(bell), 0.2, kind))
        start = time.monotonic()
        ringer.start()
        assert readable(bell, timeout=30)
        assert time.monotonic() - start >= 0.15       # woken by the ring, not at once
        ringer.join(10)
        assert ringer.exitcode == 0
        bell.clear()
        assert not readable(bell)
    finally:
        bell.close()


def test_clear_drains_every_ring_and_ringing_never_blocks(kind):
    bell = new_bell(kind)
    try:
        bell.clear()                      # clearing an unrung bell does not block
        for _ in range(10_000):           # far past a datagram socket's queue
            bell.ring()
        assert readable(bell)
        bell.clear()
        assert not readable(bell)
        bell.ring()
        assert readable(bell)
        bell.clear()
        assert not readable(bell)
    finally:
        bell.close()


RING_BY_NAME = textwrap.dedent("""
    import sys
    from timely.communication.doorbell import SocketDoorbell
    SocketDoorbell.connect(bytes.fromhex(sys.argv[1])).ring()
""")


def test_a_socket_doorbell_is_rung_by_name_from_an_unrelated_process():
    """No descriptor is shared: a process started apart (a Spark task) rings
    the bell knowing only its name."""
    bell = SocketDoorbell.create()
    try:
        assert bell.address.startswith(b"\0")          # abstract namespace: no file
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-c", RING_BY_NAME, bell.address.hex()], env=env,
                       check=True, timeout=60)
        assert readable(bell, timeout=10)
        bell.clear()
        assert not readable(bell)
    finally:
        bell.close()


def test_the_owner_of_a_socket_doorbell_can_ring_it():
    """A link thread of the owner rings the owner's own bell."""
    bell = SocketDoorbell.create()
    try:
        bell.ring()
        assert readable(bell)
    finally:
        bell.close()


def test_a_socket_doorbell_whose_owner_is_gone():
    bell = SocketDoorbell.create()
    peer = SocketDoorbell.connect(bell.address)
    bell.close()
    peer.ring()                           # dropped: nobody is left to wake
    peer.close()
    with pytest.raises(ConnectionRefusedError):
        SocketDoorbell.connect(bell.address)


def test_a_socket_doorbell_name_is_taken_once():
    bell = SocketDoorbell.create()
    try:
        with pytest.raises(OSError):
            SocketDoorbell.create(bell.address)
        assert SocketDoorbell.new_address() != bell.address
        assert str(os.getpid()).encode() in bell.address
    finally:
        bell.close()


def test_an_eventfd_doorbell_closes_once():
    bell = EventfdDoorbell.create()
    assert bell.fileno() >= 0
    bell.close()
    bell.close()
    assert bell.fileno() == -1
