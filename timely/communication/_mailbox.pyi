from collections import deque
from collections.abc import Callable
from typing import Any

from typing_extensions import disjoint_base

CREDIT: tuple[str]
CREDIT_AT: int
MIN_WINDOW: int
DROPPED: object

@disjoint_base
class LocalPusher:
    """Pushes into a puller of the same worker, and signals the consumer."""

    queue: deque[Any]
    on_data: Callable[[], object]
    def __init__(self, queue: deque[Any], on_data: Callable[[], object]) -> None: ...
    def push(self, message: Any) -> None: ...
    def done(self) -> None: ...

@disjoint_base
class Puller:
    """The receiving end of a channel at one worker."""

    queue: deque[Any]
    def __init__(self, queue: deque[Any]) -> None: ...
    def pull(self) -> Any: ...
    def __bool__(self) -> bool: ...

@disjoint_base
class Credited:
    """A message from another worker with the bytes of its frame it stands for."""

    message: Any
    peer: int
    weight: int
    def __init__(self, message: Any, peer: int, weight: int) -> None: ...

@disjoint_base
class CreditingPuller(Puller):
    """A puller that credits what it takes back to the sender's window."""

    allocator: Mailbox
    def __init__(self, queue: deque[Any], allocator: Mailbox) -> None: ...

@disjoint_base
class RemotePusher:
    """Queues messages for another worker."""

    outbox: list[tuple[Any, Any]]
    identifier: Any
    def __init__(self, outbox: list[tuple[Any, Any]], identifier: Any) -> None: ...
    def push(self, message: Any) -> None: ...
    def done(self) -> None: ...

@disjoint_base
class Mailbox:
    """Channel queues, outboxes and the send window of one worker."""

    index: int
    peers: int
    queues: dict[Any, deque[Any]]
    callbacks: dict[Any, Any]
    outboxes: dict[int, list[tuple[Any, Any]]]
    sources: dict[Any, deque[int]]
    window: int | None
    def __init__(self, index: int, peers: int, window: int | None = None) -> None: ...
    @property
    def in_flight(self) -> dict[int, int]: ...
    @property
    def owed(self) -> dict[int, int]: ...
    def allocate(self, identifier: Any, on_data: Callable[[], object]) -> tuple[
        list[Any], CreditingPuller]: ...
    def track_sources(self, identifier: Any) -> deque[int]: ...
    def deliver_messages(self, messages: list[tuple[Any, Any]], source: int = -1,
                         nbytes: int = 0) -> None: ...
    def drop_channels(self, identifiers: Any) -> None: ...
    def credited(self, peer: int, amount: Any) -> None: ...
    def congested(self) -> bool: ...
    def full_windows(self) -> list[int]: ...
    def on_window(self, callback: Callable[[], object]) -> None: ...
    def pending(self) -> bool: ...
    def take_outboxes(self, encode: Callable[[list[tuple[Any, Any]]], list[Any]]) -> list[
        tuple[int, list[Any]]]: ...
