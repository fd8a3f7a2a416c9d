from timely.dataflow._activate cimport Activations
from timely.dataflow._progcaster cimport Progcaster
from timely.progress.change_batch cimport ChangeBatch
from timely.progress.operate cimport SharedProgress
from timely.progress.reachability cimport Tracker


cdef class ScopeRound:
    cdef object scope
    cdef object worker
    cdef Activations acts
    cdef Tracker tracker
    cdef ChangeBatch local
    cdef ChangeBatch final
    cdef ChangeBatch boundary
    cdef SharedProgress progress
    cdef bint nested
    cdef bint outputs
    cdef list capabilities         # the scope outputs' MutableAntichains
    cdef list internals            # the parent's ChangeBatch per scope output
    cdef public Progcaster progcaster
    cdef list children
    cdef list input_messages
    cdef bint solo
    cdef bint eager
    cdef bint root
    cdef Py_ssize_t passes

    cpdef bint run(self) except -1
    cdef bint own_progress(self) except -1
    cdef int take_progress(self) except -1
    cdef int run_children(self) except -1
    cdef int send_progress(self) except -1
    cpdef int propagate(self) except -1
    cpdef bint extract_all(self) except -1
