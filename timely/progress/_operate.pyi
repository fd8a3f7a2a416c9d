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
