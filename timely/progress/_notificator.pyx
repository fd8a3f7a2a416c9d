"""The core of frontier notification: requested times released in time order."""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from timely.progress._change_batch cimport ChangeBatch
from timely.progress._frontier cimport Antichain, MutableAntichain
from timely.progress._rows cimport TLY_MAX_ARITY, tly_front_le, tly_row_cmp, tly_row_eq
from timely.progress._timestamp cimport fill_row, make_time, settle_arity

from timely.errors import TimestampError


cdef class NotificationQueue:
    """The core of a frontier notificator.

    ``notify_at`` records a request for a time; ``make_available`` moves every
    pending time that no given frontier is <= to (no input can still bring data
    at it) into the available set; ``next`` returns the least available time
    with the number of requests for it, coalesced. Pending requests live in a
    ChangeBatch; available ones in a binary heap ordered lexicographically.

    >>> n = NotificationQueue()
    >>> n.notify_at(5); n.notify_at(3); n.notify_at(5)
    >>> n.make_available([Antichain([4])])
    >>> n.next(), n.next()
    ((3, 1), None)
    >>> n.next([Antichain([])])
    (5, 2)
    """

    cdef Py_ssize_t k
    cdef ChangeBatch pending_
    cdef uint64_t *hrows
    cdef int64_t *hcount
    cdef size_t hlen, hcap

    def __cinit__(self):
        self.k = 0
        self.hrows = NULL
        self.hcount = NULL
        self.hlen = 0
        self.hcap = 0

    def __init__(self, *, arity=None):
        if arity is not None:
            if arity < 1 or arity > TLY_MAX_ARITY:
                raise TimestampError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
            self.k = arity
        self.pending_ = ChangeBatch(arity=self.k) if self.k else ChangeBatch()

    def __dealloc__(self):
        free(self.hrows)
        free(self.hcount)

    @property
    def arity(self):
        return self.k if self.k else None

    cdef int request(self, time, long long count, uint64_t *row) except -1:
        """Checks a request and writes its time's row (fixing the arity)."""
        if count <= 0:
            raise ValueError(f"notify_at: count {count} must be positive")
        self.k = settle_arity(self.k, time)
        fill_row(time, self.k, row)
        if self.pending_.k == 0:
            self.pending_.set_arity(self.k)
        return 0

    def notify_at(self, time, long long count=1):
        """Requests a notification at ``time`` (``count`` requests at once)."""
        cdef uint64_t row[TLY_MAX_ARITY]
        self.request(time, count, row)
        self.pending_.push_row(row, count)

    def notify_at_frontiered(self, time, frontiers, long long count=1):
        """As :meth:`notify_at`, knowing the frontiers (as the crate's
        ``notify_at_frontiered``): while times are being delivered (some are
        available), a time no frontier is <= to joins them at once, so that
        :meth:`next` yields it in time order among them; otherwise it waits
        in the pending ones, which :meth:`next` makes available in order.
        Costs a look at each frontier, not at the pending times."""
        cdef uint64_t row[TLY_MAX_ARITY]
        self.request(time, count, row)
        if self.hlen and not self.blocked(row, frontiers):
            self.heap_reserve(1)
            self.heap_push(row, count)
        else:
            self.pending_.push_row(row, count)

    cdef bint blocked(self, const uint64_t *row, frontiers) except -1:
        """Some frontier of ``frontiers`` is <= ``row``."""
        cdef Antichain a
        cdef MutableAntichain ma
        for f in frontiers:
            if isinstance(f, MutableAntichain):
                ma = <MutableAntichain>f
                if ma.m.flen:
                    if ma.k != self.k:
                        raise TimestampError(f"frontier of arity {ma.k}; expected arity {self.k}")
                    if tly_front_le(ma.m.front, ma.m.flen, self.k, row):
                        return True
            elif isinstance(f, Antichain):
                a = <Antichain>f
                if a.len:
                    if a.k != self.k:
                        raise TimestampError(f"frontier of arity {a.k}; expected arity {self.k}")
                    if tly_front_le(a.rows, a.len, self.k, row):
                        return True
            else:
                raise TypeError(f"{type(f).__name__} is not an Antichain or MutableAntichain")
        return False

    cdef int heap_reserve(self, size_t extra) except -1:
        cdef size_t ncap, k = self.k
        cdef void *p
        if self.hlen + extra > self.hcap:
            ncap = self.hcap * 2 if self.hcap else 16
            while ncap < self.hlen + extra:
                ncap *= 2
            p = realloc(self.hrows, ncap * k * sizeof(uint64_t))
            if p == NULL:
                raise MemoryError("NotificationQueue: out of memory")
            self.hrows = <uint64_t *>p
            p = realloc(self.hcount, ncap * sizeof(int64_t))
            if p == NULL:
                raise MemoryError("NotificationQueue: out of memory")
            self.hcount = <int64_t *>p
            self.hcap = ncap
        return 0

    cdef void heap_push(self, const uint64_t *t, int64_t count) noexcept nogil:
        """Adds an entry; the caller has reserved room."""
        cdef size_t i, parent, k = self.k
        i = self.hlen
        self.hlen += 1
        memcpy(&self.hrows[i * k], t, k * sizeof(uint64_t))
        self.hcount[i] = count
        while i > 0:
            parent = (i - 1) // 2
            if tly_row_cmp(&self.hrows[i * k], &self.hrows[parent * k], k) >= 0:
                break
            self.swap(i, parent)
            i = parent

    cdef void swap(self, size_t a, size_t b) noexcept nogil:
        cdef size_t c, k = self.k
        cdef uint64_t tmp
        cdef int64_t d
        for c in range(k):
            tmp = self.hrows[a * k + c]
            self.hrows[a * k + c] = self.hrows[b * k + c]
            self.hrows[b * k + c] = tmp
        d = self.hcount[a]
        self.hcount[a] = self.hcount[b]
        self.hcount[b] = d

    cdef void heap_pop(self) noexcept nogil:
        cdef size_t k = self.k
        cdef size_t i = 0, l, r, m
        self.hlen -= 1
        if self.hlen == 0:
            return
        memcpy(&self.hrows[0], &self.hrows[self.hlen * k], k * sizeof(uint64_t))
        self.hcount[0] = self.hcount[self.hlen]
        while True:
            l = 2 * i + 1
            r = l + 1
            m = i
            if l < self.hlen and tly_row_cmp(&self.hrows[l * k], &self.hrows[m * k], k) < 0:
                m = l
            if r < self.hlen and tly_row_cmp(&self.hrows[r * k], &self.hrows[m * k], k) < 0:
                m = r
            if m == i:
                break
            self.swap(i, m)
            i = m

    def make_available(self, frontiers):
        """Moves every pending time that no frontier is <= to into the available set."""
        cdef list fronts = []
        cdef Antichain a
        cdef MutableAntichain ma
        cdef size_t i, j, w = 0, k
        cdef bint blocked
        for f in frontiers:
            if isinstance(f, MutableAntichain):
                ma = <MutableAntichain>f
                if ma.m.flen:
                    if self.k and ma.k != self.k:
                        raise TimestampError(f"frontier of arity {ma.k}; expected arity {self.k}")
                    fronts.append(f)
            elif isinstance(f, Antichain):
                a = <Antichain>f
                if a.len:
                    if self.k and a.k != self.k:
                        raise TimestampError(f"frontier of arity {a.k}; expected arity {self.k}")
                    fronts.append(f)
            else:
                raise TypeError(f"make_available: {type(f).__name__} is not an Antichain or MutableAntichain")
        if self.k == 0:
            return
        k = self.k
        self.pending_.compact_now()
        cdef size_t nf = len(fronts)
        cdef const uint64_t **fptr = <const uint64_t **>malloc((nf + 1) * sizeof(uint64_t *))
        cdef size_t *flen = <size_t *>malloc((nf + 1) * sizeof(size_t))
        if fptr == NULL or flen == NULL:
            free(fptr)
            free(flen)
            raise MemoryError("NotificationQueue: out of memory")
        for j, f in enumerate(fronts):
            if isinstance(f, MutableAntichain):
                fptr[j] = (<MutableAntichain>f).m.front
                flen[j] = (<MutableAntichain>f).m.flen
            else:
                fptr[j] = (<Antichain>f).rows
                flen[j] = (<Antichain>f).len
        cdef uint64_t *rows = self.pending_.rows
        cdef int64_t *diffs = self.pending_.diffs
        try:
            self.heap_reserve(self.pending_.len)
            # `fronts` keeps every frontier alive while its rows are read.
            for i in range(self.pending_.len):
                blocked = False
                for j in range(nf):
                    if tly_front_le(fptr[j], flen[j], k, &rows[i * k]):
                        blocked = True
                        break
                if blocked:
                    if w != i:
                        memcpy(&rows[w * k], &rows[i * k], k * sizeof(uint64_t))
                        diffs[w] = diffs[i]
                    w += 1
                else:
                    self.heap_push(&rows[i * k], diffs[i])
        finally:
            free(fptr)
            free(flen)
            self.pending_.len = w
            self.pending_.clean = w

    def next(self, frontiers=None):
        """The least available time with its coalesced count, or None.

        With ``frontiers`` and nothing available, first makes available what they allow.
        """
        cdef int64_t count
        cdef uint64_t row[TLY_MAX_ARITY]
        if self.hlen == 0 and frontiers is not None:
            self.make_available(frontiers)
        if self.hlen == 0:
            return None
        memcpy(row, self.hrows, self.k * sizeof(uint64_t))
        count = self.hcount[0]
        self.heap_pop()
        while self.hlen and tly_row_eq(self.hrows, row, self.k):
            count += self.hcount[0]
            self.heap_pop()
        return (make_time(row, self.k), count)

    def drain(self, frontiers=None):
        """Every available time with its count, in time order."""
        if frontiers is not None:
            self.make_available(frontiers)
        out = []
        while self.hlen:
            out.append(self.next())
        return out

    def pending(self):
        """Requested times not yet available, in time order, with counts."""
        return list(self.pending_)

    def pending_len(self):
        return len(self.pending_)

    def available_len(self):
        """Distinct available times."""
        cdef size_t i, n = 0
        return len({make_time(&self.hrows[i * self.k], self.k) for i in range(self.hlen)})

    def is_empty(self):
        return self.hlen == 0 and self.pending_.is_empty()

    def __repr__(self):
        return f"NotificationQueue(pending={self.pending()!r}, available={self.available_len()})"
