"""The progress channel: located change batches reach every worker as raw
buffers, once and in order, and a batch that is not what it claims is
refused before any of it is recorded."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import examples
from timely.communication import codec
from timely.communication.threads import ThreadGroup, ThreadGroupAllocator
from timely.dataflow.progcaster import Progcaster
from timely.errors import DataflowError, FrameError, GraphError
from timely.progress import Builder, ChangeBatch
from timely.worker import Worker

FINGERPRINT = "0123456789abcdef" + "0" * 24


def channels(peers: int, fingerprint: str = FINGERPRINT, arity: int = 1):
    """One progress channel per worker of ``peers``, all in this thread."""
    shared = ThreadGroup(peers)
    workers = [Worker(ThreadGroupAllocator(i, peers, shared), stall_warning=None)
               for i in range(peers)]
    return [Progcaster(w, ("progress", 0), lambda: None, fingerprint, "test")
            for w in workers]


rows = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2**64 - 1),
                          st.integers(-3, 3).filter(bool)), max_size=12)


@settings(max_examples=examples(0.5))
@given(st.integers(1, 4), st.lists(st.tuples(st.integers(0, 3), rows), max_size=8))
def test_every_batch_reaches_every_worker_once_in_order(peers, sends):
    """Whatever each worker sends, every worker receives the sum of it all,
    through the wire format and the frame codec alike."""
    casters = channels(peers)
    expected = ChangeBatch(arity=2)
    for sender, changes in sends:
        sender %= peers
        batch = ChangeBatch(arity=2)
        for loc, t, d in changes:
            batch.update((loc, t), d)
            expected.update((loc, t), d)
        casters[sender].send(batch)
        assert not batch
    want = expected.drain()
    for caster in casters:
        into = ChangeBatch(arity=2)
        caster.recv(into)
        assert into.drain() == want


def encoded(rows_and_diffs, sender=0, sequence=0, width=2, digest=None, count=None):
    digest = int(FINGERPRINT[:16], 16) if digest is None else digest
    count = len(rows_and_diffs) if count is None else count
    head = b"TLYP" + struct.pack("=HHIIQQQ", 1, width, sender, 0, sequence, digest, count)
    body = b"".join(struct.pack(f"={width}Q", *r) for r, _ in rows_and_diffs)
    return head + body + b"".join(struct.pack("=q", d) for _, d in rows_and_diffs)


def received(caster, *messages):
    for message in messages:
        caster.puller.queue.append(message)
    into = ChangeBatch(arity=2)
    caster.recv(into)
    return into.drain()


def test_the_layout_is_the_documented_one():
    caster = channels(2)[1]
    assert received(caster, encoded([((3, 7), 2), ((1, 9), -1)])) == [((1, 9), -1), ((3, 7), 2)]


def test_a_batch_survives_the_frame_codec_as_a_raw_segment():
    message = encoded([((3, 7), 2)])
    frame = b"".join(bytes(p) for p in codec.encode([(("progress", 0), message)]))
    assert message not in frame[:codec.PREFIX_BYTES + 64]     # not inside the pickle
    ((identifier, got),) = codec.decode(frame)
    assert identifier == ("progress", 0) and bytes(got) == message
    assert received(channels(2)[0], got) == [((3, 7), 2)]


@pytest.mark.parametrize("bad, error", [
    (lambda: encoded([((3, 7), 2)])[:-1], FrameError),                  # short
    (lambda: encoded([((3, 7), 2)]) + b"\0" * 8, FrameError),           # long
    (lambda: encoded([((3, 7), 2)], count=2**61), FrameError),          # count overflows
    (lambda: encoded([((3, 7), 2)], count=2**64 - 1), FrameError),
    (lambda: b"XXXX" + encoded([])[4:], FrameError),                     # magic
    (lambda: encoded([])[:20], FrameError),                              # shorter than a header
    (lambda: encoded([((3, 7, 1), 2)], width=3), FrameError),           # another arity
    (lambda: encoded([((3, 7), 2)], sender=5), FrameError),             # no such worker
    (lambda: encoded([((3, 7), 2)], sequence=1), FrameError),           # out of order
    (lambda: encoded([((3, 7), 2)], digest=1), DataflowError),          # another dataflow
    (lambda: [((3, 7), 2)], FrameError),                                 # not a buffer
])
def test_a_bad_batch_is_refused_and_records_nothing(bad, error):
    caster = channels(2)[0]
    into = ChangeBatch(arity=2)
    caster.puller.queue.append(bad())
    with pytest.raises(error):
        caster.recv(into)
    assert not into


def test_a_repeated_batch_is_refused():
    caster = channels(2)[0]
    assert received(caster, encoded([((3, 7), 2)])) == [((3, 7), 2)]
    with pytest.raises(FrameError, match="batch 1 was due"):
        received(caster, encoded([((3, 7), 2)]))
    assert received(caster, encoded([((3, 7), 1)], sequence=1)) == [((3, 7), 1)]


def test_a_worker_that_built_another_dataflow_is_named():
    mine = channels(2)[0]
    theirs = encoded([((0, 0), 1)], sender=1, digest=int("f" * 16, 16))
    with pytest.raises(DataflowError, match="worker 1 built a different dataflow"):
        received(mine, theirs)


def test_a_batch_with_a_routed_code_outside_the_scope_records_nothing():
    """With a mirrored tracker, a batch is read from the receiver's side as
    it arrives; a code outside the scope refuses the whole batch."""
    b = Builder(arity=1)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 1, 0, [[]])
    b.add_edge((1, 0), (2, 0))
    b.add_mirror(1, 3)
    b.add_mirror(2, 4, [0])
    b.add_edge((3, 0), (4, 0))
    b.add_edge((3, 0), (2, 0))
    b.add_edge((1, 0), (4, 0))
    tracker, _ = b.build()
    tracker.set_worker(0, 2)
    caster = channels(2)[0]
    caster.tracker = tracker
    # the first code (the split input, bound for worker 1) is known; the
    # second names a shadow that does not exist
    locations = 4         # two inputs (nodes 2 and 4), two outputs (nodes 1 and 3)
    good, bad = locations + 1, locations + 2
    caster.puller.queue.append(encoded([((good, 7), 1), ((bad, 7), 1)], sender=1))
    into = ChangeBatch(arity=2)
    with pytest.raises(GraphError, match="routed codes"):
        caster.recv(into)
    assert not into
    assert received(caster, encoded([((good, 7), 1)], sender=1, sequence=1)) == [
        ((tracker.mirror(tracker.target_location(2, 0)), 7), 1)]
