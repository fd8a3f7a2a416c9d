from timely.progress.change_batch cimport ChangeBatch
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
