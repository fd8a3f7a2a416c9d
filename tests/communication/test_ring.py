"""The shared-memory ring's Python ends: order, chunking, bad memory, and two processes."""

from __future__ import annotations

import hashlib
import mmap
import multiprocessing
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timely.communication.ring import RingReader, RingWriter, format_ring
from timely.errors import RingError

RING = 1024 + 192     # a 1 KiB ring: most messages below take several chunks


def new_ring(size=RING):
    memory = mmap.mmap(-1, size)
    format_ring(memory)
    return memory, RingWriter(memory), RingReader(memory)


@settings(deadline=None)
@given(
    st.lists(st.binary(max_size=3000), max_size=20),
    st.lists(st.sampled_from(["send", "flush", "recv"]), max_size=80),
)
def test_messages_arrive_whole_and_in_order(messages, actions):
    memory, writer, reader = new_ring()
    to_send = list(messages)
    got = []
    for action in actions:
        if action == "send" and to_send:
            writer.send(to_send.pop(0))
        elif action == "flush":
            writer.flush()
        elif action == "recv":
            message = reader.recv()
            if message is not None:
                got.append(message)
    for message in to_send:
        writer.send(message)
    while True:
        message = reader.recv()
        if message is not None:
            got.append(message)
            continue
        if writer.flush() and reader.used_bytes() == 0 and reader.recv() is None:
            break
    assert got == messages
    assert writer.queued_bytes == 0


def test_a_full_ring_queues_instead_of_blocking():
    memory, writer, reader = new_ring()
    assert writer.send(b"x" * 300)
    assert writer.send(b"y" * 300)
    assert not writer.send(b"z" * 900)          # no room: queued, not blocked
    assert writer.queued_bytes > 0
    assert reader.recv() == b"x" * 300
    assert reader.recv() == b"y" * 300
    got = None
    while got is None:
        writer.flush()
        got = reader.recv()
    assert got == b"z" * 900


def test_a_reader_tells_a_writer_that_asked_for_room_once():
    memory, writer, reader = new_ring()
    assert not reader.room_wanted()             # nobody asked
    while writer.send(b"x" * 300):
        pass
    writer.want_room()
    assert not writer.flush()                   # still full after asking: it would wait
    assert reader.recv() == b"x" * 300
    assert reader.room_wanted()                 # the reader read, and sees the request
    assert not reader.room_wanted()             # once per request
    assert writer.flush()                       # and the room is there


def test_receiving_rings_the_writer_that_asked_for_room():
    from timely.communication.allocator import BatchingAllocator
    from timely.communication.codec import encode
    from timely.communication.ring import receive_frames

    class Bell:
        rung = 0

        def ring(self):
            self.rung += 1

    memory, writer, reader = new_ring()
    mailbox = BatchingAllocator(1, 2)
    got = []
    mailbox.allocate(7, lambda: got.append(1))
    bells = {0: Bell()}
    assert writer.send_parts(encode([(7, (0, [1, 2, 3]))]))
    receive_frames([(0, reader)], mailbox, None, bells)
    assert got and bells[0].rung == 0           # read, but nobody asked
    writer.want_room()
    assert writer.send_parts(encode([(7, (0, [4]))]))
    receive_frames([(0, reader)], mailbox, None, bells)
    assert bells[0].rung == 1                   # the writer that asked is woken
    receive_frames([(0, reader)], mailbox, None, bells)
    assert bells[0].rung == 1                   # an empty ring read nothing: no ring


def test_bad_memory_is_refused():
    with pytest.raises(RingError, match="at least"):
        format_ring(bytearray(100))
    with pytest.raises(RingError, match="formatted"):
        RingReader(mmap.mmap(-1, 4096))
    memory, writer, reader = new_ring()
    writer.send(b"hello")
    # Corrupt the record's length field: the reader refuses it rather than
    # reading past the data area.
    struct.pack_into("<I", memory, 192, 10**6)
    with pytest.raises(RingError, match="corrupt"):
        reader.recv()


def _produce(name: str, count: int) -> None:
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(name=name)
    try:
        writer = RingWriter(segment.buf)
        for i in range(count):
            body = os.urandom(i % 5000)
            writer.send(hashlib.sha256(body).digest() + body)
            while not writer.flush():
                pass
        del writer
    finally:
        segment.close()


def test_two_processes_pass_checksummed_messages():
    from multiprocessing import shared_memory

    count = 3000
    segment = shared_memory.SharedMemory(create=True, size=64 * 1024 + 192)
    try:
        format_ring(segment.buf)
        reader = RingReader(segment.buf)
        child = multiprocessing.get_context("fork").Process(
            target=_produce, args=(segment.name, count))
        child.start()
        received = 0
        while received < count:
            message = reader.recv()
            if message is None:
                if not child.is_alive() and child.exitcode not in (None, 0):
                    pytest.fail(f"producer exited with {child.exitcode}")
                continue
            digest, body = message[:32], message[32:]
            assert hashlib.sha256(body).digest() == digest
            assert len(body) == received % 5000
            received += 1
        child.join(30)
        assert child.exitcode == 0
        del reader
    finally:
        segment.close()
        segment.unlink()
