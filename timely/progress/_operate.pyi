from typing import Any

from typing_extensions import disjoint_base
from timely.progress._change_batch import ChangeBatch

@disjoint_base
class SharedProgress:
    consumeds: list[ChangeBatch]
    internals: list[ChangeBatch]
    produceds: list[ChangeBatch]
    def __init__(self, inputs: int, outputs: int, arity: int) -> None: ...
    @classmethod
    def of(cls, consumeds: list[ChangeBatch], internals: list[ChangeBatch],
           produceds: list[ChangeBatch]) -> SharedProgress: ...
    def __bool__(self) -> bool: ...

@disjoint_base
class PerOperatorState:
    """A scope's record of one child."""

    index: int
    id: int | None
    operator: Any
    shared: SharedProgress
    local: bool
    inputs: int
    outputs: int
    notify: list[bool]
    watches: list[bool]
    incomplete: bool
    def __init__(self, index: int, operator: Any, identifier: int | None = None) -> None: ...
