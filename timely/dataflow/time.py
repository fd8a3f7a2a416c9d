"""Moving timestamps and summaries between a scope and its parent.

A child scope's timestamps extend its parent's by one coordinate (the
innermost, e.g. an iteration counter): entering appends a zero, leaving drops
the last coordinate. Timestamps are ints at arity 1 and tuples otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from timely.errors import SummaryError
from timely.progress.timestamp import PathSummary

if TYPE_CHECKING:
    import datetime

    import numpy as np

Time = Union[int, tuple[int, ...]]
"""A timestamp: an int at the root of a dataflow, a tuple of ints in a nested scope."""

TimeLike = Union[int, tuple[Union[int, "datetime.datetime", "np.datetime64"], ...],
                 "datetime.datetime", "np.datetime64"]
"""What an input accepts as a time: a :data:`Time`, or instants
(``datetime``, ``numpy.datetime64``) converted by :func:`from_datetime`."""


def to_inner(time: Any, outer_arity: int) -> tuple[int, ...]:
    """``time`` of the parent scope as a time of the child (innermost coordinate 0)."""
    if outer_arity == 1:
        return (time, 0)
    return (*time, 0)


def to_outer(time: tuple[int, ...]) -> Time:
    """A child scope's time as its parent's: the last coordinate dropped."""
    if len(time) == 2:
        return time[0]
    return time[:-1]


def summary_for(summary: PathSummary | int | tuple[int, ...] | list[int],
                arity: int) -> PathSummary:
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


def outer_summary(increments: tuple[int, ...]) -> tuple[int, ...] | int:
    """The parent-scope part of a child summary (its last increment dropped)."""
    if len(increments) == 2:
        return increments[0]
    return tuple(increments[:-1])


def minimum(arity: int) -> Time:
    return 0 if arity == 1 else (0,) * arity


# -- wall-clock epochs ---------------------------------------------------------
#
# Timestamps are unsigned integers. A stream whose epochs are instants uses
# nanoseconds since the Unix epoch (1970-01-01T00:00:00 UTC): inputs accept a
# ``datetime.datetime`` or a ``numpy.datetime64`` and convert it at the edge
# with ``from_datetime``; ``to_datetime64``/``to_datetime`` map a time back.

_UNIX_EPOCH = None


def from_datetime(value: TimeLike) -> Time:
    """``value`` as a timestamp coordinate: nanoseconds since the Unix epoch
    for a ``datetime`` (naive ones are taken as UTC) or a ``numpy.datetime64``
    (any unit); a tuple converts each coordinate; anything else is returned
    unchanged. Instants before 1970 raise ``TimestampError``.

    >>> import datetime, numpy as np
    >>> from timely.dataflow.time import from_datetime, to_datetime, to_datetime64
    >>> t = from_datetime(np.datetime64("2024-01-02T03:04:05.000000006"))
    >>> print(t, to_datetime64(t))
    1704164645000000006 2024-01-02T03:04:05.000000006
    >>> to_datetime(from_datetime(datetime.datetime(2024, 1, 2, 3, 4, 5)))
    datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    >>> from_datetime((datetime.datetime(1970, 1, 1, 0, 0, 1), 7))
    (1000000000, 7)
    """
    if type(value) is int:
        return value
    import datetime

    import numpy as np

    from timely.errors import TimestampError

    global _UNIX_EPOCH
    if isinstance(value, tuple):
        # each coordinate converts to an int (a tuple holds no tuples)
        return tuple(from_datetime(v) for v in value)  # type: ignore[misc]
    if isinstance(value, datetime.datetime):
        if _UNIX_EPOCH is None:
            _UNIX_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        ns = (value - _UNIX_EPOCH) // datetime.timedelta(microseconds=1) * 1000
    elif isinstance(value, np.datetime64):
        if np.isnat(value):
            raise TimestampError("NaT is not a time")
        ns = int(value.astype("datetime64[ns]").astype(np.int64))
    else:
        return value
    if ns < 0:
        raise TimestampError(f"{value!r} is before the Unix epoch: timestamps are unsigned")
    return ns


def to_datetime64(time: int) -> np.datetime64:
    """A timestamp of nanoseconds since the Unix epoch as ``numpy.datetime64[ns]``."""
    import numpy as np

    return np.datetime64(int(time), "ns")


def to_datetime(time: int) -> datetime.datetime:
    """A timestamp of nanoseconds since the Unix epoch as an aware UTC
    ``datetime`` (whose resolution is a microsecond: nanoseconds are dropped)."""
    import datetime

    return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
        microseconds=int(time) // 1000)
