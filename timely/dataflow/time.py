"""Moving timestamps and summaries between a scope and its parent.

A child scope's timestamps extend its parent's by one coordinate (the
innermost, e.g. an iteration counter): entering appends a zero, leaving drops
the last coordinate. Timestamps are ints at arity 1 and tuples otherwise.
"""

from __future__ import annotations

from timely.errors import SummaryError
from timely.progress.timestamp import PathSummary


def to_inner(time, outer_arity: int):
    """``time`` of the parent scope as a time of the child (innermost coordinate 0)."""
    if outer_arity == 1:
        return (time, 0)
    return (*time, 0)


def to_outer(time):
    """A child scope's time as its parent's: the last coordinate dropped."""
    if len(time) == 2:
        return time[0]
    return time[:-1]


def summary_for(summary, arity: int) -> PathSummary:
    """A user-given summary at a scope of ``arity``: an int increments the
    innermost coordinate; a tuple gives every coordinate."""
    if isinstance(summary, PathSummary):
        if summary.arity != arity:
            raise SummaryError(f"summary {summary!r} has arity {summary.arity}; this scope has {arity}")
        return summary
    if isinstance(summary, (tuple, list)):
        if len(summary) != arity:
            raise SummaryError(f"summary {summary!r} has {len(summary)} increments; this scope has {arity}")
        return PathSummary(tuple(summary))
    if arity == 1:
        return PathSummary(summary)
    if isinstance(summary, bool) or not isinstance(summary, int):
        raise SummaryError(f"summary {summary!r} is not an int or a tuple of ints")
    return PathSummary((0,) * (arity - 1) + (summary,))


def outer_summary(increments) -> tuple | int:
    """The parent-scope part of a child summary (its last increment dropped)."""
    if len(increments) == 2:
        return increments[0]
    return tuple(increments[:-1])


def minimum(arity: int):
    return 0 if arity == 1 else (0,) * arity
