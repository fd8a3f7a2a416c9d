"""Antichain and MutableAntichain over rows of uint64."""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove

from timely.progress._rows cimport (
    TLY_MAX_ARITY,
    tly_ma_clear,
    tly_ma_compact_changes,
    tly_ma_count,
    tly_ma_dump,
    tly_ma_free,
    tly_ma_init,
    tly_ma_less_equal,
    tly_ma_less_than,
    tly_ma_update,
    tly_row_cmp,
    tly_row_eq,
    tly_row_le,
)
from timely.progress._timestamp cimport fill_row, make_time, settle_arity

from timely.errors import TimestampError


cdef int check_arity(object arity) except -1:
    if arity < 1 or arity > TLY_MAX_ARITY:
        raise TimestampError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
    return 0


cdef int query_row(Py_ssize_t k, object time, uint64_t *row) except -1:
    """Fills ``row`` for a query against a structure of arity ``k``; returns 0
    when the structure has no arity yet (it holds nothing), 1 otherwise."""
    if k == 0:
        settle_arity(0, time)
        return 0
    settle_arity(k, time)
    fill_row(time, k, row)
    return 1


cdef class Antichain:
    """A set of mutually incomparable timestamps: the lower boundary of a set of times.

    ``insert`` keeps only the minimal elements. Elements are kept in
    lexicographic order; each operation costs O(len * arity).

    >>> a = Antichain([(0, 3), (1, 1), (2, 2)])
    >>> a.elements()
    [(0, 3), (1, 1)]
    >>> a.less_equal((1, 5)), a.less_equal((0, 2))
    (True, False)
    """

    def __cinit__(self):
        self.rows = NULL
        self.len = 0
        self.cap = 0
        self.k = 0

    def __init__(self, elements=(), *, arity=None):
        if arity is not None:
            check_arity(arity)
            self.k = arity
        self.extend(elements)

    def __dealloc__(self):
        free(self.rows)

    @staticmethod
    def from_elem(time):
        """The antichain holding one time."""
        return Antichain((time,))

    cdef int reserve(self, size_t n) except -1:
        cdef size_t ncap
        cdef void *p
        if n <= self.cap:
            return 0
        ncap = self.cap * 2 if self.cap else 4
        while ncap < n:
            ncap *= 2
        p = realloc(self.rows, ncap * <size_t>self.k * sizeof(uint64_t))
        if p == NULL:
            raise MemoryError("Antichain: out of memory")
        self.rows = <uint64_t *>p
        self.cap = ncap
        return 0

    cdef bint le_row(self, const uint64_t *t) noexcept nogil:
        cdef size_t i
        for i in range(self.len):
            if tly_row_le(&self.rows[i * self.k], t, self.k):
                return True
        return False

    cdef bint lt_row(self, const uint64_t *t) noexcept nogil:
        cdef size_t i
        cdef const uint64_t *r
        for i in range(self.len):
            r = &self.rows[i * self.k]
            if tly_row_le(r, t, self.k) and not tly_row_eq(r, t, self.k):
                return True
        return False

    cdef bint insert_row(self, const uint64_t *t) except -1:
        cdef size_t i, w = 0, pos
        cdef Py_ssize_t k = self.k
        if self.le_row(t):
            return False
        for i in range(self.len):
            if not tly_row_le(t, &self.rows[i * k], k):
                if w != i:
                    memcpy(&self.rows[w * k], &self.rows[i * k], k * sizeof(uint64_t))
                w += 1
        self.len = w
        self.reserve(self.len + 1)
        pos = self.len
        while pos > 0 and tly_row_cmp(&self.rows[(pos - 1) * k], t, k) > 0:
            pos -= 1
        memmove(&self.rows[(pos + 1) * k], &self.rows[pos * k], (self.len - pos) * k * sizeof(uint64_t))
        memcpy(&self.rows[pos * k], t, k * sizeof(uint64_t))
        self.len += 1
        return True

    cdef int assign(self, const uint64_t *rows, size_t n, Py_ssize_t k) except -1:
        """Replaces the contents with n rows that already form a sorted antichain."""
        self.len = 0
        if k != self.k:
            free(self.rows)
            self.rows = NULL
            self.cap = 0
            self.k = k
        self.reserve(n)
        if n:
            memcpy(self.rows, rows, n * k * sizeof(uint64_t))
        self.len = n
        return 0

    @property
    def arity(self):
        return self.k if self.k else None

    def insert(self, time):
        """Adds ``time`` unless some element is <= it, removing the elements >= it.

        Returns True when ``time`` was added.
        """
        cdef uint64_t row[TLY_MAX_ARITY]
        self.k = settle_arity(self.k, time)
        fill_row(time, self.k, row)
        return self.insert_row(row)

    def extend(self, times):
        """Inserts every time; True if any was added."""
        added = False
        for time in times:
            if self.insert(time):
                added = True
        return added

    def less_than(self, time):
        """Some element is strictly less than ``time``."""
        cdef uint64_t row[TLY_MAX_ARITY]
        return bool(query_row(self.k, time, row) and self.lt_row(row))

    def less_equal(self, time):
        """Some element is less than or equal to ``time``."""
        cdef uint64_t row[TLY_MAX_ARITY]
        return bool(query_row(self.k, time, row) and self.le_row(row))

    def dominates(self, Antichain other):
        """Every element of ``other`` is >= some element of this antichain."""
        cdef size_t i
        if other.len == 0:
            return True
        if self.k != other.k:
            if self.k == 0:
                return False
            raise TimestampError(f"antichains of arity {self.k} and {other.k} do not compare")
        for i in range(other.len):
            if not self.le_row(&other.rows[i * other.k]):
                return False
        return True

    def elements(self):
        """The elements, in lexicographic order."""
        cdef size_t i
        return [make_time(&self.rows[i * self.k], self.k) for i in range(self.len)]

    def is_empty(self):
        return self.len == 0

    def clear(self):
        self.len = 0

    def __len__(self):
        return self.len

    def __iter__(self):
        return iter(self.elements())

    def __getitem__(self, Py_ssize_t index):
        """The element at ``index`` in lexicographic order (negative indices
        count from the end), in O(arity).

        >>> a = Antichain([(1, 2), (2, 1)])
        >>> a[0], a[-1]
        ((1, 2), (2, 1))
        """
        cdef Py_ssize_t n = <Py_ssize_t>self.len
        if index < 0:
            index += n
        if index < 0 or index >= n:
            raise IndexError("Antichain index out of range")
        return make_time(&self.rows[index * self.k], self.k)

    def __contains__(self, time):
        cdef uint64_t row[TLY_MAX_ARITY]
        cdef size_t i
        if self.k == 0:
            return False
        try:
            settle_arity(self.k, time)
            fill_row(time, self.k, row)
        except (TypeError, ValueError):
            return False
        for i in range(self.len):
            if tly_row_eq(&self.rows[i * self.k], row, self.k):
                return True
        return False

    def __eq__(self, other):
        cdef Antichain o
        cdef size_t i
        if not isinstance(other, Antichain):
            return NotImplemented
        o = <Antichain>other
        if o.len != self.len:
            return False
        if self.len == 0:
            return True
        if o.k != self.k:
            return False
        for i in range(self.len):
            if not tly_row_eq(&self.rows[i * self.k], &o.rows[i * self.k], self.k):
                return False
        return True

    def __hash__(self):
        return hash(tuple(self.elements()))

    def __repr__(self):
        return f"Antichain({self.elements()!r})"

    def __reduce__(self):
        return (Antichain, (self.elements(),), None)


cdef Antichain antichain_of(const uint64_t *rows, size_t n, Py_ssize_t k):
    cdef Antichain a = Antichain.__new__(Antichain)
    a.assign(rows, n, k)
    return a


cdef class MutableAntichain:
    """Counts per timestamp, and the antichain of minimal times with positive count.

    Counts may be transiently negative; only positive counts shape the frontier.
    Times are kept in a balanced search tree ordered lexicographically whose
    subtrees carry the coordinate-wise minimum of their positive times. An
    update costs O(log n). When a frontier element retires, the new minimal
    elements are found without a rescan of all n times: for arity 1 in
    O(log n); for arity 2 by walking the staircase between the retired
    element's neighbours, O(log n) per first coordinate probed; for higher
    arities by a walk that skips every subtree already dominated.

    >>> m = MutableAntichain()
    >>> m.update_iter([(3, 1), (5, 1)])
    [(3, 1)]
    >>> m.update_iter([(3, -1)])
    [(3, -1), (5, 1)]
    >>> m.frontier()
    Antichain([5])
    """

    def __cinit__(self):
        self.k = 0
        tly_ma_init(&self.m, 1)

    def __init__(self, *, arity=None):
        if arity is not None:
            check_arity(arity)
            self.set_arity(arity)

    def __dealloc__(self):
        tly_ma_free(&self.m)

    @staticmethod
    def from_elem(time):
        """A MutableAntichain holding ``time`` once."""
        m = MutableAntichain()
        m.update_iter(((time, 1),))
        return m

    cdef int set_arity(self, Py_ssize_t k) except -1:
        tly_ma_free(&self.m)
        tly_ma_init(&self.m, k)
        self.k = k
        return 0

    cdef int update_row(self, const uint64_t *t, long long diff) except -1:
        cdef int rc
        with nogil:
            rc = tly_ma_update(&self.m, t, diff)
        if rc != 0:
            tly_ma_clear(&self.m)
            raise MemoryError("MutableAntichain: out of memory; its contents were cleared")
        return 0

    cdef list drain_changes(self):
        cdef size_t i, n
        if self.m.clen == 0:
            return []
        n = tly_ma_compact_changes(&self.m)
        if n == <size_t>-1:
            raise MemoryError("MutableAntichain: out of memory while compacting changes")
        out = [(make_time(&self.m.chg[i * self.k], self.k), self.m.chgd[i]) for i in range(n)]
        self.m.clen = 0
        return out

    @property
    def arity(self):
        return self.k if self.k else None

    def update_iter(self, updates):
        """Applies ``(time, diff)`` updates; returns the net frontier changes in time order."""
        cdef uint64_t row[TLY_MAX_ARITY]
        cdef long long diff
        cdef Py_ssize_t k
        for time, d in updates:
            diff = d
            k = settle_arity(self.k, time)
            if self.k == 0:
                self.set_arity(k)
            fill_row(time, k, row)
            self.update_row(row, diff)
        return self.drain_changes()

    def update(self, time, long long diff):
        """One update; returns the net frontier changes."""
        return self.update_iter(((time, diff),))

    def frontier(self):
        """The minimal times with a positive count, as an Antichain."""
        return antichain_of(self.m.front, self.m.flen, self.k if self.k else 1) if self.m.flen else (
            Antichain(arity=self.k) if self.k else Antichain())

    def count_for(self, time):
        """The accumulated count of ``time`` (0 when absent)."""
        cdef uint64_t row[TLY_MAX_ARITY]
        if not query_row(self.k, time, row):
            return 0
        return tly_ma_count(&self.m, row)

    def less_than(self, time):
        """Some frontier element is strictly less than ``time``."""
        cdef uint64_t row[TLY_MAX_ARITY]
        if not query_row(self.k, time, row):
            return False
        return bool(tly_ma_less_than(&self.m, row))

    def less_equal(self, time):
        """Some frontier element is less than or equal to ``time``."""
        cdef uint64_t row[TLY_MAX_ARITY]
        if not query_row(self.k, time, row):
            return False
        return bool(tly_ma_less_equal(&self.m, row))

    def is_empty(self):
        """No time has a positive count."""
        return self.m.flen == 0

    def updates(self):
        """Every time with a non-zero count, with its count, in time order."""
        cdef size_t i, n = self.m.size
        cdef uint64_t *rows
        cdef int64_t *counts
        if n == 0:
            return []
        rows = <uint64_t *>malloc(n * <size_t>self.k * sizeof(uint64_t))
        counts = <int64_t *>malloc(n * sizeof(int64_t))
        if rows == NULL or counts == NULL:
            free(rows)
            free(counts)
            raise MemoryError("MutableAntichain.updates: out of memory")
        try:
            if tly_ma_dump(&self.m, rows, counts) != 0:
                raise MemoryError("MutableAntichain.updates: out of memory")
            return [(make_time(&rows[i * self.k], self.k), counts[i]) for i in range(n)]
        finally:
            free(rows)
            free(counts)

    def clear(self):
        tly_ma_clear(&self.m)

    def __len__(self):
        return self.m.size

    def __repr__(self):
        return f"MutableAntichain({self.updates()!r})"
