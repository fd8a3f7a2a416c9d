"""Bad input never crashes the reader: truncation at every offset, random bit
flips, hostile payloads behind valid checksums and absurd lengths either give
a prefix of the true events or raise CaptureFormatError; nothing else, no
hang, no allocation beyond what the stream holds."""

from __future__ import annotations

import io
import random
import struct
import tracemalloc
import zlib

import numpy as np

from tests.capture import fuzz
from tests.capture.helpers import same
from timely import Batch, CaptureFormatError
from timely.capture import EventReader, EventWriter, Messages, Progress
from timely.capture.format import MAGIC

SEED = 20240611
FLIPS = 3000
MUTATIONS = 3000
STRUCTURED = 5000


def sample_events():
    return [
        Messages(0, [1, "two", (3.0, None), {"k": [b"v", True]}, 2**80]),
        Messages(0, list(range(5))),
        Messages(0, [0.5, 1.5]),
        Progress([(0, -1), (1, 1)]),
        Messages(1, np.arange(6, dtype=np.int32).reshape(2, 3)),
        Messages(1, Batch({"a": np.arange(4, dtype=np.int64),
                           "s": np.array(["x", None, "z", ""], dtype=object),
                           "w": np.array(["ab", "", "ключ", "z"], dtype=object)})),
        Progress([(1, -1), (2, 1)]),
        Messages(2, []),
        Progress([(2, -1)]),
    ]


def capture_bytes() -> bytes:
    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    for event in sample_events():
        writer.push(event)
    writer.finish()
    return buffer.getvalue()


def same_event(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is Progress:
        return a.updates == b.updates
    if a.time != b.time:
        return False
    if isinstance(a.data, Batch):
        return isinstance(b.data, Batch) and a.data.names == b.data.names and all(
            same(a.data[n], b.data[n]) for n in a.data.names)
    return same(a.data, b.data)


def is_prefix(got, expected) -> bool:
    return len(got) <= len(expected) and all(same_event(a, b) for a, b in zip(got, expected))


def read(data: bytes, follow: bool):
    """``(events, error or None, ended)``; any exception other than
    CaptureFormatError propagates and fails the test."""
    reader = EventReader(io.BytesIO(data), follow=follow)
    events = []
    try:
        for _ in range(10_000):                    # bounded: a reader that never stops is a bug
            event = reader.next()
            if event is None:
                break
            events.append(event)
        else:
            raise AssertionError("the reader returned events without end")
    except CaptureFormatError as error:
        assert error.offset is not None and 0 <= error.offset <= len(data)
        return events, error, reader.ended
    # Once None, None again: nothing half-consumed is lost or repeated.
    assert reader.next() is None
    return events, None, reader.ended


def frame_bounds(data: bytes) -> list:
    """``(start, payload start, payload end)`` of every frame."""
    bounds = []
    pos = len(MAGIC) + 4
    while pos < len(data):
        length, _ = struct.unpack_from("<II", data, pos)
        bounds.append((pos, pos + 8, pos + 8 + length))
        pos += 8 + length
    return bounds


def test_truncation_at_every_offset():
    data = capture_bytes()
    expected = sample_events()
    full, error, ended = read(data, follow=False)
    assert error is None and ended and len(full) == len(expected)
    cases = 0
    for cut in range(len(data)):
        prefix = data[:cut]
        # Following: a prefix of the events, then "nothing complete yet".
        events, error, ended = read(prefix, follow=True)
        assert error is None and not ended
        assert is_prefix(events, expected)
        # Not following: a prefix, then the end at a frame boundary or an error.
        events2, error2, ended2 = read(prefix, follow=False)
        assert is_prefix(events2, expected) and len(events2) == len(events)
        assert error2 is not None or ended2
        if error2 is not None:
            assert "ends" in str(error2) or cut == 0
        cases += 2
    # Reading the same prefixes as one growing file gives every event once.
    reader = EventReader(io.BytesIO())
    grown = []
    stream = reader._stream
    for cut in range(len(data)):
        here = stream.tell()
        stream.seek(0, io.SEEK_END)
        stream.write(data[cut:cut + 1])
        stream.seek(here)
        grown.extend(reader)
        cases += 1
    assert reader.terminated and len(grown) == len(expected)
    assert all(same_event(a, b) for a, b in zip(grown, expected))
    print(f"truncation: {cases} cases over {len(data)} offsets")
    assert cases == 3 * len(data)


def test_random_bit_flips():
    data = capture_bytes()
    expected = sample_events()
    rng = random.Random(SEED)
    errors = 0
    for _ in range(FLIPS):
        corrupt = bytearray(data)
        bit = rng.randrange(8 * len(data))
        corrupt[bit // 8] ^= 1 << (bit % 8)
        events, error, _ = read(bytes(corrupt), follow=False)
        # CRC-32 detects every single-bit error in a payload, so nothing wrong
        # is ever returned: only a prefix of the true events.
        assert is_prefix(events, expected)
        errors += error is not None
    # Several bytes at once, anywhere.
    for _ in range(FLIPS):
        corrupt = bytearray(data)
        for _ in range(rng.randint(2, 8)):
            corrupt[rng.randrange(len(data))] = rng.randrange(256)
        read(bytes(corrupt), follow=rng.random() < 0.5)
    print(f"bit flips: {FLIPS} single-bit cases ({errors} raised), {FLIPS} multi-byte cases")
    assert errors > FLIPS * 0.9


def test_hostile_payloads_behind_valid_checksums():
    """The checksum is recomputed after the payload is mutated, so the decoder
    itself meets the garbage."""
    data = capture_bytes()
    bounds = frame_bounds(data)
    rng = random.Random(SEED + 1)
    outcomes = {"error": 0, "decoded": 0}
    for _ in range(MUTATIONS):
        start, first, end = rng.choice(bounds)
        payload = bytearray(data[first:end])
        how = rng.randrange(4)
        if how == 0:
            for _ in range(rng.randint(1, 4)):
                payload[rng.randrange(len(payload))] = rng.randrange(256)
        elif how == 1:            # an absurd length or count somewhere
            at = rng.randrange(max(1, len(payload) - 4))
            payload[at:at + 4] = struct.pack("<I", rng.choice([0, 1, 2**31, 2**32 - 1,
                                                               len(payload) + 1]))
        elif how == 2:            # truncated or extended payload
            payload = payload[:rng.randrange(1, len(payload) + 1)] + bytes(rng.randrange(3))
        else:                     # random bytes after the kind
            payload[1:] = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        frame = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
        _events, error, _ = read(data[:start] + frame + data[end:], follow=False)
        outcomes["error" if error is not None else "decoded"] += 1
    print(f"hostile payloads: {MUTATIONS} cases, {outcomes}")
    assert sum(outcomes.values()) == MUTATIONS and outcomes["error"] > MUTATIONS // 2


def test_absurd_frame_lengths_allocate_nothing():
    header = capture_bytes()[:12]
    cases = 0
    for length in (0, 2**30 + 1, 2**32 - 1):
        for follow in (True, False):
            _events, error, _ = read(header + struct.pack("<II", length, 0), follow)
            assert error is not None and "frame length" in str(error)
            cases += 1

    class Trickle(io.RawIOBase):       # not seekable: its length cannot be known
        def __init__(self, data):
            self.data = data

        def readable(self):
            return True

        def readinto(self, b):
            if not self.data:
                return None
            n = min(len(b), len(self.data))
            b[:n] = self.data[:n]
            self.data = self.data[n:]
            return n

    claimed = 2**30 - 8                 # allowed, but the stream holds a few bytes of it
    stream = header + struct.pack("<II", claimed, 0) + b"\x02" * 100
    tracemalloc.start()
    try:
        for source in (io.BytesIO(stream), Trickle(stream)):
            reader = EventReader(source)
            for _ in range(5):
                assert reader.next() is None
            cases += 1
        reader = EventReader(io.BytesIO(stream), follow=False)
        try:
            reader.next()
            raise AssertionError("a truncated large frame was accepted")
        except CaptureFormatError as error:
            assert "ends" in str(error)
        cases += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The 64 KiB read buffer of each reader and little else; never the claimed GiB.
    assert peak < 2**20, peak
    print(f"absurd lengths: {cases} cases, peak allocation {peak} bytes")


def test_deep_nesting_behind_a_valid_checksum():
    header = capture_bytes()[:12]
    time0 = b"\x00" + struct.pack("<Q", 0)
    for depth in (99, 100, 101, 10_000):
        body = (b"l" + struct.pack("<I", 1)) * depth + b"N"
        payload = b"\x02" + time0 + b"\x01" + struct.pack("<I", 1) + body
        frame = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
        _events, error, _ = read(header + frame, follow=True)
        assert (error is None) == (depth < 100), depth


def test_structure_aware_mutations_behind_valid_checksums():
    """The fuzzer of ``tests/capture/fuzz.py`` with a modest count (CI runs it
    with 10**5 under AddressSanitizer): every mutated file reads cleanly or
    raises CaptureFormatError/CaptureTypeError, in bounded time and size."""
    out = io.StringIO()
    outcomes = fuzz.run(STRUCTURED, seed=SEED, out=out)
    print(out.getvalue())
    assert sum(outcomes.values()) == STRUCTURED
    assert set(outcomes) <= set(fuzz.ALLOWED), out.getvalue()
    # The mutations reach the decoders: some files still read, most are refused.
    assert outcomes["clean"] > STRUCTURED // 20
    assert outcomes["CaptureFormatError"] > STRUCTURED // 2


def test_the_fuzzer_command_checks_its_count():
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert fuzz.main(["200", "7"]) == 0
    assert "capture fuzz: 200 mutations, 200 allowed outcomes, 0 failures" in out.getvalue()
