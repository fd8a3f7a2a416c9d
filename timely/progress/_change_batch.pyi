from typing_extensions import disjoint_base
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from timely.progress._timestamp import Time

@disjoint_base
class ChangeBatch:
    """A collection of (time, diff) updates, compacted lazily.

    Updates are appended in O(1) amortized; compaction sorts the pending updates
    (radix sort over the uint64 rows), sums the diffs of equal times and drops
    zeros, and runs only when the batch is read or has doubled since the last
    compaction. Reads (``drain``, ``len``, iteration) see times in lexicographic
    order with non-zero diffs.

    >>> b = ChangeBatch()
    >>> b.update(5, 1); b.update(3, 2); b.update(5, -1)
    >>> b.drain()
    [(3, 2)]
    """

    def __init__(self, updates: Iterable[tuple[Time, int]] = (), *, arity: int | None = None) -> None: ...
    @property
    def arity(self) -> int | None: ...
    def update(self, time: Time, diff: int) -> None: ...
    def extend(self, updates: Iterable[tuple[Time, int]]) -> None: ...
    def extend_arrays(self, times: npt.ArrayLike, diffs: npt.ArrayLike) -> None:
        """Appends ``len(diffs)`` updates: ``times`` of shape (n,) for arity 1 or (n, arity)."""

    def compact(self) -> None: ...
    def is_empty(self) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[tuple[Time, int]]: ...
    def __bool__(self) -> bool: ...
    def drain(self) -> list[tuple[Time, int]]:
        """The compacted updates, in time order; leaves the batch empty."""

    def drain_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(times uint64 (n,) or (n, arity), diffs int64 (n,))``, compacted; leaves the batch empty."""

    def iter(self) -> Iterator[tuple[Time, int]]:
        """The compacted updates in time order; the batch keeps them."""

    def drain_into(self, other: ChangeBatch) -> None:
        """Moves every update into ``other``; leaves this batch empty."""

    def clear(self) -> None: ...
