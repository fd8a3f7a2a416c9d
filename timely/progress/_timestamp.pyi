from typing_extensions import disjoint_base
from typing import Union

Time = Union[int, tuple[int, ...]]
"""A timestamp: an int (arity 1) or a tuple of ints (arity = its length).

Coordinates lie in ``[0, 2**64)``. A tuple of length 1 is accepted as arity 1 and
comes back as an int. Structures fix their arity at construction (``arity=``) or
on the first timestamp they see; a timestamp of another arity raises
``TimestampError``; a non-integer raises ``TimestampTypeError``.
"""

SummaryLike = Union["PathSummary", int, tuple[int, ...]]

MAX_COORD: int  # 2**64 - 1

def arity_of(time: Time) -> int: ...
def validate(time: Time, arity: int | None = None) -> Time:
    """The timestamp in canonical form (int for arity 1, tuple otherwise); raises on bad input."""

def less_equal(a: Time, b: Time) -> bool:
    """Product partial order: every coordinate of ``a`` <= that of ``b``."""

def less_than(a: Time, b: Time) -> bool: ...
def minimum(arity: int) -> Time:
    """The least timestamp of an arity: ``0`` or ``(0, ..., 0)``."""

@disjoint_base
class PathSummary:
    """Per-coordinate non-negative increments applied to a timestamp along a path.

    >>> PathSummary((0, 1)).results_in((3, 4))
    (3, 5)
    >>> PathSummary(1).results_in(2**64 - 1) is None
    True
    """

    def __init__(self, increments: SummaryLike) -> None: ...
    @staticmethod
    def zero(arity: int) -> PathSummary: ...
    @property
    def arity(self) -> int: ...
    @property
    def increments(self) -> Time: ...
    def results_in(self, time: Time) -> Time | None:
        """``time`` advanced by the summary, or None when a coordinate overflows."""

    def followed_by(self, other: SummaryLike) -> PathSummary | None:
        """The summary of this path followed by ``other``; None on overflow."""

    def less_equal(self, other: SummaryLike) -> bool: ...
    def less_than(self, other: SummaryLike) -> bool: ...
    def is_zero(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
