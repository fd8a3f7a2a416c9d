"""NotificationQueue: compiled ``timely.progress.NotificationQueue`` vs the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.progress.strategies import arities, diffs, examples, times
from tests.reference import frontier as ref_frontier
from tests.reference import notificator as ref
from timely.progress import Antichain, MutableAntichain, NotificationQueue


def test_doc_example():
    n = NotificationQueue()
    n.notify_at(5)
    n.notify_at(3)
    n.notify_at(5)
    n.make_available([Antichain([4])])
    assert (n.next(), n.next()) == ((3, 1), None)
    assert n.pending() == [(5, 2)]
    assert n.drain([Antichain()]) == [(5, 2)]
    assert n.is_empty()


@st.composite
def frontier_pairs(draw, arity):
    """A list of frontiers, each as (compiled, oracle): Antichains and MutableAntichains."""
    out = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            elems = draw(st.lists(times(arity), max_size=4))
            out.append((Antichain(elems, arity=arity), ref_frontier.Antichain(elems, arity=arity)))
        else:
            ups = draw(st.lists(st.tuples(times(arity), diffs), max_size=6))
            m, r = MutableAntichain(arity=arity), ref_frontier.MutableAntichain(arity=arity)
            m.update_iter(ups)
            r.update_iter(ups)
            out.append((m, r))
    return out


class NotificatorMachine(RuleBasedStateMachine):
    @initialize(arity=arities, fixed=st.booleans())
    def setup(self, arity, fixed):
        self.arity = arity
        self.n = NotificationQueue(arity=arity) if fixed else NotificationQueue()
        self.r = ref.NotificationQueue(arity=arity)

    @rule(data=st.data(), count=st.integers(1, 3))
    def notify_at(self, data, count):
        t = data.draw(times(self.arity))
        if count == 1 and data.draw(st.booleans()):
            self.n.notify_at(t)
        else:
            self.n.notify_at(t, count)
        self.r.notify_at(t, count)

    @rule(data=st.data())
    def make_available(self, data):
        fronts = data.draw(frontier_pairs(self.arity))
        self.n.make_available(iter([c for c, _ in fronts]))
        self.r.make_available([o for _, o in fronts])

    @rule()
    def next(self):
        assert self.n.next() == self.r.next()

    @rule(data=st.data())
    def next_with_frontiers(self, data):
        fronts = data.draw(frontier_pairs(self.arity))
        assert self.n.next([c for c, _ in fronts]) == self.r.next([o for _, o in fronts])

    @rule()
    def drain(self):
        assert self.n.drain() == self.r.drain()

    @rule(data=st.data())
    def drain_with_frontiers(self, data):
        fronts = data.draw(frontier_pairs(self.arity))
        assert self.n.drain([c for c, _ in fronts]) == self.r.drain([o for _, o in fronts])

    @invariant()
    def observables(self):
        assert self.n.pending() == self.r.pending()
        assert self.n.pending_len() == self.r.pending_len()
        assert self.n.available_len() == self.r.available_len()
        assert self.n.is_empty() == self.r.is_empty()


NotificatorMachine.TestCase.settings = settings(max_examples=examples(0.25), stateful_step_count=15)
test_notificator_machine = pytest.mark.slow(NotificatorMachine.TestCase)


@given(
    arities.flatmap(
        lambda a: st.tuples(
            st.just(a), st.lists(times(a), max_size=30), st.lists(times(a), max_size=4)
        )
    )
)
def test_release_in_time_order(case):
    """Everything the frontier no longer covers comes out once, in time order, coalesced."""
    arity, requests, frontier = case
    n, r = NotificationQueue(arity=arity), ref.NotificationQueue(arity=arity)
    for t in requests:
        n.notify_at(t)
        r.notify_at(t)
    out = []
    while (item := n.next([Antichain(frontier, arity=arity)])) is not None:
        out.append(item)
    assert out == r.drain([ref_frontier.Antichain(frontier, arity=arity)])
    assert sum(c for _, c in out) + sum(c for _, c in n.pending()) == len(requests)
    for t, _ in n.pending():
        assert Antichain(frontier, arity=arity).less_equal(t)
