"""Oracles for Antichain and MutableAntichain.

``MutableAntichain`` is modelled as the Rust crate models it: a count per time,
and the frontier is the set of minimal times among those with a positive count.
Every method recomputes what it needs from the counts; nothing is incremental.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tests.reference.timestamp import arity_of, less_equal, less_than, sort_key, validate


def minimal(times: Iterable[object]) -> list[object]:
    """The minimal elements of a set of times, sorted lexicographically."""
    distinct = set(times)
    return sorted((t for t in distinct if not any(less_than(u, t) for u in distinct)), key=sort_key)


class Antichain:
    """A set of mutually incomparable times."""

    def __init__(self, elements: Iterable[object] = (), *, arity: int | None = None):
        self.arity = arity
        self._elements: list[object] = []
        self.extend(elements)

    @staticmethod
    def from_elem(time: object) -> Antichain:
        return Antichain([time])

    def _validate(self, time: object) -> object:
        time = validate(time, self.arity)
        if self.arity is None:
            self.arity = arity_of(time)
        return time

    def insert(self, time: object) -> bool:
        time = self._validate(time)
        if any(less_equal(e, time) for e in self._elements):
            return False
        self._elements = [e for e in self._elements if not less_equal(time, e)] + [time]
        self._elements.sort(key=sort_key)
        return True

    def extend(self, times: Iterable[object]) -> bool:
        added = False
        for time in times:
            added |= self.insert(time)
        return added

    def less_than(self, time: object) -> bool:
        time = self._validate(time)
        return any(less_than(e, time) for e in self._elements)

    def less_equal(self, time: object) -> bool:
        time = self._validate(time)
        return any(less_equal(e, time) for e in self._elements)

    def dominates(self, other: Antichain) -> bool:
        return all(any(less_equal(e, t) for e in self._elements) for t in other.elements())

    def elements(self) -> list[object]:
        return list(self._elements)

    def is_empty(self) -> bool:
        return not self._elements

    def clear(self) -> None:
        self._elements = []

    def __len__(self) -> int:
        return len(self._elements)

    def __iter__(self) -> Iterator[object]:
        return iter(list(self._elements))

    def __contains__(self, time: object) -> bool:
        return time in self._elements

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Antichain) and set(self._elements) == set(other._elements)

    def __hash__(self) -> int:
        return hash(frozenset(self._elements))

    def __repr__(self) -> str:
        return f"Antichain({self._elements!r})"


class MutableAntichain:
    """Counts per time; the frontier is the minimal times with a positive count."""

    def __init__(self, *, arity: int | None = None):
        self.arity = arity
        self.counts: dict[object, int] = {}

    @staticmethod
    def from_elem(time: object) -> MutableAntichain:
        m = MutableAntichain()
        m.update_iter([(time, 1)])
        return m

    def _validate(self, time: object) -> object:
        time = validate(time, self.arity)
        if self.arity is None:
            self.arity = arity_of(time)
        return time

    def frontier_elements(self) -> list[object]:
        return minimal(t for t, c in self.counts.items() if c > 0)

    def update_iter(self, updates: Iterable[tuple[object, int]]) -> list[tuple[object, int]]:
        """Applies every update, then returns new frontier minus old frontier."""
        before = set(self.frontier_elements())
        for time, diff in updates:
            time = self._validate(time)
            self.counts[time] = self.counts.get(time, 0) + diff
            if self.counts[time] == 0:
                del self.counts[time]
        after = set(self.frontier_elements())
        changes = [(t, 1) for t in after - before] + [(t, -1) for t in before - after]
        return sorted(changes, key=lambda td: sort_key(td[0]))

    def update(self, time: object, diff: int) -> list[tuple[object, int]]:
        return self.update_iter([(time, diff)])

    def frontier(self) -> Antichain:
        return Antichain(self.frontier_elements(), arity=self.arity)

    def count_for(self, time: object) -> int:
        return self.counts.get(self._validate(time), 0)

    def less_than(self, time: object) -> bool:
        time = self._validate(time)
        return any(less_than(e, time) for e in self.frontier_elements())

    def less_equal(self, time: object) -> bool:
        time = self._validate(time)
        return any(less_equal(e, time) for e in self.frontier_elements())

    def is_empty(self) -> bool:
        return not self.frontier_elements()

    def updates(self) -> list[tuple[object, int]]:
        return sorted(self.counts.items(), key=lambda td: sort_key(td[0]))

    def clear(self) -> None:
        self.counts = {}

    def __len__(self) -> int:
        return len(self.counts)
