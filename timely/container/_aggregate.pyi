from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from timely.errors import TimelyError

AGGREGATES: tuple[str, ...]

class AggregateError(TimelyError, ValueError):
    """An aggregation that cannot be done: an unknown aggregate, a missing or
    mismatched column, or a key or value dtype that is not supported."""

class GroupBy:
    """One accumulator per distinct key for the aggregates in ``how``
    (``"count"``, ``"sum"``, ``"min"``, ``"max"``); amortized O(1) per row in C."""

    @property
    def how(self) -> tuple[str, ...]: ...
    @property
    def needs_values(self) -> bool: ...
    def __init__(self, how: str | Iterable[str] = ...) -> None: ...
    def __len__(self) -> int: ...
    def update(self, keys: npt.ArrayLike, values: npt.ArrayLike | None = ...) -> None: ...
    def merge(self, keys: npt.ArrayLike, partials: Mapping[str, npt.ArrayLike]) -> None: ...
    def result(self) -> tuple[np.ndarray, dict[str, np.ndarray]]: ...
