from libc.stdint cimport int64_t


cdef class LocalPusher:
    cdef public object queue
    cdef public object on_data

    cpdef push(self, message)
    cpdef done(self)


cdef class Puller:
    cdef public object queue

    cpdef pull(self)


cdef class Credited:
    cdef public object message
    cdef public Py_ssize_t peer
    cdef public int64_t weight


cdef class CreditingPuller(Puller):
    cdef public Mailbox allocator


cdef class RemotePusher:
    cdef public list outbox
    cdef public object identifier

    cpdef push(self, message)
    cpdef done(self)


cdef class Mailbox:
    cdef public Py_ssize_t index
    cdef public Py_ssize_t peers
    cdef public dict queues          # channel -> deque of messages
    cdef public dict callbacks       # channel -> on_data (DROPPED once dropped)
    cdef public dict outboxes        # peer -> list of (channel, message)
    cdef list outbox_list            # the same lists by peer (None at index)
    cdef public dict sources         # logged channels: channel -> deque of senders
    cdef public object window
    cdef int64_t limit               # the window, -1 for none
    cdef int64_t *flight             # per peer: bytes sent, not yet credited
    cdef int64_t *owing              # per peer: bytes pulled, not yet credited back
    cdef bint congested_
    cdef list waiting                # on_window callbacks
    cdef dict __dict__               # subclasses' and the interface's own attributes

    cdef int owe(self, Py_ssize_t peer, int64_t weight) except -1
    cdef object queue_of(self, identifier)
    cpdef deliver_messages(self, list messages, Py_ssize_t source=*, Py_ssize_t nbytes=*)
    cpdef credited(self, Py_ssize_t peer, amount)
    cdef bint over_window(self) noexcept
    cpdef bint pending(self) except -1
    cpdef list take_outboxes(self, encode)
