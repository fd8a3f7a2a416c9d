cdef class SharedProgress:
    cdef public list consumeds
    cdef public list internals
    cdef public list produceds

