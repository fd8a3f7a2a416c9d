from libc.stdint cimport uint64_t

from timely.dataflow._activate cimport Schedulable
from timely.progress.frontier cimport MutableAntichain


cdef class PipelinePusher:
    cdef public object queue
    cdef public object on_data
    cdef object append             # queue.append, bound once

    cpdef push(self, object time, object data)


cdef class Counter:
    cdef public object tee
    cdef public object produced     # a ChangeBatch
    cdef list pushers              # the tee's list: it grows as channels connect

    cpdef push(self, object time, object data)


cdef class RecordLogic(Schedulable):
    cdef int kind
    cdef list queues               # per input: its channel's deque
    cdef list consumeds            # per input: its ChangeBatch of records taken
    cdef object fn
    cdef list counters             # per output

    cdef int run(self) except -1


cdef class ProbeLogic(Schedulable):
    cdef object queue              # the input channel's deque
    cdef object consumed           # its ChangeBatch of records taken
    cdef object counter            # the output's Counter, or None
    cdef MutableAntichain frontier # the input's frontier, kept by the scope
    cdef MutableAntichain shared   # the probe handle's
    cdef uint64_t *seen            # the frontier last copied to shared
    cdef size_t nseen
    cdef size_t cap

    cdef int run(self) except -1
