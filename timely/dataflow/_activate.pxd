from timely.dataflow._progcaster cimport Progcaster
from timely.progress.change_batch cimport ChangeBatch
from timely.progress.operate cimport SharedProgress
from timely.progress.reachability cimport Tracker


cdef class Schedulable:
    cdef int run(self) except -1


cdef class Activations:
    cdef public set deferred
    cdef public list heap
    cdef public bint scheduling
    cdef public Py_ssize_t current
    cdef public object on_first

    cpdef activate(self, Py_ssize_t index)


cdef class ChildActivator:
    cdef readonly Activations activations
    cdef readonly Py_ssize_t index

    cdef int fire(self) except -1


cdef class Activator:
    cdef readonly object subgraph
    cdef readonly Py_ssize_t index


cdef class SyncActivator:
    cdef object queue
    cdef object allocator
    cdef readonly tuple address


cdef class WorkerActivations:
    cdef public set active
    cdef public object sync
    cdef public list timers
    cdef long long seq


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
