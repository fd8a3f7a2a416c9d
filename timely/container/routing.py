"""Routing keys to workers: one hash for records and columns, compiled.

:func:`stable_hash` is the hash of one key (a record's), :func:`route` the
workers of a whole key column, row for row what ``stable_hash(key) % peers``
gives for each key; :func:`partition` groups row positions by worker;
:func:`route_records` and :func:`partition_records` do for a list of
records (keyed by the record, a field or attribute, or a function of it)
what :func:`route` and :func:`partition` do for a column, and
:func:`split_records` places records by given workers and
:func:`split_columns` a batch's columns;
:func:`crc32` is zlib's CRC-32, which text and bytes keys hash by. All are
the same on every worker, in every process and on every run (Rust's
``Exchange`` pact likewise hashes with a fixed hash). :func:`route_nullable`
routes a key column with nulls.
"""

import numpy as np

from timely.container.aggregate import nested_type
from timely.container._columns import (StringColumn, crc32, partition, partition_records,
                                       route, route_records, split_columns, split_records,
                                       stable_hash)
from timely.container.batch import ArrowColumn, is_masked
from timely.errors import RouteError

__all__ = ["crc32", "partition", "partition_records", "route", "route_nullable",
           "route_records", "split_columns", "split_records", "stable_hash"]


def route_nullable(keys, peers: int, name: str = "key") -> np.ndarray:
    """:func:`route` for a key column that may hold nulls: an
    :class:`~timely.container.ArrowColumn` or a numpy masked array (true
    where null). A null key goes to worker ``stable_hash(None) % peers``,
    which is 0 (as a record keyed by None does), on every worker and run;
    every other key where :func:`route` sends it in a column without nulls.
    A nested Arrow type (list, struct, map) does not route: RouteError
    naming the column ``name``.

    >>> import pyarrow as pa
    >>> route_nullable(ArrowColumn(pa.array([5, None, 7])), 3).tolist()
    [2, 0, 1]

    Cost: :func:`route` of the column with its nulls filled, plus one pass
    to send the null rows to worker 0."""
    if type(keys) is ArrowColumn:
        array = keys.array
        if nested_type(array.type):
            raise RouteError(f"the key column {name!r} is of Arrow type {array.type}, "
                             f"which does not route (lists, structs and maps do not)")
        if array.type.id == 0 or array.null_count == len(array):       # all null
            return np.zeros(len(array), dtype=np.int64)
        import pyarrow as pa

        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            values: StringColumn | np.ndarray = StringColumn.from_arrow(
                array.fill_null("") if array.null_count else array)
        else:
            values = keys.to_numpy()
        valid = (array.is_valid().to_numpy(zero_copy_only=False) if array.null_count
                 else None)
    elif is_masked(keys):
        mask = np.ma.getmaskarray(keys)
        values = np.ma.getdata(keys)
        valid = ~mask if mask.any() else None
    else:
        return route(keys, peers)
    if is_masked(values):
        values = np.ma.getdata(values)
    if valid is None:
        return route(values, peers)
    if type(values) is np.ndarray and values.dtype == object:
        filled = values.copy()
        filled[~valid] = None              # None routes; a filler object might not
        return route(filled, peers)
    dest = route(values, peers)
    dest[~valid] = stable_hash(None) % peers
    return dest
