"""Vectorized routing of columnar batches: which worker each row goes to.

Rows route exactly as records do through :func:`timely.dataflow.channels.stable_hash`:
an integer key goes to ``key % peers``, a str or bytes key to
``crc32(utf-8 bytes) % peers``. So the same key reaches the same worker on
every run, in every process, in a batch or as a record.
"""

import numpy as np

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

tly_hash_init()


def crc32(data, uint32_t start=0):
    """zlib's CRC-32 of a bytes-like object."""
    cdef const unsigned char[::1] view = memoryview(data).cast("B")
    cdef uint32_t c
    with nogil:
        c = tly_crc32(start, &view[0] if view.shape[0] else NULL, view.shape[0])
    return c


cdef int route_objects(object[:] keys, int64_t peers, int64_t[::1] dest) except -1:
    from timely.dataflow.channels import stable_hash

    cdef Py_ssize_t i, n = keys.shape[0]
    cdef Py_ssize_t size
    cdef const char *utf8
    cdef object key
    cdef int64_t k
    for i in range(n):
        key = keys[i]
        if type(key) is str:
            try:
                utf8 = PyUnicode_AsUTF8AndSize(key, &size)
            except UnicodeEncodeError:
                dest[i] = stable_hash(key) % peers          # lone surrogates
                continue
            dest[i] = tly_crc32(0, utf8, <size_t>size) % <uint32_t>peers
        elif type(key) is bytes:
            dest[i] = tly_crc32(0, PyBytes_AS_STRING(key),
                                <size_t>PyBytes_GET_SIZE(key)) % <uint32_t>peers
        elif type(key) is int:
            try:
                k = PyLong_AsLongLong(key)
            except OverflowError:
                dest[i] = key % peers
                continue
            k = k % peers
            dest[i] = k + peers if k < 0 else k
        else:
            dest[i] = stable_hash(key) % peers
    return 0


cdef int route_fixed_bytes(const unsigned char[:, ::1] rows, int64_t peers,
                           int64_t[::1] dest) noexcept nogil:
    # numpy's fixed-width bytes drop trailing NULs when read back as bytes.
    cdef Py_ssize_t i, n = rows.shape[0], width = rows.shape[1], m
    for i in range(n):
        m = width
        while m > 0 and rows[i, m - 1] == 0:
            m -= 1
        dest[i] = tly_crc32(0, &rows[i, 0] if width else NULL, m) % <uint32_t>peers
    return 0


def route(keys, Py_ssize_t peers):
    """The worker (an int64 array) of each row with the given ``keys``, for ``peers`` workers."""
    if peers < 1:
        raise ValueError(f"peers must be at least 1, not {peers}")
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, not of shape {keys.shape}")
    cdef Py_ssize_t n = keys.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] dest = out
    cdef const int64_t[::1] signed
    cdef const uint64_t[::1] unsigned
    kind = keys.dtype.kind
    if n == 0:
        return out
    if kind == "u":
        unsigned = np.ascontiguousarray(keys, dtype=np.uint64)
        with nogil:
            tly_route_u64(&unsigned[0], n, <uint64_t>peers, &dest[0])
    elif kind in "ib":
        signed = np.ascontiguousarray(keys, dtype=np.int64)
        with nogil:
            tly_route_i64(&signed[0], n, peers, &dest[0])
    elif kind == "O":
        route_objects(keys, peers, dest)
    elif kind == "S":
        rows = np.ascontiguousarray(keys).view(np.uint8).reshape(n, keys.dtype.itemsize)
        route_fixed_bytes(rows, peers, dest)
    elif kind in "Uf":
        route_objects(keys.astype(object), peers, dest)
    else:
        raise TypeError(f"cannot route by a key column of dtype {keys.dtype}")
    return out


def partition(dest, Py_ssize_t peers):
    """``(order, counts)``: the row positions grouped by worker (stable), and
    the number of rows for each worker. ``dest`` holds workers in ``[0, peers)``."""
    cdef const int64_t[::1] d = np.ascontiguousarray(dest, dtype=np.int64)
    cdef Py_ssize_t n = d.shape[0]
    order_array = np.empty(n, dtype=np.int64)
    counts_array = np.zeros(peers, dtype=np.int64)
    cdef int64_t[::1] order = order_array
    cdef int64_t[::1] counts = counts_array
    cdef Py_ssize_t i
    for i in range(n):
        if d[i] < 0 or d[i] >= peers:
            raise ValueError(f"row {i} routes to worker {d[i]}, not in [0, {peers})")
    if n:
        with nogil:
            tly_partition(&d[0], n, peers, &counts[0], &order[0])
    return order_array, counts_array


def encode_strings(values):
    """A column of Python str as one raw buffer: the row count and the n + 1
    byte offsets (int64), then the UTF-8 bytes of every row back to back.
    None when a row is not a str (or cannot be UTF-8: a lone surrogate)."""
    cdef object[:] rows = values
    cdef Py_ssize_t n = rows.shape[0], i, size, total = 0
    cdef const char *utf8
    cdef object row
    head = np.empty(n + 2, dtype=np.int64)
    cdef int64_t[::1] offsets = head
    offsets[0] = n
    offsets[1] = 0
    for i in range(n):
        row = rows[i]
        if type(row) is not str:
            return None
        try:
            PyUnicode_AsUTF8AndSize(row, &size)
        except UnicodeEncodeError:
            return None
        total += size
        offsets[i + 2] = total
    out = np.empty(8 * (n + 2) + total, dtype=np.uint8)
    cdef unsigned char[::1] target = out
    memcpy(&target[0], &offsets[0], 8 * (n + 2))
    cdef unsigned char *data = &target[0] + 8 * (n + 2)
    for i in range(n):
        utf8 = PyUnicode_AsUTF8AndSize(rows[i], &size)     # cached by the first pass
        memcpy(data + offsets[i + 1], utf8, size)
    return out


def decode_strings(buffer):
    """The object array of str that :func:`encode_strings` encoded; raises
    ValueError on a buffer whose counts or offsets do not fit it."""
    cdef const unsigned char[::1] raw = memoryview(buffer).cast("B")
    cdef Py_ssize_t length = raw.shape[0], n, i
    cdef int64_t count
    if length < 8:
        raise ValueError(f"a string column of {length} bytes has no row count")
    memcpy(&count, &raw[0], 8)
    if count < 0 or 8 * (count + 2) > length:
        raise ValueError(f"a string column of {length} bytes cannot hold {count} rows")
    n = count
    cdef const int64_t *offsets = <const int64_t *>(&raw[0] + 8)
    cdef const char *data = <const char *>(&raw[0] + 8 * (n + 2))
    cdef int64_t size = length - 8 * (n + 2)
    if offsets[0] != 0 or offsets[n] != size:
        raise ValueError("string column offsets do not match its bytes")
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError(f"string column offsets decrease at row {i}")
    out = np.empty(n, dtype=object)
    cdef object[:] rows = out
    for i in range(n):
        rows[i] = PyUnicode_DecodeUTF8(data + offsets[i], offsets[i + 1] - offsets[i], NULL)
    return out
