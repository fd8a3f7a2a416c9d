"""Oracle for timestamps and path summaries.

A timestamp is an ``int`` (arity 1) or a tuple of ``int`` (arity = its length),
every coordinate in ``[0, 2**64)``. A 1-tuple is accepted and canonicalised to
an ``int``. The partial order is the product order; the sort order is
lexicographic over the coordinates, a linear extension of it.

A path summary is a row of non-negative per-coordinate increments.
"""

from __future__ import annotations

from timely.errors import SummaryError, TimestampError, TimestampTypeError

MAX_COORD = 2**64 - 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def coords(time: object) -> tuple[int, ...]:
    """The coordinates of an already valid timestamp, as a tuple."""
    return (time,) if isinstance(time, int) else tuple(time)  # type: ignore[arg-type]


def from_coords(values: tuple[int, ...] | list[int]) -> int | tuple[int, ...]:
    """The canonical timestamp with these coordinates."""
    values = tuple(values)
    return values[0] if len(values) == 1 else values


def arity_of(time: object) -> int:
    return len(coords(validate(time)))


def validate(time: object, arity: int | None = None) -> int | tuple[int, ...]:
    """The canonical form of ``time``; raises TimestampTypeError / TimestampError."""
    if _is_int(time):
        values: tuple[int, ...] = (time,)  # type: ignore[assignment]
    elif isinstance(time, tuple):
        if len(time) == 0:
            raise TimestampError(f"a timestamp needs at least one coordinate, got {time!r}")
        for value in time:
            if not _is_int(value):
                raise TimestampTypeError(
                    f"timestamp coordinates must be ints, got {value!r} in {time!r}"
                )
        values = time
    else:
        raise TimestampTypeError(f"a timestamp is an int or a tuple of ints, got {time!r}")
    for value in values:
        if not 0 <= value <= MAX_COORD:
            raise TimestampError(f"timestamp coordinate {value!r} outside [0, 2**64) in {time!r}")
    if arity is not None and len(values) != arity:
        raise TimestampError(f"expected a timestamp of arity {arity}, got {time!r}")
    return from_coords(values)


def less_equal(a: object, b: object) -> bool:
    """Product order: every coordinate of ``a`` is <= the coordinate of ``b``."""
    ca = coords(validate(a))
    cb = coords(validate(b, len(ca)))
    return all(x <= y for x, y in zip(ca, cb))


def less_than(a: object, b: object) -> bool:
    return less_equal(a, b) and coords(a) != coords(b)


def sort_key(time: object) -> tuple[int, ...]:
    """Lexicographic order over the coordinates (a linear extension of less_equal)."""
    return coords(time)


def minimum(arity: int) -> int | tuple[int, ...]:
    return from_coords((0,) * arity)


def _summary_coords(value: object) -> tuple[int, ...]:
    if isinstance(value, PathSummary):
        return value.coords
    if _is_int(value):
        values: tuple[int, ...] = (value,)  # type: ignore[assignment]
    elif isinstance(value, tuple) and len(value) > 0 and all(_is_int(v) for v in value):
        values = value
    else:
        raise SummaryError(f"a path summary is an int or a tuple of ints, got {value!r}")
    for v in values:
        if not 0 <= v <= MAX_COORD:
            raise SummaryError(f"summary increment {v!r} outside [0, 2**64) in {value!r}")
    return values


class PathSummary:
    """Per-coordinate increments; ``results_in`` adds them, None on overflow."""

    def __init__(self, increments: object) -> None:
        self.coords = _summary_coords(increments)

    @staticmethod
    def zero(arity: int) -> PathSummary:
        return PathSummary((0,) * arity)

    @property
    def arity(self) -> int:
        return len(self.coords)

    @property
    def increments(self) -> int | tuple[int, ...]:
        return from_coords(self.coords)

    def _other(self, other: object) -> tuple[int, ...]:
        values = _summary_coords(other)
        if len(values) != len(self.coords):
            raise SummaryError(f"summaries of different arity: {self!r} and {other!r}")
        return values

    def results_in(self, time: object) -> int | tuple[int, ...] | None:
        values = coords(validate(time, self.arity))
        out = [t + s for t, s in zip(values, self.coords)]
        if any(v > MAX_COORD for v in out):
            return None
        return from_coords(out)

    def followed_by(self, other: object) -> PathSummary | None:
        out = tuple(a + b for a, b in zip(self.coords, self._other(other)))
        if any(v > MAX_COORD for v in out):
            return None
        return PathSummary(out)

    def less_equal(self, other: object) -> bool:
        return all(a <= b for a, b in zip(self.coords, self._other(other)))

    def less_than(self, other: object) -> bool:
        return self.less_equal(other) and self.coords != self._other(other)

    def is_zero(self) -> bool:
        return all(v == 0 for v in self.coords)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathSummary) and self.coords == other.coords

    def __hash__(self) -> int:
        return hash(self.coords)

    def __repr__(self) -> str:
        return f"PathSummary({self.increments!r})"
