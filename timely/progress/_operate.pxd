cdef class SharedProgress:
    cdef public list consumeds
    cdef public list internals
    cdef public list produceds

    cpdef drain_into(self, dict into, Py_ssize_t node, list targets)
