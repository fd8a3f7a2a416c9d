from libc.stdint cimport int32_t, int64_t, uint64_t

from timely.progress._change_batch cimport ChangeBatch
from timely.progress._operate cimport SharedProgress
from timely.progress._rows cimport tly_ma


cdef class Tracker:
    cdef Py_ssize_t k
    cdef Py_ssize_t nnodes
    cdef size_t T, S
    cdef int32_t *tbase            # per node: first target id
    cdef int32_t *sbase            # per node: first source id
    cdef int32_t *loc_node         # per location id
    cdef int32_t *loc_port
    # target id -> (source id, summary) inside its operator
    cdef int32_t *conn_start
    cdef int32_t *conn_src
    cdef uint64_t *conn_sum
    # source id -> target ids along edges
    cdef int32_t *edge_start
    cdef int32_t *edge_tgt
    # location id -> (scope output, summary)
    cdef int32_t *osum_start
    cdef int32_t *osum_port
    cdef uint64_t *osum_row
    cdef tly_ma *pointstamps
    cdef tly_ma *implications
    cdef ChangeBatch changes       # rows (location, time...)
    cdef ChangeBatch pushed        # rows (location, time...)
    cdef ChangeBatch outputs       # rows (scope output, time...)
    cdef size_t n_outputs
    cdef int64_t total_counts
    # worklist: a binary heap of rows (time..., location) with diffs
    cdef uint64_t *hrows
    cdef int64_t *hdiff
    cdef size_t hlen, hcap
    cdef object shapes
    cdef object osum_py            # location id -> list of (output, increments)
    cdef list locations            # location id -> Target or Source, made once
    # per target id: whether drain_pushed(interesting_only=True) reports its changes
    cdef unsigned char *interest
    cdef unsigned char *touched    # per node, scratch of drain_pushed
    # per target id: the MutableAntichain drain_frontiers keeps (or None),
    # and whether a change there names its node to activate
    cdef list sinks
    cdef unsigned char *notifies
    # mirrors (the other workers' copies of this scope's operators, as nodes
    # after every other): per location, its mirror's id (-1: none); per
    # split target, its code (its place among them, -1: none); per split
    # target in code order, the target and its mirror
    cdef int32_t *mirror_of
    cdef int32_t *shadow_code
    cdef int32_t *shadow_tgt
    cdef int32_t *shadow_loc
    cdef Py_ssize_t n_shadows
    cdef Py_ssize_t shadow_node0   # the first mirror node (nnodes: none)
    cdef Py_ssize_t mirror_t0      # the first mirror target id
    cdef list mirrored             # per mirror node, the node it mirrors
    cdef Py_ssize_t peers, me
    cdef list routed               # per edge: its ChangeBatch of (worker, time) counts, or None

    cdef void* _alloc(self, size_t n, size_t size) except NULL
    cdef int heap_push(self, const uint64_t *time, size_t loc, int64_t diff) noexcept nogil
    cdef void swap(self, size_t a, size_t b) noexcept nogil
    cdef void sift_up(self, size_t i) noexcept nogil
    cdef void heap_pop(self) noexcept nogil
    cdef size_t source_id(self, object source) except? 0
    cdef size_t target_id(self, object target) except? 0
    cdef int push_change(self, size_t loc, object time, int64_t diff) except -1
    cdef int _propagate(self) noexcept nogil
    cdef object location(self, size_t loc)
    cdef int check_located(self, ChangeBatch batch) except -1
    cpdef drain_shared(self, SharedProgress shared, Py_ssize_t node, ChangeBatch into,
                       bint produced=*)
    cdef int push_routed(self, ChangeBatch routed, size_t target, ChangeBatch into) except -1
    cpdef int localize(self, ChangeBatch batch, size_t start, size_t sender) except -1
    cdef size_t real_location(self, size_t loc) noexcept
    cdef int push_located(self, ChangeBatch batch, size_t loc, int64_t sign,
                          ChangeBatch into) except -1
    cpdef harvest(self, list batches, ChangeBatch into)
    cpdef absorb_located(self, ChangeBatch batch, ChangeBatch boundary)
    cpdef bint must_send(self, ChangeBatch batch) except -1
    cpdef report_boundary(self, ChangeBatch boundary, SharedProgress progress, bint nested)
    cpdef int report_outputs(self, list capabilities, list internals, bint nested) except -1
    cpdef tuple drain_frontiers(self, bint everything)
    cdef list dump(self, tly_ma *m)
    cdef list with_mirror(self, size_t loc)
    cdef bint quiet(self, Py_ssize_t node) noexcept
