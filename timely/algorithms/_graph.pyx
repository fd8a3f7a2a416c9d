"""Graph kernels in typed C over node numbers (0..n-1)."""

cimport cython
cimport numpy as cnp
from libc.math cimport INFINITY
from libc.stdint cimport INT32_MAX, INT64_MAX, int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove, memset

import numpy as np

cnp.import_array()

# Node numbers: int64, or a worker's int32 local numbers (LocalIds).
ctypedef fused index_t:
    int32_t
    int64_t


cdef int _within(const index_t[::1] values, int64_t n, str what) except -1:
    """Raises IndexError naming the first of ``values`` outside ``0..n-1``
    (``what`` says what a value is): checked before any memory is touched."""
    cdef Py_ssize_t i
    for i in range(values.shape[0]):
        if not 0 <= values[i] < n:
            raise IndexError(f"{what} {i} is {values[i]}, beyond {n}")
    return 0


cdef inline int64_t root_of(int64_t *parent, int64_t x) noexcept nogil:
    while parent[x] != x:
        parent[x] = parent[parent[x]]       # path halving
        x = parent[x]
    return x


def component_minima(const int64_t[::1] a, const int64_t[::1] b, const int64_t[::1] keys):
    """Union-find over the edges ``a[i] -- b[i]`` between node numbers
    ``0..len(keys) - 1``: for each node, the least ``keys`` value in its
    component. O((n + m) α(n)) in C, memory one int64 per node.

    >>> import numpy as np
    >>> component_minima(np.array([0, 2]), np.array([1, 3]), np.array([9, 4, 7, 8])).tolist()
    [4, 4, 7, 7]
    """
    cdef Py_ssize_t n = keys.shape[0], m = a.shape[0], i
    if b.shape[0] != m:
        raise ValueError("the two ends of the edges differ in length")
    _within(a, n, "edge start")
    _within(b, n, "edge end")
    cdef cnp.ndarray parent_a = np.arange(n, dtype=np.int64)
    cdef int64_t[::1] parent = parent_a
    cdef cnp.ndarray least_a = np.asarray(keys, dtype=np.int64).copy()
    cdef int64_t[::1] least = least_a
    cdef cnp.ndarray out_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    cdef int64_t ra, rb
    with nogil:
        for i in range(m):
            ra = root_of(&parent[0], a[i])
            rb = root_of(&parent[0], b[i])
            if ra != rb:
                if ra < rb:
                    parent[rb] = ra
                else:
                    parent[ra] = rb
        for i in range(n):
            ra = root_of(&parent[0], i)
            if least[i] < least[ra]:
                least[ra] = least[i]
        for i in range(n):
            out[i] = least[root_of(&parent[0], i)]
    return out_a


ctypedef fused number:
    int64_t
    double


def lower(number[::1] state, const int64_t[::1] cells, const number[::1] values,
          unsigned char[::1] mark):
    """Lowers ``state[cells[i]]`` to ``values[i]`` wherever that is less;
    returns the distinct cells lowered, in order of their first lowering.

    ``mark`` holds a zero byte per cell of ``state`` and is left so: it is
    kept by the caller so that a call costs O(len(cells)), not O(len(state)).

    >>> import numpy as np
    >>> state = np.array([5, 5, 5])
    >>> lower(state, np.array([2, 0, 2]), np.array([4, 7, 1]), np.zeros(3, np.uint8)).tolist()
    [2]
    >>> state.tolist()
    [5, 5, 1]
    """
    cdef Py_ssize_t n = cells.shape[0], size = state.shape[0], i, m = 0
    cdef int64_t c
    if values.shape[0] != n:
        raise ValueError("cells and values differ in length")
    if mark.shape[0] < size:
        raise ValueError("the mark has fewer bytes than the state has cells")
    _within(cells, size, "cell")
    cdef cnp.ndarray out_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            c = cells[i]
            if values[i] < state[c]:
                state[c] = values[i]
                if not mark[c]:
                    mark[c] = 1
                    out[m] = c
                    m += 1
        for i in range(m):
            mark[out[i]] = 0
    return out_a[:m]


cdef class Adjacency:
    """Arcs numbered in order of arrival, each from a source node number
    (``0..n-1``), and a way to find the arcs of a set of sources.

    Arcs ``[0, built)`` are indexed by source (a counting sort, CSR); arcs
    since then (the tail) are scanned. The index is rebuilt when the tail
    outgrows a quarter of it (and 16384 arcs), so adding an arc costs O(1)
    amortized and finding the arcs of ``k`` sources costs O(k + their arcs
    + the tail).

    >>> import numpy as np
    >>> arcs = Adjacency()
    >>> arcs.add(np.array([0, 1, 0]))
    0
    >>> [a.tolist() for a in arcs.gather(np.array([0]), 2)]
    [[0, 2], [0, 0]]
    """

    def __cinit__(self):
        self._src = np.empty(16, dtype=np.int64)
        self.arcs = 0
        self.built = 0
        self.indexed = 0
        self._order = np.empty(0, dtype=np.int64)
        self._starts = np.zeros(1, dtype=np.int64)
        self._where = np.empty(0, dtype=np.int64)

    def __len__(self):
        return self.arcs

    def add(self, const int64_t[::1] src):
        """Appends arcs from the nodes ``src``; returns the number of the first."""
        cdef Py_ssize_t n = src.shape[0], first = self.arcs, i
        _within(src, INT64_MAX, "arc source")
        if first + n > self._src.shape[0]:
            grown = np.empty(max(2 * self._src.shape[0], first + n), dtype=np.int64)
            grown[:first] = self._src[:first]
            self._src = grown
        cdef int64_t[::1] s = self._src
        with nogil:
            for i in range(n):
                s[first + i] = src[i]
        self.arcs = first + n
        return first

    cdef int _index(self) except -1:
        """Indexes every arc held by source: order and starts per node."""
        cdef Py_ssize_t m = self.arcs, i, groups = 0
        cdef int64_t[::1] s = self._src
        with nogil:
            for i in range(m):
                if s[i] + 1 > groups:
                    groups = s[i] + 1
        starts_a = np.zeros(groups + 1, dtype=np.int64)
        order_a = np.empty(m, dtype=np.int64)
        cdef int64_t[::1] starts = starts_a
        cdef int64_t[::1] order = order_a
        fill_a = np.empty(groups, dtype=np.int64)
        cdef int64_t[::1] fill = fill_a
        cdef Py_ssize_t g
        with nogil:
            for i in range(m):
                starts[s[i] + 1] += 1
            for g in range(groups):
                starts[g + 1] += starts[g]
                fill[g] = starts[g]
            for i in range(m):
                order[fill[s[i]]] = i
                fill[s[i]] += 1
        self._order, self._starts = order_a, starts_a
        self.built, self.indexed = m, groups
        return 0

    def gather(self, const int64_t[::1] nodes, Py_ssize_t n_nodes):
        """The arcs from ``nodes`` (distinct node numbers below ``n_nodes``):
        ``(arcs, which)``, arc ``arcs[j]`` leaving ``nodes[which[j]]``."""
        cdef Py_ssize_t k = nodes.shape[0], i, a, total = 0, p = 0
        cdef int64_t g
        _within(nodes, n_nodes, "node")
        if self.arcs - self.built > max(16384, self.built // 4):
            self._index()
        if self._where.shape[0] < n_nodes:
            self._where = np.full(max(n_nodes, 2 * self._where.shape[0]), -1, dtype=np.int64)
        cdef int64_t[::1] where = self._where
        cdef int64_t[::1] s = self._src
        cdef int64_t[::1] order = self._order
        cdef int64_t[::1] starts = self._starts
        cdef Py_ssize_t built = self.built, m = self.arcs, indexed = self.indexed
        with nogil:
            for i in range(k):
                where[nodes[i]] = i
                if nodes[i] < indexed:
                    total += starts[nodes[i] + 1] - starts[nodes[i]]
            for a in range(built, m):
                if where[s[a]] >= 0:
                    total += 1
        arcs_a = np.empty(total, dtype=np.int64)
        which_a = np.empty(total, dtype=np.int64)
        cdef int64_t[::1] arcs = arcs_a
        cdef int64_t[::1] which = which_a
        with nogil:
            for i in range(k):
                g = nodes[i]
                if g < indexed:
                    for a in range(starts[g], starts[g + 1]):
                        arcs[p] = order[a]
                        which[p] = i
                        p += 1
            for a in range(built, m):
                if where[s[a]] >= 0:
                    arcs[p] = a
                    which[p] = where[s[a]]
                    p += 1
            for i in range(k):
                where[nodes[i]] = -1
        return arcs_a, which_a


cdef object _grown(object held, Py_ssize_t size, Py_ssize_t n):
    """A copy of ``held[:n]`` with room for ``size`` items."""
    grown = np.empty(size, dtype=held.dtype)
    grown[:n] = held[:n]
    return grown


cdef inline int32_t root32(int32_t *parent, int32_t x) noexcept nogil:
    while parent[x] != x:
        parent[x] = parent[parent[x]]       # path halving
        x = parent[x]
    return x


cdef class Components:
    """Connected components kept up to date as edges arrive: a union-find
    over node numbers ``0..n-1`` (union by size, path halving), each
    component's least key at its root and its members in a circular list;
    a node's label (the least key of its component) is its root's.

    :meth:`union` reports the nodes whose label fell. When two components
    meet, only the one whose label falls is walked, so the work of a batch
    is its edges plus the label changes it makes. Memory: 21 bytes per
    node (32-bit numbers: at most ``2**31 - 1`` nodes).

    >>> import numpy as np
    >>> parts = Components()
    >>> parts.grow(np.array([30, 10, 20]))
    >>> parts.union(np.array([0]), np.array([2])).tolist()
    [0]
    >>> parts.labels(np.array([0, 1, 2])).tolist()
    [20, 10, 20]
    """

    def __cinit__(self):
        self.nodes = 0
        self.stale = False
        self._parent = np.empty(0, dtype=np.int32)
        self._size = np.empty(0, dtype=np.int32)
        self._least = np.empty(0, dtype=np.int64)
        self._next = np.empty(0, dtype=np.int32)
        self._mark = np.empty(0, dtype=np.uint8)

    def __len__(self):
        return self.nodes

    def grow(self, const int64_t[::1] keys):
        """Adds nodes numbered from ``len(self)`` on, with these keys, each
        its own component."""
        cdef Py_ssize_t n = self.nodes, k = keys.shape[0], i
        if n + k > INT32_MAX:
            raise OverflowError(f"a union-find holds at most {INT32_MAX} nodes, not {n + k}")
        if n + k > self._parent.shape[0]:
            # By a quarter (or the whole batch): 21 bytes a node left unused add up.
            size = min(max(n + k, self._parent.shape[0] + self._parent.shape[0] // 4, 16),
                       INT32_MAX)
            self._parent = _grown(self._parent, size, n)
            self._size = _grown(self._size, size, n)
            self._least = _grown(self._least, size, n)
            self._next = _grown(self._next, size, n)
            self._mark = _grown(self._mark, size, n)
        cdef int32_t[::1] parent = self._parent
        cdef int32_t[::1] size_ = self._size
        cdef int64_t[::1] least = self._least
        cdef int32_t[::1] nxt = self._next
        cdef unsigned char[::1] mark = self._mark
        with nogil:
            for i in range(k):
                parent[n + i] = <int32_t>(n + i)
                size_[n + i] = 1
                least[n + i] = keys[i]
                nxt[n + i] = <int32_t>(n + i)
                mark[n + i] = 0
        self.nodes = n + k

    cdef int _lists(self) except -1:
        # Rebuilds every component's member list and size from the parents,
        # after unions that kept neither: O(n).
        cdef Py_ssize_t n = self.nodes, i
        cdef int32_t[::1] parent = self._parent
        cdef int32_t[::1] size_ = self._size
        cdef int32_t[::1] nxt = self._next
        cdef int32_t r
        with nogil:
            for i in range(n):
                nxt[i] = <int32_t>i
                size_[i] = 1
            for i in range(n):
                r = root32(&parent[0], <int32_t>i)
                if r != i:
                    nxt[i] = nxt[r]
                    nxt[r] = <int32_t>i
                    size_[r] += 1
        self.stale = False
        return 0

    def union(self, const index_t[::1] a, const index_t[::1] b, bint report=True):
        """Joins the components of ``a[i]`` and ``b[i]`` for every ``i``;
        returns the distinct nodes whose label fell, in order of first fall.

        With ``report`` false nothing is walked or returned, and the unions
        keep only the parents and each root's least key (the members' lists
        are rebuilt, in O(n), by the next union that reports): for batches
        whose nodes are all reported anyway (a graph's first edges)."""
        cdef Py_ssize_t m = a.shape[0], n = self.nodes, i, changed = 0
        if b.shape[0] != m:
            raise ValueError("the two ends of the edges differ in length")
        _within(a, n, "edge start")
        _within(b, n, "edge end")
        cdef int32_t[::1] parent = self._parent
        cdef int32_t[::1] size_ = self._size
        cdef int64_t[::1] least = self._least
        cdef int32_t[::1] nxt = self._next
        cdef unsigned char[::1] mark = self._mark
        out_a = np.empty(16, dtype=np.int64)
        cdef int64_t[::1] out = out_a
        cdef int32_t ra, rb, falls, v, swap
        cdef int64_t keep
        if not report:
            with nogil:
                for i in range(m):
                    ra = root32(&parent[0], <int32_t>a[i])
                    rb = root32(&parent[0], <int32_t>b[i])
                    if ra == rb:
                        continue
                    # The root with the least key stays a root.
                    if least[rb] < least[ra]:
                        ra, rb = rb, ra
                    parent[rb] = ra
            if m:
                self.stale = True
            return out_a[:0]
        if self.stale:
            self._lists()
        for i in range(m):
            ra = root32(&parent[0], <int32_t>a[i])
            rb = root32(&parent[0], <int32_t>b[i])
            if ra == rb:
                continue
            # The component with the greater least key takes the other's.
            if least[rb] < least[ra]:
                ra, rb = rb, ra
            falls = rb
            if report and least[falls] > least[ra]:
                if changed + size_[falls] > out.shape[0]:
                    grown = np.empty(max(2 * out.shape[0], changed + size_[falls]),
                                     dtype=np.int64)
                    grown[:changed] = out_a[:changed]
                    out_a = grown
                    out = out_a
                with nogil:
                    v = falls
                    while True:
                        if not mark[v]:
                            mark[v] = 1
                            out[changed] = v
                            changed += 1
                        v = nxt[v]
                        if v == falls:
                            break
            with nogil:
                swap = nxt[ra]
                nxt[ra] = nxt[rb]
                nxt[rb] = swap
                keep = least[ra]
                if size_[ra] < size_[rb]:
                    ra, rb = rb, ra
                parent[rb] = ra
                size_[ra] += size_[rb]
                least[ra] = keep
        with nogil:
            for i in range(changed):
                mark[out[i]] = 0
        return out_a[:changed]

    def labels(self, const index_t[::1] nodes):
        """The label (least key of its component) of each of ``nodes``."""
        cdef Py_ssize_t k = nodes.shape[0], n = self.nodes, i
        _within(nodes, n, "node")
        out_a = np.empty(k, dtype=np.int64)
        cdef int64_t[::1] out = out_a
        cdef int32_t[::1] parent = self._parent
        cdef int64_t[::1] least = self._least
        with nogil:
            for i in range(k):
                out[i] = least[root32(&parent[0], <int32_t>nodes[i])]
        return out_a


cdef int _csr(const int64_t[::1] starts, Py_ssize_t n, Py_ssize_t m, str what) except -1:
    """Raises ValueError unless ``starts`` delimits ``m`` items in ``n`` rows."""
    cdef Py_ssize_t u
    if starts.shape[0] != n + 1 or starts[0] != 0 or starts[n] != m:
        raise ValueError(f"{what}: starts must hold {n + 1} offsets from 0 to {m}")
    for u in range(n):
        if starts[u + 1] < starts[u]:
            raise ValueError(f"{what}: starts must not decrease")
    return 0


# -- Triangles (timely.algorithms.triangles) ------------------------------------------
#
# A worker's edges are pairs of vertex ids until it numbers them: by
# position among the sorted distinct ids it holds (SortedIds), and by the
# global number (gid) each vertex's owner gives it. Positions are int32: a
# worker holding 2**31 distinct vertices would hold tens of gigabytes of edges.

ctypedef fused int_t:
    int32_t
    int64_t


cdef int _within32(const int32_t[::1] values, int64_t n, str what) except -1:
    """As :func:`_within`, for int32 values."""
    cdef Py_ssize_t i
    for i in range(values.shape[0]):
        if not 0 <= values[i] < n:
            raise IndexError(f"{what} {i} is {values[i]}, beyond {n}")
    return 0


cdef inline Py_ssize_t _position(const int64_t *ids, Py_ssize_t lo, Py_ssize_t hi,
                                 int64_t x) noexcept nogil:
    """The position of ``x`` among the increasing ``ids[lo:hi]``, or -1."""
    cdef Py_ssize_t end = hi, mid
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if ids[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and ids[lo] == x:
        return lo
    return -1


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define tly_popcount64(x) __builtin_popcountll(x)
    #else
    static int tly_popcount64(unsigned long long x) {
        int n = 0;
        for (; x; x &= x - 1) n++;
        return n;
    }
    #endif
    """
    int tly_popcount64(uint64_t x) noexcept nogil


@cython.final
@cython.overflowcheck(False)  # offsets from the least id wrap modulo 2**64 on purpose
cdef class SortedIds:
    """Distinct int64 ids in increasing order, each known by its position
    (``0..len - 1``, an int32), found in O(1) with one of two indexes, each
    at most a few int32 an id:

    - ids dense in their range (at least one in 64 values: global numbers,
      R-MAT's ids): per 64 values from the least id, a word of bits saying
      which are ids and the position of its first, side by side, so that a
      lookup reads one cache line of a table of 16 bytes per 64 values;
    - sparser ids: a directory of one int32 per id, the first position of
      each bucket of ids ``(id - least) >> shift``, ``shift`` the least that
      makes no more buckets than ids; for ids spread evenly (hashed or
      random) a bucket holds O(1) of them, and a bucket holding many is
      bisected, so a lookup never costs more than O(log n).

    The ids array is held, not copied, and made read-only: the positions
    found are only right while it does not change.

    >>> import numpy as np
    >>> ids = SortedIds(np.array([-3, 4, 5, 12]))
    >>> len(ids), ids.positions(np.array([5, 3, 12, -3])).tolist()
    (4, [2, -1, 3, 0])
    >>> SortedIds(np.array([-2**62, 0, 2**62])).positions(np.array([0, 1])).tolist()
    [1, -1]
    """

    def __init__(self, ids):
        cdef cnp.ndarray held = np.ascontiguousarray(ids, dtype=np.int64)
        cdef const int64_t[::1] view = held
        cdef Py_ssize_t n = view.shape[0], i, j
        cdef uint64_t span = 0, bucket, offset
        if held.ndim != 1:
            raise ValueError("the ids must be one-dimensional")
        if n >= INT32_MAX:
            raise ValueError(f"{n} ids are more than int32 positions")
        for i in range(1, n):
            if view[i] <= view[i - 1]:
                raise ValueError("the ids must increase")
        held.setflags(write=False)
        self._ids = held
        self.size = n
        self._p = &view[0] if n else NULL
        self._least = view[0] if n else 0
        self._shift = 0
        self._d = NULL
        self._words = NULL
        self._buckets = 0
        if not n:
            return
        # Unsigned: the span of any two int64 fits, and an id below the
        # least wraps round to beyond the index.
        span = <uint64_t>view[n - 1] - <uint64_t>view[0]
        cdef uint64_t[::1] words
        cdef int32_t[::1] directory
        if (span >> 6) < <uint64_t>n:
            self._buckets = <Py_ssize_t>(span >> 6) + 1
            words_a = np.zeros(2 * self._buckets, dtype=np.uint64)
            words = words_a
            with nogil:
                for i in range(n - 1, -1, -1):
                    offset = <uint64_t>view[i] - <uint64_t>self._least
                    words[2 * (offset >> 6)] |= <uint64_t>1 << (offset & 63)
                    words[2 * (offset >> 6) + 1] = <uint64_t>i
            self._index = words_a
            self._words = &words[0]
            return
        while (span >> self._shift) >= <uint64_t>n:     # buckets (span >> shift) + 1 <= n
            self._shift += 1
        self._buckets = <Py_ssize_t>(span >> self._shift) + 1
        directory_a = np.empty(self._buckets + 1, dtype=np.int32)
        directory = directory_a
        with nogil:
            j = 0
            for i in range(n):
                bucket = (<uint64_t>view[i] - <uint64_t>self._least) >> self._shift
                while <uint64_t>j <= bucket:
                    directory[j] = <int32_t>i
                    j += 1
            directory[self._buckets] = <int32_t>n
        self._index = directory_a
        self._d = &directory[0]

    cdef Py_ssize_t find(self, int64_t x) noexcept nogil:
        """The position of ``x``, or -1."""
        cdef uint64_t offset = <uint64_t>x - <uint64_t>self._least, bucket, bits, bit
        if self._words != NULL:
            bucket = offset >> 6
            if bucket >= <uint64_t>self._buckets:
                return -1
            bits = self._words[2 * bucket]
            bit = <uint64_t>1 << (offset & 63)
            if not bits & bit:
                return -1
            return <Py_ssize_t>self._words[2 * bucket + 1] + tly_popcount64(bits & (bit - 1))
        if self._d == NULL:
            return -1
        bucket = offset >> self._shift
        if bucket >= <uint64_t>self._buckets:
            return -1
        return _position(self._p, self._d[bucket], self._d[bucket + 1], x)

    @property
    def ids(self):
        """The ids (read-only int64)."""
        return self._ids

    def __len__(self):
        return self.size

    def positions(self, const int64_t[::1] values):
        """The position of each of ``values`` (int64), -1 for one not among the ids."""
        cdef Py_ssize_t n = values.shape[0], i
        out_a = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] out = out_a
        with nogil:
            for i in range(n):
                out[i] = self.find(values[i])
        return out_a


def distinct_sorted(int_t[::1] values):
    """Moves the distinct values of the sorted ``values`` (int32 or int64)
    to its front, in order, and returns how many there are; raises
    ValueError if ``values`` is not sorted. One pass in C, in place.

    >>> import numpy as np
    >>> a = np.array([1, 1, 4, 6, 6, 6])
    >>> k = distinct_sorted(a)
    >>> a[:k].tolist()
    [1, 4, 6]
    """
    cdef Py_ssize_t n = values.shape[0], i, k = 0
    cdef bint disorder = False
    with nogil:
        for i in range(n):
            if k and values[i] == values[k - 1]:
                continue
            if k and values[i] < values[k - 1]:
                disorder = True
                break
            values[k] = values[i]
            k += 1
    if disorder:
        raise ValueError("the values are not sorted")
    return k


def union_sorted(const int64_t[::1] a, const int_t[::1] b):
    """The values of two increasing arrays (``b`` int32 or int64) once each,
    in increasing order (int64): a merge in C, two passes, no copy of
    either. Raises ValueError if either does not increase.

    >>> import numpy as np
    >>> union_sorted(np.array([1, 4, 9]), np.array([2, 4, 10], np.int32)).tolist()
    [1, 2, 4, 9, 10]
    """
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0], i = 0, j = 0, k = 0
    for i in range(1, n):
        if a[i] <= a[i - 1]:
            raise ValueError("the first values do not increase")
    for j in range(1, m):
        if b[j] <= b[j - 1]:
            raise ValueError("the second values do not increase")
    i = j = 0
    with nogil:
        while i < n and j < m:
            if a[i] < b[j]:
                i += 1
            elif b[j] < a[i]:
                j += 1
            else:
                i += 1
                j += 1
            k += 1
        k += (n - i) + (m - j)
    out_a = np.empty(k, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    i = j = k = 0
    with nogil:
        while i < n and j < m:
            if a[i] < b[j]:
                out[k] = a[i]
                i += 1
            elif b[j] < a[i]:
                out[k] = b[j]
                j += 1
            else:
                out[k] = a[i]
                i += 1
                j += 1
            k += 1
        while i < n:
            out[k] = a[i]
            i += 1
            k += 1
        while j < m:
            out[k] = b[j]
            j += 1
            k += 1
    return out_a


def simple_pairs(const int64_t[::1] src, const int64_t[::1] dst, bint directed):
    """The edges ``src[i] -> dst[i]`` as pairs of ends: ``(lo, hi, arcs,
    loops)``. ``lo[j] < hi[j]`` (int64) are the ends of each edge that is
    not a self-loop, in order; ``arcs[j]`` (uint8; None unless
    ``directed``) is 1 for an edge from ``lo`` to ``hi`` and 2 for one from
    ``hi`` to ``lo``, so that the OR of the arcs of a pair's edges says
    which directions it has; ``loops`` (int64) holds the vertex of each
    self-loop. Two passes in C.

    >>> import numpy as np
    >>> lo, hi, arcs, loops = simple_pairs(np.array([3, 1, 2]), np.array([1, 1, 5]), True)
    >>> lo.tolist(), hi.tolist(), arcs.tolist(), loops.tolist()
    ([1, 2], [3, 5], [2, 1], [1])
    """
    cdef Py_ssize_t n = src.shape[0], i, j = 0, k = 0, looped = 0
    if dst.shape[0] != n:
        raise ValueError("the two ends of the edges differ in length")
    with nogil:
        for i in range(n):
            if src[i] == dst[i]:
                looped += 1
    lo_a = np.empty(n - looped, dtype=np.int64)
    hi_a = np.empty(n - looped, dtype=np.int64)
    arcs_a = np.empty(n - looped if directed else 0, dtype=np.uint8)
    loops_a = np.empty(looped, dtype=np.int64)
    cdef int64_t[::1] lo = lo_a
    cdef int64_t[::1] hi = hi_a
    cdef uint8_t[::1] arcs = arcs_a
    cdef int64_t[::1] loops = loops_a
    with nogil:
        for i in range(n):
            if src[i] == dst[i]:
                loops[k] = src[i]
                k += 1
                continue
            if src[i] < dst[i]:
                lo[j] = src[i]
                hi[j] = dst[i]
                if directed:
                    arcs[j] = 1
            else:
                lo[j] = dst[i]
                hi[j] = src[i]
                if directed:
                    arcs[j] = 2
            j += 1
    return lo_a, hi_a, (arcs_a if directed else None), loops_a


def pair_keys(SortedIds ids not None, const int64_t[::1] lo, const int64_t[::1] hi,
              const uint8_t[::1] arcs, uint64_t[::1] out, int shift):
    """Each pair ``lo[i], hi[i]`` as one uint64 of the positions of its
    ends among ``ids``: ``out[i] = x << shift | y`` for the positions ``x``
    of ``lo[i]`` and ``y`` of ``hi[i]``, shifted left two more bits to hold
    ``arcs[i]`` when ``arcs`` is not None. Sorting such keys brings each
    pair's copies together. Raises KeyError for an id not among ``ids``.
    O(log n) per pair, in C.

    >>> import numpy as np
    >>> out = np.empty(2, np.uint64)
    >>> pair_keys(SortedIds(np.array([4, 7, 9])), np.array([4, 7]), np.array([9, 9]), None,
    ...           out, 2)
    >>> out.tolist()
    [2, 6]
    """
    cdef Py_ssize_t n = lo.shape[0], i, x = 0, y = 0
    cdef bint tagged = arcs is not None
    cdef uint64_t key
    if hi.shape[0] != n or out.shape[0] != n or (tagged and arcs.shape[0] != n):
        raise ValueError("lo, hi, arcs and out differ in length")
    if shift < 0 or 2 * shift + (2 if tagged else 0) > 64 or ids.size > (<int64_t>1 << shift):
        raise ValueError(f"{ids.size} ids do not fit keys of shift {shift}")
    with nogil:
        for i in range(n):
            x = ids.find(lo[i])
            y = ids.find(hi[i])
            if x < 0 or y < 0:
                break
            key = (<uint64_t>x << shift) | <uint64_t>y
            if tagged:
                key = (key << 2) | (arcs[i] & 3)
            out[i] = key
    if x < 0 or y < 0:
        raise KeyError(f"the pair {lo[i]}, {hi[i]} names an id not among the ids")


def merge_pairs(uint64_t[::1] keys, bint tagged):
    """Moves each distinct pair of the sorted ``keys`` (:func:`pair_keys`)
    to the front, in order, and returns ``(count, weight)``: tagged, each
    pair's key without its arcs, and ``weight[j]`` (uint8) the number of
    directions (1 or 2) in the OR of its arcs; untagged, each distinct key
    once and ``weight`` None. Raises ValueError if ``keys`` is not sorted.
    Two passes in C, in place.

    >>> import numpy as np
    >>> keys = np.array([4 << 2 | 1, 4 << 2 | 2, 4 << 2 | 2, 9 << 2 | 1], np.uint64)
    >>> count, weight = merge_pairs(keys, True)
    >>> keys[:count].tolist(), weight.tolist()
    ([4, 9], [2, 1])
    """
    cdef Py_ssize_t n = keys.shape[0], i, k = 0
    cdef uint64_t pair, previous = 0
    cdef unsigned int bits = 0
    cdef bint disorder = False
    with nogil:
        for i in range(n):
            if i and keys[i] < keys[i - 1]:
                disorder = True
                break
            pair = keys[i] >> 2 if tagged else keys[i]
            if not i or pair != previous:
                k += 1
            previous = pair
    if disorder:
        raise ValueError("the keys are not sorted")
    weight_a = np.empty(k if tagged else 0, dtype=np.uint8)
    cdef uint8_t[::1] weight = weight_a
    k = 0
    with nogil:
        for i in range(n):
            pair = keys[i] >> 2 if tagged else keys[i]
            if k and pair == keys[k - 1]:
                bits |= keys[i] & 3
                continue
            if tagged and k:
                weight[k - 1] = (bits & 1) + (bits >> 1)
            bits = keys[i] & 3
            keys[k] = pair
            k += 1
        if tagged and k:
            weight[k - 1] = (bits & 1) + (bits >> 1)
    return k, (weight_a if tagged else None)


cdef int _keys_within(const uint64_t[::1] keys, int shift, Py_ssize_t n) except -1:
    """Raises unless every key ``x << shift | y`` has both positions below ``n``."""
    cdef uint64_t mask
    cdef Py_ssize_t i
    if shift < 0 or shift > 32:
        raise ValueError(f"shift {shift} is not a key's")
    mask = (<uint64_t>1 << shift) - 1
    for i in range(keys.shape[0]):
        if (keys[i] >> shift) >= <uint64_t>n or (keys[i] & mask) >= <uint64_t>n:
            raise IndexError(f"key {i} names a position beyond {n}")
    return 0


def end_counts(const uint64_t[::1] keys, int shift, Py_ssize_t n):
    """Per position ``0..n-1``, how many of the pairs ``x << shift | y``
    (:func:`merge_pairs`) have an end there (int64): a vertex's degree
    among them. One pass in C.

    >>> import numpy as np
    >>> end_counts(np.array([0 << 2 | 1, 0 << 2 | 2, 2 << 2 | 3], np.uint64), 2, 4).tolist()
    [2, 1, 2, 1]
    """
    cdef Py_ssize_t m = keys.shape[0], i
    _keys_within(keys, shift, n)
    cdef uint64_t mask = (<uint64_t>1 << shift) - 1
    counts_a = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] counts = counts_a
    with nogil:
        for i in range(m):
            counts[keys[i] >> shift] += 1
            counts[keys[i] & mask] += 1
    return counts_a


def orient_pairs(const uint64_t[::1] keys, int shift, const int64_t[::1] degree,
                 const int64_t[::1] gid, int_t[::1] a, int_t[::1] b):
    """Each pair ``x << shift | y`` of positions as an edge from the end
    lower in ``(degree, gid)`` order to the other: ``a[i]`` and ``b[i]``
    the ``gid`` of its two ends. Oriented so, a vertex has O(sqrt(m))
    out-edges. One pass in C.

    >>> import numpy as np
    >>> a, b = np.empty(2, np.int32), np.empty(2, np.int32)
    >>> orient_pairs(np.array([0 << 2 | 1, 1 << 2 | 2], np.uint64), 2, np.array([3, 1, 1]),
    ...              np.array([10, 20, 30]), a, b)
    >>> a.tolist(), b.tolist()
    ([20, 20], [10, 30])
    """
    cdef Py_ssize_t m = keys.shape[0], n = degree.shape[0], i
    cdef uint64_t mask, x, y
    cdef int64_t limit = INT32_MAX if int_t is int32_t else INT64_MAX
    if a.shape[0] != m or b.shape[0] != m:
        raise ValueError("keys, a and b differ in length")
    if gid.shape[0] != n:
        raise ValueError("degree and gid differ in length")
    _keys_within(keys, shift, n)
    for i in range(n):
        if not 0 <= gid[i] <= limit:
            raise OverflowError(f"gid {gid[i]} does not fit the output")
    mask = (<uint64_t>1 << shift) - 1
    with nogil:
        for i in range(m):
            x = keys[i] >> shift
            y = keys[i] & mask
            if degree[x] < degree[y] or (degree[x] == degree[y] and gid[x] < gid[y]):
                a[i] = <int_t>gid[x]
                b[i] = <int_t>gid[y]
            else:
                a[i] = <int_t>gid[y]
                b[i] = <int_t>gid[x]


ctypedef fused amount_t:
    int32_t
    int64_t


def find_positions(SortedIds ids not None, const int_t[::1] values, int32_t[::1] out,
                   int64_t[::1] counts=None, const amount_t[::1] amounts=None):
    """Writes the position among ``ids`` of each of ``values`` (int32 or
    int64) to ``out`` (int32, which may be ``values`` itself when int32: each
    value is read before its cell is written), -1 for one not found, and
    adds ``amounts[i]`` (1 when None) to ``counts`` (one cell per id, unless
    None) at each position found; returns how many were not found. O(1)
    expected per value for ids spread evenly (see :class:`SortedIds`), in C.

    >>> import numpy as np
    >>> gids, counts = np.array([8, 3, 5, 8], np.int32), np.zeros(2, np.int64)
    >>> find_positions(SortedIds(np.array([3, 8])), gids, gids, counts)
    1
    >>> gids.tolist(), counts.tolist()
    ([1, 0, -1, 1], [1, 2])
    """
    cdef Py_ssize_t n = values.shape[0], i, x, missing = 0
    cdef bint counted = counts is not None, weighed = amounts is not None
    if out.shape[0] != n or (weighed and amounts.shape[0] != n):
        raise ValueError("values, out and amounts differ in length")
    if counted and counts.shape[0] != ids.size:
        raise ValueError("counts need one cell per id")
    with nogil:
        for i in range(n):
            x = ids.find(values[i])
            out[i] = <int32_t>x
            if x < 0:
                missing += 1
            elif counted:
                counts[x] += amounts[i] if weighed else 1
    return missing


def place_edges(const int32_t[::1] a, const int32_t[::1] b, const uint8_t[::1] weight,
                int64_t[::1] place, int32_t[::1] targets, uint8_t[::1] weights):
    """Puts each edge ``a[i] -> b[i]`` (positions) into its source's row:
    ``b[i]`` at ``targets[place[a[i]]]``, then ``place[a[i]] += 1``;
    ``weight[i]`` likewise into ``weights`` unless ``weight`` is None.
    Indexing a block by source: ``place`` starts as the rows' starts (the
    running sums of the counts of ``a``). Raises IndexError for a position
    beyond ``place`` or a row that overflows the targets.

    >>> import numpy as np
    >>> place, targets = np.array([0, 1]), np.zeros(3, np.int32)
    >>> place_edges(np.array([1, 0, 1], np.int32), np.array([0, 1, 1], np.int32), None, place,
    ...             targets, None)
    >>> targets.tolist(), place.tolist()
    ([1, 0, 1], [1, 3])
    """
    cdef Py_ssize_t m = a.shape[0], total = targets.shape[0], n = place.shape[0], i
    cdef int32_t x = 0
    cdef bint weighted = weight is not None
    cdef bint bad = False
    if b.shape[0] != m or (weighted and weight.shape[0] != m):
        raise ValueError("a, b and weight differ in length")
    if weighted and (weights is None or weights.shape[0] != total):
        raise ValueError("weights need one cell per target")
    with nogil:
        for i in range(m):
            x = a[i]
            if not 0 <= x < n or not 0 <= place[x] < total:
                bad = True
                break
            targets[place[x]] = b[i]
            if weighted:
                weights[place[x]] = weight[i]
            place[x] += 1
    if bad:
        raise IndexError(f"edge {i} from {x} is beyond the rows or overflows its row")


def block_edges(const int64_t[::1] starts, const int32_t[::1] targets, SortedIds ids not None,
                Py_ssize_t first, int_t[::1] a, int_t[::1] b):
    """The edges ``first .. first + len(a) - 1`` of a block indexed by
    source (the row of position ``x`` is ``targets[starts[x]:starts[x +
    1]]``, positions among ``ids``) as gids: ``a[i]`` the source's, ``b[i]``
    the target's (unless ``b`` is None), in order of source. O(log n +
    len(a)) in C; checks only what it reads.

    >>> import numpy as np
    >>> a, b = np.empty(2, np.int64), np.empty(2, np.int64)
    >>> block_edges(np.array([0, 2, 3]), np.array([1, 0, 0], np.int32), SortedIds(np.array([3, 8])),
    ...             1, a, b)
    >>> a.tolist(), b.tolist()
    ([3, 8], [3, 3])
    """
    cdef Py_ssize_t n = ids.size, m = targets.shape[0], k = a.shape[0], i, x, lo, hi, mid, end
    cdef int64_t limit = INT32_MAX if int_t is int32_t else INT64_MAX
    cdef int_t name
    cdef int32_t y = 0
    cdef bint bad = False, targeted = b is not None
    if targeted and b.shape[0] != k:
        raise ValueError("a and b differ in length")
    if starts.shape[0] != n + 1 or starts[0] != 0 or starts[n] != m:
        raise ValueError(f"the block: starts must hold {n + 1} offsets from 0 to {m}")
    if first < 0 or first + k > m:
        raise IndexError(f"edges {first} to {first + k} are beyond the block's {m}")
    if n and not (ids._p[0] >= 0 and ids._p[n - 1] <= limit):
        raise OverflowError("the gids do not fit the output")
    if not k:
        return
    with nogil:
        # The row of edge `first`: the last x with starts[x] <= first.
        lo, hi = 0, n
        while hi - lo > 1:
            mid = lo + ((hi - lo) >> 1)
            if starts[mid] <= first:
                lo = mid
            else:
                hi = mid
        x = lo
        # Row by row: each source's gid over its edges in the range.
        i = 0
        while i < k:
            while x < n - 1 and starts[x + 1] <= first + i:
                x += 1
            end = starts[x + 1] - first if x < n - 1 else k
            if end > k or end <= i:
                end = k
            name = <int_t>ids._p[x]
            while i < end:
                a[i] = name
                i += 1
        if targeted:
            for i in range(k):
                y = targets[first + i]
                if not 0 <= y < n:
                    bad = True
                    break
                b[i] = <int_t>ids._p[y]
    if bad:
        raise IndexError(f"target {first + i} is {y}, beyond {n}")


def visiting_targets(SortedIds ids not None, const int_t[::1] v, const int_t[::1] w,
                     const uint8_t[::1] weight, int64_t[::1] counts, int32_t[::1] targets,
                     uint8_t[::1] weights, Py_ssize_t last):
    """Of the edges ``v[i] -> w[i]`` (gids) of a block visiting this one,
    in order of source, those with both ends among ``ids``: the target's
    position of each written to ``targets[0:kept]`` (its ``weight`` to
    ``weights`` unless ``weight`` is None), and 1 added to ``counts`` at its
    source's position, so that the running sums of the counts index the
    kept targets by source. ``last`` is the source position of the last
    edge kept before (-1 at first); returns ``(kept, last)``. Raises
    ValueError for an edge whose source comes before ``last``.

    >>> import numpy as np
    >>> counts, targets = np.zeros(3, np.int64), np.empty(3, np.int32)
    >>> visiting_targets(SortedIds(np.array([3, 8, 9])), np.array([3, 5, 8]),
    ...                  np.array([9, 8, 4]), None, counts, targets, None, -1)
    (1, 0)
    >>> counts.tolist(), targets[:1].tolist()
    ([1, 0, 0], [2])
    """
    cdef Py_ssize_t m = v.shape[0], i, x, y, kept = 0
    cdef bint weighted = weight is not None
    cdef bint disorder = False
    if w.shape[0] != m or (weighted and weight.shape[0] != m):
        raise ValueError("v, w and weight differ in length")
    if targets.shape[0] < m or (weighted and (weights is None or weights.shape[0] < m)):
        raise ValueError("targets and weights need room for every edge")
    if counts.shape[0] != ids.size:
        raise ValueError("counts need one cell per id")
    if not -1 <= last < ids.size:
        raise IndexError(f"last {last} is not a position")
    cdef int64_t source = 0
    x = -1
    with nogil:
        for i in range(m):
            # The edges come in runs of one source: one lookup a run.
            if i == 0 or v[i] != source:
                source = v[i]
                x = ids.find(source)
            if x < 0:
                continue
            y = ids.find(w[i])
            if y < 0:
                continue
            if x < last:
                disorder = True
                break
            last = x
            counts[x] += 1
            targets[kept] = <int32_t>y
            if weighted:
                weights[kept] = weight[i]
            kept += 1
    if disorder:
        raise ValueError("the visiting edges are not in order of their source")
    return kept, last


ctypedef fused mark_t:
    uint8_t
    int32_t


cdef int64_t _triangles(Py_ssize_t n, const int64_t *starts, const int32_t *targets,
                        const uint8_t *weight, const int64_t *vstarts, const int32_t *vtargets,
                        const uint8_t *vweight, int64_t *links, mark_t *at) noexcept nogil:
    """The loop of :func:`triangle_links` over checked arrays (``weight``,
    ``vweight``, ``links`` NULL when absent). ``at[w]`` marks the
    out-neighbours of the current ``u``: 1 (uint8), or 1 + the place of ``u
    -> w`` in ``u``'s row (int32) where that edge's weight is read."""
    cdef Py_ssize_t u, i, j, s0, s1
    cdef int32_t v, w
    cdef int64_t found = 0
    for u in range(n):
        s0 = starts[u]
        s1 = starts[u + 1]
        if s0 == s1:
            continue
        for i in range(s0, s1):
            if mark_t is uint8_t:
                at[targets[i]] = 1
            else:
                at[targets[i]] = <int32_t>(i - s0 + 1)
        if links == NULL and mark_t is uint8_t:
            for i in range(s0, s1):
                v = targets[i]
                for j in range(vstarts[v], vstarts[v + 1]):
                    found += at[vtargets[j]]
        else:
            for i in range(s0, s1):
                v = targets[i]
                for j in range(vstarts[v], vstarts[v + 1]):
                    w = vtargets[j]
                    if at[w]:
                        found += 1
                        if links != NULL:
                            links[u] += vweight[j] if vweight != NULL else 1
                            if mark_t is int32_t:
                                links[v] += weight[s0 + at[w] - 1] if weight != NULL else 1
                            else:
                                links[v] += 1
                            links[w] += weight[i] if weight != NULL else 1
        for i in range(s0, s1):
            at[targets[i]] = 0
    return found


def triangle_links(const int64_t[::1] starts, const int32_t[::1] targets,
                   const uint8_t[::1] weight, const int64_t[::1] visiting_starts,
                   const int32_t[::1] visiting_targets, const uint8_t[::1] visiting_weight,
                   int64_t[::1] links):
    """Counts the triangles ``u -> v, u -> w, v -> w`` whose edges from
    ``u`` are in one graph (the out-edges of ``u`` are
    ``targets[starts[u]:starts[u + 1]]``, each with a ``weight``) and whose
    edge from ``v`` is in another (likewise ``visiting_*``), both over
    nodes ``0..n-1``, every edge oriented from its lower to its higher end
    in one total order; returns how many. Unless ``links`` is None, each
    adds to the ``links`` of its three nodes the weight of the edge
    opposite it. A weight array None weighs every edge 1.

    With the edges split by their lower end into blocks, the first graph one
    block and the second each block in turn (the first included), every
    triangle whose lowest node ``u`` has its out-edges in the first is found
    exactly once over the turns.

    Oriented from lower to higher degree, a node has O(sqrt(m)) out-edges,
    so a call costs O(sqrt(m)) per edge ``u -> v`` of the first graph whose
    ``v`` has out-edges in the second, and a byte of memory per node (an
    int32 with weights: the mark of ``u -> w`` says where its weight is).

    >>> import numpy as np
    >>> starts, targets = np.array([0, 2, 3, 3]), np.array([1, 2, 2], np.int32)
    >>> weight, links = np.array([1, 2, 1], np.uint8), np.zeros(3, np.int64)
    >>> triangle_links(starts, targets, weight, starts, targets, weight, links)
    1
    >>> links.tolist()
    [1, 2, 1]
    """
    cdef Py_ssize_t n = starts.shape[0] - 1
    cdef int64_t found
    cdef bint weighted = weight is not None, visiting_weighted = visiting_weight is not None
    cdef bint linked = links is not None
    if n < 0 or (linked and links.shape[0] != n):
        raise ValueError("links need one cell per node")
    if weighted and weight.shape[0] != targets.shape[0]:
        raise ValueError("the weights and the targets differ in length")
    if visiting_weighted and visiting_weight.shape[0] != visiting_targets.shape[0]:
        raise ValueError("the visiting weights and targets differ in length")
    _csr(starts, n, targets.shape[0], "the first graph")
    _csr(visiting_starts, n, visiting_targets.shape[0], "the second graph")
    _within32(targets, n, "edge target")
    _within32(visiting_targets, n, "visiting edge target")
    if not n:
        return 0
    cdef const uint8_t *w_p = &weight[0] if weighted and weight.shape[0] else NULL
    cdef const uint8_t *vw_p = (&visiting_weight[0]
                                if visiting_weighted and visiting_weight.shape[0] else NULL)
    cdef int64_t *links_p = &links[0] if linked else NULL
    cdef const int32_t *t_p = &targets[0] if targets.shape[0] else NULL
    cdef const int32_t *vt_p = &visiting_targets[0] if visiting_targets.shape[0] else NULL
    cdef uint8_t[::1] flags
    cdef int32_t[::1] places
    if weighted and linked:
        places = np.zeros(n, dtype=np.int32)
        with nogil:
            found = _triangles(n, &starts[0], t_p, w_p, &visiting_starts[0], vt_p, vw_p,
                               links_p, &places[0])
    else:
        flags = np.zeros(n, dtype=np.uint8)
        with nogil:
            found = _triangles(n, &starts[0], t_p, NULL, &visiting_starts[0], vt_p, vw_p,
                               links_p, &flags[0])
    return found


@cython.overflowcheck(False)
cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # SplitMix64's finalizer: every output bit depends on every input bit;
    # its products wrap modulo 2**64 on purpose (no overflow check, even in
    # the debug build).
    x = (x ^ (x >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    x = (x ^ (x >> 27)) * <uint64_t>0x94D049BB133111EB
    return x ^ (x >> 31)


@cython.overflowcheck(False)
def edge_hash(const int64_t[::1] a, const int64_t[::1] b):
    """Per edge ``a[i] -- b[i]``, a 64-bit hash of both ends (uint64), in
    one pass in C: routing edges by it spreads them evenly over any number
    of workers, a hub's edges included, even for ids that share their low
    bits (multiples of 1024, say), which routing by an id alone would send
    to one worker.

    >>> import numpy as np
    >>> h = edge_hash(np.array([0, 0, 1]), np.array([1, 2, 0]))
    >>> h.dtype.name, len(set(h.tolist()))
    ('uint64', 3)
    """
    cdef Py_ssize_t n = a.shape[0], i
    if b.shape[0] != n:
        raise ValueError("the two ends of the edges differ in length")
    cdef cnp.ndarray out_a = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            out[i] = mix64(<uint64_t>a[i]) ^ mix64(<uint64_t>b[i] + <uint64_t>0x632BE59BD9B4E019)
    return out_a


def hook(const index_t[::1] ids, const int64_t[::1] labels, int64_t[::1] least,
         unsigned char[::1] seen):
    """Takes in ``labels[i]`` for node number ``ids[i]``, in order, keeping
    in ``least`` each node's least label so far (``seen[x]`` 0 until its
    first; 2 for a node whose least is its own id, set without a label, so
    that its next label counts as a change even if equal). Returns ``(hi,
    lo, changed)``: an edge ``hi[k] -- lo[k]`` (``lo < hi``) between two
    labels of one node wherever a label is not its least (the label and the
    least, or the least and the label that lowers it), so that the edges and
    ``least`` join every node's labels; and the nodes whose least is new,
    fell or (``seen`` 2) was confirmed, once per change (a node may repeat).
    O(len(ids)) in C, whatever the number of nodes.

    >>> import numpy as np
    >>> least, seen = np.array([0, 3], np.int64), np.array([0, 2], np.uint8)
    >>> hi, lo, changed = hook(np.array([0, 0, 1, 0]), np.array([7, 5, 3, 6]), least, seen)
    >>> hi.tolist(), lo.tolist(), changed.tolist(), least.tolist(), seen.tolist()
    ([7, 6], [5, 5], [0, 0, 1], [5, 3], [1, 1])
    """
    cdef Py_ssize_t n = ids.shape[0], size = least.shape[0], i, e = 0, c = 0
    if labels.shape[0] != n:
        raise ValueError("a label per node number")
    if seen.shape[0] != size:
        raise ValueError("a seen flag per node")
    _within(ids, size, "node number")
    cdef cnp.ndarray hi_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray lo_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray changed_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] hi = hi_a
    cdef int64_t[::1] lo = lo_a
    cdef int64_t[::1] changed = changed_a
    cdef int64_t x, r, m
    cdef bint confirmed
    with nogil:
        for i in range(n):
            x = ids[i]
            r = labels[i]
            if not seen[x]:
                seen[x] = 1
                least[x] = r
                changed[c] = x
                c += 1
                continue
            confirmed = seen[x] == 2
            seen[x] = 1
            m = least[x]
            if r >= m:
                if r > m:
                    hi[e] = r
                    lo[e] = m
                    e += 1
                if confirmed:
                    changed[c] = x
                    c += 1
                continue
            hi[e] = m
            lo[e] = r
            e += 1
            least[x] = r
            changed[c] = x
            c += 1
    # Copies, so that the arrays sized to every row are freed now.
    return hi_a[:e].copy(), lo_a[:e].copy(), changed_a[:c].copy()


@cython.overflowcheck(False)
def vertex_hash(const int64_t[::1] a):
    """Per vertex id, a 64-bit mix of it (uint64), in one pass in C: routing
    vertices by it spreads them evenly over any number of workers even when
    their ids share their low bits, which an id taken as its own hash
    (``id % workers``) would send to one worker.

    >>> import numpy as np
    >>> h = vertex_hash(np.arange(0, 4096, 1024))
    >>> sorted((h % np.uint64(4)).tolist()) != [0, 0, 0, 0]
    True
    """
    cdef Py_ssize_t n = a.shape[0], i
    cdef cnp.ndarray out_a = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            out[i] = mix64(<uint64_t>a[i])
    return out_a


# ---------------------------------------------------------------------------
# Components and PageRank: each worker's compact numbering of the ids it holds
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #define TIMELY_PREFETCH(address) __builtin_prefetch(address)
    """
    void TIMELY_PREFETCH(const void *address) noexcept nogil

# How many rows ahead a probe's slot is fetched: the table is far larger than
# the caches, so a probe would otherwise wait on memory.
DEF AHEAD = 16

cdef class LocalIds:
    """Numbers distinct int64 ids ``0, 1, 2, ...`` (int32) in their order of
    arrival: a worker's local numbering of the vertices it holds, assigned
    once, so that its per-vertex state is arrays of ``len(self)`` cells.

    An open-addressing table of int32 numbers (linear probing on a 64-bit
    mix of the id, at most 2/3 full) over the ids in number order: memory
    O(ids held), 14 to 28 bytes per id, whatever the range of the ids (no
    table sized to the largest id); a probe costs O(1) expected, in C.

    >>> import numpy as np
    >>> ids = LocalIds()
    >>> ids.insert(np.array([70, 30, 70, -5])).tolist()
    [0, 1, 0, 2]
    >>> ids.lookup(np.array([30, 8])).tolist()
    [1, -1]
    >>> len(ids), ids.ids(np.array([2, 0])).tolist(), ids.view().tolist()
    (3, [-5, 70], [70, 30, -5])
    """

    def __cinit__(self):
        self.size = 0
        self._ids = np.empty(16, dtype=np.int64)
        self._table = np.full(32, -1, dtype=np.int32)
        self.mask = 31

    def __len__(self):
        return self.size

    cdef int _room(self, Py_ssize_t extra) except -1:
        # Capacity for `extra` more ids: the ids grow by half, the table
        # doubles (and is rebuilt) while it would be more than 2/3 full.
        cdef Py_ssize_t need = self.size + extra, slots, i, s
        if need > INT32_MAX:
            raise OverflowError(f"a local numbering holds at most {INT32_MAX} ids, not {need}")
        if need > self._ids.shape[0]:
            self._ids = _grown(self._ids, max(need, self._ids.shape[0] + self._ids.shape[0] // 2),
                               self.size)
        slots = self.mask + 1
        if 3 * need <= 2 * slots:
            return 0
        while 3 * need > 2 * slots:
            slots *= 2
        table_a = np.full(slots, -1, dtype=np.int32)
        cdef int32_t[::1] table = table_a
        cdef const int64_t[::1] ids = self._ids
        cdef uint64_t mask = <uint64_t>(slots - 1)
        with nogil:
            for i in range(self.size):
                s = <Py_ssize_t>(mix64(<uint64_t>ids[i]) & mask)
                while table[s] != -1:
                    s = <Py_ssize_t>((<uint64_t>s + 1) & mask)
                table[s] = <int32_t>i
        self._table = table_a
        self.mask = <Py_ssize_t>mask
        return 0

    def insert(self, const int64_t[::1] ids):
        """The number of each id, numbering those not held yet (int32)."""
        cdef Py_ssize_t n = ids.shape[0], i, s
        self._room(n)
        out_a = np.empty(n, dtype=np.int32)
        cdef int32_t[::1] out = out_a
        cdef int32_t[::1] table = self._table
        cdef int64_t[::1] held = self._ids
        cdef uint64_t mask = <uint64_t>self.mask
        cdef int32_t g
        cdef int64_t x
        cdef Py_ssize_t size = self.size
        with nogil:
            for i in range(n):
                if i + AHEAD < n:
                    TIMELY_PREFETCH(&table[mix64(<uint64_t>ids[i + AHEAD]) & mask])
                x = ids[i]
                s = <Py_ssize_t>(mix64(<uint64_t>x) & mask)
                while True:
                    g = table[s]
                    if g == -1:
                        g = <int32_t>size
                        held[size] = x
                        table[s] = g
                        size += 1
                        break
                    if held[g] == x:
                        break
                    s = <Py_ssize_t>((<uint64_t>s + 1) & mask)
                out[i] = g
        self.size = size
        return out_a

    def lookup(self, const int64_t[::1] ids):
        """The number of each id, -1 for an id not held (int32)."""
        cdef Py_ssize_t n = ids.shape[0], i, s
        out_a = np.empty(n, dtype=np.int32)
        cdef int32_t[::1] out = out_a
        cdef int32_t[::1] table = self._table
        cdef int64_t[::1] held = self._ids
        cdef uint64_t mask = <uint64_t>self.mask
        cdef int32_t g
        cdef int64_t x
        with nogil:
            for i in range(n):
                if i + AHEAD < n:
                    TIMELY_PREFETCH(&table[mix64(<uint64_t>ids[i + AHEAD]) & mask])
                x = ids[i]
                s = <Py_ssize_t>(mix64(<uint64_t>x) & mask)
                while True:
                    g = table[s]
                    if g == -1 or held[g] == x:
                        break
                    s = <Py_ssize_t>((<uint64_t>s + 1) & mask)
                out[i] = g
        return out_a

    def ids(self, numbers):
        """The id of each of ``numbers`` (int64)."""
        numbers = np.asarray(numbers)
        if numbers.dtype.kind not in "iu":
            raise TypeError(f"numbers are integers, not {numbers.dtype}")
        if len(numbers) and (numbers.min() < 0 or numbers.max() >= self.size):
            raise IndexError(f"a number beyond the {self.size} ids held")
        return self._ids[numbers]

    def view(self):
        """Every id held, in number order (a view, valid until the next insert)."""
        return self._ids[:self.size]


def arc_sums(double[::1] sums, const int32_t[::1] target, const int32_t[::1] source,
             const double[::1] share):
    """Adds to ``sums[t]``, per target number ``t``, ``share[source[a]]``
    for every arc ``a`` with ``target[a] == t``, in the order of the arcs
    (as ``np.bincount(target, weights=share[source])``, with no array per
    arc). One pass in C.

    >>> import numpy as np
    >>> sums = np.zeros(3)
    >>> arc_sums(sums, np.array([1, 0, 1], np.int32), np.array([0, 0, 1], np.int32),
    ...          np.array([0.5, 2.0]))
    >>> sums.tolist()
    [0.5, 2.5, 0.0]
    """
    cdef Py_ssize_t m = target.shape[0], a
    if source.shape[0] != m:
        raise ValueError("a source per arc")
    _within(target, sums.shape[0], "arc target")
    _within(source, share.shape[0], "arc source")
    with nogil:
        for a in range(m):
            sums[target[a]] += share[source[a]]


def scatter_add(double[::1] total, const int32_t[::1] index, const double[::1] values):
    """Adds ``values[k]`` to ``total[index[k]]`` for every ``k``, in order
    (as ``np.add.at``, in one pass in C).

    >>> import numpy as np
    >>> total = np.zeros(2)
    >>> scatter_add(total, np.array([1, 1, 0], np.int32), np.array([0.5, 0.25, 2.0]))
    >>> total.tolist()
    [2.0, 0.75]
    """
    cdef Py_ssize_t n = index.shape[0], k
    if values.shape[0] != n:
        raise ValueError("a value per index")
    _within(index, total.shape[0], "index")
    with nogil:
        for k in range(n):
            total[index[k]] += values[k]


def tally(int32_t[::1] counts, const int32_t[::1] index):
    """Adds 1 to ``counts[index[k]]`` for every ``k``: O(len(index)) in C,
    whatever the length of ``counts``.

    >>> import numpy as np
    >>> counts = np.zeros(3, np.int32)
    >>> tally(counts, np.array([2, 0, 2], np.int32))
    >>> counts.tolist()
    [1, 0, 2]
    """
    cdef Py_ssize_t n = index.shape[0], k
    _within(index, counts.shape[0], "index")
    with nogil:
        for k in range(n):
            counts[index[k]] += 1


# -- paths: least values along arcs --------------------------------------------

cdef extern from *:
    """
    #include <sys/mman.h>
    #include <string.h>
    #include <unistd.h>

    /* Blocks from this size up are asked for 2 MiB pages: their rows are
       read at random, and a small page per read costs a TLB miss. */
    #define TLY_HUGE_BLOCK ((size_t)8 << 20)

    /* A block of whole pages from mmap, its mapped length in a 16-byte
       header. It grows and shrinks by remapping its pages (no copy, never
       the old and the new block at once) and gives them back when freed,
       so that large arrays which grow and go leave no free memory behind
       in the heap. NULL when the system has no more. */
    static void *tly_block(void *p, size_t size)
    {
        static size_t page = 0;
        size_t need, have;
        char *base;
        if (page == 0)
            page = (size_t)sysconf(_SC_PAGESIZE);
        need = (size + 16 + page - 1) / page * page;
        if (p == NULL) {
            base = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        } else {
            base = (char *)p - 16;
            memcpy(&have, base, sizeof have);
            if (have == need)
                return p;
    #ifdef MREMAP_MAYMOVE
            base = mremap(base, have, need, MREMAP_MAYMOVE);
    #else
            {
                char *moved = mmap(NULL, need, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (moved != MAP_FAILED) {
                    memcpy(moved, base, have < need ? have : need);
                    munmap(base, have);
                }
                base = moved;
            }
    #endif
        }
        if (base == MAP_FAILED)
            return NULL;
    #ifdef MADV_HUGEPAGE
        if (need >= TLY_HUGE_BLOCK)
            madvise(base, need, MADV_HUGEPAGE);
    #endif
        memcpy(base, &need, sizeof need);
        return base + 16;
    }

    static void tly_unblock(void *p)
    {
        size_t have;
        if (p == NULL)
            return;
        memcpy(&have, (char *)p - 16, sizeof have);
        munmap((char *)p - 16, have);
    }
    """
    void *tly_block(void *p, size_t size) nogil
    void tly_unblock(void *p) nogil


cdef enum:
    _CURRENT = 1        # owned cell: expanded in the round under way
    _PENDING = 2        # owned cell: lowered, to be expanded in the next round
    _CHANGED = 4        # owned cell: new or lowered since the last report
    _TOUCHED = 1        # far cell: proposed to in the round under way
    _PROPOSED = 2       # far cell: `sent` holds the least value proposed to it
    _NAMED = 8          # an owned vertex's first cell: the vertex is named
    _AHEAD = 32         # keys looked up ahead of the one taken in (prefetched)
    _DIGIT = 11         # bits of a vertex number sorted per pass
    _CHUNK = 4096       # keys looked up in one pass (their codes on the stack)


cdef void *_block(void *p, size_t size) except NULL:
    """``p`` (a block or NULL) resized to ``size`` bytes (see ``tly_block``)."""
    cdef void *q = tly_block(p, size)
    if q == NULL:
        raise MemoryError()
    return q


cdef int _push(Cells *cells, int64_t c) except -1:
    cdef Py_ssize_t cap
    if cells.size == cells.cap:
        cap = max(512, 2 * cells.cap)
        cells.data = <int64_t *>_block(cells.data, <size_t>cap * sizeof(int64_t))
        cells.cap = cap
    cells.data[cells.size] = c
    cells.size += 1
    return 0


cdef void _clear(Cells *cells) noexcept nogil:
    cells.size = 0
    tly_unblock(cells.data)
    cells.data = NULL
    cells.cap = 0


@cython.overflowcheck(False)  # the product wraps modulo 2**64 on purpose
cdef inline Py_ssize_t _slot(uint64_t mixed, Py_ssize_t slots) noexcept nogil:
    # The workers take the mix modulo their number; the table takes the high
    # bits of another product, so ids owned by one worker still spread, and
    # scales them to its size (any size below 2**32: it grows by half).
    cdef uint64_t high = (mixed * <uint64_t>0x9E3779B97F4A7C15) >> 32
    return <Py_ssize_t>((high * <uint64_t>slots) >> 32)


@cython.overflowcheck(False)
cdef inline number _plus(number a, number b) noexcept nogil:
    # int64 sums wrap modulo 2**64 as numpy's do, without undefined behaviour.
    if number is double:
        return a + b
    else:
        return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline number _worst(number kind) noexcept nogil:
    if number is double:
        return INFINITY
    else:
        return INT64_MAX


cdef inline uint64_t _arc(int32_t src, int32_t dst) noexcept nogil:
    # An arc of the tail: its source vertex in the high half (the sort key),
    # its target's code in the low.
    return (<uint64_t><uint32_t>src << 32) | <uint32_t>dst


cdef void _radix(uint64_t *arc, uint64_t *weight, Py_ssize_t lo, Py_ssize_t hi, int shift,
                 int bits) noexcept nogil:
    """Sorts ``arc[lo:hi]`` (and ``weight`` alike, unless NULL) in place by
    their sources, whose bits below ``shift + bits`` alone differ: one pass
    of American flag sort on ``bits`` of them (each arc swapped once into
    its bucket, the buckets' heads few enough to stay in cache), then each
    bucket by the bits below."""
    cdef Py_ssize_t count[(1 << _DIGIT) + 1]
    cdef Py_ssize_t head[1 << _DIGIT]
    cdef Py_ssize_t n = hi - lo, a, j, b, nb = <Py_ssize_t>1 << bits
    cdef uint64_t mask = <uint64_t>(nb - 1), x, y = 0, swap
    cdef Py_ssize_t k
    cdef int next_bits
    if n < 2:
        return
    if n <= 32:
        for a in range(lo + 1, hi):
            x = arc[a]
            if weight != NULL:
                y = weight[a]
            j = a
            while j > lo and (arc[j - 1] >> 32) > (x >> 32):
                arc[j] = arc[j - 1]
                if weight != NULL:
                    weight[j] = weight[j - 1]
                j -= 1
            arc[j] = x
            if weight != NULL:
                weight[j] = y
        return
    memset(count, 0, <size_t>(nb + 1) * sizeof(Py_ssize_t))
    for a in range(lo, hi):
        count[((arc[a] >> 32) >> shift & mask) + 1] += 1
    count[0] = lo
    for b in range(nb):
        count[b + 1] += count[b]
        head[b] = count[b]
    for b in range(nb):
        while head[b] < count[b + 1]:
            a = head[b]
            x = arc[a]
            if weight != NULL:
                y = weight[a]
            k = <Py_ssize_t>((x >> 32) >> shift & mask)
            while k != b:
                j = head[k]
                head[k] = j + 1
                swap = arc[j]
                arc[j] = x
                x = swap
                if weight != NULL:
                    swap = weight[j]
                    weight[j] = y
                    y = swap
                k = <Py_ssize_t>((x >> 32) >> shift & mask)
            arc[a] = x
            if weight != NULL:
                weight[a] = y
            head[b] = a + 1
    if shift == 0:
        return
    next_bits = min(_DIGIT, shift)
    for b in range(nb):
        _radix(arc, weight, count[b], count[b + 1], shift - next_bits, next_bits)


cdef void _rehashed(int32_t *table, Py_ssize_t slots, const int64_t *ids, Py_ssize_t n,
                    bint far) noexcept nogil:
    """Enters ids ``0..n-1`` (owned, or with ``far`` far ones) into an
    empty table, the slot of the id ``_AHEAD`` on fetched meanwhile."""
    cdef Py_ssize_t i, s
    for i in range(n):
        if i + _AHEAD < n:
            TIMELY_PREFETCH(&table[_slot(mix64(<uint64_t>ids[i + _AHEAD]), slots)])
        s = _slot(mix64(<uint64_t>ids[i]), slots)
        while table[s] != -1:
            s = s + 1 if s + 1 < slots else 0
        table[s] = <int32_t>(-2 - i) if far else <int32_t>i


cdef int _widen(LeastValues self, number *values, number *sent, Py_ssize_t width) except -1:
    """Cells per vertex grow from ``self.width`` to ``width``: each vertex's
    row moves in place, from the last, the new cells worst; listed cells
    are renumbered."""
    cdef Py_ssize_t w = self.width, v, s, k
    cdef number worst = _worst(<number>0)
    cdef Cells *lists[3]
    cdef Cells *cells
    cdef int64_t c
    self.values = _block(self.values, <size_t>(self.own_cap * width) * 8)
    self.flags = <unsigned char *>_block(self.flags, <size_t>(self.own_cap * width))
    self.sent = _block(self.sent, <size_t>(self.far_cap * width) * 8)
    self.far_flags = <unsigned char *>_block(self.far_flags, <size_t>(self.far_cap * width))
    values = <number *>self.values
    sent = <number *>self.sent
    for v in range(self.owned - 1, -1, -1):
        for s in range(width - 1, -1, -1):
            values[v * width + s] = values[v * w + s] if s < w else worst
            self.flags[v * width + s] = self.flags[v * w + s] if s < w else 0
    for v in range(self.far - 1, -1, -1):
        for s in range(width - 1, -1, -1):
            sent[v * width + s] = sent[v * w + s] if s < w else worst
            self.far_flags[v * width + s] = self.far_flags[v * w + s] if s < w else 0
    lists[0], lists[1], lists[2] = &self.pending, &self.changed, &self.touched
    for k in range(3):
        cells = lists[k]
        for v in range(cells.size):
            c = cells.data[v]
            cells.data[v] = (c // w) * width + c % w
    self.width = width
    return 0


cdef int _fill(number *values, Py_ssize_t first, Py_ssize_t last) except -1:
    cdef number worst = _worst(<number>0)
    cdef Py_ssize_t c
    for c in range(first, last):
        values[c] = worst
    return 0


cdef int _lower_cell(LeastValues self, number *values, int64_t c, number value) except -1:
    if value < values[c]:
        values[c] = value
        if not self.flags[c] & _CHANGED:
            self._changed(c)
        if not self.flags[c] & _PENDING:
            self.flags[c] |= _PENDING
            _push(&self.pending, c)
    return 0


cdef inline int _propose(LeastValues self, number *values, number *sent, int32_t code,
                         Py_ssize_t slot, number value) except -1:
    """``value`` offered to slot ``slot`` of the vertex ``code``: an owned
    one is named and lowered at once (expanded next round); a far one's
    least offer of the round is kept, unless an earlier one was as low.
    (A vertex not named, or a cell not offered to, holds the worst value:
    only then are their flags read.)"""
    cdef int64_t c
    cdef number worst = _worst(<number>0)
    if code >= 0:
        c = <int64_t>code * self.width + slot
        if value < values[c]:
            if not self.flags[<int64_t>code * self.width] & _NAMED:
                self._name(code)            # self-seeded: its own id first
            _lower_cell(self, values, c, value)
        elif values[c] == worst and not self.flags[<int64_t>code * self.width] & _NAMED:
            self._name(code)
        return 0
    c = <int64_t>(-2 - code) * self.width + slot
    if value < sent[c] or sent[c] == worst and not self.far_flags[c] & _PROPOSED:
        sent[c] = value
        self.far_flags[c] |= _PROPOSED
        if not self.far_flags[c] & _TOUCHED:
            self.far_flags[c] |= _TOUCHED
            _push(&self.touched, c)
    return 0


cdef struct _Ahead:
    Py_ssize_t cell         # the next of the current cells to enter
    Py_ssize_t slot         # the slot of the cell whose row it is in
    Py_ssize_t arc          # the next arc of that row
    Py_ssize_t end


cdef inline void _fetch_ahead(LeastValues self, _Ahead *ahead, const int64_t *current,
                              Py_ssize_t k, char *values, char *sent) noexcept nogil:
    """Moves the cursor one arc on along the rows of the current cells,
    fetching that arc's target cell (its value, or its offer) into cache."""
    cdef int64_t c, u
    cdef int32_t code
    cdef Py_ssize_t w = self.width
    while ahead.arc == ahead.end:
        if ahead.cell == k:
            return
        c = current[ahead.cell]
        ahead.cell += 1
        u = c // w
        if u < self.built:
            ahead.slot = c - u * w
            ahead.arc = self.offsets[u]
            ahead.end = self.offsets[u + 1]
    code = self.targets[ahead.arc]
    ahead.arc += 1
    if code >= 0:
        TIMELY_PREFETCH(values + 8 * (<int64_t>code * w + ahead.slot))
    else:
        TIMELY_PREFETCH(sent + 8 * (<int64_t>(-2 - code) * w + ahead.slot))


cdef int _lower_rows(LeastValues self, const int64_t[::1] ids, const int64_t[::1] slot,
                     number *value, bint need_vertex, Cells *waiting) except -1:
    cdef Py_ssize_t n = ids.shape[0], w = self.width, start, size, i
    cdef int32_t codes[_CHUNK]
    cdef int32_t v
    cdef int64_t s
    cdef number worst = _worst(<number>0)
    for start in range(0, n, _CHUNK):
        size = min(_CHUNK, n - start)
        # Each row names its vertex, unless it waits for one named otherwise.
        self._codes(&ids[start], size, codes, 0 if need_vertex else 1, not need_vertex)
        for i in range(size + _AHEAD):
            if i + _AHEAD < size and codes[i + _AHEAD] >= 0:
                s = slot[start + i + _AHEAD] if slot is not None else 0
                if 0 <= s < w:
                    TIMELY_PREFETCH(<number *>self.values + <int64_t>codes[i + _AHEAD] * w + s)
            if i >= size:
                break
            v = codes[i]
            if need_vertex and (v == -1 or v >= 0 and not self.flags[<int64_t>v * w] & _NAMED):
                _push(waiting, start + i)
                continue
            if v < 0:
                raise ValueError(f"the vertex {ids[start + i]} belongs to another worker")
            if not self.flags[<int64_t>v * w] & _NAMED:
                self._name(v)
            if value[start + i] == worst:
                continue
            s = slot[start + i] if slot is not None else 0
            if not 0 <= s < w:
                raise IndexError(f"slot {s} beyond the {w} of the values")
            _lower_cell(self, <number *>self.values, <int64_t>v * w + s, value[start + i])
    return 0


cdef struct _Offer:
    int32_t code
    int32_t slot
    uint64_t bits           # the value's 8 bytes


cdef int _offer(_Offer **offers, Py_ssize_t *size, Py_ssize_t *room, int32_t code,
                Py_ssize_t slot, void *value) except -1:
    if size[0] == room[0]:
        room[0] = max(512, 2 * room[0])
        offers[0] = <_Offer *>_block(offers[0], <size_t>room[0] * sizeof(_Offer))
    offers[0][size[0]].code = code
    offers[0][size[0]].slot = <int32_t>slot
    memcpy(&offers[0][size[0]].bits, value, 8)
    size[0] += 1
    return 0


cdef Py_ssize_t _expand(LeastValues self, number kind) except -1:
    """One round: every pending cell's value goes along its vertex's arcs,
    and arcs taken in since the last round carry the values their sources
    already held. Every value is read before any is lowered, so a value
    moves one arc per round. Returns the vertices named and cells lowered
    since the last round."""
    cdef Py_ssize_t w = self.width, k, i, a, s, count, offers = 0, room = 0
    cdef int64_t c, u
    cdef uint64_t arc
    cdef number v, unit = 1
    cdef number worst = _worst(<number>0)
    cdef number *values = <number *>self.values
    cdef number *sent
    cdef number *weights
    cdef number *snapshot = NULL
    cdef _Offer *offer = NULL
    cdef _Ahead ahead
    cdef Cells current = self.pending
    self.pending.data, self.pending.size, self.pending.cap = NULL, 0, 0
    count = self.fresh + current.size
    self.fresh = 0
    k = current.size
    try:
        snapshot = <number *>_block(NULL, <size_t>k * sizeof(number))
        for i in range(k):
            c = current.data[i]
            self.flags[c] = (self.flags[c] & ~_PENDING) | _CURRENT
            snapshot[i] = values[c]
        # Offers read before anything is lowered: new tail arcs carry their
        # sources' values (a current source's arcs are all expanded below),
        # and, once the tail is not merged, its arcs from current sources.
        weights = <number *>self.tail_w
        for a in range(self.carried, self.tail):
            arc = self.tail_arc[a]
            u = <int64_t>(arc >> 32)
            for s in range(w):
                c = u * w + s
                if self.flags[c] & _CURRENT or values[c] == worst:
                    continue
                v = _plus(values[c], weights[a] if self.weighted else unit)
                _offer(&offer, &offers, &room, <int32_t><uint32_t>arc, s, &v)
        self.carried = self.tail
        if self.tail > max(16384, self.merged // 4):
            self._merge()
        weights = <number *>self.tail_w
        if k:
            for a in range(self.tail):
                arc = self.tail_arc[a]
                u = <int64_t>(arc >> 32)
                for s in range(w):
                    c = u * w + s
                    if self.flags[c] & _CURRENT:
                        v = _plus(values[c], weights[a] if self.weighted else unit)
                        _offer(&offer, &offers, &room, <int32_t><uint32_t>arc, s, &v)
        self.expanding = True
        for i in range(offers):
            memcpy(&v, &offer[i].bits, 8)
            _propose(self, <number *>self.values, <number *>self.sent, offer[i].code,
                     offer[i].slot, v)
        tly_unblock(offer)
        offer = NULL
        weights = <number *>self.weights
        values = <number *>self.values
        sent = <number *>self.sent
        ahead.cell = ahead.slot = ahead.arc = ahead.end = 0
        for i in range(2 * _AHEAD):
            _fetch_ahead(self, &ahead, current.data, k, <char *>values, <char *>sent)
        for i in range(k):
            c = current.data[i]
            u = c // w
            if u >= self.built:
                continue
            s = c - u * w
            for a in range(self.offsets[u], self.offsets[u + 1]):
                _fetch_ahead(self, &ahead, current.data, k, <char *>values, <char *>sent)
                _propose(self, values, sent, self.targets[a], s,
                         _plus(snapshot[i], weights[a] if self.weighted else unit))
        for i in range(k):
            self.flags[current.data[i]] &= ~_CURRENT
    finally:
        self.expanding = False
        self.fresh, self.fresh_next = self.fresh_next, 0
        tly_unblock(snapshot)
        tly_unblock(offer)
        tly_unblock(current.data)
    return count


cdef object _cells_out(LeastValues self, Cells *cells, bint far, Py_ssize_t most,
                       number kind):
    """``(ids, slots, values)`` of up to ``most`` (every one, when
    negative) of the cells listed (with ``far``) or, for owned cells, of
    those listed or flagged changed; ``slots`` None with one cell per
    vertex. Those cells are unflagged and taken off the list."""
    cdef Py_ssize_t w = self.width, n = 0, i, j = 0, first, last
    cdef bint scan = not far and self.changes_unlisted
    cdef int64_t c
    cdef number *values = <number *>(self.sent if far else self.values)
    cdef int64_t *keys = self.far_ids if far else self.own_ids
    cdef unsigned char *flags = self.far_flags if far else self.flags
    cdef unsigned char flag = _TOUCHED if far else _CHANGED
    if scan:
        # The flags from where the last call stopped.
        first = last = self.report_at
        while last < self.owned * w and (most < 0 or n < most):
            if flags[last] & flag:
                n += 1
            last += 1
    else:
        n = cells.size if most < 0 else min(most, cells.size)
        first, last = cells.size - n, cells.size
    ids_a = np.empty(n, dtype=np.int64)
    slots_a = np.empty(n, dtype=np.int64) if w > 1 else None
    values_a = np.empty(n, dtype=np.float64 if number is double else np.int64)
    cdef int64_t[::1] ids = ids_a
    cdef int64_t[::1] slots = slots_a
    cdef number[::1] out = values_a
    with nogil:
        for i in range(first, last):
            if scan:
                c = i
                if not flags[c] & flag:
                    continue
            else:
                c = cells.data[i]
            ids[j] = keys[c // w]
            if w > 1:
                slots[j] = c % w
            out[j] = values[c]
            flags[c] &= ~flag
            j += 1
    if scan:
        self.report_at = last
        if last == self.owned * w:
            self.report_at = 0
            self.changes_unlisted = False
    else:
        cells.size = first
        if not first:
            _clear(cells)
    return ids_a, slots_a, values_a


cdef int _side_room(Py_ssize_t held, Py_ssize_t *cap, int64_t **ids, void **cells,
                    unsigned char **flags, Py_ssize_t width) except -1:
    # Room for one more vertex on one side of a LeastValues (owned or far):
    # its id, `width` cells of 8 bytes and `width` flags; grows by doubling.
    cdef Py_ssize_t grown
    if held < cap[0]:
        return 0
    grown = max(512, 2 * cap[0])
    ids[0] = <int64_t *>_block(ids[0], <size_t>grown * 8)
    cells[0] = _block(cells[0], <size_t>(grown * width) * 8)
    flags[0] = <unsigned char *>_block(flags[0], <size_t>(grown * width))
    cap[0] = grown
    return 0


cdef class LeastValues:
    """One worker's part of a least-value fixpoint along weighted arcs:
    breadth-first and weighted distances, distances to landmarks, least
    labels. The vertices this worker owns (ids whose 64-bit mix modulo
    ``peers`` is ``index``, as :func:`vertex_hash` routes them) hold
    ``width`` values each (one per slot: a landmark) and their out-arcs;
    the targets of those arcs that other workers own are far targets, each
    with the least value proposed to it so far.

    A round (:meth:`expand`) sends every lowered value along its vertex's
    arcs, plus each arc's weight: an owned target is lowered at once and
    expanded in the next round; a far target's least offer of the round
    goes to its owner (:meth:`proposals`), and none at all when an earlier
    offer was as low. Values are read before any is lowered, so a value
    moves one arc per round, and the answer is the same at any number of
    workers. Arcs taken in after values are known carry their sources'
    values in the next round. Every vertex and cell that is new or lowered
    is kept for :meth:`report`.

    Memory: ids map to 32-bit numbers in an open-addressing table (about
    6 bytes per id); per owned vertex its id, a value and a flag byte per
    slot and a 32-bit row offset (21 bytes with one slot); per far target
    its id and a value and a byte per slot (17 bytes); per arc a 32-bit
    target and, with ``weighted``, an 8-byte weight (at most 2**31 - 3
    vertices and targets and 2**32 - 1 arcs per worker). Arcs taken in wait in
    a tail (8 bytes and the weight) and are sorted into rows in place by a
    radix sort once the tail outgrows a quarter of the rows. Arrays are
    whole pages mapped apart from the heap, grown by remapping them. Values
    and weights are int64 (sums wrap as numpy's do) or, with ``floating``,
    float64, added exactly as Python adds them.

    >>> import numpy as np
    >>> state = LeastValues(0, 1)
    >>> state.absorb(np.array([1, 2, 1]), np.array([2, 3, 3]))
    >>> state.lower(np.array([1]), None, np.array([0])).tolist()
    []
    >>> state.expand(), state.expand(), state.expand()
    (1, 2, 0)
    >>> ids, slots, values = state.report()
    >>> ids.tolist(), slots, values.tolist()
    ([1, 2, 3], None, [0, 1, 1])
    """

    def __cinit__(self, Py_ssize_t index=0, Py_ssize_t peers=1, *, bint floating=False,
                  bint weighted=False, bint self_seeded=False, bint report_new=False):
        if not 0 <= index < peers:
            raise ValueError(f"worker {index} of {peers}")
        self.index, self.peers = index, peers
        self.floating, self.weighted = floating, weighted
        self.self_seeded, self.report_new = self_seeded, report_new
        self.width = 1
        self._rehash(64)

    def __dealloc__(self):
        tly_unblock(self.table)
        tly_unblock(self.own_ids)
        tly_unblock(self.values)
        tly_unblock(self.flags)
        tly_unblock(self.far_ids)
        tly_unblock(self.sent)
        tly_unblock(self.far_flags)
        tly_unblock(self.offsets)
        tly_unblock(self.targets)
        tly_unblock(self.weights)
        tly_unblock(self.tail_arc)
        tly_unblock(self.tail_w)
        tly_unblock(self.pending.data)
        tly_unblock(self.changed.data)
        tly_unblock(self.touched.data)

    def __len__(self):
        return self.owned

    @property
    def arcs(self):
        """The arcs taken in."""
        return self.merged + self.tail

    @property
    def has_pending(self):
        """Whether cells were lowered since the last round (another round is due)."""
        return self.pending.size > 0

    @property
    def nbytes(self):
        """The bytes of its arrays in use (not counting spare capacity)."""
        cdef Py_ssize_t w = self.width, arcs = self.merged + self.tail
        cdef Py_ssize_t weight = 8 if self.weighted else 0
        return (4 * self.slots + self.owned * (8 + 9 * w) + self.far * (8 + 9 * w)
                + 4 * (self.built + 1) + self.merged * (4 + weight) + self.tail * (8 + weight)
                + 8 * (self.pending.size + self.changed.size + self.touched.size))

    cdef int _rehash(self, Py_ssize_t slots) except -1:
        cdef int32_t *table = <int32_t *>_block(NULL, <size_t>slots * sizeof(int32_t))
        cdef Py_ssize_t i, s
        memset(table, 0xFF, <size_t>slots * sizeof(int32_t))
        with nogil:
            _rehashed(table, slots, self.own_ids, self.owned, 0)
            _rehashed(table, slots, self.far_ids, self.far, 1)
        tly_unblock(self.table)
        self.table, self.slots = table, slots
        return 0

    cdef int32_t _code(self, int64_t key, uint64_t mixed, bint insert) except -2147483648:
        """The code of ``key`` (whose mix is ``mixed``; -1 when not held),
        numbering it if ``insert``."""
        cdef Py_ssize_t slots = self.slots, s = _slot(mixed, slots)
        cdef Py_ssize_t w = self.width, c, held = self.owned + self.far
        cdef int32_t code
        while True:
            code = self.table[s]
            if code == -1:
                break
            if code >= 0:
                if self.own_ids[code] == key:
                    return code
            elif self.far_ids[-2 - code] == key:
                return code
            s = s + 1 if s + 1 < slots else 0
        if not insert:
            return -1
        if held >= INT32_MAX - 2:
            raise OverflowError(f"a worker holds at most {INT32_MAX - 2} vertices and targets")
        if 4 * (held + 1) > 3 * slots:
            # Loaded between a half and three quarters: about 6 bytes a key.
            self._rehash(min(2 * held + 64, <Py_ssize_t>0xFFFFFFFF))
            return self._code(key, mixed, True)
        if <Py_ssize_t>(mixed % <uint64_t>self.peers) == self.index:
            _side_room(self.owned, &self.own_cap, &self.own_ids, &self.values, &self.flags, w)
            code = <int32_t>self.owned
            self.own_ids[code] = key
            if self.floating:
                _fill(<double *>self.values, code * w, code * w + w)
            else:
                _fill(<int64_t *>self.values, code * w, code * w + w)
            memset(self.flags + code * w, 0, <size_t>w)
            self.owned += 1
        else:
            _side_room(self.far, &self.far_cap, &self.far_ids, &self.sent, &self.far_flags, w)
            c = self.far
            self.far_ids[c] = key
            if self.floating:
                _fill(<double *>self.sent, c * w, c * w + w)
            else:
                _fill(<int64_t *>self.sent, c * w, c * w + w)
            memset(self.far_flags + c * w, 0, <size_t>w)
            self.far += 1
            code = <int32_t>(-2 - c)
        self.table[s] = code
        return code

    cdef int _codes(self, const int64_t *keys, Py_ssize_t n, int32_t *out, int naming,
                    bint insert) except -1:
        """The code of each of ``keys`` into ``out`` (-1 for one not held),
        numbering those not held if ``insert``; with ``naming`` 1 each owned
        one is named, with 2 each far one too (by a proposal of the worst
        value, unless one went before). The table slot and then the entry of
        a key ``_AHEAD`` places on are fetched into cache while earlier keys
        are taken in."""
        cdef uint64_t mixed[4 * _AHEAD]          # a ring: keys i - 2 * _AHEAD .. i
        cdef Py_ssize_t i, j, w = self.width
        cdef int32_t code
        cdef int64_t c, key
        for i in range(n + 2 * _AHEAD):
            if i < n:
                mixed[i % (4 * _AHEAD)] = mix64(<uint64_t>keys[i])
                TIMELY_PREFETCH(&self.table[_slot(mixed[i % (4 * _AHEAD)], self.slots)])
            j = i - _AHEAD
            if 0 <= j < n:
                code = self.table[_slot(mixed[j % (4 * _AHEAD)], self.slots)]
                if code >= 0:
                    TIMELY_PREFETCH(&self.own_ids[code])
                    TIMELY_PREFETCH(&self.flags[<int64_t>code * w])
                elif code != -1:
                    TIMELY_PREFETCH(&self.far_ids[-2 - code])
                    if naming == 2:
                        TIMELY_PREFETCH(&self.far_flags[<int64_t>(-2 - code) * w])
            j = i - 2 * _AHEAD
            if j < 0:
                continue
            # Most keys are held at their first slot; the rest probe on.
            key = keys[j]
            code = self.table[_slot(mixed[j % (4 * _AHEAD)], self.slots)]
            if not (code >= 0 and self.own_ids[code] == key
                    or code < -1 and self.far_ids[-2 - code] == key):
                code = self._code(key, mixed[j % (4 * _AHEAD)], insert)
            out[j] = code
            if code >= 0:
                if naming and not self.flags[<int64_t>code * self.width] & _NAMED:
                    self._name(code)
            elif naming == 2 and code != -1:
                # A far target is named by its owner: a proposal of the worst
                # value names it there, unless a real one goes first.
                c = <int64_t>(-2 - code) * self.width
                if not self.far_flags[c] & _PROPOSED:
                    self.far_flags[c] |= _PROPOSED | _TOUCHED
                    if self.floating:
                        (<double *>self.sent)[c] = INFINITY
                    else:
                        (<int64_t *>self.sent)[c] = INT64_MAX
                    _push(&self.touched, c)
        return 0

    cdef int _changed(self, int64_t c) except -1:
        # Listed while few; past an eighth of the cells, only flagged, and the
        # report scans the flags.
        self.flags[c] |= _CHANGED
        if self.changes_unlisted:
            return 0
        _push(&self.changed, c)
        if 8 * self.changed.size > self.owned * self.width:
            _clear(&self.changed)
            self.changes_unlisted = True
        return 0

    cdef int _name(self, int32_t vertex) except -1:
        cdef int64_t c = <int64_t>vertex * self.width
        self.flags[c] |= _NAMED
        if not (self.self_seeded or self.report_new):
            return 0
        if self.expanding:
            self.fresh_next += 1
        else:
            self.fresh += 1
        if self.self_seeded:
            # Set, not lowered: an id may be the worst value itself. Its arcs
            # carry it in the next round.
            if self.floating:
                (<double *>self.values)[c] = <double>self.own_ids[vertex]
            else:
                (<int64_t *>self.values)[c] = self.own_ids[vertex]
        if not self.flags[c] & _CHANGED:
            self._changed(c)
        return 0

    cdef int _merge(self) except -1:
        """The tail sorted into the rows, in place: the rows' arcs written
        out as tail arcs before it, then all sorted by source (:func:`_radix`),
        the targets' codes kept where the arcs were and the offsets counted."""
        cdef Py_ssize_t m0 = self.merged, t = self.tail, m = m0 + t, n = self.owned
        cdef Py_ssize_t u, a
        cdef int bits = 0, top
        cdef uint64_t *arcs
        cdef int32_t *targets
        cdef uint32_t *offsets
        if m > <Py_ssize_t>0xFFFFFFFF:
            raise OverflowError(f"a worker holds at most {0xFFFFFFFF} arcs, not {m}")
        arcs = <uint64_t *>_block(self.tail_arc, <size_t>m * 8)
        self.tail_arc = NULL
        self.tail = self.tail_cap = self.carried = 0
        if m0:
            memmove(arcs + m0, arcs, <size_t>t * 8)
            for u in range(self.built):
                for a in range(self.offsets[u], self.offsets[u + 1]):
                    arcs[a] = _arc(<int32_t>u, self.targets[a])
            tly_unblock(self.targets)
            self.targets = NULL
            if self.weighted:
                self.weights = _block(self.weights, <size_t>m * 8)
                memcpy(<char *>self.weights + 8 * m0, self.tail_w, <size_t>t * 8)
                tly_unblock(self.tail_w)
        else:
            tly_unblock(self.weights)
            self.weights = self.tail_w
        self.tail_w = NULL
        while (<Py_ssize_t>1 << bits) < n:
            bits += 1
        top = min(_DIGIT, bits)
        offsets = <uint32_t *>_block(self.offsets, <size_t>(n + 1) * 4)
        self.offsets = offsets
        with nogil:
            _radix(arcs, <uint64_t *>self.weights, 0, m, bits - top, top)
            memset(offsets, 0, <size_t>(n + 1) * 4)
            targets = <int32_t *>arcs
            for a in range(m):
                offsets[(arcs[a] >> 32) + 1] += 1
                # The code's 4 bytes move down in place: the arc they come
                # from is at or after where they go.
                targets[a] = <int32_t><uint32_t>arcs[a]
            for u in range(n):
                offsets[u + 1] += offsets[u]
        self.targets = <int32_t *>_block(targets, <size_t>m * 4)
        self.built, self.merged = n, m
        return 0

    def absorb(self, const int64_t[::1] src, const int64_t[::1] dst, weight=None, *,
               bint name_targets=False):
        """Takes in the arcs ``src[i] -> dst[i]`` (weighing ``weight[i]``
        when ``weighted``): each source is an owned vertex, named; each
        target is numbered, and with ``name_targets`` named too (a far one
        by a proposal of the worst value in the next :meth:`proposals`).
        The arcs carry their sources' values in the next round."""
        cdef Py_ssize_t n = src.shape[0], cap, start, size, i
        cdef int32_t ends[2][_CHUNK]
        cdef const uint64_t[::1] bits
        if dst.shape[0] != n:
            raise ValueError("the two ends of the arcs differ in length")
        if self.weighted:
            if weight is None or len(weight) != n:
                raise ValueError("a weight per arc")
            bits = np.ascontiguousarray(weight, dtype=np.float64 if self.floating
                                        else np.int64).view(np.uint64)
        elif weight is not None:
            raise ValueError("these arcs have no weights")
        if not n:
            return
        if self.tail + n > self.tail_cap:
            cap = max(self.tail + n, 2 * self.tail_cap) if self.tail_cap else n
            self.tail_arc = <uint64_t *>_block(self.tail_arc, <size_t>cap * 8)
            if self.weighted:
                self.tail_w = _block(self.tail_w, <size_t>cap * 8)
            self.tail_cap = cap
        for start in range(0, n, _CHUNK):
            size = min(_CHUNK, n - start)
            self._codes(&src[start], size, ends[0], 1, True)
            self._codes(&dst[start], size, ends[1], 2 if name_targets else 0, True)
            for i in range(size):
                if ends[0][i] < 0:
                    raise ValueError(f"the arc source {src[start + i]} belongs to another "
                                     f"worker")
                self.tail_arc[self.tail + i] = _arc(ends[0][i], ends[1][i])
            if self.weighted:
                memcpy(<uint64_t *>self.tail_w + self.tail, &bits[start], <size_t>size * 8)
            self.tail += size

    def name(self, const int64_t[::1] ids):
        """Names the owned vertices ``ids`` (numbering those not held)."""
        cdef Py_ssize_t n = ids.shape[0], start, size, i
        cdef int32_t codes[_CHUNK]
        for start in range(0, n, _CHUNK):
            size = min(_CHUNK, n - start)
            self._codes(&ids[start], size, codes, 1, True)
            for i in range(size):
                if codes[i] < 0:
                    raise ValueError(f"the vertex {ids[start + i]} belongs to another worker")

    def widen(self, Py_ssize_t width):
        """At least ``width`` cells (slots) per vertex; new cells are worst."""
        if width <= self.width:
            return
        if self.floating:
            _widen(self, <double *>NULL, <double *>NULL, width)
        else:
            _widen(self, <int64_t *>NULL, <int64_t *>NULL, width)

    def lower(self, const int64_t[::1] ids, slots, values, bint need_vertex=False):
        """Lowers slot ``slots[i]`` (0 when None) of owned vertex ``ids[i]``
        to ``values[i]`` where that is less, naming the vertex; a worst
        value only names it. With ``need_vertex`` a row whose vertex is not
        named is left: returns those rows' positions."""
        cdef Py_ssize_t n = ids.shape[0]
        cdef const int64_t[::1] s = slots
        cdef const double[::1] vf
        cdef const int64_t[::1] vi
        cdef Cells waiting
        waiting.data, waiting.size, waiting.cap = NULL, 0, 0
        if len(values) != n or slots is not None and len(slots) != n:
            raise ValueError("a slot and a value per row")
        try:
            if n:
                if self.floating:
                    vf = values
                    _lower_rows(self, ids, s, <double *>&vf[0], need_vertex, &waiting)
                else:
                    vi = values
                    _lower_rows(self, ids, s, <int64_t *>&vi[0], need_vertex, &waiting)
            out = np.empty(waiting.size, dtype=np.int64)
            if waiting.size:
                memcpy(cnp.PyArray_DATA(out), waiting.data, <size_t>waiting.size * 8)
            return out
        finally:
            tly_unblock(waiting.data)

    def expand(self):
        """One round (see the class); returns the vertices named and the
        cells lowered since the previous round."""
        if self.floating:
            return _expand(self, <double>0)
        return _expand(self, <int64_t>0)

    @property
    def has_proposals(self):
        """Whether proposals of this round are still to be taken."""
        return self.touched.size > 0

    @property
    def has_report(self):
        """Whether cells new or lowered since the last report are still to be taken."""
        return self.changed.size > 0 or self.changes_unlisted

    def proposals(self, Py_ssize_t most=-1):
        """``(ids, slots, values)``: the least value this round proposed to
        each far cell, for its owner (``slots`` None while each vertex has
        one cell); up to ``most`` cells at a time (every one when negative),
        taken off."""
        if self.floating:
            return _cells_out(self, &self.touched, True, most, <double>0)
        return _cells_out(self, &self.touched, True, most, <int64_t>0)

    def report(self, Py_ssize_t most=-1):
        """``(ids, slots, values)``: each owned cell new or lowered since the
        last report, with its value now (``slots`` as in :meth:`proposals`);
        up to ``most`` cells at a time (every one when negative), taken off.
        Nothing may change between the calls that take one report."""
        if self.floating:
            return _cells_out(self, &self.changed, False, most, <double>0)
        return _cells_out(self, &self.changed, False, most, <int64_t>0)
# ---------------------------------------------------------------------------
# Communities: synchronous label propagation (timely.algorithms.communities)
# ---------------------------------------------------------------------------
#
# One worker's share of the graph is a set of arcs "x hears y" (x counts y's
# label): the arcs of a vertex are kept by its owner (the worker of
# mix64(id) % peers, as edges.by_vertex routes), except those of a heavy
# vertex, which are spread by a hash of both ends. On a worker, every vertex
# it deals with has a number below 2**31; an arc is packed in a uint64 as
# listener << 32 | heard << 1 | direction, so that sorting the packed arcs
# groups them by listener and puts repeats side by side.

cdef extern from "prefetch.h" nogil:
    void prefetch "tly_prefetch"(const void *p)

# The kinds of record (label_records, vertex_records, add_arcs): one arc
# (node hears heard, in or out), a whole edge node -> heard whose two arcs
# go to one worker (directed: heard hears node in, node hears heard out;
# undirected: both plain), or a vertex to keep.
cdef enum:
    ARC_IN = 0
    ARC_OUT = 1
    EDGE = 2
    PAIR = 3
    VERTEX = 4

cdef enum:
    AHEAD = 16          # arcs between a label's prefetch and its read
    SORTED_UP_TO = 24   # rows up to this length are sorted; longer ones hashed

cdef int64_t NUMBERS = 1 << 31
cdef Py_ssize_t TAGGED_PEERS = 1 << 28     # a record's tag holds its worker times 8
cdef uint64_t PAIR_SEED = 0x632BE59BD9B4E019


cdef inline bint _member(const int64_t *ids, Py_ssize_t n, int64_t x) noexcept nogil:
    # Binary search of the ascending ids[0:n].
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if ids[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < n and ids[lo] == x


@cython.overflowcheck(False)
cdef inline int64_t _keeper(int64_t x, int64_t y, const int64_t *heavy, Py_ssize_t h,
                            uint64_t peers) noexcept nogil:
    # The worker that keeps the arc "x hears y".
    if h and _member(heavy, h, x):
        return <int64_t>((mix64(<uint64_t>x) ^ mix64(<uint64_t>y + PAIR_SEED)) % peers)
    return <int64_t>(mix64(<uint64_t>x) % peers)


cdef int _ascending(const int64_t[::1] ids) except -1:
    cdef Py_ssize_t i
    for i in range(1, ids.shape[0]):
        if ids[i] <= ids[i - 1]:
            raise ValueError("the heavy vertices must be distinct and ascending")
    return 0


@cython.overflowcheck(False)
def heavy_buckets(const int64_t[::1] src, const int64_t[::1] dst, int64_t[::1] counts):
    """Adds to ``counts`` (a power of two of buckets) the ends of the edges
    ``src[i] -> dst[i]`` that are not self-loops, each in the bucket of the
    high bits of its id's 64-bit mix; returns how many such edges there
    are. No vertex has more such ends than its bucket's count, so the
    buckets bound every degree in O(len(counts)) memory.

    >>> import numpy as np
    >>> counts = np.zeros(4, np.int64)
    >>> heavy_buckets(np.array([1, 1, 2]), np.array([2, 3, 2]), counts), int(counts.sum())
    (2, 4)
    """
    cdef Py_ssize_t n = src.shape[0], size = counts.shape[0], i, edges = 0
    cdef int shift = 64
    if dst.shape[0] != n:
        raise ValueError("the two ends of the edges differ in length")
    if size < 2 or size & (size - 1):
        raise ValueError("the buckets are a power of two, at least 2")
    while size > 1:
        size >>= 1
        shift -= 1
    with nogil:
        for i in range(n):
            if src[i] != dst[i]:
                counts[mix64(<uint64_t>src[i]) >> shift] += 1
                counts[mix64(<uint64_t>dst[i]) >> shift] += 1
                edges += 1
    return edges


@cython.overflowcheck(False)
def bucket_ends(const int64_t[::1] src, const int64_t[::1] dst, const unsigned char[::1] hot):
    """The ends (with repeats) of the edges that are not self-loops whose
    bucket (as :func:`heavy_buckets` counts them) is marked in ``hot``.

    >>> import numpy as np
    >>> bucket_ends(np.array([1, 1]), np.array([2, 1]), np.ones(4, np.uint8)).tolist()
    [1, 2]
    """
    cdef Py_ssize_t n = src.shape[0], size = hot.shape[0], i, k = 0
    cdef int shift = 64
    if dst.shape[0] != n:
        raise ValueError("the two ends of the edges differ in length")
    if size < 2 or size & (size - 1):
        raise ValueError("the buckets are a power of two, at least 2")
    while size > 1:
        size >>= 1
        shift -= 1
    out_a = np.empty(2 * n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            if src[i] != dst[i]:
                if hot[mix64(<uint64_t>src[i]) >> shift]:
                    out[k] = src[i]
                    k += 1
                if hot[mix64(<uint64_t>dst[i]) >> shift]:
                    out[k] = dst[i]
                    k += 1
    return out_a[:k].copy()


cdef inline void _record(int64_t *node, int64_t *heard, int32_t *tag, Py_ssize_t *fill,
                         int64_t x, int64_t y, int64_t to, int kind) noexcept nogil:
    cdef Py_ssize_t k = fill[to]
    node[k] = x
    heard[k] = y
    tag[k] = <int32_t>to << 3 | kind
    fill[to] = k + 1


def label_records(const int64_t[::1] src, const int64_t[::1] dst, const int64_t[::1] heavy,
                  bint directed, Py_ssize_t peers):
    """The records of the edges ``src[i] -> dst[i]`` for the workers that
    keep their arcs: ``(node, heard, tag, starts)``, ``tag`` the worker of
    ``peers`` the row is for times 8 plus its kind (:func:`record_kinds`
    splits it), the rows grouped by worker, worker ``w``'s from
    ``starts[w]`` to ``starts[w + 1]`` (so a group is sent as it is, with
    no split). An edge ``a -> b`` makes the arcs "b hears a" and "a hears
    b" (directed, told apart as in- and out-arcs), each kept by the owner
    of its listener, or, for a listener in ``heavy`` (ascending ids), by a
    worker chosen by a hash of both ends; a self-loop makes its vertex
    only. Both arcs of an edge kept by one worker travel as one row. Two
    passes in C (one counting, one placing).

    >>> import numpy as np
    >>> node, heard, tag, starts = label_records(np.array([1, 2]), np.array([2, 2]),
    ...                                          np.zeros(0, np.int64), True, 1)
    >>> node.tolist(), heard.tolist(), [k.tolist() for k in record_kinds(tag)], starts.tolist()
    ([1, 2], [2, 2], [[0, 0], [2, 4]], [0, 2])
    """
    cdef Py_ssize_t n = src.shape[0], h = heavy.shape[0], i, placing, total
    cdef int64_t a, b, ka, kb
    cdef uint64_t w = <uint64_t>peers
    if dst.shape[0] != n:
        raise ValueError("the two ends of the edges differ in length")
    if not 1 <= peers <= TAGGED_PEERS:
        raise ValueError(f"records address 1 to {TAGGED_PEERS} workers, not {peers}")
    _ascending(heavy)
    starts_a = np.zeros(peers + 1, dtype=np.int64)
    fill_a = np.zeros(peers, dtype=np.intp)
    cdef int64_t[::1] starts = starts_a
    cdef Py_ssize_t[::1] fill = fill_a
    cdef const int64_t *hv = &heavy[0] if h else NULL
    cdef int64_t *node = NULL
    cdef int64_t *heard_ = NULL
    cdef int32_t *tag = NULL
    if peers == 1:
        # One worker keeps every arc: an edge is one row, so the rows are
        # the edges, in order, with no counting pass.
        starts[1] = n
        fill[0] = 0
    for placing in range(1 if peers == 1 else 0, 2):
        if placing and peers > 1:
            total = 0
            for i in range(peers):
                fill[i] = total
                total += starts[i + 1]
                starts[i + 1] = total
        if placing:
            node_a = np.empty(starts[peers], dtype=np.int64)
            heard_a = np.empty(starts[peers], dtype=np.int64)
            tag_a = np.empty(starts[peers], dtype=np.int32)
            node = <int64_t *>cnp.PyArray_DATA(node_a)
            heard_ = <int64_t *>cnp.PyArray_DATA(heard_a)
            tag = <int32_t *>cnp.PyArray_DATA(tag_a)
        with nogil:
            for i in range(n):
                a = src[i]
                b = dst[i]
                if a == b:
                    ka = <int64_t>(mix64(<uint64_t>a) % w)
                    if placing:
                        _record(node, heard_, tag, &fill[0], a, a, ka, VERTEX)
                    else:
                        starts[ka + 1] += 1
                    continue
                kb = _keeper(b, a, hv, h, w)        # "b hears a"
                ka = _keeper(a, b, hv, h, w)        # "a hears b"
                if not placing:
                    starts[ka + 1] += 1
                    if kb != ka:
                        starts[kb + 1] += 1
                elif ka == kb:
                    _record(node, heard_, tag, &fill[0], a, b, ka, EDGE if directed else PAIR)
                else:
                    _record(node, heard_, tag, &fill[0], b, a, kb, ARC_IN)
                    _record(node, heard_, tag, &fill[0], a, b, ka,
                            ARC_OUT if directed else ARC_IN)
    return node_a, heard_a, tag_a, starts_a


def record_kinds(const int32_t[::1] tag):
    """``(worker, kind)`` of each record's tag (see :func:`label_records`):
    two int64 arrays.

    >>> import numpy as np
    >>> [a.tolist() for a in record_kinds(np.array([8 * 3 + 2], np.int32))]
    [[3], [2]]
    """
    t = np.asarray(tag, dtype=np.int64)
    return t >> 3, t & 7


def vertex_records(const int64_t[::1] nodes, Py_ssize_t peers):
    """The records of vertices ``nodes`` for their owners, as
    :func:`label_records` makes them: ``(node, heard, tag, starts)``,
    grouped by worker.

    >>> import numpy as np
    >>> node, heard, tag, starts = vertex_records(np.array([5]), 1)
    >>> node.tolist(), heard.tolist(), [k.tolist() for k in record_kinds(tag)], starts.tolist()
    ([5], [5], [[0], [4]], [0, 1])
    """
    cdef Py_ssize_t n = nodes.shape[0], i, total = 0
    cdef int64_t w
    cdef uint64_t p = <uint64_t>peers
    if not 1 <= peers <= TAGGED_PEERS:
        raise ValueError(f"records address 1 to {TAGGED_PEERS} workers, not {peers}")
    starts_a = np.zeros(peers + 1, dtype=np.int64)
    fill_a = np.zeros(peers, dtype=np.intp)
    node_a = np.empty(n, dtype=np.int64)
    tag_a = np.empty(n, dtype=np.int32)
    cdef int64_t[::1] starts = starts_a
    cdef Py_ssize_t[::1] fill = fill_a
    cdef int64_t[::1] node = node_a
    cdef int32_t[::1] tag = tag_a
    with nogil:
        for i in range(n):
            starts[mix64(<uint64_t>nodes[i]) % p + 1] += 1
        for i in range(peers):
            fill[i] = total
            total += starts[i + 1]
            starts[i + 1] = total
        for i in range(n):
            w = <int64_t>(mix64(<uint64_t>nodes[i]) % p)
            node[fill[w]] = nodes[i]
            tag[fill[w]] = <int32_t>w << 3 | VERTEX
            fill[w] += 1
    return node_a, node_a, tag_a, starts_a


def add_arcs(uint64_t[::1] arcs, Py_ssize_t at, const int64_t[::1] node,
             const int64_t[::1] heard, const int32_t[::1] tag, unsigned char[::1] named):
    """Appends to ``arcs[at:]`` the arcs of records (as
    :func:`label_records` makes them) whose ids are already numbered
    (``node``, ``heard``: numbers below ``len(named)`` and 2**31), packed
    ``listener << 32 | heard << 1 | direction``, and marks ``named[x]``
    for each vertex record of ``x``. Returns the new end of the arcs;
    ``arcs`` needs room for two per record.

    >>> import numpy as np
    >>> arcs, named = np.zeros(6, np.uint64), np.zeros(6, np.uint8)
    >>> add_arcs(arcs, 0, np.array([0, 2, 5]), np.array([1, 2, 5]),
    ...          np.array([2, 0, 4], np.int32), named)
    3
    >>> [int(a) >> 32 for a in arcs[:3]], named.tolist()
    ([1, 0, 2], [0, 0, 0, 0, 0, 1])
    """
    cdef Py_ssize_t n = node.shape[0], size = named.shape[0], i
    cdef uint64_t x, y
    cdef int k
    if heard.shape[0] != n or tag.shape[0] != n:
        raise ValueError("node, heard and tag differ in length")
    if size > NUMBERS:
        raise OverflowError(f"a worker numbers at most {NUMBERS} vertices, not {size}")
    if at < 0 or arcs.shape[0] - at < 2 * n:
        raise ValueError("no room for two arcs per record")
    _within(node, size, "listener")
    _within(heard, size, "heard vertex")
    with nogil:
        for i in range(n):
            x = <uint64_t>node[i]
            y = <uint64_t>heard[i]
            k = tag[i] & 7
            if k == ARC_IN:
                arcs[at] = x << 32 | y << 1
                at += 1
            elif k == ARC_OUT:
                arcs[at] = x << 32 | y << 1 | 1
                at += 1
            elif k == EDGE:
                arcs[at] = y << 32 | x << 1
                arcs[at + 1] = x << 32 | y << 1 | 1
                at += 2
            elif k == PAIR:
                arcs[at] = y << 32 | x << 1
                arcs[at + 1] = x << 32 | y << 1
                at += 2
            else:
                named[x] = 1
    return at


def compact_arcs(uint64_t[::1] arcs, Py_ssize_t m):
    """Over the sorted packed arcs ``arcs[:m]`` (see :func:`add_arcs`):
    drops repeated arcs, writes each remaining arc's heard number as an
    int32 to the front of ``arcs``' memory (in place: arc ``k`` at bytes
    ``4k`` to ``4k + 4``), and returns ``(count, listeners, sizes)``: the
    arcs kept, the distinct listeners ascending and how many each keeps.
    An arc heard in and out counts twice. O(m), no memory but the result.

    >>> import numpy as np
    >>> arcs = np.array([1 << 32 | 2 << 1, 1 << 32 | 2 << 1, 1 << 32 | 2 << 1 | 1, 3 << 32],
    ...                 dtype=np.uint64)
    >>> count, listeners, sizes = compact_arcs(arcs, 4)
    >>> count, listeners.tolist(), sizes.tolist(), arcs.view(np.int32)[:count].tolist()
    (3, [1, 3], [2, 1], [2, 2, 0])
    """
    cdef Py_ssize_t i, k = 0, groups = 0
    cdef uint64_t a, last = 0
    if m < 0 or m > arcs.shape[0]:
        raise ValueError(f"{m} arcs of {arcs.shape[0]}")
    for i in range(1, m):
        if arcs[i] < arcs[i - 1]:
            raise ValueError("the arcs are not sorted")
    with nogil:
        for i in range(m):
            if i == 0 or (arcs[i] >> 32) != (arcs[i - 1] >> 32):
                groups += 1
    listeners_a = np.empty(groups, dtype=np.int64)
    sizes_a = np.zeros(groups, dtype=np.int64)
    cdef int64_t[::1] listeners = listeners_a
    cdef int64_t[::1] sizes = sizes_a
    cdef int32_t *heard = <int32_t *>&arcs[0] if m else NULL
    cdef Py_ssize_t g = -1
    with nogil:
        for i in range(m):
            a = arcs[i]
            if i and a == last:
                continue
            if g < 0 or <int64_t>(a >> 32) != listeners[g]:
                g += 1
                listeners[g] = <int64_t>(a >> 32)
            sizes[g] += 1
            last = a
            heard[k] = <int32_t>((a >> 1) & 0x7FFFFFFF)
            k += 1
    return k, listeners_a, sizes_a


cdef int _arcs_within(const uint64_t[::1] arcs, Py_ssize_t n) except -1:
    """Raises IndexError unless both ends of every packed arc are below ``n``."""
    cdef Py_ssize_t m = arcs.shape[0], i
    cdef uint64_t most = 0, a
    with nogil:
        for i in range(m):
            a = arcs[i]
            most = max(most, max(a >> 32, (a >> 1) & 0x7FFFFFFF))
    if m and most >= <uint64_t>n:
        raise IndexError(f"an arc names the number {most}, beyond {n}")
    return 0


def arc_listeners(const uint64_t[::1] arcs, int32_t[::1] listens):
    """Counts, per number, the packed arcs (see :func:`add_arcs`) it
    listens to, into ``listens``.

    >>> import numpy as np
    >>> listens = np.zeros(3, np.int32)
    >>> arc_listeners(np.array([1 << 32 | 2 << 1, 1 << 32 | 0 << 1 | 1], np.uint64), listens)
    >>> listens.tolist()
    [0, 2, 0]
    """
    cdef Py_ssize_t m = arcs.shape[0], n = listens.shape[0], i
    _arcs_within(arcs, n)
    with nogil:
        for i in range(m):
            if i + AHEAD < m:
                prefetch(&listens[arcs[i + AHEAD] >> 32])
            listens[arcs[i] >> 32] += 1


def relabel_listeners(uint64_t[::1] arcs, const int32_t[::1] rank):
    """Renumbers the listener of every packed arc (see :func:`add_arcs`)
    by ``rank``, in place, keeping the rest; a listener whose rank is
    negative raises ValueError (the arcs are then partly renumbered).

    >>> import numpy as np
    >>> arcs = np.array([1 << 32 | 0 << 1 | 1], np.uint64)
    >>> relabel_listeners(arcs, np.array([1, 0], np.int32))
    >>> int(arcs[0]) >> 32, (int(arcs[0]) >> 1) & 0x7FFFFFFF, int(arcs[0]) & 1
    (0, 0, 1)
    """
    cdef Py_ssize_t m = arcs.shape[0], i
    cdef uint64_t a
    cdef int32_t x
    cdef bint lost = False
    _arcs_within(arcs, rank.shape[0])
    with nogil:
        for i in range(m):
            if i + AHEAD < m:
                prefetch(&rank[arcs[i + AHEAD] >> 32])
            a = arcs[i]
            x = rank[a >> 32]
            lost |= x < 0
            arcs[i] = <uint64_t>x << 32 | (a & <uint64_t>0xFFFFFFFF)
    if lost:
        raise ValueError("an arc's listener has no new number")


def mark_heard(const int32_t[::1] heard, unsigned char[::1] flags):
    """Sets ``flags[x]`` for every number ``x`` in ``heard``.

    >>> import numpy as np
    >>> flags = np.zeros(3, np.uint8)
    >>> mark_heard(np.array([2, 0, 2], np.int32), flags)
    >>> flags.tolist()
    [1, 0, 1]
    """
    cdef Py_ssize_t n = heard.shape[0], size = flags.shape[0], i
    cdef int32_t most = -1, least = 0
    with nogil:
        for i in range(n):
            most = max(most, heard[i])
            least = min(least, heard[i])
    if least < 0 or most >= size:
        raise IndexError(f"a heard number beyond 0..{size - 1}")
    with nogil:
        for i in range(n):
            flags[heard[i]] = 1


def renumber(int32_t[::1] heard, const int32_t[::1] rank):
    """Replaces every number ``x`` in ``heard`` by ``rank[x]``, in place; a
    number beyond ``rank`` or whose rank is negative raises ValueError (the
    numbers are then partly replaced).

    >>> import numpy as np
    >>> heard = np.array([1, 0, 1], np.int32)
    >>> renumber(heard, np.array([5, 4], np.int32))
    >>> heard.tolist()
    [4, 5, 4]
    """
    cdef Py_ssize_t n = heard.shape[0], size = rank.shape[0], i
    cdef int32_t most = -1, least = 0, x
    cdef bint lost = False
    with nogil:
        for i in range(n):
            most = max(most, heard[i])
            least = min(least, heard[i])
    if least < 0 or most >= size:
        raise ValueError(f"a heard number beyond 0..{size - 1}")
    with nogil:
        for i in range(n):
            if i + AHEAD < n:
                prefetch(&rank[heard[i + AHEAD]])
            x = rank[heard[i]]
            lost |= x < 0
            heard[i] = x
    if lost:
        raise ValueError("a heard number has no new one")


@cython.overflowcheck(False)
def owners(const int64_t[::1] ids, Py_ssize_t peers):
    """The owner of each id among ``peers`` workers (as
    :func:`~timely.algorithms.edges.by_vertex` routes it): an int32 array.

    >>> import numpy as np
    >>> owners(np.array([3, 3]), 1).tolist()
    [0, 0]
    """
    cdef Py_ssize_t n = ids.shape[0], i
    cdef uint64_t p = <uint64_t>peers
    if not 1 <= peers <= INT32_MAX:
        raise ValueError(f"peers must be at least 1, not {peers}")
    out_a = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] out = out_a
    with nogil:
        for i in range(n):
            out[i] = <int32_t>(mix64(<uint64_t>ids[i]) % p)
    return out_a


def group_stably(const int32_t[::1] items, const int32_t[::1] group, Py_ssize_t groups):
    """``items`` in order of ``group`` (of each item, below ``groups``),
    keeping their order within a group (a counting sort); returns the
    items (int32) and where each group starts (``groups + 1`` offsets).

    >>> import numpy as np
    >>> [a.tolist() for a in group_stably(np.array([7, 8, 9], np.int32),
    ...                                   np.array([1, 0, 1], np.int32), 2)]
    [[8, 7, 9], [0, 1, 3]]
    """
    cdef Py_ssize_t n = items.shape[0], i, g
    if group.shape[0] != n:
        raise ValueError("a group per item")
    for i in range(n):
        if not 0 <= group[i] < groups:
            raise IndexError(f"group {group[i]} of item {i} beyond {groups}")
    starts_a = np.zeros(groups + 1, dtype=np.int64)
    out_a = np.empty(n, dtype=np.int32)
    fill_a = np.empty(groups, dtype=np.int64)
    cdef int64_t[::1] starts = starts_a
    cdef int32_t[::1] out = out_a
    cdef int64_t[::1] fill = fill_a
    with nogil:
        for i in range(n):
            starts[group[i] + 1] += 1
        for g in range(groups):
            starts[g + 1] += starts[g]
            fill[g] = starts[g]
        for i in range(n):
            out[fill[group[i]]] = items[i]
            fill[group[i]] += 1
    return out_a, starts_a


cdef inline void _insertion_sort(int64_t *v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef int64_t x
    for i in range(1, n):
        x = v[i]
        j = i
        while j > 0 and v[j - 1] > x:
            v[j] = v[j - 1]
            j -= 1
        v[j] = x


cdef struct Tally:
    int64_t label
    int64_t count       # 0: an empty slot


@cython.overflowcheck(False)
cdef inline int64_t _mode(int64_t *v, Py_ssize_t n, Tally *table, int64_t *used) noexcept nogil:
    # The most frequent of v[0:n] (n >= 1), the least on a tie. Short rows
    # are sorted; long ones counted in `table` (open addressing by a
    # multiplicative hash; a power of two of slots, at least 2n; every count
    # 0 on entry and on return; `used` holds the slots filled).
    cdef Py_ssize_t i, run = 1, most = 0, u = 0, s
    cdef int shift = 64
    cdef uint64_t mask
    cdef int64_t best = 0, x, c
    if n <= SORTED_UP_TO:
        _insertion_sort(v, n)
        for i in range(1, n + 1):
            if i < n and v[i] == v[i - 1]:
                run += 1
                continue
            if run > most:
                most = run
                best = v[i - 1]
            run = 1
        return best
    mask = 1
    while mask < <uint64_t>(2 * n):
        mask <<= 1
        shift -= 1
    mask -= 1
    for i in range(n):
        x = v[i]
        s = <Py_ssize_t>((<uint64_t>x * <uint64_t>0x9E3779B97F4A7C15) >> shift)
        while table[s].count and table[s].label != x:
            s = <Py_ssize_t>((<uint64_t>s + 1) & mask)
        if not table[s].count:
            table[s].label = x
            used[u] = s
            u += 1
        table[s].count += 1
    for i in range(u):
        s = used[i]
        c = table[s].count
        if c > most or (c == most and table[s].label < best):
            most = c
            best = table[s].label
        table[s].count = 0
    return best


cdef int _rows_of(const int64_t[::1] starts, Py_ssize_t rows, const int32_t[::1] heard,
                  Py_ssize_t numbers) except -1:
    """Raises ValueError unless ``starts`` delimits ``heard`` in ``rows``
    rows and every heard number is below ``numbers``."""
    cdef Py_ssize_t i
    _csr(starts, rows, heard.shape[0], "the arcs")
    for i in range(heard.shape[0]):
        if not 0 <= heard[i] < numbers:
            raise IndexError(f"heard vertex {i} is {heard[i]}, beyond {numbers}")
    return 0


def label_modes(const int64_t[::1] starts, const int32_t[::1] heard,
                const int64_t[::1] labels, const unsigned char[::1] changed,
                const unsigned char[::1] skip, bint every):
    """One synchronous step of label propagation over the rows of a CSR
    (listener ``v`` hears ``heard[starts[v]:starts[v + 1]]``; listeners are
    the numbers ``0..len(starts) - 2``, every number has a label in
    ``labels``): for each listener not marked in ``skip`` with a non-empty
    row holding a number marked in ``changed`` (every such listener if
    ``every``), the label most frequent among its row's labels, the least
    on a tie. Returns ``(rows, new)``: the listeners whose label that is
    not, ascending, and their new labels. O(arcs scanned) in C, plus a sort
    of each short row and a table for each long one.

    >>> import numpy as np
    >>> starts, heard = np.array([0, 2, 3, 5]), np.array([1, 2, 0, 0, 1], np.int32)
    >>> labels, flags = np.array([7, 3, 5]), np.zeros(3, np.uint8)
    >>> [a.tolist() for a in label_modes(starts, heard, labels, flags, flags, True)]
    [[0, 1, 2], [3, 7, 3]]
    """
    cdef Py_ssize_t rows = starts.shape[0] - 1, n = labels.shape[0], v, j, d, longest = 0
    cdef Py_ssize_t end, k = 0, p
    cdef int64_t best
    cdef bint hit
    if rows < 0 or rows > n or skip.shape[0] < rows or changed.shape[0] < n:
        raise ValueError("labels, changed and skip need a cell per listener and number")
    _rows_of(starts, rows, heard, n)
    for v in range(rows):
        longest = max(longest, starts[v + 1] - starts[v])
    slots = 1
    while slots < 2 * longest:
        slots *= 2
    values_a = np.empty(max(longest, 1), dtype=np.int64)
    table_a = np.zeros(2 * slots, dtype=np.int64)      # Tally slots
    used_a = np.empty(max(longest, 1), dtype=np.int64)
    out_rows_a = np.empty(rows, dtype=np.int64)
    out_new_a = np.empty(rows, dtype=np.int64)
    cdef int64_t[::1] values = values_a
    cdef int64_t[::1] table = table_a
    cdef int64_t[::1] used = used_a
    cdef int64_t[::1] out_rows = out_rows_a
    cdef int64_t[::1] out_new = out_new_a
    cdef Py_ssize_t m = heard.shape[0]
    with nogil:
        for v in range(rows):
            end = starts[v + 1]
            d = end - starts[v]
            if d == 0 or skip[v]:
                continue
            if not every:
                hit = False
                for j in range(starts[v], end):
                    if changed[heard[j]]:
                        hit = True
                        break
                if not hit:
                    continue
            for j in range(starts[v], end):
                p = j + AHEAD
                if p < m:
                    prefetch(&labels[heard[p]])
                values[j - starts[v]] = labels[heard[j]]
            best = _mode(&values[0], d, <Tally *>&table[0], &used[0])
            if best != labels[v]:
                out_rows[k] = v
                out_new[k] = best
                k += 1
    return out_rows_a[:k].copy(), out_new_a[:k].copy()


@cython.overflowcheck(False)
def mirror_lists(const int64_t[::1] starts, const int32_t[::1] heard, const int64_t[::1] ids,
                 const unsigned char[::1] heavy, const unsigned char[::1] skip,
                 const int64_t[::1] by_id, Py_ssize_t me, Py_ssize_t peers):
    """Per listener not marked in ``skip`` (ids ``ids``, neighbours
    ``heard[starts[v]:starts[v + 1]]``), the other workers that hold it as
    a mirror, and its number there. A listener ``v`` is heard at the worker
    that keeps each arc "u hears v", u a neighbour: u's owner, or for a
    ``heavy`` u the worker of the hash of both ends (as
    :func:`label_records` places the arcs). Each such worker numbers the
    mirrors of this one's vertices in order of id, so ``v``'s number at
    worker ``w`` is ``me << 32 | r``, ``r`` its rank by id among this
    worker's listeners held at ``w`` (``by_id``: the listeners in order of
    id). Returns ``(starts, worker, number)``, a list per listener. One pass
    over the arcs in C, and one over the lists.

    Two listeners, ids 20 and 10, both hearing id 1 (owned by worker 1 of
    3): worker 1 holds both, 10 first.

    >>> import numpy as np
    >>> starts, heard = np.array([0, 1, 2]), np.array([2, 2], np.int32)
    >>> ids, flags = np.array([20, 10, 1]), np.zeros(3, np.uint8)
    >>> fan = mirror_lists(starts, heard, ids, flags, flags, np.array([1, 0]), 0, 3)
    >>> [a.tolist() for a in fan]
    [[0, 1, 2], [1, 1], [1, 0]]
    """
    cdef Py_ssize_t rows = starts.shape[0] - 1, n = ids.shape[0], m = heard.shape[0]
    cdef Py_ssize_t v, i, j, k, bound = 0, at = 0, ahead
    cdef uint64_t p = <uint64_t>peers
    cdef int64_t w
    cdef int32_t u
    cdef bint any_heavy = False
    if peers < 1 or not 0 <= me < peers:
        raise ValueError(f"worker {me} of {peers}")
    if rows < 0 or rows > n or heavy.shape[0] != n or skip.shape[0] < rows:
        raise ValueError("ids and heavy need a cell per number, skip one per listener")
    if by_id.shape[0] != rows:
        raise ValueError("by_id orders every listener")
    _rows_of(starts, rows, heard, n)
    _within(by_id, rows, "listener")
    for v in range(rows):
        if not skip[v]:
            bound += min(starts[v + 1] - starts[v], peers - 1)
    for i in range(n):
        any_heavy |= heavy[i] != 0
    owner_a = np.empty(n, dtype=np.int32)
    seen_a = np.zeros(peers, dtype=np.uint8)
    held_a = np.empty(bound, dtype=np.int32)     # each listener's holders, in number order
    out_starts_a = np.zeros(rows + 1, dtype=np.int64)
    next_a = np.zeros(peers, dtype=np.int64)
    cdef int32_t[::1] owner = owner_a
    cdef unsigned char[::1] seen = seen_a
    cdef int32_t[::1] held = held_a
    cdef int64_t[::1] out_starts = out_starts_a
    cdef int64_t[::1] next_rank = next_a
    with nogil:
        for i in range(n):
            owner[i] = <int32_t>(mix64(<uint64_t>ids[i]) % p)
        for v in range(rows):
            if skip[v]:
                out_starts[v + 1] = out_starts[v]
                continue
            k = at
            for j in range(starts[v], starts[v + 1]):
                ahead = j + AHEAD
                if ahead < m:
                    prefetch(&owner[heard[ahead]])
                u = heard[j]
                if any_heavy and heavy[u]:
                    w = <int64_t>((mix64(<uint64_t>ids[u])
                                   ^ mix64(<uint64_t>ids[v] + PAIR_SEED)) % p)
                else:
                    w = owner[u]
                if w != me and not seen[w]:
                    seen[w] = 1
                    held[at] = <int32_t>w
                    at += 1
            for j in range(k, at):
                seen[held[j]] = 0
            out_starts[v + 1] = at
    worker_a = np.empty(at, dtype=np.int32)
    number_a = np.empty(at, dtype=np.int64)
    cdef int32_t[::1] worker = worker_a
    cdef int64_t[::1] number = number_a
    with nogil:
        for i in range(rows):
            v = by_id[i]
            for j in range(out_starts[v], out_starts[v + 1]):
                w = held[j]
                worker[j] = <int32_t>w
                number[j] = <int64_t>me << 32 | next_rank[w]
                next_rank[w] += 1
    return out_starts_a, worker_a, number_a


def fan_out(const int64_t[::1] rows, const int64_t[::1] new, const int64_t[::1] starts,
            const int32_t[::1] worker, const int64_t[::1] number):
    """The messages of listeners ``rows`` whose label became ``new``: for
    each, one row per entry of its list (entries ``starts[v]`` to
    ``starts[v + 1]`` of ``worker`` and ``number``, the workers that hold
    the vertex and its number there). Returns ``(number, label, to)``.

    >>> import numpy as np
    >>> [a.tolist() for a in fan_out(np.array([1]), np.array([9]), np.array([0, 1, 3]),
    ...                              np.array([1, 2, 3], np.int32), np.array([4, 5, 6]))]
    [[5, 6], [9, 9], [2, 3]]
    """
    cdef Py_ssize_t n = rows.shape[0], lists = starts.shape[0] - 1, i, j, total = 0, k = 0
    if new.shape[0] != n:
        raise ValueError("a new label per row")
    if lists < 0 or worker.shape[0] != number.shape[0]:
        raise ValueError("a worker and a number per entry")
    _csr(starts, lists, worker.shape[0], "the lists")
    _within(rows, lists, "row")
    for i in range(n):
        total += starts[rows[i] + 1] - starts[rows[i]]
    number_a = np.empty(total, dtype=np.int64)
    label_a = np.empty(total, dtype=np.int64)
    to_a = np.empty(total, dtype=np.int64)
    cdef int64_t[::1] out_number = number_a
    cdef int64_t[::1] out_label = label_a
    cdef int64_t[::1] out_to = to_a
    with nogil:
        for i in range(n):
            for j in range(starts[rows[i]], starts[rows[i] + 1]):
                out_number[k] = number[j]
                out_label[k] = new[i]
                out_to[k] = worker[j]
                k += 1
    return number_a, label_a, to_a
