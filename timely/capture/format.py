"""The capture format: events of a captured stream as bytes, and back.

:class:`EventWriter` is an event pusher (``stream.capture_into(writer)``) that
writes each event as one frame to a binary stream (a file, a socket, a pipe);
:class:`EventReader` is an event source (``replay_into([reader], scope)``)
that reads them back without blocking. The format is versioned, checked
frame by frame, and safe to read from an untrusted source: records use a
tagged encoding that never runs code, numeric columns are raw typed buffers
from a whitelist of dtypes, and pickles are neither written nor read unless
the caller passes ``allow_pickle=True``.

Layout (version 2; integers little-endian)
------------------------------------------

::

    stream   := header frame*
    header   := magic "\\x89TLYCAP\\n" (8 bytes), version u16 (= 2), flags u16 (= 0)
    frame    := length u32, crc u32, payload (length bytes)

``length`` is the payload's size, from 1 to the reader's ``max_frame``
(1 GiB by default, at most 2**32 - 1); ``crc`` is the CRC-32 (``zlib.crc32``)
of the payload. One frame holds one event. The payload's first byte is its
kind:

- ``0x01`` progress: ``time-shape u8, n u32``, then ``n`` rows of
  ``coordinates u64 x k, diff i64``.
- ``0x02`` messages: ``time-shape u8, coordinates u64 x k, container u8,
  body`` (below).
- ``0x03`` end: nothing more. The writer's ``finish()`` (or ``close()``)
  writes it; it tells a reader that the stream is complete (bytes after it
  are not read).

A time-shape of 0 means an int time (``k = 1``); a shape ``k`` from 1 to 255
means a tuple of ``k`` coordinates. Coordinates are in ``[0, 2**64)``.

Containers (the body of a messages frame), by the byte that names them:

- ``0x01`` list of records: ``n u32``, then ``n`` tagged records.
- ``0x02`` list of ints that fit int64: ``n u32``, ``n`` x i64.
- ``0x03`` list of floats: ``n u32``, ``n`` x f64.
- ``0x04`` numpy array: ``dtype``, ``ndim u8`` (1 to 32), ``ndim`` x u64 shape,
  ``nbytes u64``, zero padding to a multiple of 16 from the payload's start,
  then the body.
- ``0x05`` :class:`~timely.Batch`: ``ncols u32``, then per column ``name``
  (``u16`` length + UTF-8) and the column's *head*; zero padding to a
  multiple of 16; then the columns' parts in order, each followed by padding
  to a multiple of 16.
- ``0x06`` a pickled container (only with ``allow_pickle=True``): ``n u32``,
  ``n`` bytes of pickle.

Columns are written by the one column serializer,
:mod:`timely.container.serialize`, which the wire between workers uses too.
A column's head is its spec (``u8`` length + ASCII), ``rows u64`` and the
byte size (``u64``) of each of its parts. Specs: numpy's ``dtype.str``
(``"<i8"``, ``"|b1"``, ``"<f8"``, ``"<M8[ns]"``, ``"|S16"``, ``"<U8"``;
kinds ``b i u f c m M S U`` only), one part, the raw C-order buffer of
``rows x itemsize`` bytes (fixed-width text, kind ``U``, holds UCS-4 code
points that must be Unicode scalar values: at most U+10FFFF, no surrogates;
the writer refuses others with CaptureTypeError, the reader with
CaptureFormatError); ``"|string"`` and ``"|large_string"``, a string
column (:class:`~timely.container.StringColumn`), two parts: ``rows + 1``
offsets (i32, resp. i64) from 0 to the size of the second part, the rows'
UTF-8 bytes back to back (checked: every row valid UTF-8); ``"|O"``, any
other object column, one part of one tagged record per element. An array's
``dtype`` is a spec too (a raw one, or ``"|O"``).

Versions: version 2 (written since string columns are Arrow-layout) differs
from version 1 only in string columns: version 1 wrote a batch column of str
as the spec ``"|utf8"`` and one part holding the row count (i64), ``rows +
1`` offsets (i64) and the bytes. A reader reads both versions; it refuses
``"|utf8"`` in a version 2 stream.

Tagged records (one tag byte, then the body): ``N`` None, ``T`` True, ``F``
False, ``i`` int (i64), ``I`` int outside int64 (``n u32``, ``n`` bytes of
two's complement), ``f`` float (f64, bit-exact), ``s`` str (``n u32``, UTF-8
with surrogates passed through), ``b`` bytes (``n u32``, raw), ``t`` tuple /
``l`` list (``n u32``, ``n`` records), ``d`` dict (``n u32``, ``n`` key and
value pairs), ``p`` pickle (``n u32``, ``n`` bytes; written only with
``allow_pickle=True``, read only with ``allow_pickle=True``). Records nest at
most :data:`MAX_DEPTH` levels. They are written and read by the one compiled
implementation, :mod:`timely.container.records`, which the wire between
workers uses too.

Guarantees and costs
--------------------

- A reader never blocks (a socket is switched to non-blocking mode) and
  returns only complete, checked events; what is incomplete stays buffered
  and is picked up by a later ``next()``.
- Bad input (truncated, corrupted, wrong magic or version, hostile lengths or
  nesting, a pickle without ``allow_pickle``, an unknown tag) raises
  :class:`~timely.CaptureFormatError` naming the byte offset; nothing is
  executed and no allocation exceeds what the stream actually holds (a frame
  is allocated only once the stream is known to hold it, or grows with the
  bytes received), beyond a fixed 64 KiB read buffer per reader.
- Writing a record, container or time the format does not encode raises
  :class:`~timely.CaptureTypeError` naming the type, before anything of that
  event is written.
- Columnar data costs one CRC-32 pass and one copy each way: the writer
  writes the frame header, then each column's own buffer (no copy into a
  frame); the reader reads a large frame with ``readinto`` into one
  preallocated array and makes the columns views of it (a string column's
  offsets and bytes too: no Python str is made; its UTF-8 is checked in C).
  Per-record work is done only for lists of records and object columns.

>>> import io
>>> from timely.capture import Messages, Progress
>>> buffer = io.BytesIO()
>>> writer = EventWriter(buffer)
>>> writer.push(Messages(0, [1, "two", (3.0, None)]))
>>> writer.push(Progress([(0, -1), (1, 1)]))
>>> writer.finish()
>>> reader = EventReader(io.BytesIO(buffer.getvalue()))
>>> reader.next(), reader.next(), reader.next(), reader.ended
(Messages(time=0, data=[1, 'two', (3.0, None)]), Progress(updates=[(0, -1), (1, 1)]), None, True)
"""

from __future__ import annotations

import os
import pickle
import socket
import stat
import struct
import zlib

import numpy as np

from timely.capture.event import Messages, Progress
from timely.container import Batch
from timely.container.records import MAX_DEPTH, decode_records, encode_records
from timely.container.serialize import (OBJECT, check_code_points, column_parts, dtype_type,
                                        read_head, spec_type)
from timely.container.serialize import write_head as write_column_head
from timely.errors import CaptureFormatError, CaptureTypeError

__all__ = [
    "MAGIC",
    "MAX_DEPTH",
    "MAX_FRAME",
    "VERSION",
    "VERSIONS",
    "EventReader",
    "EventWriter",
]

MAGIC = b"\x89TLYCAP\n"
VERSION = 2
VERSIONS = (1, 2)            # what a reader reads
MAX_FRAME = 1 << 30          # default largest payload a reader accepts and a writer writes
_LIMIT = (1 << 32) - 1

# Frame kinds.
_PROGRESS = 0x01
_MESSAGES = 0x02
_END = 0x03
# Containers.
_LIST = 0x01
_INTS = 0x02
_FLOATS = 0x03
_ARRAY = 0x04
_BATCH = 0x05
_PICKLED = 0x06

_HEADER = struct.Struct("<8sHH")
_FRAME = struct.Struct("<II")
_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_KIND_LEN = struct.Struct("<BI")

_SMALL = 1 << 16             # frames up to this size are read through the shared buffer
_AHEAD = _SMALL + 8          # the most read at once through the reader's scratch buffer: a
                             # small frame and its header, but little of a large frame,
                             # which a file reads in place
_ALIGN = 16

_TIME_STRUCTS: dict = {}
_ROW_STRUCTS: dict = {}


def _time_struct(k: int) -> struct.Struct:
    s = _TIME_STRUCTS.get(k)
    if s is None:
        s = _TIME_STRUCTS[k] = struct.Struct(f"<{k}Q")
    return s


def _row_struct(k: int) -> struct.Struct:
    s = _ROW_STRUCTS.get(k)
    if s is None:
        s = _ROW_STRUCTS[k] = struct.Struct(f"<{k}Qq")
    return s


def _pad(n: int) -> int:
    return -n % _ALIGN


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def _time_shape(time) -> tuple[int, tuple]:
    """``(shape byte, coordinates)`` of a time; CaptureTypeError if it is not one."""
    if type(time) is int:
        if 0 <= time <= 0xFFFFFFFFFFFFFFFF:
            return 0, (time,)
    elif type(time) is tuple and 1 <= len(time) <= 255:
        if all(type(c) is int and 0 <= c <= 0xFFFFFFFFFFFFFFFF for c in time):
            return len(time), time
    raise CaptureTypeError(
        f"cannot write the time {time!r}: times are ints or tuples of 1 to 255 ints "
        f"in [0, 2**64)")


def _encode_time(time, out: bytearray) -> None:
    shape, coords = _time_shape(time)
    out.append(shape)
    out += _time_struct(len(coords)).pack(*coords)


def _type_name(x) -> str:
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _encode_dtype(dtype: np.dtype, out: bytearray, what: str) -> bool:
    """Appends an array's dtype spec; True for a raw buffer, False for tagged objects."""
    kind = dtype_type(dtype)
    if kind is None:
        if dtype != np.dtype(object):
            raise CaptureTypeError(
                f"cannot write {what} of dtype {dtype}: raw buffers are numeric, bool, "
                f"datetime, fixed-width bytes or str")
        kind = OBJECT
    out.append(len(kind.spec))
    out += kind.spec
    return kind is not OBJECT


def _check_text(column, what: str) -> None:
    """Fixed-width text must hold Unicode scalar values: a reader refuses others."""
    if getattr(column, "dtype", None) is not None and column.dtype.kind == "U":
        try:
            check_code_points(column)
        except ValueError as error:
            raise CaptureTypeError(f"cannot write {what}: {error}") from None


def _encode_records(values, out: bytearray, allow_pickle: bool) -> None:
    """Appends the tagged records of ``values`` (the one compiled encoding)."""
    try:
        encode_records(values, out, allow_pickle)
    except TypeError as error:
        raise CaptureTypeError(str(error)) from None


def _encode_objects(values, allow_pickle: bool) -> bytearray:
    body = bytearray()
    _encode_records(values, body, allow_pickle)
    return body


def _raw_bytes(array: np.ndarray) -> np.ndarray:
    """The array's buffer as a flat uint8 array: no copy when it is contiguous."""
    array = np.ascontiguousarray(array)
    return array.reshape(-1).view(np.uint8)


def _encode_container(data, out: bytearray, allow_pickle: bool) -> list:
    """Appends the container to ``out``; returns the further raw buffers of the
    payload (written after ``out`` without a copy)."""
    if type(data) is list:
        n = len(data)
        if n > _LIMIT:
            raise CaptureTypeError("a list of more than 2**32 - 1 records")
        if n:
            kinds = set(map(type, data))
            if len(kinds) == 1:
                kind = kinds.pop()
                if kind is int:
                    try:
                        array = np.array(data, dtype="<i8")
                    except OverflowError:
                        array = None
                    if array is not None:
                        out += _KIND_LEN.pack(_INTS, n)
                        return [array.view(np.uint8)]
                elif kind is float:
                    out += _KIND_LEN.pack(_FLOATS, n)
                    return [np.array(data, dtype="<f8").view(np.uint8)]
        out += _KIND_LEN.pack(_LIST, n)
        _encode_records(data, out, allow_pickle)
        return []
    if isinstance(data, Batch):
        out.append(_BATCH)
        out += _U32.pack(len(data.columns))
        parts: list = []
        for name, column in data.columns.items():
            name_bytes = name.encode("utf-8", "surrogatepass")
            if len(name_bytes) > 0xFFFF:
                raise CaptureTypeError("a column name longer than 65535 bytes")
            out += _U16.pack(len(name_bytes))
            out += name_bytes
            written = column_parts(column)
            if written is None:
                if column.dtype != np.dtype(object):
                    raise CaptureTypeError(
                        f"cannot write column {name!r} of dtype {column.dtype}: raw buffers "
                        f"are numeric, bool, datetime, fixed-width bytes or str")
                written = (OBJECT, len(data), [_encode_objects(column, allow_pickle)])
            column_kind, rows, bodies = written
            _check_text(column, f"column {name!r}")
            write_column_head(column_kind, rows, [len(memoryview(b)) for b in bodies], out)
            for body in bodies:
                parts.append(body)
                if _pad(len(memoryview(body))):
                    parts.append(bytes(_pad(len(memoryview(body)))))
        out += bytes(_pad(len(out)))
        return parts
    if isinstance(data, np.ndarray):
        if not 1 <= data.ndim <= 32:
            raise CaptureTypeError(f"cannot write an array of {data.ndim} dimensions (1 to 32)")
        out.append(_ARRAY)
        raw = _encode_dtype(data.dtype, out, "an array")
        _check_text(data, "an array")
        body = _raw_bytes(data) if raw else _encode_objects(data.reshape(-1), allow_pickle)
        out.append(data.ndim)
        for d in data.shape:
            out += _U64.pack(d)
        out += _U64.pack(len(body))
        out += bytes(_pad(len(out)))
        return [body]
    if allow_pickle:
        p = pickle.dumps(data, protocol=5)
        out += _KIND_LEN.pack(_PICKLED, len(p))
        out += p
        return []
    raise CaptureTypeError(
        f"cannot write a container of type {_type_name(data)}: the capture format writes "
        f"lists of records, numpy arrays and timely.Batch; pass allow_pickle=True to "
        f"pickle other containers")


def encode_event(event, allow_pickle: bool = False) -> list:
    """The payload of ``event``'s frame, as a list of buffers to concatenate."""
    out = bytearray()
    if type(event) is Messages:
        out.append(_MESSAGES)
        _encode_time(event.time, out)
        return [out, *_encode_container(event.data, out, allow_pickle)]
    if type(event) is Progress:
        updates = event.updates
        out.append(_PROGRESS)
        if not updates:
            out += _KIND_LEN.pack(0, 0)
            return [out]
        shape, _ = _time_shape(updates[0][0])
        k = shape or 1
        flat: list[int] = []
        for time, diff in updates:
            s, coords = _time_shape(time)
            if s != shape:
                raise CaptureTypeError(
                    f"progress updates mix times of different shapes: {updates[0][0]!r}, "
                    f"{time!r}")
            if type(diff) is not int or not -(1 << 63) <= diff < (1 << 63):
                raise CaptureTypeError(f"a progress diff is an int64, not {diff!r}")
            flat.extend(coords)
            flat.append(diff)
        if len(updates) > _LIMIT:
            raise CaptureTypeError("a progress event of more than 2**32 - 1 updates")
        out += _KIND_LEN.pack(shape, len(updates))
        out += struct.pack("<" + ("Q" * k + "q") * len(updates), *flat)
        return [out]
    raise CaptureTypeError(
        f"cannot write {_type_name(event)}: events are timely.capture.Messages or Progress")


class EventWriter:
    """An event pusher writing the capture format to a binary stream.

    ``stream`` is anything with ``write`` (a file opened ``"wb"``, a pipe, a
    ``BytesIO``) or a socket (``sendall``). The header goes first; each
    ``push(event)`` writes one frame; ``flush()`` hands what is buffered to
    the stream (the capture operator calls it once per scheduling);
    ``finish()`` writes the end frame and flushes; ``close()`` finishes and
    closes the stream. Usable as a context manager: closes on exit, but when
    the block raises it closes the stream without the end frame.

    Records of other types than the tagged encoding's, or other containers,
    raise :class:`~timely.CaptureTypeError` unless ``allow_pickle=True``, in
    which case they are pickled (and only a reader with ``allow_pickle=True``
    will load them). An event whose frame would exceed ``max_frame`` bytes
    raises :class:`~timely.CaptureFormatError`; split such batches.

    Cost: small frames are gathered in a 64 KiB buffer; a large buffer (a
    column, an array) is written straight from the array after the bytes
    before it, never copied into a frame. One CRC-32 pass per byte.
    """

    def __init__(self, stream, allow_pickle: bool = False, *, max_frame: int = MAX_FRAME):
        if not 1 <= max_frame <= _LIMIT:
            raise CaptureFormatError(f"max_frame must be in [1, 2**32 - 1], not {max_frame}")
        if hasattr(stream, "write"):
            self._write_all = self._write_stream
        elif hasattr(stream, "sendall"):
            self._write_all = stream.sendall
        else:
            raise CaptureTypeError(
                f"an EventWriter writes to a binary stream or a socket, not {_type_name(stream)}")
        self._stream = stream
        self.allow_pickle = allow_pickle
        self.max_frame = max_frame
        self._pending = bytearray(_HEADER.pack(MAGIC, VERSION, 0))
        self.offset = len(self._pending)    # bytes written, counting those still pending
        self.finished = False
        self.closed = False

    def _write_stream(self, data) -> None:
        # Raw streams may write less than asked; buffered ones write everything.
        view = memoryview(data).cast("B")
        write = self._stream.write
        while view:
            n = write(view)
            if n is None:
                raise BlockingIOError("the stream of an EventWriter accepted nothing; "
                                      "it must be blocking")
            if n >= len(view):
                return
            view = view[n:]

    def push(self, event) -> None:
        """Writes ``event`` (``Messages`` or ``Progress``) as one frame."""
        if self.finished:
            raise CaptureTypeError("push() on a finished or closed EventWriter")
        self._frame(encode_event(event, self.allow_pickle))

    def _frame(self, parts: list) -> None:
        # uint8 arrays as memoryviews: len() is then the byte count, and
        # bytearray += takes them as buffers, not as numpy operands.
        # (an ndarray has the buffer protocol; numpy's stubs do not say so)
        parts = [memoryview(p) if isinstance(p, np.ndarray) else p  # type: ignore[arg-type]
                 for p in parts]
        length = 0
        crc = 0
        for part in parts:
            length += len(part)
            crc = zlib.crc32(part, crc)
        if length > self.max_frame:
            raise CaptureFormatError(
                f"an event of {length} bytes exceeds max_frame ({self.max_frame}); split its "
                f"batch", self.offset)
        pending = self._pending
        pending += _FRAME.pack(length, crc)
        for part in parts:
            if len(part) >= _SMALL:
                if pending:
                    self._write_all(pending)
                    pending.clear()
                self._write_all(part)
            else:
                pending += part
        if len(pending) >= _SMALL:
            self._write_all(pending)
            pending.clear()
        self.offset += _FRAME.size + length

    def flush(self) -> None:
        """Hands everything pushed so far to the stream (and flushes the stream)."""
        if self._pending:
            self._write_all(self._pending)
            self._pending.clear()
        flush = getattr(self._stream, "flush", None)
        if flush is not None and not self.closed:
            flush()

    def finish(self) -> None:
        """Writes the end frame and flushes, leaving the stream open; nothing
        may be pushed afterwards. Idempotent."""
        if self.finished:
            return
        self._frame([bytes([_END])])
        self.flush()
        self.finished = True

    def close(self) -> None:
        """Finishes (see :meth:`finish`) and closes the stream. Idempotent."""
        if self.closed:
            return
        self.finish()
        self.closed = True
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif not self.closed:
            # Left by an exception: the frames written so far stay readable,
            # but no end frame claims the stream is complete.
            try:
                self.flush()
            finally:
                self.closed = True
                self._stream.close()
        return False


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _fail(message: str, offset: int):
    raise CaptureFormatError(f"{message} (at byte offset {offset})", offset)


def _length(mv, pos: int, end: int, per_item: int, what: str, where: int):
    """``(n, position after it)``: the u32 length at ``pos``, refused when the
    frame cannot hold ``n`` items of at least ``per_item`` bytes after it."""
    if pos + 4 > end:
        _fail("a length runs past the end of its frame", where)
    n = _U32.unpack_from(mv, pos)[0]
    pos += 4
    if per_item * n > end - pos:
        _fail(f"{what.format(n=n)} runs past the end of its frame", where)
    return n, pos


def _unpickle(data, allow_pickle: bool, offset: int):
    if not allow_pickle:
        _fail("a pickled value, which this reader will not load: loading a pickle can run "
              "any code; pass allow_pickle=True only for a stream you trust", offset)
    try:
        return pickle.loads(data)
    except Exception as exc:
        raise CaptureFormatError(
            f"a pickled value does not load: {exc!r} (at byte offset {offset})", offset) from exc


def _decode_records(mv, pos: int, end: int, n: int, allow_pickle: bool, base: int):
    """``(n records, next position)`` by the one compiled decoding, which checks
    every length; its complaints become CaptureFormatError at their offset."""
    try:
        return decode_records(mv, pos, end, n, allow_pickle)
    except ValueError as error:
        if len(error.args) != 2:
            raise
        message, offset = error.args
        raise CaptureFormatError(f"{message} (at byte offset {base + offset})",
                                 base + offset) from error.__cause__


def _decode_dtype(mv, pos: int, end: int, base: int):
    """``(dtype, or None for objects, next position)`` of an array's dtype spec."""
    if pos >= end:
        _fail("a dtype runs past the end of its frame", base + pos)
    n = mv[pos]
    if pos + 1 + n > end:
        _fail("a dtype runs past the end of its frame", base + pos)
    try:
        kind = spec_type(bytes(mv[pos + 1:pos + 1 + n]))
    except ValueError as error:
        _fail(str(error), base + pos)
    if kind is OBJECT:
        return None, pos + 1 + n
    if kind.kind != kind.RAW:
        _fail(f"an array of {kind.spec!r} (a spec for batch columns only)", base + pos)
    return kind.dtype, pos + 1 + n


def _decode_objects(mv, pos: int, end: int, count: int, allow_pickle: bool, base: int):
    items, pos2 = _decode_records(mv, pos, end, count, allow_pickle, base)
    if pos2 != end:
        _fail("an object column's body has bytes after its last element", base + pos2)
    return np.fromiter(items, dtype=object, count=count)


def _decode_container(payload: np.ndarray, mv, pos: int, allow_pickle: bool, base: int,
                      version: int):
    end = len(mv)
    if pos >= end:
        _fail("a messages frame without a container", base + pos)
    kind = mv[pos]
    at = pos
    pos += 1
    if kind in (_LIST, _INTS, _FLOATS, _PICKLED):
        if pos + 4 > end:
            _fail("a container length runs past the end of its frame", base + at)
        n = _U32.unpack_from(mv, pos)[0]
        pos += 4
        if kind == _LIST:
            items, pos = _decode_records(mv, pos, end, n, allow_pickle, base)
            if pos != end:
                _fail("a frame has bytes after its last record", base + pos)
            return items
        if kind == _PICKLED:
            if n != end - pos:
                _fail("a pickled container's length does not match its frame", base + at)
            return _unpickle(mv[pos:end], allow_pickle, base + at)
        if 8 * n != end - pos:
            _fail(f"a list of {n} numbers does not match its frame's length", base + at)
        dtype = "<i8" if kind == _INTS else "<f8"
        return np.frombuffer(payload, dtype=dtype, count=n, offset=pos).tolist()
    if kind == _ARRAY:
        dtype, pos = _decode_dtype(mv, pos, end, base)
        if pos >= end:
            _fail("an array header runs past the end of its frame", base + pos)
        ndim = mv[pos]
        pos += 1
        if not 1 <= ndim <= 32 or pos + 8 * ndim + 8 > end:
            _fail(f"an array header of {ndim} dimensions is malformed", base + at)
        shape = struct.unpack_from(f"<{ndim}Q", mv, pos)
        pos += 8 * ndim
        nbytes = _U64.unpack_from(mv, pos)[0]
        pos += 8
        pos += _pad(pos)
        if pos + nbytes != end:
            _fail(f"an array body of {nbytes} bytes does not match its frame", base + at)
        count = 1
        for d in shape:
            count *= d
        if dtype is None:
            flat = _decode_objects(mv, pos, end, count, allow_pickle, base)
        else:
            if count * dtype.itemsize != nbytes:
                _fail(f"an array of shape {shape} and dtype {dtype.str} is not {nbytes} bytes",
                      base + at)
            flat = payload[pos:end].view(dtype)
            try:
                check_code_points(flat)
            except ValueError as error:
                _fail(f"an array of {dtype.str}: {error}", base + at)
        try:
            return flat.reshape(shape)
        except (ValueError, OverflowError):
            _fail(f"an array of shape {shape} cannot be made", base + at)
    if kind == _BATCH:
        return _decode_batch(payload, mv, pos, end, at, allow_pickle, base, version)
    _fail(f"unknown container 0x{kind:02x}", base + at)


def _decode_batch(payload: np.ndarray, mv, pos: int, end: int, at: int, allow_pickle: bool,
                  base: int, version: int) -> Batch:
    if pos + 4 > end:
        _fail("a batch header runs past the end of its frame", base + at)
    ncols = _U32.unpack_from(mv, pos)[0]
    pos += 4
    if ncols > end - pos:
        _fail(f"a batch of {ncols} columns cannot fit in its frame", base + at)
    heads = []
    rows = None
    for _ in range(ncols):
        col_at = pos
        if pos + 2 > end:
            _fail("a column header runs past the end of its frame", base + col_at)
        n = _U16.unpack_from(mv, pos)[0]
        pos += 2
        if pos + n > end:
            _fail("a column name runs past the end of its frame", base + col_at)
        try:
            name = str(mv[pos:pos + n], "utf-8", "surrogatepass")
        except UnicodeDecodeError:
            _fail("a column name that is not UTF-8", base + col_at)
        pos += n
        try:
            kind, col_rows, sizes, pos = read_head(mv, pos, end, legacy=version == 1)
        except ValueError as error:
            _fail(f"column {name!r}: {error}", base + col_at)
        if rows is None:
            rows = col_rows
        elif col_rows != rows:
            _fail(f"column {name!r} has {col_rows} rows, the others {rows}", base + col_at)
        heads.append((name, kind, col_rows, sizes, col_at))
    pos += _pad(pos)
    columns = {}
    for name, kind, col_rows, sizes, col_at in heads:
        if name in columns:
            _fail(f"column {name!r} appears twice", base + col_at)
        parts = []
        for nbytes in sizes:
            if nbytes > end - pos:
                _fail(f"column {name!r}: a part of {nbytes} bytes runs past the end of its "
                      f"frame", base + col_at)
            parts.append((pos, pos + nbytes))
            pos += nbytes
            pos += _pad(nbytes)
        if kind is OBJECT:
            first, last = parts[0]
            columns[name] = _decode_objects(mv, first, last, col_rows, allow_pickle, base)
            continue
        try:
            columns[name] = kind.build(col_rows, [payload[a:b] for a, b in parts],
                                       check_utf8=True)
        except ValueError as error:
            _fail(f"column {name!r} is not a valid {kind.spec.decode('ascii')} column: "
                  f"{error}", base + col_at)
    if pos != end:
        _fail("a batch frame's length does not match its columns", base + at)
    return Batch.from_columns(columns, rows or 0)


def _decode_time(mv, pos: int, end: int, base: int):
    if pos >= end:
        _fail("a time runs past the end of its frame", base + pos)
    shape = mv[pos]
    k = shape or 1
    if pos + 1 + 8 * k > end:
        _fail("a time runs past the end of its frame", base + pos)
    coords = _time_struct(k).unpack_from(mv, pos + 1)
    return (coords[0] if shape == 0 else coords), pos + 1 + 8 * k


_END_EVENT = object()


def decode_event(payload: np.ndarray, allow_pickle: bool = False, base: int = 0,
                 version: int = VERSION):
    """The event in a frame's ``payload`` (a uint8 array) of a stream of
    format ``version``; ``base`` is the payload's offset in the stream, for
    error messages."""
    mv = memoryview(payload)  # type: ignore[arg-type]  # an ndarray is a buffer
    end = len(mv)
    kind = mv[0]
    if kind == _MESSAGES:
        time, pos = _decode_time(mv, 1, end, base)
        return Messages(time, _decode_container(payload, mv, pos, allow_pickle, base, version))
    if kind == _PROGRESS:
        if end < 6:
            _fail("a progress frame too short for its header", base)
        shape, n = _KIND_LEN.unpack_from(mv, 1)
        k = shape or 1
        row = _row_struct(k)
        if n * row.size != end - 6:
            _fail(f"a progress frame of {n} updates does not match its length", base)
        updates = []
        if shape == 0:
            for t, d in row.iter_unpack(mv[6:]):
                updates.append((t, d))
        else:
            for r in row.iter_unpack(mv[6:]):
                updates.append((r[:k], r[k]))
        return Progress(updates)
    if kind == _END:
        if end != 1:
            _fail("an end frame with a body", base)
        return _END_EVENT
    _fail(f"unknown frame kind 0x{kind:02x}", base)


class EventReader:
    """An event source reading the capture format from a binary stream, without blocking.

    ``stream`` is a socket (switched to non-blocking mode), or anything with
    ``readinto`` or ``read`` (a file opened ``"rb"``, a pipe, a ``BytesIO``).
    ``next()`` returns the next complete event, or None when none is complete
    yet; ``ended`` becomes True once no event can ever follow: the end frame
    was read (``terminated`` is then True too), or the stream definitely
    ended at a frame boundary (a socket or pipe closed; a file reached its
    end with ``follow=False``). A definite end inside a frame raises
    :class:`~timely.CaptureFormatError` (truncated); so does every other bad
    input, with the byte offset. With ``follow=True`` (the default) the end
    of a seekable file means "nothing more yet": a file still being written
    is read as it grows, and a truncated one simply yields no more events.

    Pickled values are loaded only with ``allow_pickle=True``; otherwise
    meeting one raises CaptureFormatError and nothing is unpickled.

    Cost: frames up to 64 KiB are read in chunks of 64 KiB through one
    scratch buffer (the reader's only fixed allocation) and copied out; a larger frame is read with ``readinto`` into one
    array allocated once the file is known to hold it (from a socket or a
    pipe it grows with what arrives), its columns left as views of that
    array. One CRC-32 pass per byte.
    """

    def __init__(self, stream, allow_pickle: bool = False, *, follow: bool = True,
                 max_frame: int = MAX_FRAME):
        if not 1 <= max_frame <= _LIMIT:
            raise CaptureFormatError(f"max_frame must be in [1, 2**32 - 1], not {max_frame}")
        self._stream = stream
        self.allow_pickle = allow_pickle
        self.max_frame = max_frame
        self._sizer = None
        if isinstance(stream, socket.socket) or hasattr(stream, "recv_into"):
            stream.setblocking(False)
            self._read = self._read_socket
        elif hasattr(stream, "readinto"):
            self._read = self._read_file
            self._sizer = self._size_method(stream)
        elif hasattr(stream, "read"):
            self._read = self._read_plain
            self._sizer = self._size_method(stream)
        else:
            raise CaptureTypeError(
                f"an EventReader reads from a binary stream or a socket, not {_type_name(stream)}")
        # Following only makes sense where "the end" can move: a seekable file.
        self.follow = follow and self._sizer is not None
        self._buf = bytearray()
        self._pos = 0             # start of the unconsumed bytes in _buf
        self.offset = 0           # stream offset of _buf[_pos]
        self._scratch = bytearray(_AHEAD)
        self._scratch_view = memoryview(self._scratch)
        self._header = False
        self.version = None       # the stream's format version, once its header is read
        self._big = None          # a large frame being read: [start, length, crc, payload, filled]
        self._eof = False         # a definite end of the stream was seen
        self.ended = False
        self.terminated = False

    # -- the stream ----------------------------------------------------------

    @staticmethod
    def _size_method(stream):
        try:
            if not stream.seekable():
                return None
        except (AttributeError, OSError, ValueError):
            return None
        try:
            fd = stream.fileno()
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return "fstat"
            return None
        except (AttributeError, OSError, ValueError):
            return "seek"

    def _available(self) -> int:
        """Bytes the stream holds beyond what was read from it."""
        stream = self._stream
        try:
            if self._sizer == "fstat":
                return max(0, os.fstat(stream.fileno()).st_size - stream.tell())
            here = stream.tell()
            end = stream.seek(0, os.SEEK_END)
            stream.seek(here)
            return max(0, end - here)
        except (OSError, ValueError):
            return 0

    def _read_socket(self, view) -> int:
        try:
            n = self._stream.recv_into(view)
        except (TimeoutError, BlockingIOError, InterruptedError):
            return 0
        except ConnectionError:
            n = 0
        if n == 0:
            self._eof = True
        return n

    def _read_file(self, view) -> int:
        try:
            n = self._stream.readinto(view)
        except (BlockingIOError, InterruptedError):
            return 0
        if n is None:
            return 0
        if n == 0 and not self.follow:
            self._eof = True
        return n

    def _read_plain(self, view) -> int:
        try:
            data = self._stream.read(len(view))
        except (BlockingIOError, InterruptedError):
            return 0
        if data is None:
            return 0
        n = len(data)
        if n > len(view):
            raise CaptureTypeError("the stream's read(n) returned more than n bytes")
        if n == 0 and not self.follow:
            self._eof = True
        view[:n] = data
        return n

    def _fill(self, need: int) -> bool:
        """True once ``need`` unconsumed bytes are buffered; reads what is there."""
        buf = self._buf
        while len(buf) - self._pos < need:
            if self._eof:
                return False
            if self._pos and self._pos >= len(buf) // 2:
                del buf[:self._pos]
                self._pos = 0
            n = self._read(self._scratch_view)
            if n == 0:
                return False
            buf += self._scratch_view[:n]
        return True

    def _consume(self, n: int) -> None:
        self._pos += n
        self.offset += n
        if self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0

    def _nothing(self):
        """No complete event now: None, unless the stream definitely ended
        inside a frame (an error) or at a frame boundary (``ended``)."""
        if not self._eof:
            return
        pending = len(self._buf) - self._pos
        if self._big is not None:
            start, length, _crc, _payload, filled = self._big
            _fail(f"the stream ends inside a frame of {length} bytes ({filled} read)", start)
        if not self._header:
            _fail(f"the stream ends after {pending} bytes, inside its header", 0)
        if pending:
            _fail(f"the stream ends inside a frame ({pending} bytes of it read)", self.offset)
        self.ended = True
        return

    # -- frames --------------------------------------------------------------

    def _read_header(self) -> bool:
        have = self._fill(_HEADER.size)
        prefix = bytes(self._buf[self._pos:self._pos + len(MAGIC)])
        if prefix != MAGIC[:len(prefix)]:
            _fail("not a timely capture stream (wrong magic)", 0)
        if not have:
            return False
        _magic, version, flags = _HEADER.unpack_from(self._buf, self._pos)
        if version not in VERSIONS:
            _fail(f"capture format version {version}; this reader reads versions "
                  f"{', '.join(map(str, VERSIONS))}",
                  len(MAGIC))
        if flags:
            _fail(f"unknown header flags 0x{flags:04x}", len(MAGIC) + 2)
        self._consume(_HEADER.size)
        self._header = True
        self.version = version
        return True

    def _continue_big(self):
        """The payload of the large frame in progress, or None if it is not all here yet."""
        big = self._big
        _start, length, _crc, payload, filled = big
        if payload is None:
            have = min(len(self._buf) - self._pos, length)
            if self._sizer is not None:
                # Allocate only once the file is known to hold the whole frame.
                if have + self._available() < length:
                    if not self.follow:
                        self._eof = True
                    return None
                payload = np.empty(length, dtype=np.uint8)
                if have:
                    payload[:have] = np.frombuffer(self._buf, np.uint8, have, self._pos)
            else:
                payload = bytearray(self._buf[self._pos:self._pos + have])
            self._consume(have)
            filled = have
            big[3] = payload
        if isinstance(payload, np.ndarray):
            view = memoryview(payload)
            while filled < length:
                n = self._read(view[filled:])
                if n == 0:
                    big[4] = filled
                    return None
                filled += n
                self.offset += n
        else:
            while filled < length:
                n = self._read(self._scratch_view[:min(_AHEAD, length - filled)])
                if n == 0:
                    big[4] = filled
                    return None
                payload += self._scratch_view[:n]
                filled += n
                self.offset += n
            payload = np.frombuffer(payload, dtype=np.uint8)
        self._big = None
        return payload

    def next(self):
        """The next complete event, or None when none is complete now."""
        if self.ended:
            return None
        if not self._header and not self._read_header():
            return self._nothing()
        if self._big is not None:
            start, length, crc = self._big[:3]
            payload = self._continue_big()
            if payload is None:
                return self._nothing()
        else:
            if not self._fill(_FRAME.size):
                return self._nothing()
            start = self.offset
            length, crc = _FRAME.unpack_from(self._buf, self._pos)
            if not 1 <= length <= self.max_frame:
                _fail(f"a frame length of {length} bytes (allowed: 1 to {self.max_frame})",
                      start)
            if length <= _SMALL:
                if not self._fill(_FRAME.size + length):
                    return self._nothing()
                first = self._pos + _FRAME.size
                payload = np.frombuffer(self._buf, np.uint8, length, first).copy()
                self._consume(_FRAME.size + length)
            else:
                self._consume(_FRAME.size)
                self._big = [start, length, crc, None, 0]
                payload = self._continue_big()
                if payload is None:
                    return self._nothing()
        if zlib.crc32(payload) != crc:
            _fail("a frame whose checksum does not match (corrupted)", start)
        try:
            event = decode_event(payload, self.allow_pickle, start + _FRAME.size, self.version)
        except CaptureFormatError:
            raise
        except (ValueError, TypeError, OverflowError, IndexError, struct.error,
                RecursionError, MemoryError) as exc:
            raise CaptureFormatError(
                f"a malformed frame: {exc!r} (at byte offset {start})", start) from exc
        if event is _END_EVENT:
            self.ended = True
            self.terminated = True
            return None
        return event

    def __iter__(self):
        """The events complete now, in order."""
        while True:
            event = self.next()
            if event is None:
                return
            yield event

    def replay_into(self, scope):
        """Replays this one source into ``scope``; see :func:`timely.capture.replay_into`."""
        from timely.capture.replay import replay_into

        return replay_into([self], scope)

    def close(self) -> None:
        """Closes the stream."""
        self._stream.close()
