"""A structure-aware fuzzer of the capture reader.

It parses valid capture files (versions 1 and 2) into frames and each
payload into its fields (kinds, tags, lengths, counts, row counts, part
sizes, string offsets, dtype specs, time shapes and coordinates, code
points), mutates a few of them, recomputes every frame's CRC-32 so the
mutation reaches the decoders, reads the result and uses every event (each
column's rows as Python objects, and routed). An outcome is a clean read, a
``CaptureFormatError`` or a ``CaptureTypeError``; anything else (another
exception type, a read over the time bound, events far larger than the
file) is a failure. A crash ends the process, which is how it shows under
AddressSanitizer.

Run ``python -m tests.capture.fuzz COUNT [SEED]``: it prints the count and
the outcome histogram and exits non-zero unless every one of COUNT
mutations was read with an allowed outcome. The suite runs it with a modest
count (``tests/capture/test_fuzz.py``); CI runs it under ASan with
``TIMELY_FUZZ_COUNT`` mutations (``.ci/run``).
"""

from __future__ import annotations

import collections
import io
import random
import resource
import signal
import struct
import sys
import time
import zlib

import numpy as np

from timely import Batch, CaptureFormatError, CaptureTypeError, StringColumn
from timely.capture import EventReader, EventWriter, Messages, Progress
from timely.capture.format import MAGIC
from timely.container import route

TIME_BOUND = 10.0            # seconds one read may take
GROWTH = 64                  # bytes of events per byte of file, at most (plus SLACK)
SLACK = 1 << 20
MAX_EVENTS = 10_000

ALLOWED = ("clean", "CaptureFormatError", "CaptureTypeError")


class Hang(Exception):
    """Raised by the alarm when one read exceeds TIME_BOUND."""


# -- the corpus ---------------------------------------------------------------


def corpus_events() -> list:
    words = np.array(["ab", "", "ключ", "z", "鍵 key"], dtype=object)
    return [
        Messages(0, [1, "two", (3.0, None), {"k": [b"v", True, False]}, 2**80, -2**70]),
        Messages(0, list(range(5))),
        Messages(0, [0.5, 1.5]),
        Progress([(0, -1), (1, 1)]),
        Messages(1, np.arange(6, dtype=np.int32).reshape(2, 3)),
        Messages(1, np.array(["ab", "ключ"], dtype="<U4")),
        Messages(1, np.array(["ab", "x"], dtype=">U2")),
        Messages(1, np.array([b"ab", b"c"], dtype="|S2")),
        Messages(1, np.array([1, None, "s"], dtype=object)),
        Messages(1, Batch({"a": np.arange(5, dtype=np.int64),
                           "s": np.array(["x", None, "z", "", "w"], dtype=object),
                           "w": StringColumn.from_strings(list(words)),
                           "u": np.array(["a", "ключ", "", "b", "c"], dtype="<U4"),
                           "t": np.arange(5).astype("<M8[ns]"),
                           "f": np.linspace(0, 1, 5).astype(">f4")})),
        Messages(1, Batch({"big": StringColumn(np.array([0, 1, 3], dtype=np.int64), b"abc")})),
        Progress([((1, 2), -1), ((2, 0), 1)]),
        Messages((2, 3), ["nested time"]),
        Messages(2, []),
        Progress([(2, -1)]),
    ]


def frame(payload: bytes) -> bytes:
    return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def version2_file() -> bytes:
    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    for event in corpus_events():
        writer.push(event)
    writer.finish()
    return buffer.getvalue()


def version1_file() -> bytes:
    """Version 1 wrote a batch column of str as ``"|utf8"``: count, offsets, bytes."""
    text = ["ab", "", "ключ"]
    data = "".join(text).encode()
    ends = np.cumsum([0] + [len(t.encode()) for t in text])
    body = struct.pack("<q", len(text)) + ends.astype("<i8").tobytes() + data
    head = bytearray(b"\x02\x00" + struct.pack("<Q", 4) + b"\x05" + struct.pack("<I", 2))
    head += struct.pack("<H", 1) + b"s" + bytes([5]) + b"|utf8" + struct.pack("<QQ", 3, len(body))
    head += struct.pack("<H", 1) + b"n" + bytes([3]) + b"<i8" + struct.pack("<QQ", 3, 24)
    head += bytes(-len(head) % 16)
    head += body + bytes(-len(body) % 16) + np.arange(3, dtype="<i8").tobytes() + bytes(8)
    out = MAGIC + struct.pack("<HH", 1, 0)
    return out + frame(bytes(head)) + frame(b"\x01\x00" + struct.pack("<Iqq", 1, 4, 1)) \
        + frame(b"\x03")


# -- parsing payloads into fields ----------------------------------------------

# A field: (position, width, category). Categories say how to mutate it.
NUMBER = "number"          # a length, count, size, shape or row count
OFFSET = "offset"          # a string offset
TIME = "time"              # a time coordinate or a progress diff
BYTE = "byte"              # a frame kind, container kind, record tag, time shape, ndim
SPEC = "spec"              # a dtype spec: length byte, then the ASCII (width = 1 + length)
CODE = "code"              # a code point of fixed-width text


class Fields:
    def __init__(self):
        self.fields: list = []

    def add(self, pos: int, width: int, category: str) -> None:
        self.fields.append((pos, width, category))


def _parse_records(p: bytes, pos: int, n: int, f: Fields, depth: int = 0) -> int:
    for _ in range(n):
        if pos >= len(p) or depth > 120:
            return pos
        tag = p[pos]
        f.add(pos, 1, BYTE)
        pos += 1
        if tag in b"if":
            f.add(pos, 8, TIME)
            pos += 8
        elif tag in b"sbIp":
            f.add(pos, 4, NUMBER)
            pos += 4 + struct.unpack_from("<I", p, pos)[0]
        elif tag in b"tld":
            f.add(pos, 4, NUMBER)
            k = struct.unpack_from("<I", p, pos)[0]
            pos = _parse_records(p, pos + 4, 2 * k if tag == ord("d") else k, f, depth + 1)
    return pos


def _parse_spec(p: bytes, pos: int, f: Fields) -> tuple[bytes, int]:
    n = p[pos]
    f.add(pos, 1 + n, SPEC)
    return p[pos + 1:pos + 1 + n], pos + 1 + n


def _parse_part(p: bytes, pos: int, size: int, spec: bytes, index: int, rows: int,
                f: Fields) -> None:
    if spec in (b"|string", b"|large_string") and index == 0:
        width = 4 if spec == b"|string" else 8
        for k in range(size // width):
            f.add(pos + k * width, width, OFFSET)
    elif spec == b"|utf8":
        f.add(pos, 8, NUMBER)
        for k in range(1, min(size // 8, rows + 2)):
            f.add(pos + 8 * k, 8, OFFSET)
    elif spec[1:2] == b"U":
        for k in range(size // 4):
            f.add(pos + 4 * k, 4, CODE)
    elif spec == b"|O":
        _parse_records(p, pos, rows, f)


def parse_payload(p: bytes) -> list:
    """The fields of one valid payload (as the writer writes them)."""
    f = Fields()
    f.add(0, 1, BYTE)
    kind = p[0]
    if kind == 0x01:
        f.add(1, 1, BYTE)
        f.add(2, 4, NUMBER)
        k = p[1] or 1
        n = struct.unpack_from("<I", p, 2)[0]
        for r in range(n):
            for c in range(k + 1):
                f.add(6 + (k + 1) * 8 * r + 8 * c, 8, TIME)
        return f.fields
    if kind != 0x02:
        return f.fields
    f.add(1, 1, BYTE)
    k = p[1] or 1
    for c in range(k):
        f.add(2 + 8 * c, 8, TIME)
    pos = 2 + 8 * k
    container = p[pos]
    f.add(pos, 1, BYTE)
    pos += 1
    if container in (0x01, 0x02, 0x03, 0x06):
        f.add(pos, 4, NUMBER)
        n = struct.unpack_from("<I", p, pos)[0]
        if container == 0x01:
            _parse_records(p, pos + 4, n, f)
        elif container in (0x02, 0x03):
            for r in range(n):
                f.add(pos + 4 + 8 * r, 8, TIME)
    elif container == 0x04:
        spec, pos = _parse_spec(p, pos, f)
        ndim = p[pos]
        f.add(pos, 1, BYTE)
        pos += 1
        shape = struct.unpack_from(f"<{ndim}Q", p, pos)
        for d in range(ndim):
            f.add(pos + 8 * d, 8, NUMBER)
        pos += 8 * ndim
        f.add(pos, 8, NUMBER)
        size = struct.unpack_from("<Q", p, pos)[0]
        pos += 8
        pos += -pos % 16
        _parse_part(p, pos, size, spec, 0, int(np.prod(shape)), f)
    elif container == 0x05:
        f.add(pos, 4, NUMBER)
        ncols = struct.unpack_from("<I", p, pos)[0]
        pos += 4
        heads = []
        for _ in range(ncols):
            f.add(pos, 2, NUMBER)
            pos += 2 + struct.unpack_from("<H", p, pos)[0]
            spec, pos = _parse_spec(p, pos, f)
            nparts = 2 if spec in (b"|string", b"|large_string") else 1
            rows_and_sizes = struct.unpack_from(f"<{1 + nparts}Q", p, pos)
            for q in range(1 + nparts):
                f.add(pos + 8 * q, 8, NUMBER)
            pos += 8 * (1 + nparts)
            heads.append((spec, rows_and_sizes[0], rows_and_sizes[1:]))
        pos += -pos % 16
        for spec, rows, sizes in heads:
            for index, size in enumerate(sizes):
                _parse_part(p, pos, size, spec, index, rows, f)
                pos += size + (-size % 16)
    return f.fields


def parse_file(data: bytes) -> tuple[bytes, list]:
    """``(header, [payload, ...])`` of a valid capture file."""
    header = data[:len(MAGIC) + 4]
    payloads = []
    pos = len(header)
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        payloads.append(data[pos + 8:pos + 8 + length])
        pos += 8 + length
    return header, payloads


# -- mutations -------------------------------------------------------------------

SPECS = [b"<i8", b"<u4", b"|b1", b"<f8", b">f4", b"<c16", b"<M8[ns]", b"<m8[D]", b"|S1",
         b"|S999999", b"<U1", b">U3", b"<U999999", b"<U0", b"|S0", b"|O", b"|string",
         b"|large_string", b"|utf8", b"<V8", b"<i16", b"<M8[999999999ns]", b"|i1", b"<U-1",
         b"", b"\xff\xfe", b"<U4[ns]", b">i8"]
TAGS = b"NTFifsbItldpQ\x00\xff\x01\x02\x03\x04\x05\x06\x07"


def interesting(width: int, current: int, payload_len: int, rng: random.Random) -> int:
    top = 1 << (8 * width)
    choices = [0, 1, 2, 3, top - 1, top - 2, top >> 1, (top >> 1) - 1, (top >> 1) + 1,
               current + 1, current - 1, current * 2, current + 16, payload_len,
               payload_len + 1, rng.randrange(top), rng.randrange(64)]
    if width == 8:
        # Products with small widths (4, 8, itemsizes) wrap modulo 2**64.
        choices += [2**60, 2**60 - 1, 2**61, 2**61 - 2, 2**62, 2**62 - 1, 2**63 - 1,
                    2**64 // 8 + 1, 2**64 // 4 + current, 2**64 - 2 + current, 2**32, 2**32 + 1]
    elif width == 4:
        choices += [0x10FFFF, 0x110000, 0xD800, 0xDFFF, 2**31, 2**31 - 1]
    return rng.choice(choices) % top


def mutate_payload(p: bytearray, fields: list, rng: random.Random) -> tuple[bytearray, str]:
    how = rng.choice(["field", "field", "field", "spec", "byte", "havoc", "splice", "trim"])
    if how in ("field", "spec", "byte") and fields:
        wanted = {"field": (NUMBER, OFFSET, TIME, CODE), "spec": (SPEC,), "byte": (BYTE,)}[how]
        choices = [fl for fl in fields if fl[2] in wanted]
        if not choices:
            choices = fields
        pos, width, category = rng.choice(choices)
        if pos >= len(p):
            return p, "out"
        if category == SPEC:
            spec = rng.choice(SPECS) if rng.random() < 0.8 else bytes(
                rng.randrange(32, 127) for _ in range(rng.randrange(1, 12)))
            if rng.random() < 0.7:
                p[pos:pos + width] = bytes([len(spec)]) + spec          # moves what follows
            else:                                                       # keeps the length byte
                p[pos + 1:pos + width] = spec[:width - 1].ljust(width - 1, b"0")
            return p, "spec"
        if category == BYTE:
            p[pos] = rng.choice(TAGS) if rng.random() < 0.7 else rng.randrange(256)
            return p, "byte"
        if pos + width > len(p):
            return p, "out"
        current = int.from_bytes(p[pos:pos + width], "little")
        value = interesting(width, current, len(p), rng)
        p[pos:pos + width] = value.to_bytes(width, "little")
        return p, category
    if how == "havoc":
        for _ in range(rng.randint(1, 6)):
            if p:
                p[rng.randrange(len(p))] = rng.randrange(256)
        return p, "havoc"
    if how == "splice":
        at = rng.randrange(len(p) + 1)
        if rng.random() < 0.5:
            p[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 8, 16])))
        else:
            del p[at:at + rng.choice([1, 4, 8, 16])]
        return p, "splice"
    if len(p) > 1:
        del p[rng.randrange(1, len(p)):]
    return p, "trim"


def mutate_file(header: bytes, payloads: list, fields: list, rng: random.Random) -> tuple:
    payloads = list(payloads)
    kinds = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        i = rng.randrange(len(payloads))
        mutated, kind = mutate_payload(bytearray(payloads[i]), fields[i], rng)
        payloads[i] = bytes(mutated)
        kinds.append(kind)
    if rng.random() < 0.05:                       # frames duplicated, dropped or swapped
        i, j = rng.randrange(len(payloads)), rng.randrange(len(payloads))
        payloads[i], payloads[j] = payloads[j], payloads[i]
        kinds.append("frames")
    if rng.random() < 0.1:                        # the other version reads the same bytes
        header = header[:len(MAGIC)] + struct.pack("<HH", 3 - header[len(MAGIC)], 0)
        kinds.append("version")
    data = header + b"".join(frame(p) if p else b"" for p in payloads)
    return data, "+".join(sorted(set(kinds)))


# -- reading and using -------------------------------------------------------------


def use(event) -> int:
    """Touches every row of the event (as Python objects, and routed); the
    bytes its data holds."""
    if type(event) is Progress:
        return 16 * len(event.updates)
    data = event.data
    if isinstance(data, Batch):
        columns = [data[name] for name in data.names]
    elif isinstance(data, np.ndarray):
        columns = [data.reshape(-1)]
    else:
        return 8 * len(data)
    size = 0
    for column in columns:
        np.asarray(column).tolist()
        # Object columns may hold lists, which route nowhere; every other kind routes.
        if len(column) and getattr(column, "dtype", None) != object:
            route(column, 3)
        size += column.nbytes
    return size


def read_once(data: bytes) -> str:
    reader = EventReader(io.BytesIO(data), follow=False)
    size = 0
    try:
        for _ in range(MAX_EVENTS):
            event = reader.next()
            if event is None:
                break
            size += use(event)
        else:
            return "endless"
    except (CaptureFormatError, CaptureTypeError) as error:
        return type(error).__name__
    if size > GROWTH * len(data) + SLACK:
        return "too large"
    return "clean"


def _alarm(signum, frame):
    raise Hang()


def run(count: int, seed: int = 1, out=sys.stdout) -> collections.Counter:
    """Reads ``count`` mutated files; returns the histogram of outcomes
    (``outcome`` counts and ``outcome/mutation`` counts for the failures)."""
    corpus = []
    for data in (version2_file(), version1_file()):
        header, payloads = parse_file(data)
        corpus.append((header, payloads, [parse_payload(p) for p in payloads]))
        assert read_once(data) == "clean"
    rng = random.Random(seed)
    outcomes: collections.Counter = collections.Counter()
    failures = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    start = time.monotonic()
    try:
        for i in range(count):
            header, payloads, fields = corpus[0] if rng.random() < 0.85 else corpus[1]
            data, kinds = mutate_file(header, payloads, fields, rng)
            signal.setitimer(signal.ITIMER_REAL, TIME_BOUND)
            try:
                outcome = read_once(data)
            except Hang:
                outcome = "hang"
            except Exception as error:      # noqa: BLE001 - every other type is a finding
                outcome = f"untyped {type(error).__name__}: {str(error)[:80]}"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes[outcome if outcome in ALLOWED else "FAILED"] += 1
            if outcome not in ALLOWED and len(failures) < 20:
                failures.append((i, kinds, outcome, data.hex()))
    finally:
        signal.signal(signal.SIGALRM, previous)
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"capture fuzz: {sum(outcomes.values())} of {count} mutations read in {seconds:.1f} s "
          f"(seed {seed}, peak RSS {peak} MiB): {dict(sorted(outcomes.items()))}", file=out)
    for i, kinds, outcome, hexdata in failures:
        print(f"  mutation {i} ({kinds}): {outcome}\n    {hexdata}", file=out)
    return outcomes


def main(argv: list) -> int:
    count = int(argv[0]) if argv else 1000
    seed = int(argv[1]) if len(argv) > 1 else 1
    compiled = sys.modules["timely.container._columns"].__file__
    print(f"capture fuzz: reading with {compiled}")
    outcomes = run(count, seed)
    ok = sum(outcomes[o] for o in ALLOWED)
    print(f"capture fuzz: {count} mutations, {ok} allowed outcomes, "
          f"{count - ok} failures")
    return 0 if ok == count == sum(outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
