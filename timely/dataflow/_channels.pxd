from timely.dataflow._activate cimport Schedulable


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
