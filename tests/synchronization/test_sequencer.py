"""Sequencer: every worker reads the same sequence, holding every pushed
element once, each worker's elements in push order, and elements pushed
after reading others after them; closing or dropping a sequencer lets the
others go on and everything complete; misuse raises SequencerError.

Workers are separate processes, so every worker returns what it read.
Nothing asserts speed; every loop that waits has a generous deadline so that
a bug shows as a failure, not a hang.
"""

from __future__ import annotations

import doctest
import time

import pytest

import timely
from timely.synchronization import Sequencer, SequencerError, sequencer

TIMEOUT = 60.0


def read_until(worker, seq, count: int, read: list) -> list:
    """Steps the worker, appending what ``seq`` releases to ``read``, until
    ``read`` holds ``count`` elements."""
    deadline = time.monotonic() + TIMEOUT
    while len(read) < count:
        assert time.monotonic() < deadline, f"worker {worker.index} read only {read!r}"
        worker.step_or_park(0.01)
        read.extend(seq)
    return read


def check_sequences(results, pushed: dict) -> None:
    """``results``: per worker, the sequence it read; ``pushed``: per worker,
    the elements it pushed, in push order."""
    first = results[0]
    for index, seq in enumerate(results):
        assert seq == first, f"worker {index} read another sequence"
    everything = [x for items in pushed.values() for x in items]
    assert sorted(first) == sorted(everything)
    for w, items in pushed.items():
        assert [x for x in first if x in set(items)] == items, f"worker {w}'s order changed"


def staggered_pushes(per_worker: int, delay: float, **extra):
    def work(worker):
        seq = Sequencer(worker)
        read: list = []
        for i in range(per_worker):
            time.sleep(delay * ((worker.index * 3 + i) % 4))
            seq.push((worker.index, i))
            worker.step()
            read.extend(seq)
        return read_until(worker, seq, per_worker * worker.peers, read)

    return work


def test_every_worker_reads_the_same_sequence(workers):
    per_worker = 5
    results = timely.execute(staggered_pushes(per_worker, 0.01), workers=workers)
    check_sequences(results, {w: [(w, i) for i in range(per_worker)] for w in range(workers)})


def test_bursts_and_idle_workers(workers):
    # Only the last worker pushes, in two bursts; the others only read.
    def work(worker):
        seq = Sequencer(worker)
        read: list = []
        if worker.index == worker.peers - 1:
            for i in range(50):
                seq.push(i)
            worker.step()
            time.sleep(0.05)
            for i in range(50, 120):
                seq.push(i)
        return read_until(worker, seq, 120, read)

    results = timely.execute(work, workers=workers)
    check_sequences(results, {workers - 1: list(range(120))})


def test_pushes_after_reading_come_later(workers):
    # A token passes round the workers: worker r % peers pushes r only after
    # it has read r - 1, so the agreed order must be 0, 1, 2, ...
    total = 12

    def work(worker):
        seq = Sequencer(worker)
        read: list = []
        for r in range(worker.index, total, worker.peers):
            read_until(worker, seq, r, read)
            seq.push(r)
        return read_until(worker, seq, total, read)

    results = timely.execute(work, workers=workers)
    assert results == [list(range(total))] * workers


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "threads"},
        {"progress_mode": "eager"},
        {"schedule_seed": 5, "check_progress": True},
    ],
    ids=["threads", "eager", "shuffled"],
)
def test_sequencer_under_other_execution_modes(options):
    results = timely.execute(staggered_pushes(4, 0.005), workers=3, **options)
    check_sequences(results, {w: [(w, i) for i in range(4)] for w in range(3)})


def test_any_python_value_including_none():
    values = [None, {"a": [1, 2]}, ("t", None), 3.5, None, frozenset({1})]

    def work(worker):
        seq = Sequencer(worker)
        if worker.index == 0:
            for v in values:
                seq.push(v)
        worker.step_while(lambda: seq.ready() < len(values))
        return list(seq)

    assert timely.execute(work, workers=2) == [values, values]


def test_next_returns_default_when_nothing_is_ready():
    def work(worker):
        seq = Sequencer(worker)
        before = (seq.next(), seq.next("nothing"), seq.ready(), list(seq))
        seq.push("x")
        unstepped = seq.next()  # nothing moves until the worker steps
        worker.step_while(lambda: seq.ready() < 1)
        return before, unstepped, seq.next(), seq.next()

    before, unstepped, first, after = timely.execute_directly(work)
    assert before == (None, "nothing", 0, [])
    assert unstepped is None
    assert (first, after) == ("x", None)


def test_a_closed_worker_sends_what_it_pushed_and_holds_no_one_back(workers):
    # Worker 0 pushes and closes without stepping; the others still receive
    # its elements, and keep sequencing their own after it has gone.
    def work(worker):
        seq = Sequencer(worker)
        if worker.index == 0:
            seq.push("w0-a")
            seq.push("w0-b")
            seq.close()
            assert seq.closed
            return None
        read: list = []
        read_until(worker, seq, 2, read)
        seq.push(f"w{worker.index}")
        return read_until(worker, seq, 2 + (worker.peers - 1), read)

    results = timely.execute(work, workers=workers)
    assert results[0] is None
    if workers > 1:
        check_sequences(
            results[1:], {0: ["w0-a", "w0-b"], **{w: [f"w{w}"] for w in range(1, workers)}}
        )
        # Worker 0's elements were pushed before any other worker's could be.
        assert results[1][:2] == ["w0-a", "w0-b"]


def test_dropped_sequencers_let_the_worker_drain(workers):
    def work(worker):
        kept = Sequencer(worker)
        dropped = Sequencer(worker)
        kept.push(worker.index)
        dropped.push(worker.index)
        read_until(worker, dropped, worker.peers, [])
        del dropped
        read = read_until(worker, kept, worker.peers, [])
        kept.close()
        worker.drain(timeout=TIMEOUT)
        return read, worker.has_dataflows()

    results = timely.execute(work, workers=workers)
    assert results == [(list(range(workers)), False)] * workers


def test_sequencer_left_open_is_closed_when_work_returns(workers):
    # Unread elements, unsent pushes: execute() must still drain every worker.
    def work(worker):
        seq = Sequencer(worker)
        seq.push("unsent")
        return worker.index

    assert timely.execute(work, workers=workers) == list(range(workers))


def test_use_after_close_raises():
    def work(worker):
        seq = Sequencer(worker)
        seq.push(1)
        worker.step_while(lambda: seq.ready() < 1)
        seq.close()
        seq.close()  # idempotent
        errors = []
        for call in (lambda: seq.push(2), seq.next, seq.ready, lambda: list(seq)):
            with pytest.raises(SequencerError, match="closed") as info:
                call()
            errors.append(info.value)
        return errors, repr(seq)

    errors, text = timely.execute_directly(work)
    assert all(isinstance(e, timely.TimelyError) and isinstance(e, RuntimeError) for e in errors)
    assert text == "Sequencer(closed)"


def test_push_from_operator_logic():
    # push() only queues and activates: it may be called while the worker steps.
    def work(worker):
        seq = Sequencer(worker)
        with worker.dataflow() as scope:
            scope.to_stream(range(4)).inspect(seq.push).probe()
        worker.step_while(lambda: seq.ready() < 4)
        return list(seq)

    assert timely.execute_directly(work) == [0, 1, 2, 3]


def test_docstring_examples():
    result = doctest.testmod(sequencer, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
