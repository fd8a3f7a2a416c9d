"""Oracle for an output's capabilities and its buffered sends: the counts a
capability keeps in its output's change batch and holders, and the messages
an output pushes, as plain dicts and lists."""

from __future__ import annotations

from tests.reference.timestamp import less_equal

BUFFER = 1024


class Output:
    """One operator output: live capabilities by handle number, the net
    count per time of its change batch (minted capabilities uncounted), the
    live count per time, and the messages pushed so far."""

    def __init__(self) -> None:
        self.caps: dict[int, object] = {}        # handle -> time, for live capabilities
        self.user: set[int] = set()              # handles made by a user's call (with a site)
        self.internal: dict[object, int] = {}
        self.pushed: list[tuple[object, list]] = []
        self.buffer: list = []
        self.buffer_time: object = None
        self.next = 0

    def held(self) -> dict[object, int]:
        out: dict[object, int] = {}
        for time in self.caps.values():
            out[time] = out.get(time, 0) + 1
        return out

    def sites(self) -> dict[object, int]:
        out: dict[object, int] = {}
        for h in self.user:
            time = self.caps[h]
            out[time] = out.get(time, 0) + 1
        return out

    def _count(self, time: object, diff: int) -> None:
        self.internal[time] = self.internal.get(time, 0) + diff
        if not self.internal[time]:
            del self.internal[time]

    def flush(self) -> None:
        if self.buffer:
            self.pushed.append((self.buffer_time, self.buffer))
            self.buffer = []

    def mint(self, time: object) -> int:
        h = self.next
        self.next += 1
        self.caps[h] = time
        return h

    def make(self, time: object, user: bool) -> int:
        h = self.mint(time)
        self._count(time, 1)
        if user:
            self.user.add(h)
        return h

    def delayed(self, h: int, time: object, user: bool) -> int | None:
        """A new capability, or None where the engine raises."""
        if h not in self.caps or not less_equal(self.caps[h], time):
            return None
        return self.make(time, user)

    def downgrade(self, h: int, time: object) -> bool:
        if h not in self.caps or not less_equal(self.caps[h], time):
            return False
        self.flush()
        self._count(time, 1)
        self._count(self.caps[h], -1)
        self.caps[h] = time
        return True

    def drop(self, h: int) -> bool:
        if h not in self.caps:
            return False
        self.flush()
        self._count(self.caps.pop(h), -1)
        self.user.discard(h)
        return True

    def give(self, h: int, record: object) -> bool:
        if h not in self.caps:
            return False
        time = self.caps[h]
        if self.buffer_time != time or not self.buffer:
            self.flush()
            self.buffer_time = time
        self.buffer.append(record)
        if len(self.buffer) >= BUFFER:
            self.flush()
        return True
