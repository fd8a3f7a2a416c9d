"""Antichain and MutableAntichain: compiled ``timely.progress.frontier`` vs the oracles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.progress.strategies import arities, diffs, examples, times
from tests.reference import frontier as ref
from timely.progress import Antichain, MutableAntichain


def time_lists(arity, max_size=20):
    return st.lists(times(arity), max_size=max_size)


@given(
    arities.flatmap(lambda a: st.tuples(st.just(a), time_lists(a), time_lists(a), time_lists(a)))
)
def test_antichain(case):
    arity, inserts, other, probes = case
    a, r = Antichain(arity=arity), ref.Antichain(arity=arity)
    assert a.arity == arity
    for t in inserts:
        assert a.insert(t) == r.insert(t)
        assert a.elements() == r.elements()
    assert list(a) == r.elements()
    assert len(a) == len(r)
    assert a.is_empty() == r.is_empty()
    assert Antichain(inserts).elements() == r.elements()
    for t in probes + inserts:
        assert a.less_equal(t) == r.less_equal(t)
        assert a.less_than(t) == r.less_than(t)
        assert (t in a) == (t in r)
    b, rb = Antichain(other, arity=arity), ref.Antichain(other, arity=arity)
    assert a.dominates(b) == r.dominates(rb)
    assert b.dominates(a) == rb.dominates(r)
    assert a.dominates(a)
    assert (a == b) == (r == rb)
    assert a == Antichain(reversed(inserts), arity=arity)
    assert hash(a) == hash(Antichain(reversed(inserts), arity=arity))
    c, rc = Antichain(inserts, arity=arity), ref.Antichain(inserts, arity=arity)
    assert c.extend(other) == rc.extend(other)
    assert c.elements() == rc.elements()
    c.clear()
    assert c.is_empty() and len(c) == 0 and c.elements() == []


@given(arities.flatmap(times))
def test_antichain_from_elem(t):
    a = Antichain.from_elem(t)
    assert a.elements() == [t] and len(a) == 1 and t in a
    assert a.less_equal(t) and not a.less_than(t)


def test_antichain_doc_example():
    a = Antichain([(0, 3), (1, 1), (2, 2)])
    assert a.elements() == [(0, 3), (1, 1)]
    assert a.less_equal((1, 5)) and not a.less_equal((0, 2))
    assert Antichain() == Antichain()


def update_lists(arity, max_size=50):
    return st.lists(st.tuples(times(arity), diffs), max_size=max_size)


@given(
    arities.flatmap(
        lambda a: st.tuples(
            st.just(a), st.lists(update_lists(a, 10), max_size=5), time_lists(a, 10)
        )
    )
)
def test_mutable_antichain_sequences(case):
    _, batches, probes = case
    m, r = MutableAntichain(), ref.MutableAntichain()
    for batch in batches:
        assert m.update_iter(batch) == r.update_iter(batch)
        assert m.frontier().elements() == r.frontier_elements()
        assert m.updates() == r.updates()
    for t in probes:
        assert m.count_for(t) == r.count_for(t)
        assert m.less_equal(t) == r.less_equal(t)
        assert m.less_than(t) == r.less_than(t)


@given(arities.flatmap(times))
def test_mutable_antichain_from_elem(t):
    m = MutableAntichain.from_elem(t)
    assert m.frontier().elements() == [t]
    assert m.count_for(t) == 1 and len(m) == 1 and not m.is_empty()
    assert m.update(t, -1) == [(t, -1)]
    assert m.is_empty() and len(m) == 0


def test_mutable_antichain_doc_example():
    m = MutableAntichain()
    assert m.update_iter([(3, 1), (5, 1)]) == [(3, 1)]
    assert m.update_iter([(3, -1)]) == [(3, -1), (5, 1)]


def test_negative_counts_do_not_shape_the_frontier():
    m = MutableAntichain()
    assert m.update((1, 1), -1) == []
    assert m.is_empty() and m.count_for((1, 1)) == -1 and len(m) == 1
    assert m.update((2, 2), 1) == [((2, 2), 1)]
    assert m.update((1, 1), 2) == [((1, 1), 1), ((2, 2), -1)]
    assert m.update((1, 1), -1) == [((1, 1), -1), ((2, 2), 1)]
    assert m.updates() == [((2, 2), 1)]


class MutableAntichainMachine(RuleBasedStateMachine):
    """Every observable of the compiled counted antichain equals the oracle's after every step."""

    @initialize(arity=arities, fixed=st.booleans())
    def setup(self, arity, fixed):
        self.arity = arity
        self.m = MutableAntichain(arity=arity) if fixed else MutableAntichain()
        self.r = ref.MutableAntichain(arity=arity)
        self.seen = []

    @rule(data=st.data())
    def update(self, data):
        t, d = data.draw(times(self.arity)), data.draw(diffs)
        self.seen.append(t)
        assert self.m.update(t, d) == self.r.update(t, d)

    @rule(data=st.data())
    def update_iter(self, data):
        batch = data.draw(update_lists(self.arity, 12))
        self.seen.extend(t for t, _ in batch)
        assert self.m.update_iter(iter(batch)) == self.r.update_iter(batch)

    @rule(data=st.data())
    def retire_frontier_element(self, data):
        # Remove every count at one frontier element: the hard case for an incremental
        # structure (the elements it dominated may surface).
        front = self.r.frontier_elements()
        if front:
            t = data.draw(st.sampled_from(front))
            d = -self.r.count_for(t)
            assert self.m.update(t, d) == self.r.update(t, d)

    @rule(data=st.data())
    def cancel_all(self, data):
        batch = [(t, -c) for t, c in self.r.updates()]
        batch = data.draw(st.permutations(batch)) if batch else batch
        assert self.m.update_iter(batch) == self.r.update_iter(batch)
        assert self.m.is_empty() and len(self.m) == 0

    @rule()
    def clear(self):
        self.m.clear()
        self.r.clear()

    @invariant()
    def observables(self):
        front = self.m.frontier()
        assert front.elements() == self.r.frontier_elements()
        assert self.m.is_empty() == (not self.r.frontier_elements())
        assert self.m.updates() == self.r.updates()
        assert len(self.m) == len(self.r)
        for t in self.seen[-8:]:
            assert self.m.count_for(t) == self.r.count_for(t)
            assert self.m.less_equal(t) == self.r.less_equal(t)
            assert self.m.less_than(t) == self.r.less_than(t)


MutableAntichainMachine.TestCase.settings = settings(
    max_examples=examples(0.25), stateful_step_count=15
)
test_mutable_antichain_machine = pytest.mark.slow(MutableAntichainMachine.TestCase)


def wide_times(arity):
    """Many distinct times (deep search trees), some anywhere in [0, 2**64)."""
    c = st.one_of(st.integers(0, 20), st.integers(0, 20), st.integers(0, 2**64 - 1))
    return c if arity == 1 else st.tuples(*([c] * arity))


@pytest.mark.slow
@settings(max_examples=examples(0.1))
@given(
    arities.flatmap(
        lambda a: st.tuples(
            st.just(a),
            st.lists(
                st.lists(st.tuples(wide_times(a), st.sampled_from([-1, 1, 1, 2])), max_size=60),
                max_size=8,
            ),
        )
    ),
    st.data(),
)
def test_mutable_antichain_many_times(case, data):
    """Hundreds of distinct times, then retiring the frontier element by element: the
    search tree grows, rebalances and shrinks (counts returning to zero free nodes)."""
    _, batches = case
    m, r = MutableAntichain(), ref.MutableAntichain()
    for batch in batches:
        assert m.update_iter(batch) == r.update_iter(batch)
        assert m.updates() == r.updates()
    while not r.is_empty():
        t = data.draw(st.sampled_from(r.frontier_elements()))
        d = -r.count_for(t)
        assert m.update(t, d) == r.update(t, d)
        assert len(m) == len(r)
    assert m.is_empty() and m.updates() == r.updates()
    # Everything left is non-positive; re-adding it all brings each time back to zero.
    batch = [(t, -c) for t, c in r.updates()]
    assert m.update_iter(batch) == r.update_iter(batch)
    assert len(m) == 0 and m.updates() == []
