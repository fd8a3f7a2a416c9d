"""Timestamps and path summaries: compiled ``timely.progress.timestamp`` vs the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.progress.strategies import HUGE, MAX, arities, summary_increments, times
from tests.reference import timestamp as ref
from timely.progress import timestamp as ts
from timely.progress.timestamp import PathSummary


def test_max_coord():
    assert ts.MAX_COORD == 2**64 - 1 == ref.MAX_COORD


@pytest.mark.parametrize(
    "time, canonical",
    [(0, 0), (5, 5), ((5,), 5), ((MAX,), MAX), ((1, 2), (1, 2)), ((0, 0, MAX), (0, 0, MAX))],
)
def test_validate_canonical(time, canonical):
    assert ts.validate(time) == canonical == ref.validate(time)
    assert type(ts.validate(time)) is type(canonical)


@given(arities.flatmap(times))
def test_validate_roundtrip(time):
    assert ts.validate(time) == ref.validate(time) == time
    assert ts.arity_of(time) == ref.arity_of(time)
    assert ts.validate(time, ts.arity_of(time)) == time


@given(st.integers(1, 3), st.data())
def test_one_tuple_is_arity_one(_, data):
    c = data.draw(st.integers(0, MAX))
    assert ts.validate((c,)) == c
    assert ts.arity_of((c,)) == 1
    assert ts.validate((c,), 1) == c


@given(arities.flatmap(lambda a: st.tuples(times(a), times(a))))
def test_order(pair):
    a, b = pair
    assert ts.less_equal(a, b) == ref.less_equal(a, b)
    assert ts.less_than(a, b) == ref.less_than(a, b)
    assert ts.less_equal(a, a) and not ts.less_than(a, a)
    # The lexicographic sort order is a linear extension of the product order.
    if ref.less_equal(a, b):
        assert ref.sort_key(a) <= ref.sort_key(b)


@pytest.mark.parametrize("arity", [1, 2, 3, 5])
def test_minimum(arity):
    assert ts.minimum(arity) == ref.minimum(arity)


def summary_and_time(a):
    return st.tuples(summary_increments(a), summary_increments(a), times(a))


@given(arities.flatmap(summary_and_time))
def test_path_summary(triple):
    s_inc, o_inc, time = triple
    s, r = PathSummary(s_inc), ref.PathSummary(s_inc)
    o, ro = PathSummary(o_inc), ref.PathSummary(o_inc)
    assert s.arity == r.arity
    assert s.increments == r.increments == s_inc
    assert s.is_zero() == r.is_zero()
    assert s.results_in(time) == r.results_in(time)
    got = s.results_in(time)
    if got is not None:
        assert ref.less_equal(time, got)  # results_in only advances
    f, rf = s.followed_by(o), r.followed_by(ro)
    assert (f is None) == (rf is None)
    if f is not None:
        assert f.increments == rf.increments
        # Composition agrees with applying the summaries one after the other.
        step = s.results_in(time)
        assert f.results_in(time) == (None if step is None else o.results_in(step))
    assert s.followed_by(o_inc) == f or (f is None and s.followed_by(o_inc) is None)
    assert s.less_equal(o) == r.less_equal(ro)
    assert s.less_than(o) == r.less_than(ro)
    assert s.less_equal(o_inc) == r.less_equal(ro)
    assert (s == o) == (r == ro)
    if s == o:
        assert hash(s) == hash(o)
    assert s == PathSummary(s_inc) and hash(s) == hash(PathSummary(s_inc))


@pytest.mark.parametrize("arity", [1, 2, 3])
def test_zero_summary(arity):
    z = PathSummary.zero(arity)
    assert z.is_zero() and z.arity == arity
    assert z.increments == ref.PathSummary.zero(arity).increments
    assert z.results_in(ts.minimum(arity)) == ts.minimum(arity)


def test_summary_overflow_examples():
    assert PathSummary(1).results_in(MAX) is None
    assert PathSummary(1).results_in(MAX - 1) == MAX
    assert PathSummary((0, 1)).results_in((MAX, 3)) == (MAX, 4)
    assert PathSummary((0, 1)).results_in((3, MAX)) is None
    assert PathSummary(2**63).followed_by(2**63) is None
    assert PathSummary(2**63).followed_by(2**63 - 1).increments == MAX
    assert PathSummary((1, MAX)).followed_by((0, 1)) is None
    for h in HUGE:
        assert PathSummary(0).results_in(h) == h
