"""Timestamps as rows of uint64, and path summaries as rows of increments.

Conversions between Python values and rows happen here, at batch boundaries;
the compiled structures never see Python objects inside their loops.
"""

from cpython.long cimport PyLong_Check
from libc.stdint cimport uint64_t

from timely.progress._rows cimport TLY_MAX_ARITY, tly_row_add, tly_row_eq, tly_row_is_zero, tly_row_le

from operator import index as _index

from timely.errors import SummaryError, TimestampError, TimestampTypeError

MAX_COORD = 2**64 - 1


cdef inline uint64_t coord(object value, object whole, bint summary) except? 0:
    """One coordinate as uint64, with an error naming the offending value."""
    cdef object v = value
    if type(v) is not int:
        if isinstance(v, bool) or not (PyLong_Check(v) or hasattr(v, "__index__")):
            if summary:
                raise SummaryError(
                    f"path summary {whole!r}: increment {value!r} is {type(value).__name__}, not int")
            raise TimestampTypeError(
                f"timestamp {whole!r}: coordinate {value!r} is {type(value).__name__}, not int")
        v = _index(v)
    if v < 0 or v > MAX_COORD:
        if summary:
            raise SummaryError(f"path summary {whole!r}: increment {value!r} is outside [0, 2**64)")
        raise TimestampError(f"timestamp {whole!r}: coordinate {value!r} is outside [0, 2**64)")
    return <uint64_t>v


cdef Py_ssize_t arity_of_time(object time) except -1:
    cdef Py_ssize_t n
    if type(time) is tuple or type(time) is list:
        n = len(time)
        if n == 0:
            raise TimestampError(f"timestamp {time!r} is empty")
        if n > TLY_MAX_ARITY:
            raise TimestampError(f"timestamp {time!r} has {n} coordinates; at most {TLY_MAX_ARITY}")
        return n
    if isinstance(time, (tuple, list)):
        return arity_of_time(list(time))
    if isinstance(time, bool) or not (PyLong_Check(time) or hasattr(time, "__index__")):
        raise TimestampTypeError(
            f"timestamp {time!r} is {type(time).__name__}; expected an int or a tuple of ints")
    return 1


cdef Py_ssize_t settle_arity(Py_ssize_t have, object time) except -1:
    """The arity a structure uses after seeing ``time``: its own if fixed, else the time's."""
    cdef Py_ssize_t n = arity_of_time(time)
    if have != 0 and n != have:
        raise TimestampError(f"timestamp {time!r} has arity {n}; expected arity {have}")
    return n


cdef int fill_row(object time, Py_ssize_t k, uint64_t *out) except -1:
    cdef Py_ssize_t i, n
    if type(time) is int:
        if k != 1:
            raise TimestampError(f"timestamp {time!r} has arity 1; expected arity {k}")
        if time < 0 or time > MAX_COORD:
            raise TimestampError(f"timestamp {time!r}: coordinate {time!r} is outside [0, 2**64)")
        out[0] = <uint64_t>time
        return 0
    n = arity_of_time(time)
    if n != k:
        raise TimestampError(f"timestamp {time!r} has arity {n}; expected arity {k}")
    if n == 1 and not isinstance(time, (tuple, list)):
        out[0] = coord(time, time, False)
        return 0
    for i in range(n):
        out[i] = coord(time[i], time, False)
    return 0


cdef object make_time(const uint64_t *row, Py_ssize_t k):
    cdef Py_ssize_t i
    if k == 1:
        return row[0]
    return tuple([row[i] for i in range(k)])


cdef Py_ssize_t summary_arity(object summary) except -1:
    if isinstance(summary, PathSummary):
        return (<PathSummary>summary).k
    if isinstance(summary, (tuple, list)):
        if len(summary) == 0 or len(summary) > TLY_MAX_ARITY:
            raise SummaryError(f"path summary {summary!r} must have 1 to {TLY_MAX_ARITY} increments")
        return len(summary)
    if isinstance(summary, bool) or not (PyLong_Check(summary) or hasattr(summary, "__index__")):
        raise SummaryError(
            f"path summary {summary!r} is {type(summary).__name__}; expected an int or a tuple of ints")
    return 1


cdef int fill_summary(object summary, Py_ssize_t k, uint64_t *out) except -1:
    cdef Py_ssize_t i, n = summary_arity(summary)
    if n != k:
        raise SummaryError(f"path summary {summary!r} has arity {n}; expected arity {k}")
    if isinstance(summary, PathSummary):
        for i in range(k):
            out[i] = (<PathSummary>summary).inc[i]
    elif isinstance(summary, (tuple, list)):
        for i in range(k):
            out[i] = coord(summary[i], summary, True)
    else:
        out[0] = coord(summary, summary, True)
    return 0


def arity_of(time):
    """The arity of a timestamp: 1 for an int, the length of a tuple."""
    return arity_of_time(time)


def validate(time, arity=None):
    """``time`` in canonical form (int for arity 1, tuple otherwise).

    >>> validate((3,)), validate([1, 2])
    (3, (1, 2))
    """
    cdef uint64_t row[TLY_MAX_ARITY]
    cdef Py_ssize_t k = settle_arity(0 if arity is None else arity, time)
    fill_row(time, k, row)
    return make_time(row, k)


cdef Py_ssize_t fill_pair(object a, object b, uint64_t *ra, uint64_t *rb) except -1:
    """Rows of two timestamps of one arity; returns the arity."""
    cdef Py_ssize_t k = arity_of_time(a)
    settle_arity(k, b)
    fill_row(a, k, ra)
    fill_row(b, k, rb)
    return k


def less_equal(a, b):
    """Product partial order: each coordinate of ``a`` is <= that of ``b``.

    >>> less_equal((1, 2), (2, 2)), less_equal((1, 3), (2, 2))
    (True, False)
    """
    cdef uint64_t ra[TLY_MAX_ARITY]
    cdef uint64_t rb[TLY_MAX_ARITY]
    cdef Py_ssize_t k = fill_pair(a, b, ra, rb)
    return bool(tly_row_le(ra, rb, k))


def less_than(a, b):
    """``a`` <= ``b`` in the product order and ``a`` != ``b``."""
    cdef uint64_t ra[TLY_MAX_ARITY]
    cdef uint64_t rb[TLY_MAX_ARITY]
    cdef Py_ssize_t k = fill_pair(a, b, ra, rb)
    return bool(tly_row_le(ra, rb, k) and not tly_row_eq(ra, rb, k))


def minimum(Py_ssize_t arity):
    """The least timestamp of an arity.

    >>> minimum(1), minimum(3)
    (0, (0, 0, 0))
    """
    if arity < 1 or arity > TLY_MAX_ARITY:
        raise TimestampError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
    return 0 if arity == 1 else (0,) * arity


cdef class PathSummary:
    """Per-coordinate non-negative increments applied to a timestamp along a path.

    ``results_in`` only advances a timestamp, and gives None when a coordinate
    would overflow (the record is dropped); ``followed_by`` composes two paths.
    Summaries are ordered coordinate-wise.

    >>> PathSummary((0, 1)).results_in((3, 4))
    (3, 5)
    >>> PathSummary(1).results_in(2**64 - 1) is None
    True
    >>> PathSummary((0, 1)).followed_by((2, 0))
    PathSummary((2, 1))
    """

    def __init__(self, increments):
        self.k = summary_arity(increments)
        fill_summary(increments, self.k, self.inc)

    @staticmethod
    def zero(Py_ssize_t arity):
        """The summary that leaves every timestamp unchanged."""
        if arity < 1 or arity > TLY_MAX_ARITY:
            raise SummaryError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
        return PathSummary(0 if arity == 1 else (0,) * arity)

    @property
    def arity(self):
        return self.k

    @property
    def increments(self):
        return make_time(self.inc, self.k)

    def results_in(self, time):
        """``time`` advanced by this summary, or None when a coordinate overflows."""
        cdef uint64_t row[TLY_MAX_ARITY]
        settle_arity(self.k, time)
        fill_row(time, self.k, row)
        if not tly_row_add(row, self.inc, row, self.k):
            return None
        return make_time(row, self.k)

    def followed_by(self, other):
        """This path followed by ``other``, or None when an increment overflows."""
        cdef uint64_t row[TLY_MAX_ARITY]
        fill_summary(other, self.k, row)
        if not tly_row_add(self.inc, row, row, self.k):
            return None
        cdef Py_ssize_t i
        cdef PathSummary out = PathSummary.__new__(PathSummary)
        out.k = self.k
        for i in range(self.k):
            out.inc[i] = row[i]
        return out

    def less_equal(self, other):
        """Every increment is <= that of ``other``: this path advances times no further."""
        cdef uint64_t row[TLY_MAX_ARITY]
        fill_summary(other, self.k, row)
        return bool(tly_row_le(self.inc, row, self.k))

    def less_than(self, other):
        cdef uint64_t row[TLY_MAX_ARITY]
        fill_summary(other, self.k, row)
        return bool(tly_row_le(self.inc, row, self.k) and not tly_row_eq(self.inc, row, self.k))

    def is_zero(self):
        """The summary leaves timestamps unchanged (a cycle made of such paths never advances)."""
        return bool(tly_row_is_zero(self.inc, self.k))

    def __eq__(self, other):
        cdef uint64_t row[TLY_MAX_ARITY]
        if isinstance(other, PathSummary):
            if (<PathSummary>other).k != self.k:
                return False
            return bool(tly_row_eq(self.inc, (<PathSummary>other).inc, self.k))
        try:
            if summary_arity(other) != self.k:
                return False
            fill_summary(other, self.k, row)
        except SummaryError:
            return NotImplemented
        return bool(tly_row_eq(self.inc, row, self.k))

    def __hash__(self):
        return hash(self.increments)

    def __repr__(self):
        return f"PathSummary({self.increments!r})"

    def __reduce__(self):
        return (PathSummary, (self.increments,))
