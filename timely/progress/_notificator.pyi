from typing_extensions import disjoint_base
from collections.abc import Iterable

from timely.progress._frontier import Antichain, MutableAntichain
from timely.progress._timestamp import Time

@disjoint_base
class NotificationQueue:
    """The core of a frontier notificator: requested times, released in time order.

    ``notify_at`` records a request; ``make_available`` moves every pending time
    that no given frontier is <= into the available set; ``next`` returns the
    least available time with the count of requests for it (coalesced).

    >>> n = NotificationQueue()
    >>> n.notify_at(5); n.notify_at(3); n.notify_at(5)
    >>> n.make_available([Antichain([4])])
    >>> n.next(), n.next()
    ((3, 1), None)
    """

    def __init__(self, *, arity: int | None = None) -> None: ...
    @property
    def arity(self) -> int | None: ...
    def notify_at(self, time: Time, count: int = 1) -> None: ...
    def notify_at_frontiered(self, time: Time, frontiers: Iterable[Antichain | MutableAntichain],
                             count: int = 1) -> None:
        """As ``notify_at``; while times are being delivered, one no frontier
        reaches joins them at once, in time order."""
    def make_available(self, frontiers: Iterable[Antichain | MutableAntichain]) -> None: ...
    def next(self, frontiers: Iterable[Antichain | MutableAntichain] | None = None) -> tuple[Time, int] | None:
        """The least available time and its count, or None. With ``frontiers`` and nothing
        available, first calls ``make_available(frontiers)``."""

    def drain(self, frontiers: Iterable[Antichain | MutableAntichain] | None = None) -> list[tuple[Time, int]]:
        """Every available time with its count, in time order."""

    def pending(self) -> list[tuple[Time, int]]:
        """Requested times not yet available, in time order, with counts."""

    def pending_len(self) -> int: ...
    def available_len(self) -> int: ...
    def is_empty(self) -> bool: ...
