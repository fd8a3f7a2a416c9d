"""Columnar batches: named columns of equal length.

A :class:`Batch` is the container a columnar stream carries. Its length is
its row count, which is what progress accounting counts. A column is a 1-D
numpy array, or, for text, a :class:`~timely.container.StringColumn`: Arrow's
layout (offsets and UTF-8 bytes). Numeric, boolean, datetime, fixed-width
and string columns cross worker processes and capture files as raw typed
buffers, never pickled; other object columns are allowed too and travel as
Python objects between the computation's own workers.

Text: ``Batch.from_arrow`` keeps an Arrow ``string``/``large_string``
column's buffers as they are, and ``Batch({...})`` given a list of str (or a
StringColumn) stores it in that layout. Taking, filtering, slicing,
concatenating, exchanging, serializing and aggregating such a column never
makes a Python ``str``. Reading it does:

- ``batch["col"]`` is a numpy array for every column; for a string column
  an object array of str (read-only), decoded on first access and cached,
  so code written for object columns keeps working;
- ``batch.column("col")`` (and ``batch.columns``) is the column as stored:
  the StringColumn itself, whose ``offsets`` and ``data`` are the buffers
  and whose ``to_arrow()`` is zero-copy.

An object array given to ``Batch`` is kept as it is (its str exist
already, and an object column hashes and groups them fastest); when such a
column of str crosses to another process or into a capture file it is
written as a string column, and arrives as one.

Batches are treated as immutable: operators make new batches and share
columns freely, so a column may be a read-only view (of an Arrow buffer, or
of received bytes).

>>> import numpy as np
>>> b = Batch({"key": np.array([3, 1, 2]), "word": ["c", "a", "b"]})
>>> len(b), b.names, b.column("word").type
(3, ('key', 'word'), 'string')
>>> b.filter(b["key"] > 1)["word"].tolist()
['c', 'b']
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from timely.container._columns import StringColumn, strings_or_none
from timely.errors import BatchError


def is_masked(values: object) -> bool:
    """Whether ``values`` is a numpy masked array. Never imports
    ``numpy.ma`` (about 15 ms, on first use in each process): while it is
    not imported no masked array can exist."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(values, ma.MaskedArray)

__all__ = ["ArrowColumn", "Batch"]


class ArrowColumn:
    """A column kept as a ``pyarrow.Array``: what numpy cannot hold as it is
    (nulls, decimals, binary, lists, structs, maps) passes through a
    dataflow with its Arrow type and validity bitmap intact.

    Taking, slicing and concatenating are Arrow's compiled kernels (no Python
    call per row); crossing to another worker, the column travels as one
    pickle of the Arrow array (Arrow's buffers, out of band). ``to_numpy()``
    (what ``batch[name]`` returns) is a numpy masked array for numbers,
    booleans and times with nulls (the mask is true where a row is null) and
    an object array (``None`` for null) for the rest. A numpy masked array
    given to :class:`Batch` becomes an ArrowColumn.

    >>> import pyarrow as pa
    >>> c = ArrowColumn(pa.array([1, None, 3]))
    >>> c.take(np.array([2, 1])).to_arrow().to_pylist()
    [3, None]
    >>> c.to_numpy().tolist(), c.null_count
    ([1, None, 3], 1)
    """

    __slots__ = ("array",)

    def __init__(self, array):
        if hasattr(array, "combine_chunks"):
            array = array.combine_chunks()
        self.array = array

    @classmethod
    def from_masked(cls, values) -> ArrowColumn:
        """A numpy masked array (true = null) as a column."""
        import pyarrow as pa

        mask = np.ma.getmaskarray(values)
        return cls(pa.array(np.ma.getdata(values), mask=mask))

    def __len__(self) -> int:
        return len(self.array)

    @property
    def type(self):
        """The Arrow type."""
        return self.array.type

    @property
    def null_count(self) -> int:
        """How many rows are null."""
        return self.array.null_count

    @property
    def nbytes(self) -> int:
        """The bytes of the Arrow buffers (validity, offsets, values)."""
        return self.array.nbytes

    def take(self, index) -> ArrowColumn:
        """The rows at positions ``index`` (an integer array), nulls kept;
        one Arrow ``take``."""
        return ArrowColumn(self.array.take(np.asarray(index)))

    def __getitem__(self, where) -> ArrowColumn:
        if not isinstance(where, slice):
            raise BatchError("an ArrowColumn is indexed by a slice; use take for positions")
        start, stop, step = where.indices(len(self.array))
        if step != 1:
            return self.take(np.arange(start, stop, step))
        return ArrowColumn(self.array.slice(start, max(0, stop - start)))

    @staticmethod
    def concat(parts: list) -> ArrowColumn:
        """One column of ``parts`` end to end (ArrowColumns, or numpy columns
        converted to the first ArrowColumn's type)."""
        import pyarrow as pa

        arrays = [p.array if type(p) is ArrowColumn else _to_arrow_array(p) for p in parts]
        target = next(p.array.type for p in parts if type(p) is ArrowColumn)
        arrays = [a if a.type == target else a.cast(target) for a in arrays]
        return ArrowColumn(pa.concat_arrays(arrays))

    def to_arrow(self):
        """The Arrow array itself (no copy)."""
        return self.array

    def to_numpy(self) -> np.ndarray:
        """Numbers, booleans and times as a numpy masked array (nulls
        masked); other types as an object array of Python values (None for
        null). Copies."""
        import pyarrow as pa

        kind = self.array.type
        primitive = (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                     or pa.types.is_boolean(kind) or pa.types.is_temporal(kind))
        if primitive:
            valid = self.array.is_valid().to_numpy(zero_copy_only=False)
            filled = self.array.fill_null(_zero(kind)) if self.array.null_count else self.array
            data = filled.to_numpy(zero_copy_only=False)
            return np.ma.masked_array(data, mask=~valid)
        values = np.empty(len(self.array), dtype=object)
        values[:] = self.array.to_pylist()
        return values

    def tolist(self) -> list:
        """The rows as Python values, None for null."""
        return self.array.to_pylist()

    def equals(self, other) -> bool:
        """True when ``other`` is an ArrowColumn of the same type and rows
        (nulls in the same places)."""
        return type(other) is ArrowColumn and self.array.equals(other.array)

    def __reduce__(self):
        return (ArrowColumn, (self.array,))

    def __repr__(self) -> str:
        return f"ArrowColumn({self.array.type}, {len(self.array)} rows, {self.null_count} null)"


def _zero(kind):
    """A value of Arrow type ``kind`` to stand in a null's place."""
    import pyarrow as pa

    if pa.types.is_boolean(kind):
        return False
    if pa.types.is_date32(kind) or pa.types.is_time32(kind):
        return pa.scalar(0, pa.int32()).cast(kind)
    return pa.scalar(0, pa.int64()).cast(kind)


def _to_arrow_array(column):
    import pyarrow as pa

    if type(column) is StringColumn:
        return column.to_arrow()
    if type(column) is ArrowColumn:
        return column.array
    return pa.array(column)


def arrow_kept(kind, nulls: int) -> bool:
    """Whether :meth:`Batch.from_arrow` keeps a column of Arrow type ``kind``
    with ``nulls`` nulls as an :class:`ArrowColumn`."""
    import pyarrow as pa

    if nulls:
        return True
    return not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind) or pa.types.is_string(kind)
                or pa.types.is_large_string(kind) or pa.types.is_timestamp(kind)
                or pa.types.is_date(kind) or pa.types.is_duration(kind))


def as_column(name: str, values):
    """``values`` as a column: a StringColumn, an ArrowColumn (also for a
    numpy masked array), or a numpy array (a list or tuple of str becomes a
    StringColumn; an ndarray is taken as it is)."""
    if type(values) is StringColumn or type(values) is ArrowColumn:
        return values
    if is_masked(values):
        return ArrowColumn.from_masked(values)
    if type(values) is np.ndarray:
        array = values
    else:
        array = np.asarray(values)
        if array.dtype.kind == "U" and array.ndim == 1:
            # A list of str: text, unless a row has no UTF-8 (lone surrogates).
            objects = np.empty(array.shape[0], dtype=object)
            objects[:] = list(values)
            strings = strings_or_none(objects)
            return array if strings is None else strings
    if array.ndim != 1:
        raise BatchError(f"column {name!r} has shape {array.shape}; columns are 1-D")
    return array


def values_of(column) -> np.ndarray:
    """A column as a numpy array (a string column as its cached object array
    of str, an ArrowColumn as a masked or object array)."""
    return column.to_numpy() if type(column) is StringColumn or type(column) is ArrowColumn \
        else column


def same_values(a, b) -> bool:
    if type(a) is StringColumn and type(b) is StringColumn:
        return a.equals(b)
    if type(a) is ArrowColumn or type(b) is ArrowColumn:
        return _to_arrow_array(a).equals(_to_arrow_array(b))
    return np.array_equal(values_of(a), values_of(b))


def concat_columns(parts: list):
    """One column of the rows of ``parts``, in order."""
    if all(type(p) is np.ndarray for p in parts):
        return np.concatenate(parts)
    if any(type(p) is ArrowColumn for p in parts):
        return ArrowColumn.concat(parts)
    strings = []
    for part in parts:
        if type(part) is np.ndarray:
            if part.shape[0] == 0:
                continue
            part = strings_or_none(part) if part.dtype == object else None
            if part is None:            # text beside other values: Python objects
                return np.concatenate([values_of(p) for p in parts])
        strings.append(part)
    return StringColumn.concat(strings)


class Batch:
    """Named 1-D columns of equal length. ``len(batch)`` is the row count.

    ``batch[name]`` is a column as a numpy array; ``batch.column(name)`` as
    stored (a string column is a :class:`~timely.container.StringColumn`).
    Operations that make batches cost O(rows) in compiled code per column
    (numpy's, or the string column's), never a Python call per row.
    """

    __slots__ = ("_columns", "_length")

    def __init__(self, columns: Mapping[str, object] | None = None, **more):
        cols: dict = {}
        length = None
        for source in (columns or {}), more:
            for name, values in source.items():
                if not isinstance(name, str):
                    raise BatchError(f"column names are str, not {type(name).__name__}: {name!r}")
                column = as_column(name, values)
                rows = len(column)
                if length is None:
                    length = rows
                elif rows != length:
                    raise BatchError(f"column {name!r} has {rows} rows, the others {length}")
                cols[name] = column
        self._columns = cols
        self._length = 0 if length is None else length

    @classmethod
    def from_columns(cls, columns: dict, length: int) -> Batch:
        """A batch of ``columns`` as they are, each a 1-D numpy array or a
        StringColumn of ``length`` rows, in a dict the batch now owns. Nothing
        is checked or converted (O(1)): for code that made the columns itself,
        such as the serializers and the operators."""
        batch = cls.__new__(cls)
        batch._columns = columns
        batch._length = length
        return batch

    # -- access --------------------------------------------------------------

    def __len__(self) -> int:
        return self._length

    def column(self, name: str):
        """The column ``name`` as stored: a numpy array or a StringColumn."""
        try:
            return self._columns[name]
        except KeyError:
            raise BatchError(f"no column {name!r}; the batch has {list(self._columns)}") from None

    def __getitem__(self, name: str) -> np.ndarray:
        """The column ``name`` as a numpy array (a string column as an object
        array of str, decoded once and cached)."""
        return values_of(self.column(name))

    def __contains__(self, name) -> bool:
        return name in self._columns

    @property
    def columns(self) -> dict:
        """The columns as stored, by name (do not mutate the dict or the columns)."""
        return self._columns

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(self._columns)

    @property
    def nbytes(self) -> int:
        """The bytes held by the columns' buffers (string columns: offsets and UTF-8 data)."""
        return sum(c.nbytes for c in self._columns.values())

    def __repr__(self) -> str:
        cols = ", ".join(
            f"{n}: {c.type if type(c) is StringColumn or type(c) is ArrowColumn else c.dtype}"
            for n, c in self._columns.items())
        return f"Batch({self._length} rows; {cols})"

    def equals(self, other) -> bool:
        """The same names in the same order, and equal values."""
        if not isinstance(other, Batch) or self.names != other.names or len(self) != len(other):
            return False
        return all(same_values(a, other._columns[n]) for n, a in self._columns.items())

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
        return Batch.from_columns({n: self.column(n) for n in names}, self._length)

    def rename(self, mapping: Mapping[str, str]) -> Batch:
        """Columns renamed by ``mapping``; two columns may not end up with one name."""
        renamed = {mapping.get(n, n): c for n, c in self._columns.items()}
        if len(renamed) != len(self._columns):
            names = [mapping.get(n, n) for n in self._columns]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise BatchError(f"renaming would give two columns the name {twice[0]!r}")
        return Batch.from_columns(renamed, self._length)

    def filter(self, mask) -> Batch:
        """The rows where the boolean ``mask`` is true. A null in the mask (a
        masked entry of a numpy masked array, or a null of a boolean
        ArrowColumn or Arrow array) keeps no row, as in SQL's ``WHERE``."""
        if type(mask) is ArrowColumn:
            mask = mask.array
        if hasattr(mask, "fill_null"):                 # an Arrow array
            mask = mask.fill_null(False).to_numpy(zero_copy_only=False)
        elif is_masked(mask):
            mask = np.ma.filled(mask, False)
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
        return Batch.from_columns({n: c.take(index) for n, c in self._columns.items()},
                              int(index.shape[0]))

    def slice(self, start: int, stop: int) -> Batch:
        """Rows ``start`` to ``stop`` as views (no copy)."""
        start, stop, _ = slice(start, stop).indices(self._length)
        stop = max(start, stop)
        return Batch.from_columns({n: c[start:stop] for n, c in self._columns.items()},
                                  stop - start)

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
        return Batch.from_columns(
            {n: concat_columns([b._columns[n] for b in batches]) for n in names},
            sum(b._length for b in batches))

    def to_records(self) -> list[tuple]:
        """The rows as Python tuples (for tests and small outputs)."""
        return list(zip(*(c.tolist() for c in self._columns.values())))

    # -- Arrow ---------------------------------------------------------------

    @classmethod
    def from_arrow(cls, record_batch) -> Batch:
        """Columns of a ``pyarrow.RecordBatch`` (or Table; chunks are joined).

        Numeric and time columns without nulls are zero-copy read-only views
        of the Arrow buffers (a time zone is the schema's, given back by
        :meth:`to_arrow`); ``string`` and ``large_string`` columns without
        nulls are StringColumns sharing the Arrow buffers (no Python str is
        made); booleans are converted once; columns with nulls, decimals,
        binary and nested types stay Arrow arrays (:class:`ArrowColumn`)."""
        import pyarrow as pa

        columns: dict[str, Any] = {}
        for name, column in zip(record_batch.schema.names, record_batch.columns):
            if hasattr(column, "combine_chunks"):
                column = column.combine_chunks()
            kind = column.type
            if arrow_kept(kind, column.null_count):
                columns[name] = ArrowColumn(column)
                continue
            text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
            if text:
                columns[name] = StringColumn.from_arrow(column)
                continue
            try:
                columns[name] = column.to_numpy(zero_copy_only=True)
            except Exception:  # noqa: BLE001 - nulls, strings, booleans: one conversion
                columns[name] = column.to_numpy(zero_copy_only=False)
        return cls(columns)

    def to_arrow(self, schema=None):
        """A ``pyarrow.RecordBatch`` of these columns (numeric and string ones
        zero-copy), cast to ``schema`` when given."""
        import pyarrow as pa

        arrays = [_to_arrow_array(c) for c in self._columns.values()]
        rb = pa.RecordBatch.from_arrays(arrays, names=list(self._columns))
        if schema is not None:
            rb = rb.select(schema.names).cast(schema)
        return rb


def _rebuild(columns, length):
    return Batch.from_columns(columns, length)
