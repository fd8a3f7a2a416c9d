from typing_extensions import disjoint_base
from collections.abc import Iterable, Iterator

from timely.progress._timestamp import Time

@disjoint_base
class Antichain:
    """A set of mutually incomparable timestamps: the lower boundary of a set of times.

    ``insert`` keeps only minimal elements. Elements are kept in lexicographic
    order. Operations cost O(len * arity).

    >>> a = Antichain([(0, 3), (1, 1), (2, 2)])
    >>> a.elements()
    [(0, 3), (1, 1)]
    >>> a.less_equal((1, 5)), a.less_equal((0, 2))
    (True, False)
    """

    def __init__(self, elements: Iterable[Time] = (), *, arity: int | None = None) -> None: ...
    @staticmethod
    def from_elem(time: Time) -> Antichain: ...
    @property
    def arity(self) -> int | None: ...
    def insert(self, time: Time) -> bool:
        """Adds ``time`` unless some element is <= it, removing elements >= it; True if added."""

    def extend(self, times: Iterable[Time]) -> bool: ...
    def less_than(self, time: Time) -> bool:
        """Some element is strictly less than ``time``."""

    def less_equal(self, time: Time) -> bool:
        """Some element is less than or equal to ``time``."""

    def dominates(self, other: Antichain) -> bool:
        """Every element of ``other`` is >= some element of this antichain."""

    def elements(self) -> list[Time]: ...
    def is_empty(self) -> bool: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Time]: ...
    def __getitem__(self, index: int) -> Time:
        """The element at ``index`` in lexicographic order."""

    def __contains__(self, time: object, /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@disjoint_base
class MutableAntichain:
    """Counts per timestamp, and the antichain of minimal times with positive count.

    Counts may be transiently negative; only positive counts shape the frontier.
    Times are kept in a balanced search tree ordered lexicographically, each
    subtree annotated with the coordinate-wise minimum of its positive times, so
    an update costs O(log n) and retiring a frontier element visits only the
    subtrees that can hold a new minimal element: O(log n) per new frontier
    element for totally ordered times, rather than a rescan of every time.

    >>> m = MutableAntichain()
    >>> m.update_iter([(3, 1), (5, 1)])
    [(3, 1)]
    >>> m.update_iter([(3, -1)])
    [(3, -1), (5, 1)]
    """

    def __init__(self, *, arity: int | None = None) -> None: ...
    @staticmethod
    def from_elem(time: Time) -> MutableAntichain: ...
    @property
    def arity(self) -> int | None: ...
    def update_iter(self, updates: Iterable[tuple[Time, int]]) -> list[tuple[Time, int]]:
        """Applies the updates; returns the net changes to the frontier, in time order."""

    def update(self, time: Time, diff: int) -> list[tuple[Time, int]]: ...
    def frontier(self) -> Antichain: ...
    def count_for(self, time: Time) -> int: ...
    def less_than(self, time: Time) -> bool: ...
    def less_equal(self, time: Time) -> bool: ...
    def is_empty(self) -> bool:
        """No time has a positive count (the frontier is empty)."""

    def updates(self) -> list[tuple[Time, int]]:
        """Every time with a non-zero count, in time order."""

    def clear(self) -> None: ...
    def __len__(self) -> int:
        """The number of times with a non-zero count."""
