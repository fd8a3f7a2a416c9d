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
