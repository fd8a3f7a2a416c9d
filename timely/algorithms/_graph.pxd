cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


cdef class Adjacency:
    cdef object _src            # int64 source node per arc, capacity doubling
    cdef object _order          # arcs [0, built) in order of source
    cdef object _starts         # per node below `indexed`: where its arcs begin in _order
    cdef object _where          # per node: its position in the current gather, else -1
    cdef readonly Py_ssize_t arcs
    cdef readonly Py_ssize_t built
    cdef readonly Py_ssize_t indexed

    cdef int _index(self) except -1


cdef class Components:
    cdef object _parent         # int32 per node: union-find parent
    cdef object _size           # int32 per root: members
    cdef object _least          # int64 per root: the least key of the component
    cdef object _next           # int32 per node: the next member, a circular list per component
    cdef object _mark           # uint8 per node: reported in the current union
    cdef readonly Py_ssize_t nodes
    cdef bint stale             # _size and _next out of date (unions that did not report)

    cdef int _lists(self) except -1


cdef class LocalIds:
    cdef object _ids            # int64 per number: its id, capacity growing by half
    cdef object _table          # int32 slots: a number, or -1; a power of two, at most 2/3 full
    cdef Py_ssize_t mask        # slots - 1
    cdef readonly Py_ssize_t size

    cdef int _room(self, Py_ssize_t extra) except -1


@cython.final
cdef class SortedIds:
    cdef object _ids            # int64, increasing, read-only: held, not copied
    cdef object _index          # the index: _words' or _d's array
    cdef const int64_t *_p      # _ids' data, alive while _ids is (NULL when empty)
    cdef const uint64_t *_words # dense ids: per 64 values, their bits and first position
    cdef const int32_t *_d      # sparse ids: per bucket of (id - _least) >> _shift, its first
    cdef int64_t _least
    cdef int _shift
    cdef Py_ssize_t _buckets    # words or buckets
    cdef readonly Py_ssize_t size

    cdef Py_ssize_t find(self, int64_t x) noexcept nogil


ctypedef struct Cells:
    int64_t *data               # cell numbers, in order of arrival
    Py_ssize_t size
    Py_ssize_t cap


cdef class LeastValues:
    cdef readonly bint floating         # float64 values and weights (else int64)
    cdef readonly bint weighted         # arcs carry weights (else each weighs 1)
    cdef readonly bint self_seeded      # a vertex starts at its own id
    cdef readonly bint report_new       # a vertex is reported when first named
    cdef readonly Py_ssize_t index      # this worker, of `peers`: owns ids whose mix % peers is it
    cdef readonly Py_ssize_t peers
    cdef readonly Py_ssize_t width      # value cells per vertex (slots)
    # Every array is a block of pages (tly_block), owned by this object.
    # ids -> codes: owned vertex l as l, far target q as -2 - q, -1 empty
    cdef int32_t *table
    cdef Py_ssize_t slots               # below 2**32, at most three quarters full
    # owned vertices, numbered 0..owned-1 in order of arrival
    cdef int64_t *own_ids
    cdef void *values                   # per owned cell (vertex * width + slot): 8 bytes
    cdef unsigned char *flags           # per owned cell: _CURRENT | _PENDING | _CHANGED, and
                                        # _NAMED on a vertex's first cell
    cdef readonly Py_ssize_t owned
    cdef Py_ssize_t own_cap
    # far targets (owned by other workers), numbered 0..far-1
    cdef int64_t *far_ids
    cdef void *sent                     # per far cell: the least value proposed to it
    cdef unsigned char *far_flags       # per far cell: _TOUCHED | _PROPOSED
    cdef readonly Py_ssize_t far
    cdef Py_ssize_t far_cap
    # out-arcs of owned vertices: rows (CSR) over the vertices numbered
    # before the last merge, then a tail in order of arrival
    cdef uint32_t *offsets              # built + 1 (at most 2**32 - 1 arcs)
    cdef readonly Py_ssize_t built
    cdef int32_t *targets               # codes
    cdef void *weights                  # 8 bytes per arc, or NULL
    cdef readonly Py_ssize_t merged     # arcs in the rows
    cdef uint64_t *tail_arc             # source vertex << 32 | target code
    cdef void *tail_w
    cdef readonly Py_ssize_t tail
    cdef Py_ssize_t tail_cap
    cdef Py_ssize_t carried             # tail arcs before it have carried their sources' values
    cdef Cells pending                  # owned cells lowered, to be expanded next round
    cdef Cells changed                  # owned cells new or lowered since the last report
    cdef bint changes_unlisted          # too many to list: the flags alone say which
    cdef Py_ssize_t report_at           # ... and a report in parts has taken the cells before it
    cdef Cells touched                  # far cells proposed to this round
    cdef Py_ssize_t fresh               # vertices named (and reported) since the last round
    cdef Py_ssize_t fresh_next          # ... while expanding: counted in the next round
    cdef bint expanding

    cdef int32_t _code(self, int64_t key, uint64_t mixed, bint insert) except -2147483648
    cdef int _codes(self, const int64_t *keys, Py_ssize_t n, int32_t *out, int naming,
                    bint insert) except -1
    cdef int _rehash(self, Py_ssize_t slots) except -1
    cdef int _changed(self, int64_t c) except -1
    cdef int _name(self, int32_t vertex) except -1
    cdef int _merge(self) except -1
