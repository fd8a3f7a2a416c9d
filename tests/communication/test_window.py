"""The send window's accounting, against a model: two ring allocators in
one process exchange messages in any interleaving of pushes, pulls and
steps; what one counts in flight is exactly what the other has not yet
credited, messages arrive once and in order, and congestion is exactly a
full window."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import capped
from timely.communication.allocator import CREDIT, CREDIT_AT, MIN_WINDOW
from timely.communication.process import RingAllocator
from timely.communication.ring import RingReader, RingWriter, format_ring
from timely.errors import ConfigurationError, FrameError


class Bell:
    def ring(self):
        pass


def pair(window):
    rings = {}
    for src, dst in [(0, 1), (1, 0)]:
        buffer = bytearray(1 << 18)
        format_ring(buffer)
        rings[src, dst] = buffer
    allocators = []
    for me, other in [(0, 1), (1, 0)]:
        allocators.append(RingAllocator(
            me, 2, {other: RingWriter(rings[me, other])}, {other: RingReader(rings[other, me])},
            Bell(), {other: Bell()}, window=window))
    channels = [a.allocate(7, lambda: None) for a in allocators]
    return allocators, channels


def step(allocator):
    """What a worker's step does with its allocator: receive, then release."""
    allocator.receive()
    allocator.release()


def settle(allocators):
    """Steps both until no frame is left in a ring or a writer's queue."""
    for _ in range(1000):
        for a in allocators:
            step(a)
        if not any(w.queued_bytes for a in allocators for w in a.writers.values()):
            for a in allocators:
                step(a)
            return
    raise AssertionError("frames never settled")


actions = st.lists(st.one_of(
    st.tuples(st.just("push"), st.integers(0, 1), st.integers(0, 70_000)),
    st.tuples(st.just("pull"), st.integers(0, 1), st.integers(1, 5)),
    st.tuples(st.just("step"), st.integers(0, 1), st.just(0)),
), max_size=60)


@settings(max_examples=capped(150), deadline=None)
@given(actions, st.sampled_from([MIN_WINDOW, 1 << 20, None]))
def test_in_flight_is_what_the_peer_has_not_credited(script, window):
    allocators, channels = pair(window)
    expected = [deque(), deque()]           # what each worker must pull, in order
    counter = 0
    for kind, who, size in script:
        other = 1 - who
        pushers, puller = channels[who]
        if kind == "push":
            counter += 1
            pushers[other].push((counter, b"x" * size))
            expected[other].append(counter)
        elif kind == "pull":
            for _ in range(size):
                message = puller.pull()
                if message is None:
                    break
                assert message[0] == expected[who].popleft()
        else:
            stepped = allocators[who]
            step(stepped)
            # After a step the flag is exactly "a full window in flight".
            assert stepped.congested() == (window is not None and stepped.in_flight[other] >= window)
        for a in allocators:
            assert all(v >= 0 for v in a.in_flight.values())
    # Quiescence: everything pulled, every frame delivered.
    for _ in range(3):
        settle(allocators)
        for who in (0, 1):
            while (message := channels[who][1].pull()) is not None:
                assert message[0] == expected[who].popleft()
    settle(allocators)
    assert not expected[0] and not expected[1]
    a, b = allocators
    assert a.in_flight[1] == b.owed[0] < CREDIT_AT
    assert b.in_flight[0] == a.owed[1] < CREDIT_AT
    assert not a.congested() and not b.congested()


def test_a_full_window_congests_until_the_peer_pulls():
    (a, b), channels = pair(MIN_WINDOW)
    waiting = []
    a.on_window(lambda: waiting.append("open at once"))
    assert waiting == ["open at once"]
    channels[0][0][1].push((0, b"y" * (MIN_WINDOW + 1)))
    step(a)                                 # sends: the frame fills the window
    assert a.congested()
    a.on_window(lambda: waiting.append("opened"))
    settle([a, b])
    assert a.congested() and waiting == ["open at once"]   # b has not pulled it
    assert channels[1][1].pull()[1] == b"y" * (MIN_WINDOW + 1)
    settle([a, b])
    assert not a.congested() and waiting == ["open at once", "opened"]
    assert a.in_flight[1] == 0


def test_data_for_a_channel_not_made_yet_is_credited_on_arrival():
    (a, b), channels = pair(MIN_WINDOW)
    pushers, _ = a.allocate(8, lambda: None)
    pushers[1].push((0, b"z" * (MIN_WINDOW + 1)))
    step(a)
    assert a.congested()
    settle([a, b])
    assert not a.congested()                # b owes it back though nobody pulled it
    _, puller = b.allocate(8, lambda: None)
    assert puller.pull()[1] == b"z" * (MIN_WINDOW + 1)


def test_a_credit_larger_than_what_is_in_flight_is_refused():
    (a, b), _ = pair(MIN_WINDOW)
    with pytest.raises(FrameError, match="credit of 5 bytes"):
        a.deliver_messages([(CREDIT, 5)], 1, 64)
    with pytest.raises(FrameError, match="credit"):
        a.deliver_messages([(CREDIT, "5")], 1, 64)


def test_a_window_below_the_least_is_refused():
    with pytest.raises(ConfigurationError, match="below the least"):
        pair(MIN_WINDOW - 1)
