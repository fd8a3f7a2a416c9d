"""ChangeBatch: compiled ``timely.progress.ChangeBatch`` vs the dict oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.progress.strategies import arities, diffs, examples, times
from tests.reference import change_batch as ref
from timely.progress import ChangeBatch


def updates(arity, max_size=50):
    return st.lists(st.tuples(times(arity), diffs), max_size=max_size)


def as_times(array, arity):
    if arity == 1:
        assert array.ndim == 1
        return [int(t) for t in array]
    assert array.ndim == 2 and array.shape[1] == arity
    return [tuple(int(c) for c in row) for row in array]


@given(arities.flatmap(lambda a: st.tuples(st.just(a), updates(a))))
def test_drain_matches_oracle(case):
    _, ups = case
    b, r = ChangeBatch(), ref.ChangeBatch()
    for t, d in ups:
        b.update(t, d)
        r.update(t, d)
    assert b.drain() == r.drain()
    assert b.is_empty() and len(b) == 0 and not b and b.drain() == []


@given(arities.flatmap(lambda a: st.tuples(st.just(a), updates(a))))
def test_constructor_and_extend(case):
    arity, ups = case
    expected = ref.ChangeBatch(ups).drain()
    assert ChangeBatch(ups).drain() == expected
    assert ChangeBatch(ups, arity=arity).drain() == expected
    b = ChangeBatch(arity=arity)
    assert b.arity == arity
    b.extend(iter(ups))
    assert list(b) == expected
    assert b.drain() == expected


@given(arities.flatmap(lambda a: st.tuples(st.just(a), updates(a))))
def test_cancelling_updates_leave_nothing(case):
    _, ups = case
    b = ChangeBatch(ups)
    b.extend((t, -d) for t, d in ups)
    assert b.is_empty() and len(b) == 0 and list(b) == []
    assert b.drain() == []


@given(arities.flatmap(lambda a: st.tuples(st.just(a), updates(a))))
def test_arrays(case):
    arity, ups = case
    r = ref.ChangeBatch(ups, arity=arity)
    b = ChangeBatch(arity=arity)
    shape = (len(ups),) if arity == 1 else (len(ups), arity)
    ts = np.array([t for t, _ in ups], dtype=np.uint64).reshape(shape)
    ds = np.array([d for _, d in ups], dtype=np.int64)
    b.extend_arrays(ts, ds)
    out_t, out_d = b.drain_arrays()
    assert out_t.dtype == np.uint64 and out_d.dtype == np.int64
    expected = r.drain()
    assert list(zip(as_times(out_t, arity), out_d.tolist())) == expected
    assert b.is_empty()


@given(st.lists(st.tuples(times(1), diffs), max_size=50))
def test_huge_diffs(ups):
    big = [(t, d * 2**40) for t, d in ups]
    assert ChangeBatch(big).drain() == ref.ChangeBatch(big).drain()


class ChangeBatchMachine(RuleBasedStateMachine):
    """Every observable of the compiled batch equals the oracle's after every step."""

    @initialize(arity=arities, fixed=st.booleans())
    def setup(self, arity, fixed):
        self.arity = arity
        self.b = ChangeBatch(arity=arity) if fixed else ChangeBatch()
        self.r = ref.ChangeBatch(arity=arity)

    @rule(data=st.data())
    def update(self, data):
        t, d = data.draw(times(self.arity)), data.draw(diffs)
        self.b.update(t, d)
        self.r.update(t, d)

    @rule(data=st.data())
    def extend(self, data):
        ups = data.draw(updates(self.arity, 30))
        self.b.extend(ups)
        self.r.extend(ups)

    @rule(data=st.data())
    def extend_arrays(self, data):
        ups = data.draw(updates(self.arity, 30))
        shape = (len(ups),) if self.arity == 1 else (len(ups), self.arity)
        self.b.extend_arrays(
            np.array([t for t, _ in ups], dtype=np.uint64).reshape(shape),
            np.array([d for _, d in ups], dtype=np.int64),
        )
        self.r.extend(ups)

    @rule(data=st.data())
    def retract_some(self, data):
        # Cancel part of what is there: compaction must drop the zeros.
        current = self.r.items()
        if current:
            picked = data.draw(st.lists(st.sampled_from(current), max_size=len(current)))
            for t, d in picked:
                self.b.update(t, -d)
                self.r.update(t, -d)

    @rule()
    def compact(self):
        self.b.compact()

    @rule()
    def drain(self):
        assert self.b.drain() == self.r.drain()

    @precondition(lambda self: self.b.arity is not None)
    @rule()
    def drain_arrays(self):
        out_t, out_d = self.b.drain_arrays()
        assert list(zip(as_times(out_t, self.arity), out_d.tolist())) == self.r.drain()

    @rule()
    def clear(self):
        self.b.clear()
        self.r.clear()

    @invariant()
    def observables(self):
        expected = self.r.items()
        assert len(self.b) == len(expected)
        assert bool(self.b) == bool(expected)
        assert self.b.is_empty() == (not expected)
        assert list(self.b) == expected


ChangeBatchMachine.TestCase.settings = settings(max_examples=examples(0.25), stateful_step_count=15)
test_change_batch_machine = pytest.mark.slow(ChangeBatchMachine.TestCase)


@pytest.mark.slow
@settings(max_examples=examples(0.1))
@given(
    arities.flatmap(
        lambda a: st.lists(
            st.tuples(
                st.integers(0, 2**64 - 1)
                if a == 1
                else st.tuples(*([st.integers(0, 2**64 - 1) | st.integers(0, 3)] * a)),
                st.integers(-3, 3),
            ),
            max_size=400,
        )
    )
)
def test_many_distinct_times(ups):
    """Large batches of times spread over all 64 bits: the radix sort sees every byte."""
    b = ChangeBatch()
    for t, d in ups:
        b.update(t, d)
    b.extend(ups)  # doubles every diff, and the batch size, past the compaction threshold
    expected = ref.ChangeBatch([(t, 2 * d) for t, d in ups]).drain()
    assert list(b) == expected
    assert b.drain() == expected
