"""Graph kernels in typed C over node numbers (0..n-1)."""

cimport cython
cimport numpy as cnp
from libc.stdint cimport INT32_MAX, INT64_MAX, int32_t, int64_t, uint64_t

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


def triangle_links(const int64_t[::1] starts, const int64_t[::1] targets,
                   const int64_t[::1] weight, const int64_t[::1] visiting_starts,
                   const int64_t[::1] visiting_targets, const int64_t[::1] visiting_weight,
                   int64_t[::1] triangles, int64_t[::1] links):
    """Adds to ``triangles`` and ``links`` the triangles ``u -> v, u -> w,
    v -> w`` whose edges from ``u`` are in one graph (the out-edges of
    ``u`` are ``targets[starts[u]:starts[u + 1]]``, each with a ``weight``)
    and whose edge from ``v`` is in another (likewise ``visiting_*``), both
    over nodes ``0..n-1``, every edge oriented from its lower to its higher
    end in one total order. Each such triangle adds 1 to the ``triangles``
    of its three nodes and, to the ``links`` of each, the weight of the edge
    opposite it.

    With the edges split by their lower end into blocks, the first graph one
    block and the second each block in turn (the first included), every
    triangle whose lowest node ``u`` has its out-edges in the first is found
    exactly once over the turns.

    Oriented from lower to higher degree, a node has O(sqrt(m)) out-edges,
    so a call costs O(sqrt(m)) per edge ``u -> v`` of the first graph whose
    ``v`` has out-edges in the second, and one int64 of memory per node.

    >>> import numpy as np
    >>> starts, targets, weight = np.array([0, 2, 3, 3]), np.array([1, 2, 2]), np.array([1, 2, 1])
    >>> t, l = np.zeros(3, np.int64), np.zeros(3, np.int64)
    >>> triangle_links(starts, targets, weight, starts, targets, weight, t, l)
    >>> t.tolist(), l.tolist()
    ([1, 1, 1], [1, 2, 1])
    """
    cdef Py_ssize_t n = starts.shape[0] - 1, u, i, j
    cdef int64_t v, w, e
    if n < 0 or triangles.shape[0] != n or links.shape[0] != n:
        raise ValueError("triangles and links need one cell per node")
    if weight.shape[0] != targets.shape[0] or visiting_weight.shape[0] != visiting_targets.shape[0]:
        raise ValueError("the weights and the targets differ in length")
    _csr(starts, n, targets.shape[0], "the first graph")
    _csr(visiting_starts, n, visiting_targets.shape[0], "the second graph")
    _within(targets, n, "edge target")
    _within(visiting_targets, n, "visiting edge target")
    at_a = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] at = at_a           # 1 + the edge u -> w, for w an out-neighbour of u
    with nogil:
        for u in range(n):
            if starts[u + 1] == starts[u]:
                continue
            for i in range(starts[u], starts[u + 1]):
                at[targets[i]] = i + 1
            for i in range(starts[u], starts[u + 1]):
                v = targets[i]
                for j in range(visiting_starts[v], visiting_starts[v + 1]):
                    w = visiting_targets[j]
                    e = at[w]
                    if e:
                        triangles[u] += 1
                        triangles[v] += 1
                        triangles[w] += 1
                        links[u] += visiting_weight[j]
                        links[v] += weight[e - 1]
                        links[w] += weight[i]
            for i in range(starts[u], starts[u + 1]):
                at[targets[i]] = 0


def most_frequent(const int64_t[::1] group, const int64_t[::1] label,
                  const int64_t[::1] count, Py_ssize_t groups):
    """Per group ``0..groups - 1`` of the distinct ``(group[i], label[i])``
    pairs, each seen ``count[i]`` times: the label seen most often, the
    least such label on a tie. Returns ``(best, found)``; ``found[g]`` is 0
    for a group without pairs. One pass in C.

    >>> import numpy as np
    >>> best, found = most_frequent(np.array([0, 0, 0, 2]), np.array([7, 3, 5, 9]),
    ...                             np.array([2, 2, 1, 1]), 3)
    >>> best.tolist(), found.tolist()
    ([3, 0, 9], [1, 0, 1])
    """
    cdef Py_ssize_t n = group.shape[0], i
    cdef int64_t g
    if label.shape[0] != n or count.shape[0] != n:
        raise ValueError("group, label and count differ in length")
    _within(group, groups, "pair group")
    best_a = np.zeros(groups, dtype=np.int64)
    most_a = np.zeros(groups, dtype=np.int64)
    found_a = np.zeros(groups, dtype=np.uint8)
    cdef int64_t[::1] best = best_a
    cdef int64_t[::1] most = most_a
    cdef unsigned char[::1] found = found_a
    with nogil:
        for i in range(n):
            g = group[i]
            if (not found[g] or count[i] > most[g]
                    or (count[i] == most[g] and label[i] < best[g])):
                found[g] = 1
                most[g] = count[i]
                best[g] = label[i]
    return best_a, found_a


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
