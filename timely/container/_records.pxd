from libc.stdint cimport uint8_t


cdef class Reader:
    # Reads records from data[pos:end]; `source` keeps the buffer that
    # `data` points into alive.
    cdef const uint8_t *data
    cdef Py_ssize_t pos
    cdef Py_ssize_t end
    cdef bint allow_pickle
    cdef object source
