"""Ring allocators: frames through a segment's rings wake the receiver's
doorbell when it parks, and no wake-up is lost; a full ring keeps the rest
queued without blocking anyone."""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import threading
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


def _bell_rung(bell) -> bool:
    return select.select([bell], [], [], 0)[0] == [bell]


def test_a_sender_rings_only_a_peer_that_parks(pair):
    """An awake receiver costs its sender no ring; a parked one is woken."""
    sender, receiver = pair
    pushers, _ = sender.allocate(7, lambda: None)
    _, puller = receiver.allocate(7, lambda: None)
    pushers[1].push("awake")
    sender.release()
    assert not _bell_rung(receiver.bell)          # not parked: not rung
    start = time.monotonic()
    receiver.park(10)                             # the data is there: no sleep
    assert time.monotonic() - start < 5
    assert not sender.peer_flags[1].wanted()      # awake again
    receiver.receive()
    assert puller.pull() == "awake"

    woke = []
    thread = threading.Thread(target=lambda: (receiver.park(30), woke.append(True)))
    thread.start()
    deadline = time.monotonic() + 10
    while not sender.peer_flags[1].wanted() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sender.peer_flags[1].wanted()          # the receiver announced it parks
    pushers[1].push("parked")
    sender.release()
    thread.join(10)
    assert woke == [True] and not thread.is_alive()
    assert not sender.peer_flags[1].wanted()
    receiver.receive()
    assert puller.pull() == "parked"


def _all_to_all(index, peers, segment, fds, rounds):
    """Each round, sends to every peer, then parks without a timeout until
    every peer's message of the round is in: a lost wake-up hangs."""
    allocator = ProcessAllocator(index, peers, segment, fds)
    pushers, puller = allocator.allocate(1, lambda: None)
    counts: dict = {}
    for r in range(rounds):
        for j in range(peers):
            if j != index:
                pushers[j].push(r)
        allocator.release()
        while True:
            allocator.receive()
            while (message := puller.pull()) is not None:
                counts[message] = counts.get(message, 0) + 1
            if counts.get(r, 0) == peers - 1:
                break
            allocator.park(None)
        del counts[r]
    allocator.shutdown()
    os._exit(0 if not counts else 3)


@pytest.mark.parametrize("peers", [2, 3], ids=lambda n: f"{n}w")
def test_no_wake_up_is_lost_in_many_quick_rounds(peers):
    """Thousands of all-to-all rounds between processes that park with no
    timeout between rounds: each finishes, under a deadline."""
    rounds = 20000
    layout = Inboxes(peers, peers)
    segment = Segment.create(layout.size)
    layout.format(segment.buf)
    bells = [EventfdDoorbell.create() for _ in range(peers)]
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_all_to_all,
                                 args=(i, peers, segment, [b.fd for b in bells], rounds))
                 for i in range(peers)]
    try:
        for process in processes:
            process.start()
        deadline = time.monotonic() + 240
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        assert [p.exitcode for p in processes] == [0] * peers, "a worker hung or failed"
    finally:
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                process.join(5)
        for bell in bells:
            bell.close()
        segment.close()
        segment.unlink()


@pytest.mark.parametrize("workers", [1, 2, 3], ids=lambda n: f"{n}w")
def test_many_quick_barrier_rounds_between_processes_finish(workers):
    """A dataflow whose workers wait for each round's progress by parking."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        for r in range(1, 2001):
            handle.send(r)
            handle.advance_to(r)
            worker.step_or_park_while(None, lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        return r

    assert timely.execute(work, workers=workers, mode="processes") == [2000] * workers
