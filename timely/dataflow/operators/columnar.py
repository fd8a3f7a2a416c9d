"""Operators on columnar streams: streams whose messages are :class:`~timely.Batch`es.

Each works a whole batch at a time; per-row work is numpy or compiled code,
never a Python call per row.

- ``map_batch(fn)``: ``fn(batch)`` gives the output batch (Pipeline).
- ``filter_batch(fn)``: ``fn(batch)`` gives a boolean mask; the rows where it
  is true go on (Pipeline).
- ``aggregate(key, value, how)``: count, sum, min and max of ``value`` per
  distinct ``key`` and time, one batch per worker and time once the time is
  complete (exchanged by ``key``, so exact at any worker count).

>>> import numpy as np
>>> import timely
>>> def work(worker):
...     seen = []
...     with worker.dataflow() as scope:
...         handle, stream = scope.new_input()
...         (stream.filter_batch(lambda b: b["value"] > 0)
...                .map_batch(lambda b: b.with_columns(value=b["value"] * 10))
...                .aggregate("key", "value", how=("count", "sum"))
...                .inspect_batch(lambda t, b: seen.append((t, sorted(b.to_records())))))
...     words = np.array(["a", "b", "a"], dtype=object)
...     handle.send_batch(timely.Batch(key=words, value=np.array([1, -1, 2])))
...     handle.advance_to(1)
...     handle.send_batch(timely.Batch(key=words[1:2], value=np.array([5])))
...     handle.close()
...     worker.drain()
...     return seen
>>> timely.execute_directly(work)
[(0, [('a', 2, 30)]), (1, [('b', 1, 50)])]
"""

from __future__ import annotations

import numpy as np

from timely.container import ArrowColumn, Batch, StringColumn
from timely.container.aggregate import AGGREGATES, GroupBy, aggregate_names, nested_type
from timely.container.batch import is_masked
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Exchange
from timely.dataflow.operators.core import _pipeline_unary, per_time
from timely.errors import AggregateError, ColumnarError

__all__ = [
    "AGGREGATES",
    "AggregateError",
    "ColumnarError",
    "GroupBy",
    "aggregate",
    "filter_batch",
    "map_batch",
]


def _batch(data, operator: str, instead: str | None = None) -> Batch:
    if type(data) is not Batch:
        hint = f"; on a stream of records use {instead}" if instead else ""
        raise ColumnarError(
            f"{operator} works on columnar Batches, not on a {type(data).__name__} of "
            f"records{hint}")
    return data


def _key_parts(batch: Batch, names: tuple) -> list:
    """The columns :class:`KeyIndex` numbers rows by, for the key columns
    ``names``: each column with its nulls filled, then one flag column per
    key saying where it was null, so that a null is a key value of its own
    (as Spark groups it), apart from the value it was filled with."""
    values, flags = [], []
    for key in names:
        column = batch.column(key)
        if is_masked(column):
            column = ArrowColumn.from_masked(column)
        if type(column) is ArrowColumn and column.null_count:
            import pyarrow as pa
            import pyarrow.compute as pc

            array = column.array
            if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
                fill = pa.scalar("", array.type)
            elif pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
                fill = pa.scalar(b"", array.type)
            else:
                fill = pa.array([0]).cast(array.type)[0]
            flags.append(np.asarray(array.is_null()).astype(np.int8))
            column = ArrowColumn(pc.fill_null(array, fill))
        else:
            flags.append(np.zeros(len(batch), dtype=np.int8))
        values.append(column)
    return values + flags


def _aggregate_rows(stream, names: tuple, value, hows: tuple, combine: bool, name):
    """:func:`aggregate` with several key columns ``names``: per time and
    distinct row of them, the aggregates ``hows`` of ``value``.

    The key columns are any kind :class:`~timely.dataflow.operators.relational.KeyEncoder`
    takes (integers, floats, datetimes, bytes, text), mixed freely, with
    nulls (a null is a key value of its own, as in Spark's ``groupBy(a, b)``).
    The output has the key columns (each group's values as its first row
    held them) and one column per aggregate. Rows are exchanged by the first
    key column, so each group meets on one worker: exact at any worker
    count. With more than one worker and ``combine``, each message is first
    reduced to one row per group where it is. Cost per row: one encoding
    pass and one hash and probe in C (text: a hash and an exact compare of
    its bytes), twice with the combiner."""
    from timely.dataflow.operators._relational import KeyIndex, first_rows

    named = operator_name(name, "Aggregate")
    for key in names:
        if key in hows:
            raise AggregateError(f"the key column {key!r} has the name of an aggregate")
    needs_values = any(h != "count" for h in hows)
    if needs_values and value is None:
        raise AggregateError(f"aggregates {hows} need a value column")
    rows_needed = (*names, value) if value is not None else names
    parts = (*names, *(f"{k} is null" for k in names))

    def values_of(batch):
        if needs_values or value is not None and type(batch.column(value)) is ArrowColumn:
            return batch[value]
        return None

    def fold(index: KeyIndex, keyrows: list, group: GroupBy, batch: Batch, merge: bool) -> None:
        """Numbers ``batch``'s rows by their keys in ``index`` (new keys'
        first rows into ``keyrows``) and folds them into ``group``."""
        before = len(index)
        ids = index.insert(_key_parts(batch, names), parts)
        if len(index) > before:
            keyrows.append(batch.select(list(names)).take(first_rows(ids, before)))
        if merge:
            group.merge(ids, {h: batch.column(h) for h in hows})
        else:
            group.update(ids, values_of(batch))

    def result(keyrows: list, group: GroupBy) -> Batch:
        ids, columns = group.result()
        keys = keyrows[0] if len(keyrows) == 1 else Batch.concat(keyrows)
        keys = keys.take(np.asarray(ids, dtype=np.int64))
        return Batch.from_columns({**keys.columns, **columns}, len(keys))

    partials = combine and stream.scope.peers > 1
    if partials:

        def combiner(time, data):
            batch = _batch(data, "aggregate", _RECORD_AGGREGATE)
            _check_columns(batch, rows_needed, "aggregate")
            keyrows: list = []
            group = GroupBy(hows)
            fold(KeyIndex(len(parts)), keyrows, group, batch, False)
            return result(keyrows, group)

        stream = _pipeline_unary(
            stream, "AggregateCombine" if name is None else f"{named} (combine)", combiner)

    b = OperatorBuilder(named, stream.scope)
    inp = b.new_input(stream, Exchange(names[0]))
    out, output = b.new_output()

    def start(time):
        return KeyIndex(len(parts)), [], GroupBy(hows)

    def absorb(state, data):
        batch = _batch(data, "aggregate", _RECORD_AGGREGATE)
        if not partials:
            _check_columns(batch, rows_needed, "aggregate")
        index, keyrows, group = state
        if len(batch):
            fold(index, keyrows, group, batch, partials)
        return state

    def finish(time, state):
        _, keyrows, group = state
        if not keyrows:
            return None
        return result(keyrows, group)

    def build(caps, info):
        caps.clear()
        return per_time(b, inp, out, start, absorb, finish)

    b.build(build)
    return output


_RECORD_AGGREGATE = "aggregate(fold, emit, route) with functions"


def map_batch(stream, fn, name=None):
    """``fn(batch)`` for every message; what it returns (a Batch, or any
    container) is sent at the message's time, unless it is empty.

    Guarantees: one call per message, in the order messages arrive; the
    output keeps each message's time. Cost: the call, nothing per row."""
    return _pipeline_unary(stream, operator_name(name, "MapBatch"), lambda time, data: fn(data))


def filter_batch(stream, fn, name=None):
    """The rows for which the boolean mask ``fn(batch)`` is true.

    The mask may hold nulls (a numpy masked array, as a comparison of a
    column with nulls gives, or a boolean ArrowColumn): a null keeps no row,
    as in Spark's ``filter``. Kept rows keep their nulls (an ArrowColumn's
    validity goes with its rows). A batch whose rows all pass goes on as it
    is (not copied); one with none is dropped. Cost: the call, and a gather
    of the kept rows (numpy, or Arrow's take)."""
    name = operator_name(name, "FilterBatch")

    def keep(time, data):
        batch = _batch(data, "filter_batch", "filter(pred)")
        mask = fn(batch)
        if type(mask) is np.ndarray and mask.dtype == np.bool_ \
                and mask.shape == (len(batch),) and mask.all():
            return batch
        return batch.filter(mask)

    return _pipeline_unary(stream, name, keep)


def _as_strings(keys):
    """Object keys that are all text as a string column (caching the str
    objects): the partial aggregates are then routed, sent and merged as
    bytes in C whether they stay on this worker or cross to another, where
    they would arrive as a string column anyway (the wire writes text so).
    Other keys as they are."""
    if type(keys) is np.ndarray and keys.dtype == object and len(keys):
        try:
            return StringColumn.from_strings(keys)
        except (TypeError, ValueError):
            return keys
    return keys


def _check_columns(batch: Batch, names, operator: str) -> None:
    for name in names:
        if name not in batch:
            raise AggregateError(
                f"{operator}: the batch has no column {name!r}; it has {list(batch.names)}"
            )
    column = batch.column(names[0])
    if type(column) is ArrowColumn and nested_type(column.type):
        raise ColumnarError(f"{operator}: the key column {names[0]!r} is of Arrow type "
                            f"{column.type}; lists, structs and maps do not group")


def aggregate(stream, key, value: str | None = None, how="sum", *, combine: bool = True,
              name=None):
    """Per time and distinct ``key``: the aggregates ``how`` of column ``value``.

    ``key`` is a column name, or several (a list or tuple): then the groups
    are the distinct rows of those columns, each with the columns as its
    key (see :func:`_aggregate_rows`).

    ``how`` is one of ``"count"``, ``"sum"``, ``"min"``, ``"max"``, or several
    of them (a tuple); ``value`` may be None when ``how`` is only ``"count"``.
    The output at time ``t`` is one :class:`Batch` per worker that owns keys
    seen at ``t``, with the column ``key`` and one column per aggregate,
    named by it (``count`` int64; ``sum``/``min``/``max`` int64 for integer
    values, sums wrapping modulo 2**64, float64 for float ones). Its rows are
    in no particular order.

    Guarantees: rows are exchanged by ``key`` (as ``exchange(key)`` routes
    them), so every key's rows of a time meet on one worker and the answer
    does not depend on the worker count; a worker sends its batch for ``t``
    once, at ``t``, only when its input frontier has passed ``t``, and its
    batches in time order. Keys are integer columns, fixed-width ``S``/``U``
    columns, string columns (hashed by their bytes; the output's key column
    is a string column too), or object columns (any hashable values, grouped
    as a dict groups them).

    With more than one worker and ``combine`` (the default) each message is
    first reduced to one row per distinct key where it is (a combiner), so
    only partial aggregates cross workers.

    Nulls, as Spark's ``groupBy().agg()`` treats them: a null key (in an
    :class:`~timely.container.ArrowColumn` or a masked key column) is a group
    of its own, routed to worker 0 on every run; a null value is skipped by
    ``count``, ``sum``, ``min`` and ``max`` (``count`` counts the non-null
    values of ``value``, or rows when ``value`` is None), and a group with
    no non-null value has a null ``sum``/``min``/``max``. Such columns come
    out as ArrowColumns. A list, struct or map key column raises
    :class:`ColumnarError` naming it.

    ``name`` names the operator (``Aggregate``; its combiner
    ``AggregateCombine``, or ``name (combine)``).

    Cost: one hash and probe per row in compiled code (twice with the
    combiner: text keys of an object column then travel and merge as a
    string column, by their bytes), plus the exchange of the (partial) rows; memory one
    accumulator per distinct key for each time not yet complete.
    """
    named = operator_name(name, "Aggregate")
    hows = aggregate_names(how)
    if isinstance(key, (list, tuple)):
        names = tuple(key)
        if not names or not all(type(k) is str for k in names):
            raise AggregateError(f"the key is a column name or a list of them, not {key!r}")
        if len(set(names)) != len(names):
            raise AggregateError(f"the key columns {list(names)} name a column twice")
        if len(names) > 1:
            return _aggregate_rows(stream, names, value, hows, combine, name)
        key = names[0]
    if type(key) is not str:
        raise AggregateError(f"the key is a column name or a list of them, not {key!r}")
    if key in hows:
        raise AggregateError(f"the key column {key!r} has the name of an aggregate")
    needs_values = any(h != "count" for h in hows)
    if needs_values and value is None:
        raise AggregateError(f"aggregates {hows} need a value column")
    rows_needed = (key, value) if value is not None else (key,)

    def values_of(batch):
        # With a value column, count counts its non-null values (Spark's
        # count(col)): a count alone reads the column only when it has nulls.
        if needs_values or value is not None and type(batch.column(value)) is ArrowColumn:
            return batch[value]
        return None
    partials = combine and stream.scope.peers > 1

    if partials:

        def combiner(time, data):
            batch = _batch(data, "aggregate", _RECORD_AGGREGATE)
            _check_columns(batch, rows_needed, "aggregate")
            group = GroupBy(hows)
            group.update(batch.column(key), values_of(batch))
            keys, columns = group.result()
            return Batch.from_columns({key: _as_strings(keys), **columns}, len(keys))

        stream = _pipeline_unary(
            stream, "AggregateCombine" if name is None else f"{named} (combine)", combiner)

    b = OperatorBuilder(named, stream.scope)
    inp = b.new_input(stream, Exchange(key))
    out, result = b.new_output()

    def start(time):
        return GroupBy(hows)

    def absorb(group, data):
        batch = _batch(data, "aggregate", _RECORD_AGGREGATE)
        if partials:
            group.merge(batch.column(key), batch.columns)
        else:
            _check_columns(batch, rows_needed, "aggregate")
            group.update(batch.column(key), values_of(batch))
        return group

    def finish(time, group):
        keys, columns = group.result()
        return Batch.from_columns({key: keys, **columns}, len(keys))

    def build(caps, info):
        caps.clear()
        return per_time(b, inp, out, start, absorb, finish)

    b.build(build)
    return result
