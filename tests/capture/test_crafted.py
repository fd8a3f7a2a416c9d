"""Hand-made hostile files whose checksums are valid: each reaches the column
decoders and must raise CaptureFormatError before any memory is touched, or
read back cleanly. Nothing else (no SystemError, no crash) is acceptable."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest

from timely import Batch, CaptureFormatError
from timely.capture import EventReader, EventWriter, Messages
from timely.capture.format import MAGIC


def stream(payloads, version: int = 2) -> bytes:
    out = bytearray(MAGIC + struct.pack("<HH", version, 0))
    for payload in payloads:
        out += struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    return bytes(out)


def pad(n: int) -> bytes:
    return bytes(-n % 16)


def batch_payload(columns) -> bytes:
    """A messages frame at time 0 holding a batch of ``columns``: a list of
    ``(name, spec, rows, sizes, parts)`` written as given, however absurd."""
    head = bytearray(b"\x02\x00" + struct.pack("<Q", 0) + b"\x05")
    head += struct.pack("<I", len(columns))
    for name, spec, rows, sizes, _parts in columns:
        head += struct.pack("<H", len(name)) + name.encode()
        head += bytes([len(spec)]) + spec + struct.pack(f"<{1 + len(sizes)}Q", rows, *sizes)
    head += pad(len(head))
    for *_, parts in columns:
        for part in parts:
            head += part + pad(len(part))
    return bytes(head)


def array_payload(spec: bytes, shape, body: bytes) -> bytes:
    head = bytearray(b"\x02\x00" + struct.pack("<Q", 0) + b"\x04")
    head += bytes([len(spec)]) + spec + bytes([len(shape)])
    head += struct.pack(f"<{len(shape)}Q", *shape) + struct.pack("<Q", len(body))
    head += pad(len(head))
    return bytes(head + body)


def read_all(data: bytes):
    reader = EventReader(io.BytesIO(data), follow=False)
    events = []
    while (event := reader.next()) is not None:
        events.append(event)
        if type(event) is Messages and isinstance(event.data, (Batch, np.ndarray)):
            # Use what was read: every row must be readable (no SystemError later).
            data = event.data
            columns = [data[n] for n in data.names] if isinstance(data, Batch) else [data]
            for column in columns:
                np.asarray(column).tolist()
    return events


def refused(data: bytes, *words: str) -> str:
    with pytest.raises(CaptureFormatError) as info:
        read_all(data)
    message = str(info.value)
    for word in words:
        assert word in message, message
    return message


def u32(values) -> bytes:
    return np.array(values, dtype="<u4").tobytes()


def i32(values) -> bytes:
    return np.array(values, dtype="<i4").tobytes()


def i64(values) -> bytes:
    return np.array(values, dtype="<i8").tobytes()


HUGE_ROWS = [2**60, 2**60 - 1, 2**61 + 3, 2**63 - 1, 2**64 - 1, 2**62 - 2]


@pytest.mark.parametrize("rows", HUGE_ROWS)
def test_a_string_column_claiming_a_huge_row_count(rows):
    # The offsets part's size, (rows + 1) * 4 or * 8, wraps modulo 2**64 for
    # these counts: a check made in 64 bits would pass and read far away.
    for spec, width in ((b"|string", 4), (b"|large_string", 8)):
        wrapped = ((rows + 1) * width) % 2**64
        offsets = i32([0, 1]) if width == 4 else i64([0, 1])
        payload = batch_payload([("s", spec, rows, [wrapped, 1], [offsets, b"a"])])
        refused(stream([payload]), "'s'")


@pytest.mark.parametrize("rows", HUGE_ROWS)
def test_a_legacy_string_column_claiming_a_huge_row_count(rows):
    # Version 1: one part holding count, offsets and bytes; 8 * (count + 2)
    # wraps in 64 bits for counts near 2**61.
    body = struct.pack("<Q", rows) + i64([0, 1]) + b"a"
    payload = batch_payload([("s", b"|utf8", rows, [len(body)], [body])])
    refused(stream([payload], version=1), "'s'")


@pytest.mark.parametrize("rows", HUGE_ROWS)
def test_a_raw_column_claiming_a_huge_row_count(rows):
    for spec, width in ((b"<i8", 8), (b"<U1000", 4000), (b"|S999999", 999999)):
        wrapped = (rows * width) % 2**64
        payload = batch_payload([("x", spec, rows, [wrapped], [bytes(wrapped % 64)])])
        refused(stream([payload]), "'x'")


@pytest.mark.parametrize("offsets", [[0, 3, 2, 4], [0, 1, 2, 9], [1, 2, 3, 4], [0, -1, 2, 4],
                                     [0, 2, 2**31 - 1, 4], [0, 4, 4, 3]])
def test_string_offsets_that_decrease_or_run_past_the_data(offsets):
    for spec, encode in ((b"|string", i32), (b"|large_string", i64)):
        part = encode(offsets)
        payload = batch_payload([("s", spec, 3, [len(part), 4], [part, b"abcd"])])
        refused(stream([payload]), "'s'", "offset")
    body = i64([3, *offsets]) + b"abcd"
    payload = batch_payload([("s", b"|utf8", 3, [len(body)], [body])])
    refused(stream([payload], version=1), "'s'", "offset")


@pytest.mark.parametrize("data", [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                  b"a\xe2\x82"])
def test_a_string_column_that_is_not_utf8(data):
    offsets = i32([0, len(data)])
    payload = batch_payload([("s", b"|string", 1, [8, len(data)], [offsets, data])])
    refused(stream([payload]), "'s'", "UTF-8")


def test_a_string_row_starting_inside_a_character():
    data = "ключ".encode()
    offsets = i32([0, 1, len(data)])
    payload = batch_payload([("s", b"|string", 2, [12, len(data)], [offsets, data])])
    refused(stream([payload]), "'s'", "inside")


@pytest.mark.parametrize("spec", [b"<U9999999", b"|S9999999", b"<i16", b"<f3", b"|O8",
                                  b"<U0", b"|S0", b"<V8", b"<M8[999999999ns]", b"<U-1"])
def test_huge_or_meaningless_dtypes(spec):
    payload = batch_payload([("x", spec, 1, [8], [bytes(8)])])
    refused(stream([payload]))
    refused(stream([array_payload(spec, (1,), bytes(8))]))


def test_a_huge_but_legal_itemsize_reads_back():
    array = np.array(["a" * 999_999], dtype="<U999999")
    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    writer.push(Messages(0, array))
    writer.push(Messages(0, Batch({"u": array})))
    writer.finish()
    events = read_all(buffer.getvalue())
    assert events[0].data.tolist() == array.tolist()
    assert events[1].data["u"].tolist() == array.tolist()


@pytest.mark.parametrize("code", [0x110000, 0xFFFFFFFF, 0x80000000, 0xD800, 0xDFFF])
@pytest.mark.parametrize("order", ["<", ">"])
def test_text_of_fixed_width_with_a_code_point_that_is_not_one(code, order):
    # numpy accepts the buffer and fails only when a row is read, with a
    # SystemError for code points above U+10FFFF.
    good = ord("a")
    values = np.array([good, code, good, good], dtype=f"{order}u4").tobytes()
    spec = f"{order}U2".encode()
    payload = batch_payload([("u", spec, 2, [16], [values])])
    refused(stream([payload]), "'u'", "code point")
    refused(stream([array_payload(spec, (2,), values)]), "code point")
    refused(stream([array_payload(spec, (1, 2), values)]), "code point")


def test_text_of_fixed_width_with_every_valid_code_point_reads_back():
    codes = np.array([0, 0x41, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF, 0x20], dtype="<u4")
    for order in "<>":
        values = codes.astype(f"{order}u4").tobytes()
        spec = f"{order}U1".encode()
        payload = batch_payload([("u", spec, 8, [32], [values])])
        (event,) = read_all(stream([payload]))
        assert [ord(c) if c else 0 for c in event.data["u"].tolist()] == codes.tolist()
        (event,) = read_all(stream([array_payload(spec, (8,), values)]))
        assert [ord(c) if c else 0 for c in event.data.tolist()] == codes.tolist()


@pytest.mark.parametrize("shape", [(2**63, 2**63, 0), (2**64 - 1, 2), (0, 2**64 - 1),
                                   (2**32, 2**32), (2**61, 8)])
def test_array_shapes_whose_product_wraps(shape):
    for spec in (b"<i8", b"|O"):
        refused(stream([array_payload(spec, shape, bytes(16))]))


def test_a_part_size_that_runs_past_the_frame():
    for size in (2**64 - 1, 2**63, 2**32 + 8, 17):
        payload = batch_payload([("x", b"<i8", 2, [16], [bytes(16)])])
        at = payload.index(b"<i8") + 3 + 8
        bad = payload[:at] + struct.pack("<Q", size) + payload[at + 8:]
        refused(stream([bad]), "'x'")
