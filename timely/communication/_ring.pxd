from libc.stdint cimport uint32_t, uint64_t


cdef extern from "ring.h" nogil:
    enum:
        TLY_RING_HEADER
        TLY_RING_MORE
        TLY_RING_OK
        TLY_RING_FULL
        TLY_RING_EMPTY
        TLY_RING_TOO_BIG
        TLY_RING_BAD
    uint64_t tly_ring_init(void *mem, size_t size)
    int tly_ring_check(const void *mem, size_t size)
    uint64_t tly_ring_max_record(const void *mem)
    int tly_ring_push(void *mem, const void *payload, uint32_t len, uint32_t flags)
    int tly_ring_peek(void *mem, const void **payload, uint32_t *len, uint32_t *flags)
    void tly_ring_pop(void *mem)
    uint64_t tly_ring_used(const void *mem)
    void tly_ring_want_room(void *mem)
    int tly_ring_room_wanted(void *mem)
    enum:
        TLY_PARK_FLAG_BYTES
    void tly_park_init(void *mem)
    void tly_park_announce(void *mem)
    void tly_park_clear(void *mem)
    int tly_park_wanted(void *mem)


cdef class RingWriter:
    cdef object _view
    cdef unsigned char *_mem
    cdef uint64_t _chunk
    cdef object _pending
    cdef size_t _offset
    cdef size_t _queued


cdef class RingReader:
    cdef object _view
    cdef unsigned char *_mem
    cdef list _parts
    cdef bint _borrowed
    # The frame being received (see recv_frame).
    cdef bytearray _head
    cdef Py_ssize_t _head_need
    cdef object _header
    cdef list _dests
    cdef Py_ssize_t _seg, _seg_off, _dst_len, _dst_pad
    cdef unsigned char *_dst
    cdef object _dst_obj
    # Bytes of the frame being received, and of the last one completed.
    cdef Py_ssize_t _frame_bytes
    cdef readonly Py_ssize_t last_frame_bytes

    cdef int _peek(self, const void **payload, uint32_t *length, uint32_t *flags) except -1
    cdef _reset_frame(self)
    cdef int _enter_segment(self) except -1
    cdef Py_ssize_t _take(self, const unsigned char *p, Py_ssize_t n) except -1
    cdef int _open_frame(self) except -1


cdef class ParkFlag:
    cdef object _view
    cdef unsigned char *_mem
