"""Oracle for the notificator core: pending and available requests as counts per time."""

from __future__ import annotations

from collections.abc import Iterable

from tests.reference.timestamp import arity_of, sort_key, validate


class NotificationQueue:
    """``notify_at`` adds to pending; ``make_available`` releases pending times no frontier
    is <= to; ``next`` pops the least available time with its total count."""

    def __init__(self, *, arity: int | None = None):
        self.arity = arity
        self._pending: dict[object, int] = {}
        self._available: dict[object, int] = {}

    def notify_at(self, time: object, count: int = 1) -> None:
        time = validate(time, self.arity)
        if self.arity is None:
            self.arity = arity_of(time)
        self._pending[time] = self._pending.get(time, 0) + count

    def make_available(self, frontiers: Iterable[object]) -> None:
        frontiers = list(frontiers)
        for time in list(self._pending):
            if not any(f.less_equal(time) for f in frontiers):  # type: ignore[attr-defined]
                self._available[time] = self._available.get(time, 0) + self._pending.pop(time)

    def next(self, frontiers: Iterable[object] | None = None) -> tuple[object, int] | None:
        if not self._available and frontiers is not None:
            self.make_available(frontiers)
        if not self._available:
            return None
        time = min(self._available, key=sort_key)
        return time, self._available.pop(time)

    def drain(self, frontiers: Iterable[object] | None = None) -> list[tuple[object, int]]:
        if frontiers is not None:
            self.make_available(frontiers)
        out = sorted(self._available.items(), key=lambda tc: sort_key(tc[0]))
        self._available = {}
        return out

    def pending(self) -> list[tuple[object, int]]:
        return sorted(self._pending.items(), key=lambda tc: sort_key(tc[0]))

    def available(self) -> list[tuple[object, int]]:
        return sorted(self._available.items(), key=lambda tc: sort_key(tc[0]))

    def pending_len(self) -> int:
        return len(self._pending)

    def available_len(self) -> int:
        return len(self._available)

    def is_empty(self) -> bool:
        return not self._pending and not self._available
