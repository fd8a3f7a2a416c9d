"""Malformed timestamps and summaries raise the typed errors, naming the offending value."""

from __future__ import annotations

import pytest

from tests.reference import timestamp as ref
from timely.errors import (
    CycleError,
    GraphError,
    SummaryError,
    TimelyError,
    TimestampError,
    TimestampTypeError,
)
from timely.progress import (
    Antichain,
    Builder,
    ChangeBatch,
    MutableAntichain,
    NotificationQueue,
    PathSummary,
    less_equal,
)
from timely.progress import timestamp as ts

MAX = 2**64 - 1


def test_hierarchy():
    assert issubclass(TimestampError, TimelyError) and issubclass(TimestampError, ValueError)
    assert issubclass(TimestampTypeError, TimelyError) and issubclass(TimestampTypeError, TypeError)
    assert issubclass(SummaryError, TimelyError) and issubclass(SummaryError, ValueError)
    assert issubclass(GraphError, TimelyError) and issubclass(GraphError, ValueError)
    assert issubclass(CycleError, GraphError)


# (bad time, expected error, the value its message must name) for structures of arity 2.
BAD_FOR_ARITY_2 = [
    (5, TimestampError, "5"),
    ((1, 2, 3), TimestampError, "(1, 2, 3)"),
    ((1, -1), TimestampError, "-1"),
    ((2**64, 0), TimestampError, str(2**64)),
    ((0, 2**70), TimestampError, str(2**70)),
    ((1, 2.5), TimestampTypeError, "2.5"),
    ((1.0, 2), TimestampTypeError, "1.0"),
    (("a", 2), TimestampTypeError, "'a'"),
    ((True, 2), TimestampTypeError, "True"),
    ((1, None), TimestampTypeError, "None"),
    (2.5, TimestampTypeError, "2.5"),
    ("x", TimestampTypeError, "'x'"),
    (None, TimestampTypeError, "None"),
    (False, TimestampTypeError, "False"),
]

# The same for arity 1.
BAD_FOR_ARITY_1 = [
    ((1, 2), TimestampError, "(1, 2)"),
    (-1, TimestampError, "-1"),
    (2**64, TimestampError, str(2**64)),
    ((2**64,), TimestampError, str(2**64)),
    ((-3,), TimestampError, "-3"),
    (1.0, TimestampTypeError, "1.0"),
    (float("nan"), TimestampTypeError, "nan"),
    ("1", TimestampTypeError, "'1'"),
    (b"1", TimestampTypeError, "b'1'"),
    (True, TimestampTypeError, "True"),
    (None, TimestampTypeError, "None"),
    ((1.5,), TimestampTypeError, "1.5"),
]


def entry_points(arity):
    """Every public function that takes a timestamp, on a structure of this arity."""
    good = 0 if arity == 1 else (0,) * arity
    cb = ChangeBatch(arity=arity)
    an = Antichain(arity=arity)
    ma = MutableAntichain(arity=arity)
    no = NotificationQueue(arity=arity)
    b = Builder(arity)
    b.add_node(0, 1, 1, [[[]]])
    tracker, _ = b.build()
    return {
        "validate": lambda t: ts.validate(t, arity),
        "less_equal": lambda t: less_equal(good, t),
        "ChangeBatch.update": lambda t: cb.update(t, 1),
        "ChangeBatch()": lambda t: ChangeBatch([(t, 1)], arity=arity),
        "Antichain.insert": an.insert,
        "Antichain.less_equal": an.less_equal,
        "Antichain()": lambda t: Antichain([t], arity=arity),
        "MutableAntichain.update": lambda t: ma.update(t, 1),
        "MutableAntichain.update_iter": lambda t: ma.update_iter([(t, 1)]),
        "MutableAntichain.count_for": ma.count_for,
        "NotificationQueue.notify_at": no.notify_at,
        "Tracker.update_source": lambda t: tracker.update_source((0, 0), t, 1),
        "Tracker.update_target": lambda t: tracker.update_target((0, 0), t, 1),
        "PathSummary.results_in": lambda t: PathSummary(good).results_in(t),
    }


def cases():
    for arity, table in [(1, BAD_FOR_ARITY_1), (2, BAD_FOR_ARITY_2)]:
        for name in entry_points(1):
            for bad, error, named in table:
                yield pytest.param(arity, name, bad, error, named, id=f"{arity}-{name}-{bad!r}")


@pytest.mark.parametrize("arity, name, bad, error, named", list(cases()))
def test_bad_timestamp(arity, name, bad, error, named):
    call = entry_points(arity)[name]
    with pytest.raises(error) as info:
        call(bad)
    assert named in str(info.value), f"{info.value!s} does not name {named}"
    assert isinstance(info.value, TimelyError)
    # The oracle agrees on the error class.
    with pytest.raises(error):
        ref.validate(bad, arity)


@pytest.mark.parametrize("bad", [-1, 2**64, (0, -1), (2**64, 0)])
def test_bad_summary_values(bad):
    with pytest.raises(SummaryError) as info:
        PathSummary(bad)
    named = bad if isinstance(bad, int) else next(c for c in bad if not 0 <= c <= MAX)
    assert str(named) in str(info.value)


@pytest.mark.parametrize("bad", [1.5, "1", None, True, (1, 2.0)])
def test_bad_summary_types(bad):
    with pytest.raises((SummaryError, TimestampTypeError)):
        PathSummary(bad)


def test_summary_arity_mismatch():
    with pytest.raises(SummaryError):
        PathSummary((1, 2)).followed_by((1, 2, 3))
    with pytest.raises(TimestampError):
        PathSummary((1, 2)).results_in(3)


def test_arity_is_fixed_by_the_first_time():
    for make in (ChangeBatch, Antichain, MutableAntichain, NotificationQueue):
        s = make()
        assert s.arity is None
    cb = ChangeBatch()
    cb.update((1, 2), 1)
    assert cb.arity == 2
    with pytest.raises(TimestampError) as info:
        cb.update(3, 1)
    assert "3" in str(info.value)
    assert cb.drain() == [((1, 2), 1)]  # the failed update left no trace
    ma = MutableAntichain()
    ma.update(7, 1)
    with pytest.raises(TimestampError):
        ma.update((7, 7), 1)
    assert ma.updates() == [(7, 1)]
    n = NotificationQueue()
    n.notify_at((1, 1, 1))
    with pytest.raises(TimestampError):
        n.notify_at((1, 1))
    assert n.pending() == [((1, 1, 1), 1)]


def test_failed_update_leaves_no_trace():
    cb = ChangeBatch(arity=1)
    cb.update(3, 2)
    with pytest.raises(TimestampError):
        cb.update(-3, 1)
    with pytest.raises(TimestampTypeError):
        cb.update(3.0, 1)
    assert cb.drain() == [(3, 2)]
    an = Antichain([5])
    with pytest.raises(TimestampTypeError):
        an.insert("0")
    assert an.elements() == [5]


def test_graph_errors():
    b = Builder(1)
    b.add_node(0, 0, 1, [])
    b.add_node(1, 1, 1, [[[0]]])
    for source, target in [((0, 0), (2, 0)), ((0, 1), (1, 0)), ((0, 0), (1, 1)), ((5, 0), (1, 0))]:
        with pytest.raises(GraphError):
            bad = Builder(1)
            bad.add_node(0, 0, 1, [])
            bad.add_node(1, 1, 1, [[[0]]])
            bad.add_edge(source, target)
            bad.build()
