"""``broadcast()`` keeps produced equal to consumed: each worker's copy is
produced, addressed, once for the worker that consumes it."""

import pytest

import timely
from timely.dataflow.channels import Addressed, BroadcastPusher


def test_every_worker_sees_every_record_and_progress_holds(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            captured = stream.broadcast().capture()
            probe = stream.broadcast().probe()
        for epoch in range(4):
            if worker.index == epoch % worker.peers:
                handle.send_batch([epoch, epoch + 100])
            handle.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        return captured.extract()

    # check_progress raises if any message arrives behind its input's frontier
    results = timely.execute(work, workers=workers, check_progress=True)
    expected = [(e, [e, e + 100]) for e in range(4)]
    assert results == [expected] * workers


def test_the_pact_refuses_unaddressed_batches():
    pusher = BroadcastPusher([])
    with pytest.raises(TypeError, match="broadcast"):
        pusher.push(0, [1, 2])
    assert len(Addressed(0, [1, 2, 3])) == 3
