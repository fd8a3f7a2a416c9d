cimport cython
from libc.stdint cimport int32_t, int64_t


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
    cdef object _directory      # int32 per bucket of ids >> _shift (spread ids), else None
    cdef const int64_t *_p      # _ids' data, alive while _ids is (NULL when empty)
    cdef const int32_t *_d      # _directory's data likewise, or NULL
    cdef int _shift
    cdef Py_ssize_t _buckets
    cdef readonly Py_ssize_t size

    cdef Py_ssize_t find(self, int64_t x) noexcept nogil
