"""Ring allocators: frames through a segment's rings wake the receiver's
doorbell; a full ring keeps the rest queued without blocking anyone."""

from __future__ import annotations

import time

import pytest

import timely
from timely.communication.doorbell import EventfdDoorbell
from timely.communication.process import ProcessAllocator
from timely.communication.shm import Inboxes, Segment
from timely.errors import WorkerFailed


@pytest.fixture
def pair():
    """Workers 0 and 1 of 2 on one segment, both in this process."""
    layout = Inboxes(2, 2)
    segment = Segment.create(layout.size)
    layout.format(segment.buf)
    bells = [EventfdDoorbell.create() for _ in range(2)]
    allocators = [ProcessAllocator(i, 2, segment, [b.fd for b in bells]) for i in range(2)]
    yield allocators
    for allocator in allocators:
        allocator.shutdown()
    del allocators
    for bell in bells:
        bell.close()
    segment.close()
    segment.unlink()


def test_a_release_wakes_the_parked_receiver(pair):
    sender, receiver = pair
    woken = []
    pushers, _ = sender.allocate(5, lambda: None)
    _, puller = receiver.allocate(5, lambda: woken.append(True))
    start = time.monotonic()
    receiver.park(0.05)                   # nothing sent: sleeps the whole timeout
    assert time.monotonic() - start >= 0.04
    pushers[1].push(["a", 1])
    pushers[1].push(["b", 2])
    sender.release()
    start = time.monotonic()
    receiver.park(10)
    assert time.monotonic() - start < 5
    assert puller.pull() is None          # nothing moves before receive
    receiver.receive()
    assert [puller.pull(), puller.pull(), puller.pull()] == [["a", 1], ["b", 2], None]
    assert woken == [True, True]


def test_data_before_its_channel_is_kept(pair):
    sender, receiver = pair
    pushers, _ = sender.allocate(9, lambda: None)
    pushers[1].push("early")
    sender.release()
    receiver.receive()
    woken = []
    _, puller = receiver.allocate(9, lambda: woken.append(True))
    assert woken == [True] and puller.pull() == "early"


def test_a_failure_reported_by_a_link_stops_the_worker(pair):
    worker = pair[0]
    worker.fail("worker 3 disconnected: test")
    with pytest.raises(WorkerFailed, match="worker 0: worker 3 disconnected"):
        worker.park(10)
    with pytest.raises(WorkerFailed):
        worker.receive()


def test_a_producer_faster_than_its_consumer_stays_bounded():
    """Worker 0 sends 20 MB to a slow worker 1 through a 1 MiB ring: the rest
    waits in worker 0's queue, nobody blocks, nothing is lost."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            total = (stream.exchange(lambda x: 1)
                     .inspect_batch(lambda t, b: time.sleep(0.0005))
                     .map(len).accumulate(0, lambda acc, b: acc + sum(b)).capture())
        if worker.index == 0:
            for _ in range(200):
                handle.send_batch([b"x" * 1000] * 100)
        handle.close()
        worker.drain()
        return total.extract()

    results = timely.execute(work, workers=2)
    assert results[0] == []
    assert results[1] == [(0, [200 * 100 * 1000])]
