cdef class Header:
    cdef public list columns       # (type, rows, part sizes) of each column
    cdef public list buffers       # sizes of the raw messages' and the pickle's buffers
    cdef public list sizes         # every segment's size, in order
    cdef public Py_ssize_t raw     # how many of buffers are raw messages'
    cdef public bint tagged        # the envelope is tagged, not pickled
    cdef public object envelope    # the envelope's bytes (a view of the header)
    cdef public Py_ssize_t length  # the header's length in bytes

cpdef Py_ssize_t frame_length(prefix) except -1
