from collections.abc import Callable
from typing import Any

from typing_extensions import disjoint_base

from timely.progress import ChangeBatch, Tracker

@disjoint_base
class Schedulable:
    """Operator logic a scope runs straight from its round."""

    def schedule(self) -> bool: ...

@disjoint_base
class Activations:
    """The children of one scope asked to run: ``deferred`` until the scope
    runs, or on the ``heap`` of the round it is running."""

    deferred: set[int]
    heap: list[int]
    scheduling: bool
    current: int
    on_first: Callable[[], object]
    def __init__(self, on_first: Callable[[], object]) -> None: ...
    def activate(self, index: int) -> None: ...
    def run_round(self, scope: Any, children: list[Any], compiled: list[Schedulable | None],
                  tracker: Tracker, local: ChangeBatch, final: ChangeBatch,
                  order: list[int] | None = None, logger: Any = None) -> None: ...

@disjoint_base
class ChildActivator:
    """Activates one child of a scope when called."""

    @property
    def activations(self) -> Activations: ...
    @property
    def index(self) -> int: ...
    def __init__(self, activations: Activations, index: int) -> None: ...
    def __call__(self) -> None: ...

@disjoint_base
class ScopeRound:
    """What a scope does each time it is scheduled, compiled."""

    progcaster: Any
    def __init__(self, scope: Any, passes: int = 2) -> None: ...
    def run(self) -> bool: ...
    def propagate(self) -> int: ...
    def extract_all(self) -> bool: ...
