from libc.stdint cimport uint64_t

from timely.communication.allocator cimport Puller
from timely.dataflow._activate cimport Schedulable
from timely.progress.frontier cimport MutableAntichain


cdef class PipelinePusher:
    cdef public object queue
    cdef public object on_data
    cdef object append             # queue.append, bound once

    cpdef push(self, object time, object data)


cdef class RoutedCounter:
    cdef readonly object pusher
    cdef readonly Py_ssize_t dest
    cdef readonly object routed     # a ChangeBatch of rows (dest, time...)
    cdef Py_ssize_t k


cdef class Counter:
    cdef public object tee
    cdef public object produced     # a ChangeBatch
    cdef list pushers              # the tee's list: it grows as channels connect

    cpdef push(self, object time, object data)


cdef class RecordLogic(Schedulable):
    cdef int kind
    cdef list pullers              # per input: its channel's Puller
    cdef list consumeds            # per input: its ChangeBatch of records taken
    cdef object fn
    cdef list counters             # per output
    cdef object refuse             # the error a Batch is, for logic on records; or None

    cdef int run(self) except -1


cdef class ProbeLogic(Schedulable):
    cdef Puller puller             # the input channel's
    cdef object consumed           # its ChangeBatch of records taken
    cdef object counter            # the output's Counter, or None
    cdef MutableAntichain frontier # the input's frontier, kept by the scope
    cdef MutableAntichain shared   # the probe handle's
    cdef uint64_t *seen            # the frontier last copied to shared
    cdef size_t nseen
    cdef size_t cap

    cdef int run(self) except -1


cdef class PerTimeLogic(Schedulable):
    cdef Puller puller             # the input channel's
    cdef object consumed           # its ChangeBatch of records taken
    cdef Counter counter           # the output's
    cdef object internal           # the output's ChangeBatch of capability changes
    cdef dict held                 # the output handle's live capabilities per time
    cdef MutableAntichain frontier # the input's frontier, kept by the scope
    cdef object start, absorb, finish
    cdef dict states               # time -> state, for the times not yet complete
    cdef list pending              # those times, in order

    cdef int run(self) except -1
