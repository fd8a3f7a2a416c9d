from typing_extensions import disjoint_base
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from timely.container._columns import StringColumn
from timely.container.batch import ArrowColumn

AGGREGATES: tuple[str, ...]

def aggregate_names(how: str | Iterable[str]) -> tuple[str, ...]: ...
def nested_type(kind: object) -> bool: ...

@disjoint_base
class GroupBy:
    """One accumulator per distinct key for the aggregates in ``how``
    (``"count"``, ``"sum"``, ``"min"``, ``"max"``); amortized O(1) per row in C."""

    @property
    def how(self) -> tuple[str, ...]: ...
    @property
    def needs_values(self) -> bool: ...
    def __init__(self, how: str | Iterable[str] = ...) -> None: ...
    def __len__(self) -> int: ...
    def update(
        self, keys: npt.ArrayLike | StringColumn | ArrowColumn,
        values: npt.ArrayLike | ArrowColumn | None = ...
    ) -> None: ...
    def merge(
        self, keys: npt.ArrayLike | StringColumn | ArrowColumn,
        partials: Mapping[str, npt.ArrayLike | ArrowColumn]
    ) -> None: ...
    def result(
        self,
    ) -> tuple[np.ndarray | StringColumn | ArrowColumn, dict[str, np.ndarray | ArrowColumn]]: ...
