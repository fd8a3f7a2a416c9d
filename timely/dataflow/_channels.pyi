from collections import deque
from collections.abc import Callable
from typing import Any

from typing_extensions import disjoint_base

from timely.communication.allocator import Puller
from timely.dataflow._activate import Schedulable
from timely.progress import ChangeBatch, MutableAntichain

KINDS: dict[str, int]

@disjoint_base
class PipelinePusher:
    """Delivers to a puller on this worker and activates its consumer."""

    queue: deque[tuple[object, object]]
    on_data: Callable[[], object]
    def __init__(self, queue: deque[tuple[object, object]], on_data: Callable[[], object]) -> None: ...
    def push(self, time: object, data: object) -> None: ...
    def done(self) -> None: ...

@disjoint_base
class RoutedCounter:
    """Counts the records an exchange sends to one worker, then hands the message on."""

    @property
    def pusher(self) -> Any: ...
    @property
    def dest(self) -> int: ...
    @property
    def routed(self) -> ChangeBatch: ...
    def __init__(self, pusher: Any, dest: int, routed: ChangeBatch) -> None: ...
    def push(self, message: tuple[object, Any]) -> None: ...
    def done(self) -> None: ...
    def __getattr__(self, name: str) -> Any: ...

@disjoint_base
class Counter:
    """Counts the records pushed at each time, then hands the message on."""

    tee: object
    produced: ChangeBatch
    def __init__(self, tee: object, produced: ChangeBatch) -> None: ...
    def push(self, time: object, data: object) -> None: ...

@disjoint_base
class ProbeLogic(Schedulable):
    """The compiled logic of a probe whose input reads a compiled puller."""

    def __init__(self, puller: Puller, consumed: ChangeBatch,
                 counter: Counter | None, frontier: MutableAntichain,
                 shared: MutableAntichain, low: object) -> None: ...
    def __call__(self, frontiers: object) -> None: ...

@disjoint_base
class PerTimeLogic(Schedulable):
    """The compiled logic of an operator that keeps a state per time."""

    def __init__(self, puller: Puller, consumed: ChangeBatch,
                 counter: Counter, internal: ChangeBatch, held: dict[object, int],
                 frontier: MutableAntichain, start: Callable[[object], object],
                 absorb: Callable[[object, object], object],
                 finish: Callable[[object, object], object]) -> None: ...
    def __call__(self, frontiers: object) -> None: ...
    @property
    def times(self) -> list[object]: ...

@disjoint_base
class RecordLogic(Schedulable):
    """The compiled logic of a stateless record operator."""

    def __init__(self, kind: str, pullers: list[Puller],
                 consumeds: list[ChangeBatch], fn: Callable[..., object] | None,
                 counters: list[Counter], refuse: str | None = None) -> None: ...
    def __call__(self, frontiers: object) -> None: ...
