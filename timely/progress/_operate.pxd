cdef class SharedProgress:
    cdef public list consumeds
    cdef public list internals
    cdef public list produceds



cdef class PerOperatorState:
    cdef public Py_ssize_t index
    cdef public object id
    cdef public object operator       # None once it has shut down
    cdef public SharedProgress shared
    cdef public bint local
    cdef public Py_ssize_t inputs
    cdef public Py_ssize_t outputs
    cdef public list notify
    cdef public list watches
    cdef public bint incomplete
