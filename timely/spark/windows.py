"""Event-time windows over a timestamp column, as Spark's
``window(column, windowDuration, slideDuration, startTime)`` defines them.

A window is ``[start, start + length)`` with ``start = offset + k * slide``
for an integer ``k``, in microseconds since 1970-01-01 00:00 UTC (for a
``timestamp_ntz`` column: of its wall-clock value); tumbling windows have
``slide == length``. A row belongs to every window holding its time (one
for tumbling windows, up to ``ceil(length / slide)`` for sliding ones); a row
whose time is null belongs to none and is left out, as Spark's
``groupBy(window(...))`` leaves it out.

:func:`timely.spark.run` with ``window=`` runs each window as one epoch:
window ``k`` at epoch ``k + 2**63`` (so that epochs keep the windows' order
before and after 1970). Every worker's result
for a window is complete when it is sent, exactly as Spark's batch
``groupBy`` is: a DataFrame has all its rows before any window completes, so
no row is late. Output rows are labelled with their window by the columns
the schema declares among ``window`` (Spark's ``struct<start, end>``),
``window_start`` and ``window_end``.

>>> w = Window("10 minutes", "5 minutes")
>>> w.length, w.slide, w.offset
(600000000, 300000000, 0)
>>> import numpy as np
>>> rows, epochs = w.assign(np.array([0, 420_000_000], dtype=np.int64), None)
>>> rows.tolist(), [w.bounds(int(e)) for e in epochs]
([0, 0, 1, 1], [(0, 600000000), (-300000000, 300000000), (300000000, 900000000), (0, 600000000)])
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import numpy as np

from timely.errors import ConfigurationError, SparkSchemaError

__all__ = ["Window", "duration"]

_SHIFT = 1 << 63
# Times this far from 1970 (about 36,000 years) or more are refused: the
# window arithmetic below then never overflows int64.
_LIMIT = 1 << 60

_UNITS = {
    "week": 604_800_000_000, "day": 86_400_000_000, "hour": 3_600_000_000,
    "minute": 60_000_000, "min": 60_000_000, "second": 1_000_000, "sec": 1_000_000,
    "millisecond": 1_000, "ms": 1_000, "microsecond": 1, "us": 1,
}
_PART = re.compile(r"\s*([+-]?\d+)\s*([a-z]+)\s*", re.IGNORECASE)


def duration(value: Any, what: str = "duration") -> int:
    """Microseconds of ``value``: a ``datetime.timedelta``, a
    ``numpy.timedelta64``, or text as Spark writes it (``"10 minutes"``,
    ``"1 hour 30 minutes"``, ``"interval 2 days"``; weeks to microseconds,
    no months or years, whose lengths vary).

    >>> duration("1 hour 30 minutes"), duration(datetime.timedelta(seconds=2))
    (5400000000, 2000000)
    """
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            raise ConfigurationError(f"the window's {what} is NaT")
        return int(value.astype("timedelta64[us]").astype(np.int64))
    if not isinstance(value, str):
        raise ConfigurationError(f"the window's {what} is text such as '10 minutes', a "
                                 f"datetime.timedelta or a numpy.timedelta64, not {value!r}")
    text = value.strip().lower()
    if text.startswith("interval"):
        text = text[len("interval"):]
    total, end = 0, 0
    for match in _PART.finditer(text):
        if match.start() != end:
            break
        name = match.group(2).lower()
        unit = _UNITS.get(name)
        if unit is None and name.endswith("s"):
            unit = _UNITS.get(name[:-1])
        if unit is None:
            raise ConfigurationError(
                f"the window's {what} {value!r} has the unit {match.group(2)!r}; windows are "
                "measured in weeks, days, hours, minutes, seconds, milliseconds (ms) and "
                "microseconds (us)")
        total += int(match.group(1)) * unit
        end = match.end()
    if end == 0 or end != len(text):
        raise ConfigurationError(f"the window's {what} {value!r} is not a duration such as "
                                 "'10 minutes' or '1 hour 30 minutes'")
    return total


class Window:
    """Windows of ``length``, one every ``slide`` (default: ``length``,
    tumbling), starting ``start`` after 1970-01-01 00:00 UTC modulo the
    slide (Spark's ``startTime``; default 0). Each a duration as
    :func:`duration` reads it; ``length`` and ``slide`` positive, and
    ``slide`` at most ``length``."""

    __slots__ = ("length", "offset", "slide")

    def __init__(self, length: Any, slide: Any = None, start: Any = None) -> None:
        self.length = duration(length, "length")
        self.slide = self.length if slide is None else duration(slide, "slide")
        offset = 0 if start is None else duration(start, "start")
        if self.length <= 0 or self.slide <= 0:
            raise ConfigurationError(f"the window's length and slide are positive, not "
                                     f"{length!r} and {slide!r}")
        if self.slide > self.length:
            raise ConfigurationError(f"the window's slide {slide!r} is longer than its length "
                                     f"{length!r}: rows between windows would be in none")
        if abs(offset) >= self.slide:
            raise ConfigurationError(f"the window's start {start!r} is not shorter than its "
                                     f"slide {slide if slide is not None else length!r}")
        self.offset = offset % self.slide

    def __repr__(self) -> str:
        return f"Window(length={self.length} us, slide={self.slide} us, start={self.offset} us)"

    @property
    def per_row(self) -> int:
        """The most windows one row belongs to."""
        return -(-self.length // self.slide)

    def assign(self, micros: np.ndarray, valid: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, epochs)``: for each window each row belongs to, the row's
        position and the window's epoch (uint64), rows in order and, for a
        row, its windows from the latest; a row not ``valid`` (null) in
        none. ``micros`` are int64 microseconds."""
        t = np.asarray(micros, dtype=np.int64)
        n = len(t)
        ok = np.ones(n, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
        if n and ok.any():
            live = t[ok]
            if int(live.min()) <= -_LIMIT or int(live.max()) >= _LIMIT:
                raise SparkSchemaError("a time is more than 36,000 years from 1970: windows "
                                       "cannot number it")
        t = np.where(ok, t, 0)
        latest = (t - self.offset) // self.slide               # floor division
        per = self.per_row
        ks = latest[:, None] - np.arange(per, dtype=np.int64)[None, :]
        inside = (ks * self.slide + self.offset + self.length) > t[:, None]
        inside &= ok[:, None]
        rows, which = np.nonzero(inside)
        epochs = ks[rows, which].view(np.uint64) + np.uint64(_SHIFT)
        return rows.astype(np.int64), epochs

    def bounds(self, epoch: int) -> tuple[int, int]:
        """``(start, end)`` in microseconds of the window at ``epoch``."""
        start = (epoch - _SHIFT) * self.slide + self.offset
        return start, start + self.length
