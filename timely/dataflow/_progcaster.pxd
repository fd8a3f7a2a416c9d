from libc.stdint cimport uint32_t, uint64_t

from timely.progress.change_batch cimport ChangeBatch
from timely.progress.reachability cimport Tracker


cdef class Progcaster:
    cdef readonly list pushers
    cdef readonly object puller
    cdef readonly object worker
    cdef readonly object identifier
    cdef readonly object owner
    cdef readonly str scope
    cdef readonly str fingerprint
    cdef readonly Py_ssize_t worker_index
    cdef readonly Py_ssize_t peers
    cdef readonly uint64_t sequence
    cdef uint64_t digest
    cdef uint64_t *expected          # per sender: the sequence number due next
    # the scope's tracker when it has shadowed targets: what arrives is
    # read from this worker's side (Tracker.localize) as it is appended
    cdef public Tracker tracker

    cpdef send(self, ChangeBatch updates)
    cpdef recv(self, ChangeBatch into)
    cdef int absorb(self, const unsigned char[::1] data, ChangeBatch into) except -1
