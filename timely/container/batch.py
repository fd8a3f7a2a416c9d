"""Columnar batches: named numpy columns of equal length.

A :class:`Batch` is the container a columnar stream carries. Its length is
its row count, which is what progress accounting counts. Columns are 1-D
numpy arrays; numeric, boolean and fixed-width columns cross worker
processes and capture files as raw typed buffers (dtype, length, bytes),
never pickled. Object columns (Python strings from Arrow, for instance) are
allowed too; they travel as Python objects between the computation's own
workers.

Batches are treated as immutable: operators make new batches and share
column arrays freely, so a column may be a read-only view (of an Arrow
buffer, or of received bytes).

>>> import numpy as np
>>> b = Batch({"key": np.array([3, 1, 2]), "value": np.array([30, 10, 20])})
>>> len(b), b.names
(3, ('key', 'value'))
>>> b.filter(b["key"] > 1)["value"].tolist()
[30, 20]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from timely.errors import BatchError


class Batch:
    """Named 1-D numpy columns of equal length. ``len(batch)`` is the row count."""

    __slots__ = ("_columns", "_length")

    def __init__(self, columns: Mapping[str, object] | None = None, **more):
        cols: dict[str, np.ndarray] = {}
        length = None
        for source in (columns or {}), more:
            for name, values in source.items():
                if not isinstance(name, str):
                    raise BatchError(f"column names are str, not {type(name).__name__}: {name!r}")
                array = values if isinstance(values, np.ndarray) else np.asarray(values)
                if array.ndim != 1:
                    raise BatchError(f"column {name!r} has shape {array.shape}; columns are 1-D")
                if length is None:
                    length = array.shape[0]
                elif array.shape[0] != length:
                    raise BatchError(
                        f"column {name!r} has {array.shape[0]} rows, the others {length}")
                cols[name] = array
        self._columns = cols
        self._length = 0 if length is None else length

    @classmethod
    def _trusted(cls, columns: dict, length: int) -> Batch:
        """A batch from columns already known to be 1-D of ``length`` rows."""
        batch = cls.__new__(cls)
        batch._columns = columns
        batch._length = length
        return batch

    # -- access --------------------------------------------------------------

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._columns[name]
        except KeyError:
            raise BatchError(f"no column {name!r}; the batch has {list(self._columns)}") from None

    def __contains__(self, name) -> bool:
        return name in self._columns

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The columns by name (do not mutate the dict or the arrays)."""
        return self._columns

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._columns)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self._columns.values())

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {c.dtype}" for n, c in self._columns.items())
        return f"Batch({self._length} rows; {cols})"

    def equals(self, other) -> bool:
        """The same names in the same order, and equal values."""
        if not isinstance(other, Batch) or self.names != other.names or len(self) != len(other):
            return False
        return all(np.array_equal(a, other._columns[n]) for n, a in self._columns.items())

    def __eq__(self, other):
        return self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (_rebuild, (self._columns, self._length))

    # -- making new batches -------------------------------------------------

    def with_columns(self, columns: Mapping[str, object] | None = None, **more) -> Batch:
        """This batch with columns added or replaced."""
        merged = dict(self._columns)
        merged.update(columns or {})
        merged.update(more)
        return Batch(merged)

    def select(self, names: Iterable[str]) -> Batch:
        """Only the named columns, in the order given."""
        return Batch._trusted({n: self[n] for n in names}, self._length)

    def rename(self, mapping: Mapping[str, str]) -> Batch:
        """Columns renamed by ``mapping``; two columns may not end up with one name."""
        renamed = {mapping.get(n, n): c for n, c in self._columns.items()}
        if len(renamed) != len(self._columns):
            names = [mapping.get(n, n) for n in self._columns]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise BatchError(f"renaming would give two columns the name {twice[0]!r}")
        return Batch._trusted(renamed, self._length)

    def filter(self, mask) -> Batch:
        """The rows where the boolean ``mask`` is true."""
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.shape != (self._length,):
            raise BatchError(
                f"a filter mask is a bool array of {self._length} rows, "
                f"not {mask.dtype} of shape {mask.shape}")
        index = np.flatnonzero(mask)
        return self.take(index)

    def take(self, index) -> Batch:
        """The rows at the positions in ``index`` (an integer array), in that order."""
        index = np.asarray(index)
        return Batch._trusted({n: c.take(index) for n, c in self._columns.items()},
                              int(index.shape[0]))

    def slice(self, start: int, stop: int) -> Batch:
        """Rows ``start`` to ``stop`` as views (no copy)."""
        start, stop, _ = slice(start, stop).indices(self._length)
        stop = max(start, stop)
        return Batch._trusted({n: c[start:stop] for n, c in self._columns.items()}, stop - start)

    @staticmethod
    def concat(batches: Iterable[Batch]) -> Batch:
        """The rows of ``batches`` one after another; all have the same column names."""
        batches = [b for b in batches]
        if not batches:
            return Batch()
        names = batches[0].names
        for b in batches:
            if b.names != names:
                raise BatchError(f"cannot concatenate columns {b.names} with {names}")
        if len(batches) == 1:
            return batches[0]
        return Batch._trusted(
            {n: np.concatenate([b._columns[n] for b in batches]) for n in names},
            sum(b._length for b in batches))

    def to_records(self) -> list[tuple]:
        """The rows as Python tuples (for tests and small outputs)."""
        return list(zip(*(c.tolist() for c in self._columns.values())))

    # -- Arrow ---------------------------------------------------------------

    @classmethod
    def from_arrow(cls, record_batch) -> Batch:
        """Columns of a ``pyarrow.RecordBatch`` (or Table); numeric columns
        without nulls are zero-copy read-only views of the Arrow buffers,
        strings become object arrays of str."""
        columns = {}
        for name, column in zip(record_batch.schema.names, record_batch.columns):
            if hasattr(column, "combine_chunks"):
                column = column.combine_chunks()
            try:
                columns[name] = column.to_numpy(zero_copy_only=True)
            except Exception:  # noqa: BLE001 - nulls, strings, booleans: one conversion
                columns[name] = column.to_numpy(zero_copy_only=False)
        return cls(columns)

    def to_arrow(self, schema=None):
        """A ``pyarrow.RecordBatch`` of these columns (numeric ones zero-copy),
        cast to ``schema`` when given."""
        import pyarrow as pa

        arrays = [pa.array(c) for c in self._columns.values()]
        rb = pa.RecordBatch.from_arrays(arrays, names=list(self._columns))
        if schema is not None:
            rb = rb.select(schema.names).cast(schema)
        return rb


def _rebuild(columns, length):
    return Batch._trusted(columns, length)
