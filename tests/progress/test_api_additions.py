"""Progress API restating the crate: Location, path summaries, ChangeBatch
iter/drain_into, Antichain indexing."""

from __future__ import annotations

import pytest

import timely.progress as progress
from timely.errors import GraphError, TimestampError
from timely.progress import Antichain, ChangeBatch, Location, PathSummary, Source, Target


def test_location_kinds_round_trip():
    s, t = Location.new_source(1, 2), Location.new_target(1, 2)
    assert s != t and s.is_source and t.is_target
    assert s.as_source() == Source(1, 2) and t.as_target() == Target(1, 2)
    assert Location.of(Source(1, 2)) == s and Location.of(Target(1, 2)) == t
    with pytest.raises(GraphError):
        s.as_target()
    with pytest.raises(GraphError):
        Location.of((1, 2))
    assert "Location" in progress.__all__


def test_summaries_results_in_and_followed_by():
    # The crate's Product summaries: per-coordinate increments.
    a, b = PathSummary((0, 1)), PathSummary((1, 0))
    assert a.results_in((3, 4)) == (3, 5)
    assert a.followed_by(b) == PathSummary((1, 1))
    assert a.followed_by(b).results_in((0, 0)) == b.results_in(a.results_in((0, 0)))
    assert PathSummary(1).results_in(2**64 - 1) is None
    assert PathSummary(2**64 - 1).followed_by(PathSummary(1)) is None


def test_change_batch_iter_keeps_and_drain_into_moves():
    b = ChangeBatch([(5, 1), (3, 2), (5, 1), (4, 1), (4, -1)])
    assert list(b.iter()) == [(3, 2), (5, 2)]
    assert list(b.iter()) == [(3, 2), (5, 2)]     # not drained
    other = ChangeBatch([(3, -2), (7, 1)])
    b.drain_into(other)
    assert b.is_empty() and len(b) == 0
    assert other.drain() == [(5, 2), (7, 1)]
    fresh = ChangeBatch()
    ChangeBatch([((1, 2), 1)]).drain_into(fresh)
    assert fresh.arity == 2 and fresh.drain() == [((1, 2), 1)]
    with pytest.raises(TimestampError):
        ChangeBatch([(1, 1)]).drain_into(ChangeBatch(arity=2))
    same = ChangeBatch([(1, 1)])
    same.drain_into(same)
    assert same.drain() == [(1, 1)]


def test_antichain_indexing():
    a = Antichain([(2, 1), (1, 2), (3, 3)])
    assert [a[i] for i in range(len(a))] == a.elements() == [(1, 2), (2, 1)]
    assert a[-1] == (2, 1)
    with pytest.raises(IndexError):
        a[2]
    with pytest.raises(IndexError):
        Antichain()[0]
    assert Antichain([5])[0] == 5
