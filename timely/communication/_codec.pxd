cdef class Header:
    cdef public list columns       # (type, rows, part sizes) of each column
    cdef public list buffers       # sizes of the pickle's out-of-band buffers
    cdef public list sizes         # every segment's size, in order
    cdef public object pickled     # the envelope's bytes (a view of the header)
    cdef public Py_ssize_t length  # the header's length in bytes

cpdef Py_ssize_t frame_length(prefix) except -1
