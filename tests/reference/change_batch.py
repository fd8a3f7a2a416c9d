"""Oracle for ChangeBatch: a dict from time to the sum of its diffs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tests.reference.timestamp import arity_of, sort_key, validate


class ChangeBatch:
    """Accumulates (time, diff); reads see non-zero sums in lexicographic time order."""

    def __init__(self, updates: Iterable[tuple[object, int]] = (), *, arity: int | None = None):
        self.arity = arity
        self.sums: dict[object, int] = {}
        self.extend(updates)

    def update(self, time: object, diff: int) -> None:
        time = validate(time, self.arity)
        if self.arity is None:
            self.arity = arity_of(time)
        self.sums[time] = self.sums.get(time, 0) + diff

    def extend(self, updates: Iterable[tuple[object, int]]) -> None:
        for time, diff in updates:
            self.update(time, diff)

    def compact(self) -> None:
        self.sums = {t: d for t, d in self.sums.items() if d != 0}

    def items(self) -> list[tuple[object, int]]:
        """The non-zero (time, diff) pairs in time order, without draining."""
        return sorted(
            ((t, d) for t, d in self.sums.items() if d != 0), key=lambda td: sort_key(td[0])
        )

    def drain(self) -> list[tuple[object, int]]:
        out = self.items()
        self.sums = {}
        return out

    def clear(self) -> None:
        self.sums = {}

    def is_empty(self) -> bool:
        return not self.items()

    def __len__(self) -> int:
        return len(self.items())

    def __bool__(self) -> bool:
        return not self.is_empty()

    def __iter__(self) -> Iterator[tuple[object, int]]:
        return iter(self.items())
