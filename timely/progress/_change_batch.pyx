"""ChangeBatch: (time, diff) updates appended cheaply and compacted lazily."""

cimport numpy as cnp
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

from timely.progress._rows cimport TLY_MAX_ARITY, tly_compact
from timely.progress._timestamp cimport fill_row, make_time, settle_arity

import numpy as np

from timely.errors import TimestampError

cnp.import_array()

# Compaction is deferred until the batch has doubled since the last one, so an
# update costs amortized O(1) plus its share of one sort.
cdef size_t SMALL = 32


cdef class ChangeBatch:
    """A collection of (time, diff) updates, compacted lazily.

    Updates append in amortized O(1). Compaction sorts the updates (a radix sort
    over the uint64 rows), sums the diffs of equal times and drops zeros; it
    runs when the batch is read or has doubled since the last compaction. Reads
    see times in lexicographic order with non-zero diffs.

    >>> b = ChangeBatch()
    >>> b.update(5, 1); b.update(3, 2); b.update(5, -1)
    >>> b.drain()
    [(3, 2)]
    >>> len(b)
    0
    """

    def __cinit__(self):
        self.rows = NULL
        self.diffs = NULL
        self.len = 0
        self.cap = 0
        self.clean = 0
        self.k = 0

    def __init__(self, updates=(), *, arity=None):
        if arity is not None:
            if arity < 1 or arity > TLY_MAX_ARITY:
                raise TimestampError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
            self.set_arity(arity)
        self.extend(updates)

    def __dealloc__(self):
        free(self.rows)
        free(self.diffs)

    cdef int set_arity(self, Py_ssize_t k) except -1:
        self.k = k
        return 0

    cdef int reserve_raw(self, size_t extra) noexcept nogil:
        cdef size_t need = self.len + extra
        cdef size_t ncap
        cdef void *p
        if need <= self.cap:
            return 0
        ncap = self.cap * 2 if self.cap else 16
        while ncap < need:
            ncap *= 2
        p = realloc(self.rows, ncap * <size_t>self.k * sizeof(uint64_t))
        if p == NULL:
            return -1
        self.rows = <uint64_t *>p
        p = realloc(self.diffs, ncap * sizeof(int64_t))
        if p == NULL:
            return -1
        self.diffs = <int64_t *>p
        self.cap = ncap
        return 0

    cdef int compact_raw(self) noexcept nogil:
        cdef size_t n
        if self.clean == self.len:
            return 0
        if self.len == 1:
            # One update: sorted already; only a zero diff goes.
            if self.diffs[0] == 0:
                self.len = 0
            self.clean = self.len
            return 0
        n = tly_compact(self.rows, self.diffs, self.len, self.k)
        if n == <size_t>-1:
            return -1
        self.len = n
        self.clean = n
        return 0

    cdef int push_raw(self, const uint64_t *row, int64_t diff) noexcept nogil:
        cdef Py_ssize_t i
        if diff == 0:
            return 0
        if self.reserve_raw(1) != 0:
            return -1
        for i in range(self.k):
            self.rows[self.len * self.k + i] = row[i]
        self.diffs[self.len] = diff
        self.len += 1
        if self.len > SMALL and self.len // 2 >= self.clean:
            return self.compact_raw()
        return 0

    cdef int reserve(self, size_t extra) except -1:
        if self.reserve_raw(extra) != 0:
            raise MemoryError("ChangeBatch: out of memory")
        return 0

    cdef int push_row(self, const uint64_t *row, int64_t diff) except -1:
        if self.push_raw(row, diff) != 0:
            raise MemoryError("ChangeBatch: out of memory")
        return 0

    cdef int compact_now(self) except -1:
        cdef int rc
        if self.clean == self.len:
            return 0
        if self.len - self.clean <= SMALL:
            # Releasing the GIL costs more than sorting a few rows.
            rc = self.compact_raw()
        else:
            with nogil:
                rc = self.compact_raw()
        if rc != 0:
            raise MemoryError("ChangeBatch: out of memory while compacting")
        return 0

    @property
    def arity(self):
        return self.k if self.k else None

    def update(self, time, int64_t diff):
        """Adds ``diff`` to the count of ``time``."""
        cdef uint64_t row[TLY_MAX_ARITY]
        self.k = settle_arity(self.k, time)
        fill_row(time, self.k, row)
        self.push_row(row, diff)

    def extend(self, updates):
        """Adds every ``(time, diff)`` of an iterable."""
        cdef uint64_t row[TLY_MAX_ARITY]
        cdef int64_t diff
        for time, d in updates:
            diff = d
            self.k = settle_arity(self.k, time)
            fill_row(time, self.k, row)
            self.push_row(row, diff)

    def extend_arrays(self, times, diffs):
        """Appends ``len(diffs)`` updates from arrays, without a Python object per update.

        ``times`` has shape ``(n,)`` for arity 1 or ``(n, arity)``; its values must
        lie in ``[0, 2**64)``; ``diffs`` is converted to int64.
        """
        t = np.asarray(times)
        if t.dtype.kind not in "iu":
            raise TimestampError(f"times of dtype {t.dtype} are not integers")
        if t.dtype.kind == "i" and t.size and t.min() < 0:
            raise TimestampError(f"times hold a negative coordinate: {t.min()}")
        cdef Py_ssize_t k = 1 if t.ndim == 1 else (t.shape[1] if t.ndim == 2 else -1)
        if k < 1 or k > TLY_MAX_ARITY:
            raise TimestampError(f"times of shape {t.shape} are neither (n,) nor (n, arity)")
        if self.k and k != self.k:
            raise TimestampError(f"times have arity {k}; expected arity {self.k}")
        cdef const uint64_t[:, ::1] tv = np.ascontiguousarray(t.reshape(t.shape[0], k), dtype=np.uint64)
        cdef const int64_t[::1] dv = np.ascontiguousarray(diffs, dtype=np.int64)
        cdef size_t n = dv.shape[0]
        if <size_t>tv.shape[0] != n:
            raise ValueError(f"{tv.shape[0]} times but {n} diffs")
        self.k = k
        if n == 0:
            return
        self.reserve(n)
        memcpy(&self.rows[self.len * k], &tv[0, 0], n * k * sizeof(uint64_t))
        memcpy(&self.diffs[self.len], &dv[0], n * sizeof(int64_t))
        self.len += n
        if self.len > SMALL and self.len // 2 >= self.clean:
            self.compact_now()

    def compact(self):
        """Sorts and consolidates the pending updates now."""
        self.compact_now()

    def is_empty(self):
        self.compact_now()
        return self.len == 0

    def __len__(self):
        self.compact_now()
        return self.len

    def __bool__(self):
        return not self.is_empty()

    def __iter__(self):
        return iter(self.items())

    cdef list items(self):
        cdef size_t i
        self.compact_now()
        return [(make_time(&self.rows[i * self.k], self.k), self.diffs[i]) for i in range(self.len)]

    def iter(self):
        """The compacted updates in time order, as an iterator; unlike
        :meth:`drain` the batch keeps them. Costs one compaction.

        >>> b = ChangeBatch([(2, 1), (1, 1), (2, 1)])
        >>> list(b.iter()), len(b)
        ([(1, 1), (2, 2)], 2)
        """
        return iter(self.items())

    def drain_into(self, ChangeBatch other not None):
        """Moves every update into ``other`` (as the crate's ``drain_into``),
        leaving this batch empty: a copy of the rows, O(len), without
        building Python objects. The two batches must have the same arity
        (a batch that has seen no timestamp takes this one's).

        >>> a, b = ChangeBatch([(1, 1), (3, 1)]), ChangeBatch([(1, -1)])
        >>> a.drain_into(b)
        >>> len(a), b.drain()
        (0, [(3, 1)])
        """
        cdef size_t i
        if other is self:
            return
        self.compact_now()
        if self.len == 0:
            return
        if other.k == 0:
            other.set_arity(self.k)
        elif other.k != self.k:
            raise TimestampError(
                f"cannot move updates of arity {self.k} into a ChangeBatch of arity {other.k}")
        for i in range(self.len):
            other.push_row(&self.rows[i * self.k], self.diffs[i])
        self.len = 0
        self.clean = 0

    def drain(self):
        """The compacted updates in time order; leaves the batch empty."""
        out = self.items()
        self.len = 0
        self.clean = 0
        return out

    def drain_arrays(self):
        """``(times, diffs)`` as numpy arrays, compacted; leaves the batch empty.

        ``times`` is uint64 of shape ``(n,)`` for arity 1, ``(n, arity)`` otherwise.
        """
        self.compact_now()
        cdef Py_ssize_t k = self.k if self.k else 1
        times = np.empty((self.len, k), dtype=np.uint64)
        diffs = np.empty(self.len, dtype=np.int64)
        cdef uint64_t[:, ::1] tv = times
        cdef int64_t[::1] dv = diffs
        if self.len:
            memcpy(&tv[0, 0], self.rows, self.len * k * sizeof(uint64_t))
            memcpy(&dv[0], self.diffs, self.len * sizeof(int64_t))
        self.len = 0
        self.clean = 0
        return (times.reshape(-1) if k == 1 else times), diffs

    def clear(self):
        self.len = 0
        self.clean = 0

    def __repr__(self):
        return f"ChangeBatch({self.items()!r})"
