"""Events of a captured stream (defined with the capture operator in
:mod:`timely.dataflow.operators.capture`), and the in-process event link."""

from __future__ import annotations

from collections import deque
from timely.dataflow.operators.capture import Event, Messages, Progress

__all__ = ["Event", "EventLink", "Messages", "Progress"]


class EventLink:
    """An in-process event pusher and source: what is pushed can be read back.

    ``push(event)`` appends; ``next()`` returns the next unread event or None
    (more may be pushed later). Both cost O(1). The events are not copied: a
    replayed batch is the captured batch object.
    """

    def __init__(self):
        self._events: deque = deque()

    def push(self, event) -> None:
        """Appends ``event`` for the reader. Constant time."""
        self._events.append(event)

    def next(self):
        """The oldest event not yet read, or None when none is waiting. Constant time."""
        return self._events.popleft() if self._events else None

    def __iter__(self):
        while self._events:
            yield self._events.popleft()

    def __len__(self):
        return len(self._events)

    def replay_into(self, scope):
        """Replays this one source into ``scope``; see :func:`timely.capture.replay_into`."""
        from timely.capture.replay import replay_into

        return replay_into([self], scope)
