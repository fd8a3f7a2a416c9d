"""The tagged encoding of Python records, compiled: what the capture file
writes for lists of records and object columns, and what the wire between
workers writes for lists of records.

A record is one tag byte and its body (integers little-endian): ``N`` None,
``T`` True, ``F`` False, ``i`` an int that fits int64 (8 bytes), ``I`` a
larger int (``n u32``, ``n`` bytes of two's complement), ``f`` a float
(8 bytes, IEEE-754, bit-exact), ``s`` a str (``n u32``, its UTF-8 with lone
surrogates as their three bytes), ``b`` bytes (``n u32``, raw), ``t`` a
tuple and ``l`` a list (``n u32``, ``n`` records), ``d`` a dict (``n u32``,
``n`` key and value records), ``p`` a pickle (``n u32``, ``n`` bytes,
protocol 5), written and read only when the caller allows pickles. Types are
matched exactly (a subclass of str is not a str: it is pickled or refused).
Records nest at most :data:`MAX_DEPTH` levels.

Decoding checks every length against the bytes left before it reads or
allocates, and never runs code unless pickles are allowed: it is safe on
untrusted bytes. Errors are ValueError ``(message, offset)`` (decoding; the
offset counts from the start of the buffer) and TypeError (encoding); the
callers turn them into their own errors.

>>> out = bytearray()
>>> encode_records(["ab", 1, (2.5, None, b"x")], out, False)
>>> decode_records(out, 0, len(out), 3, False)
(['ab', 1, (2.5, None, b'x')], 37)
"""

cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_FromDouble
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_FromLongLong
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import pickle

from timely.container._columns cimport tly_utf8_encode, tly_utf8_size


cdef extern from "Python.h":
    # NULL with an exception set when the bytes are not UTF-8 (no try block).
    PyObject *decode_utf8 "PyUnicode_DecodeUTF8"(const char *s, Py_ssize_t size,
                                                 const char *errors)
    void PyErr_Clear()
    int unicode_ready "PyUnicode_READY"(object o) except -1
    bint unicode_is_ascii "PyUnicode_IS_ASCII"(object o)
    Py_ssize_t unicode_length "PyUnicode_GET_LENGTH"(object o)
    int unicode_kind "PyUnicode_KIND"(object o)
    const void *unicode_data "PyUnicode_DATA"(object o)


MAX_DEPTH = 100                 # deepest nesting of records
cdef int C_MAX_DEPTH = 100
cdef uint64_t LIMIT = 0xFFFFFFFF   # the most items or bytes a length counts

# Tags, by their ASCII letters: N T F (None, True, False), i I (int64, larger
# int), f (float), s b (str, bytes), t l d (tuple, list, dict), p (pickle).
cdef enum:
    TAG_NONE = 0x4E, TAG_TRUE = 0x54, TAG_FALSE = 0x46, TAG_INT = 0x69, TAG_BIGINT = 0x49
    TAG_FLOAT = 0x66, TAG_STR = 0x73, TAG_BYTES = 0x62, TAG_TUPLE = 0x74, TAG_LIST = 0x6C
    TAG_DICT = 0x64, TAG_PICKLE = 0x70


# -- writing -------------------------------------------------------------------


cdef struct Writer:
    # Appends to a bytearray, grown geometrically and cut to size at the end;
    # `data` is valid until the next resize.
    PyObject *out
    char *data
    Py_ssize_t used
    Py_ssize_t cap


cdef int grow(Writer *w, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap = w.cap * 2
    if cap < w.used + more:
        cap = w.used + more
    if cap < 256:
        cap = 256
    PyByteArray_Resize(<object>w.out, cap)
    w.cap = cap
    w.data = PyByteArray_AS_STRING(<object>w.out)
    return 0


cdef inline int reserve(Writer *w, Py_ssize_t more) except -1:
    if w.used + more > w.cap:
        grow(w, more)
    return 0


cdef inline void put_u32(Writer *w, uint32_t v) noexcept:
    cdef uint8_t *p = <uint8_t *>w.data + w.used
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)
    p[2] = <uint8_t>(v >> 16)
    p[3] = <uint8_t>(v >> 24)
    w.used += 4


cdef inline void put_u64(Writer *w, uint64_t v) noexcept:
    cdef uint8_t *p = <uint8_t *>w.data + w.used
    cdef int k
    for k in range(8):
        p[k] = <uint8_t>(v >> (8 * k))
    w.used += 8


cdef inline int put_head(Writer *w, uint8_t tag, Py_ssize_t n, Py_ssize_t body,
                         str what) except -1:
    """The tag and a u32 length ``n``, with room for ``body`` more bytes."""
    if <uint64_t>n > LIMIT:
        raise TypeError(what)
    reserve(w, 5 + body)
    w.data[w.used] = <char>tag
    w.used += 1
    put_u32(w, <uint32_t>n)
    return 0


cdef int put_bytes(Writer *w, uint8_t tag, const char *data, Py_ssize_t n,
                   str what) except -1:
    put_head(w, tag, n, n, what)
    memcpy(w.data + w.used, data, <size_t>n)
    w.used += n
    return 0


cdef str type_name(object x):
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


cdef int put(Writer *w, object x, bint allow_pickle, int depth) except -1:
    cdef type t = type(x)
    cdef int overflow = 0
    cdef long long v
    cdef double d
    cdef uint64_t bits
    cdef Py_ssize_t n, size, i
    cdef object item, value
    if t is str:
        unicode_ready(x)
        n = unicode_length(x)
        if unicode_is_ascii(x):
            put_bytes(w, TAG_STR, <const char *>unicode_data(x), n, "a str too long to write")
        else:
            size = <Py_ssize_t>tly_utf8_size(unicode_data(x), <size_t>n, unicode_kind(x), 0)
            put_head(w, TAG_STR, size, size, "a str too long to write")
            w.used += <Py_ssize_t>tly_utf8_encode(unicode_data(x), <size_t>n, unicode_kind(x),
                                                  <uint8_t *>w.data + w.used)
    elif t is int:
        v = PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow:
            n = (x.bit_length() + 8) // 8
            if <uint64_t>n > LIMIT:
                raise TypeError("an int too large to write")
            value = x.to_bytes(n, "little", signed=True)
            put_bytes(w, TAG_BIGINT, PyBytes_AS_STRING(value), n, "an int too large to write")
        else:
            reserve(w, 9)
            w.data[w.used] = <char>TAG_INT
            w.used += 1
            put_u64(w, <uint64_t>v)
    elif t is float:
        d = PyFloat_AS_DOUBLE(x)
        memcpy(&bits, &d, 8)
        reserve(w, 9)
        w.data[w.used] = <char>TAG_FLOAT
        w.used += 1
        put_u64(w, bits)
    elif x is None or t is bool:
        reserve(w, 1)
        w.data[w.used] = <char>(TAG_NONE if x is None else TAG_TRUE if x else TAG_FALSE)
        w.used += 1
    elif t is bytes:
        put_bytes(w, TAG_BYTES, PyBytes_AS_STRING(x), PyBytes_GET_SIZE(x),
                  "a bytes record too long to write")
    elif t is tuple or t is list or t is dict:
        if depth >= C_MAX_DEPTH:
            raise TypeError(f"a record nests deeper than {MAX_DEPTH} levels (a cycle?)")
        n = len(x)
        put_head(w, TAG_TUPLE if t is tuple else TAG_LIST if t is list else TAG_DICT, n, 0,
                 "a container of more than 2**32 - 1 items")
        if t is dict:
            for item, value in x.items():
                put(w, item, allow_pickle, depth + 1)
                put(w, value, allow_pickle, depth + 1)
        elif t is tuple:
            for i in range(n):
                put(w, <object>PyTuple_GET_ITEM(x, i), allow_pickle, depth + 1)
        else:
            for i in range(n):
                # A pickled item's code may shrink the list: read it checked.
                if PyList_GET_SIZE(x) != n:
                    raise RuntimeError("a list changed size while it was written")
                item = <object>PyList_GET_ITEM(x, i)      # held while it is written
                put(w, item, allow_pickle, depth + 1)
    elif allow_pickle:
        value = pickle.dumps(x, protocol=5)
        put_bytes(w, TAG_PICKLE, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value),
                  "a pickle too long to write")
    else:
        raise TypeError(
            f"cannot write a record of type {type_name(x)}: the tagged encoding writes None, "
            f"bool, int, float, str, bytes, tuple, list and dict; pass allow_pickle=True to "
            f"pickle other types (only for readers you trust)")
    return 0


def encode_records(values, bytearray out, bint allow_pickle):
    """Appends every record of the iterable ``values`` to ``out``, tagged.
    TypeError for a record the encoding does not write (without
    ``allow_pickle``), a length past 2**32 - 1 or nesting past MAX_DEPTH; on
    error ``out`` keeps what it held before. O(bytes written), in C but for
    ints past int64 and pickles."""
    cdef Writer w
    cdef Py_ssize_t start = PyByteArray_GET_SIZE(out)
    w.out = <PyObject *>out
    w.used = start
    w.cap = start
    w.data = PyByteArray_AS_STRING(out)
    try:
        for x in values:
            put(&w, x, allow_pickle, 1)
    except BaseException:
        PyByteArray_Resize(out, start)
        raise
    PyByteArray_Resize(out, w.used)


# -- reading -------------------------------------------------------------------


@cython.final
cdef class Reader:
    pass


cdef int fail(str message, Py_ssize_t offset) except -1:
    raise ValueError(message, offset)


cdef inline uint32_t get_u32(const uint8_t *p) noexcept nogil:
    return <uint32_t>p[0] | <uint32_t>p[1] << 8 | <uint32_t>p[2] << 16 | <uint32_t>p[3] << 24


cdef inline uint64_t get_u64(const uint8_t *p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(8):
        v |= <uint64_t>p[k] << (8 * k)
    return v


cdef Py_ssize_t length(Reader r, Py_ssize_t per_item, str what, Py_ssize_t at) except -1:
    """The u32 length at r.pos (which moves past it), refused when the bytes
    left cannot hold that many items of at least ``per_item`` bytes."""
    cdef uint64_t n
    if r.end - r.pos < 4:
        fail("a length runs past the end of its frame", at)
    n = get_u32(r.data + r.pos)
    r.pos += 4
    if <uint64_t>per_item * n > <uint64_t>(r.end - r.pos):
        fail(f"{what.format(n=n)} runs past the end of its frame", at)
    return <Py_ssize_t>n


cdef object read(Reader r, int depth):
    cdef Py_ssize_t at = r.pos, n, i
    cdef uint8_t tag
    cdef double d
    cdef uint64_t bits
    cdef object out, key, value
    if r.pos >= r.end:
        fail("a record runs past the end of its frame", at)
    tag = r.data[r.pos]
    r.pos += 1
    if tag == TAG_STR:
        n = length(r, 1, "a str of {n} bytes", at)
        r.pos += n
        return read_str(r.data + r.pos - n, n, at)
    if tag == TAG_INT:
        if r.end - r.pos < 8:
            fail("an int runs past the end of its frame", at)
        r.pos += 8
        return PyLong_FromLongLong(<int64_t>get_u64(r.data + r.pos - 8))
    if tag == TAG_FLOAT:
        if r.end - r.pos < 8:
            fail("a float runs past the end of its frame", at)
        bits = get_u64(r.data + r.pos)
        memcpy(&d, &bits, 8)
        r.pos += 8
        return PyFloat_FromDouble(d)
    if tag == TAG_NONE:
        return None
    if tag == TAG_TRUE:
        return True
    if tag == TAG_FALSE:
        return False
    if tag == TAG_BYTES:
        n = length(r, 1, "a bytes of {n} bytes", at)
        r.pos += n
        return PyBytes_FromStringAndSize(<const char *>r.data + r.pos - n, n)
    if tag == TAG_TUPLE or tag == TAG_LIST or tag == TAG_DICT:
        if depth >= C_MAX_DEPTH:
            fail(f"records nest deeper than {MAX_DEPTH} levels", at)
        # Every record takes at least one byte: a count the frame cannot hold
        # is refused before anything is built.
        n = length(r, 2 if tag == TAG_DICT else 1, "a container of {n} items", at)
        if tag == TAG_DICT:
            out = {}
            for i in range(n):
                key = read(r, depth + 1)
                value = read(r, depth + 1)
                try:
                    PyDict_SetItem(out, key, value)
                except TypeError:
                    fail(f"a dict key of unhashable type {type(key).__name__}", at)
            return out
        return read_items(r, n, depth + 1, tag == TAG_TUPLE)
    if tag == TAG_BIGINT:
        n = length(r, 1, "an int of {n} bytes", at)
        r.pos += n
        return int.from_bytes(PyBytes_FromStringAndSize(<const char *>r.data + r.pos - n, n),
                              "little", signed=True)
    if tag == TAG_PICKLE:
        n = length(r, 1, "a pickle of {n} bytes", at)
        if not r.allow_pickle:
            fail("a pickled value, which this reader will not load: loading a pickle can run "
                 "any code; pass allow_pickle=True only for a stream you trust", at)
        r.pos += n
        try:
            return pickle.loads(PyBytes_FromStringAndSize(<const char *>r.data + r.pos - n, n))
        except Exception as error:
            raise ValueError(f"a pickled value does not load: {error!r}", at) from error
    fail(f"unknown record tag 0x{tag:02x}", at)


cdef inline object read_str(const uint8_t *p, Py_ssize_t n, Py_ssize_t at):
    cdef PyObject *s = decode_utf8(<const char *>p, n, "surrogatepass")
    if s == NULL:
        PyErr_Clear()
        fail("a str that is not UTF-8", at)
    # decode_utf8 returned a new reference: hand it over without another.
    cdef object out = <object>s
    Py_DECREF(out)
    return out


cdef object read_items(Reader r, Py_ssize_t n, int depth, bint as_tuple):
    """``n`` records as a new list or tuple. The common leaves are read here,
    without a call each."""
    cdef object out = PyTuple_New(n) if as_tuple else PyList_New(n)
    cdef object item
    cdef Py_ssize_t i, k
    cdef uint8_t tag
    cdef const uint8_t *p
    for i in range(n):
        p = r.data + r.pos
        tag = p[0] if r.pos < r.end else 0
        if tag == TAG_STR and r.end - r.pos >= 5:
            k = get_u32(p + 1)
            if k > r.end - r.pos - 5:
                fail(f"a str of {k} bytes runs past the end of its frame", r.pos)
            item = read_str(p + 5, k, r.pos)
            r.pos += 5 + k
        elif tag == TAG_INT and r.end - r.pos >= 9:
            item = PyLong_FromLongLong(<int64_t>get_u64(p + 1))
            r.pos += 9
        else:
            item = read(r, depth)
        Py_INCREF(item)
        # Both steal the reference taken above; the container's slots start NULL.
        if as_tuple:
            PyTuple_SET_ITEM(out, i, item)
        else:
            PyList_SET_ITEM(out, i, item)
    return out


def decode_records(buffer, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t n, bint allow_pickle):
    """``(records, position after them)``: the ``n`` tagged records (a list)
    from ``pos`` of ``buffer`` (any bytes-like object), reading nothing at or
    past ``end``. ValueError ``(message, offset)`` on anything malformed
    (see the module's docstring); pickles are loaded only with ``allow_pickle``."""
    cdef const uint8_t[::1] view = memoryview(buffer).cast("B")
    cdef Reader r = Reader.__new__(Reader)
    if end > view.shape[0] or pos < 0 or pos > end:
        raise ValueError(f"records from {pos} to {end} are outside a buffer of "
                         f"{view.shape[0]} bytes", pos)
    if n > end - pos:
        fail(f"{n} records cannot fit in the rest of the frame", pos)
    r.source = view
    r.data = &view[0] if view.shape[0] else NULL
    r.pos = pos
    r.end = end
    r.allow_pickle = allow_pickle
    return read_items(r, n, 1, False), r.pos
