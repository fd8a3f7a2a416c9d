"""Schemas between Spark and timely: Spark's types as Arrow's, and the
output of a dataflow held against the schema it declares.

- :func:`arrow_schema`: a StructType as the Arrow schema Spark's
  ``mapInArrow`` exchanges, ``timestamp`` in the session's time zone
  (``spark.sql.session.timeZone``), ``timestamp_ntz`` without one; a type
  Spark cannot carry to Arrow raises :class:`SparkSchemaError` naming the
  column.
- :func:`conform`: a :class:`~timely.Batch` as a record batch of exactly the
  declared columns: a declared column missing, an extra (renamed) one, or one
  of another type raises :class:`SparkSchemaError` naming it; types are cast
  only with ``cast=True``, except times, which match a declared timestamp in
  any unit and zone when no value changes. Null rows stay null.
- :func:`probe`: one row of an input schema (zeros, empty text, nulls in
  nested types), which :func:`timely.spark.run` and
  :func:`timely.spark.map_batches` push through the user's code on the
  driver, in one worker, to check the output's columns before any task
  starts.

>>> import pyarrow as pa
>>> from timely import Batch
>>> schema = pa.schema([("key", pa.int64()), ("n", pa.int64())])
>>> conform(Batch({"key": [1], "n": [2]}), schema).num_rows
1
>>> conform(Batch({"key": [1], "count": [2]}), schema)
Traceback (most recent call last):
...
timely.errors.SparkSchemaError: column 'n' of the declared schema is not in the output, which has ['key', 'count'] (renamed? 'count' is not declared)
"""

from __future__ import annotations

from typing import Any

from timely.container import Batch
from timely.errors import SparkSchemaError

__all__ = ["arrow_schema", "conform", "probe", "session_time_zone"]


def session_time_zone(spark: Any) -> str | None:
    """The session's effective time zone: the one set, or Spark's default
    (asked without a default of ours, which would stand in for Spark's)."""
    try:
        return spark.conf.get("spark.sql.session.timeZone")
    except Exception:  # noqa: BLE001 - a session that does not say
        return None


def arrow_schema(struct: Any, time_zone: str | None) -> Any:
    """The Arrow schema of ``struct`` as ``mapInArrow`` hands it over."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for field in struct.fields:
        try:
            kind = to_arrow_type(field.dataType, timezone=time_zone)
        except Exception as error:  # noqa: BLE001 - Spark's errors vary by type
            raise SparkSchemaError(
                f"column {field.name!r} has type {field.dataType.simpleString()}, which Spark "
                f"does not carry to Arrow: {type(error).__name__}: {error}") from error
        fields.append(pa.field(field.name, kind, nullable=field.nullable))
    return pa.schema(fields)


def _same(got: Any, want: Any) -> bool:
    """Whether a column of Arrow type ``got`` is one of type ``want`` as
    declared, without a cast that could change a value (a time zone dropped
    by numpy and given back, string for large_string)."""
    import pyarrow as pa

    if got == want:
        return True
    text = (pa.types.is_string, pa.types.is_large_string)
    if any(t(got) for t in text) and any(t(want) for t in text):
        return True
    if pa.types.is_timestamp(got) and pa.types.is_timestamp(want):
        return got.unit == want.unit and (got.tz is None or got.tz == want.tz)
    if pa.types.is_null(got):
        return True                     # a column of nulls only, of any type
    return False


def _instants(got: Any, want: Any) -> bool:
    """Both types are timestamps: the same instants in any unit or zone."""
    import pyarrow as pa

    return bool(pa.types.is_timestamp(got) and pa.types.is_timestamp(want))


def _same_instants(name: str, column: Any, want: Any) -> Any:
    """``column`` (timestamps) in the declared unit and zone, when no value
    changes: a numpy ``datetime64[ns]`` or ``[s]`` column is a declared
    ``timestamp`` (microseconds) as it is, unless it has a part of a
    microsecond, which raises naming the column."""
    import pyarrow as pa

    unit = {"s": "second", "ms": "millisecond", "us": "microsecond", "ns": "nanosecond"}
    try:
        return column.cast(want, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise SparkSchemaError(
            f"column {name!r} is {column.type} in the output with values that {want} cannot "
            f"hold exactly (finer than a {unit[want.unit]}, or out of its range): round them, "
            f"or pass cast=True to truncate them ({error})") from error


def conform(batch: Batch, schema: Any, cast: bool = False) -> Any:
    """``batch`` as a ``pyarrow.RecordBatch`` of ``schema``.

    A column of times (numpy ``datetime64`` of any unit, or Arrow
    timestamps of any zone) matches a declared ``timestamp`` or
    ``timestamp_ntz`` whenever its values convert exactly: nanoseconds that
    are whole microseconds, seconds, another zone's label on the same
    instants. ``cast=True`` casts any column, truncating times to the
    declared unit."""
    import pyarrow as pa

    record_batch = batch.to_arrow()
    names = record_batch.schema.names
    extra = [n for n in names if n not in schema.names]
    for field in schema:
        if field.name not in names:
            hint = f" (renamed? {extra[0]!r} is not declared)" if extra else ""
            raise SparkSchemaError(f"column {field.name!r} of the declared schema is not in the "
                                   f"output, which has {list(names)}{hint}")
    if extra:
        raise SparkSchemaError(f"column {extra[0]!r} of the output is not in the declared "
                               f"schema {schema.names}")
    arrays = []
    for field in schema:
        column = record_batch.column(field.name)
        if column.type != field.type:
            if not cast and _instants(column.type, field.type):
                column = _same_instants(field.name, column, field.type)
            elif not cast and not _same(column.type, field.type):
                raise SparkSchemaError(
                    f"column {field.name!r} is {column.type} in the output but declared "
                    f"{field.type}: declare its type, or pass cast=True to cast it")
            else:
                try:
                    # An explicit cast of times truncates to the declared unit.
                    column = column.cast(field.type, safe=not _instants(column.type, field.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError,
                        pa.ArrowTypeError) as error:
                    raise SparkSchemaError(f"column {field.name!r} ({column.type}) cannot be "
                                           f"cast to {field.type}: {error}") from error
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _filler(kind: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pa.array([""], kind)
    if pa.types.is_boolean(kind):
        return pa.array([False])
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return pa.array([0], pa.int64()).cast(kind)
    if pa.types.is_date32(kind):
        return pa.array([0], pa.int32()).cast(kind)
    if pa.types.is_timestamp(kind) or pa.types.is_date64(kind) or pa.types.is_duration(kind):
        return pa.array([0], pa.int64()).cast(kind)
    return pa.nulls(1, kind)


def probe(schema: Any, epoch_col: str | None = None) -> Batch:
    """A one-row batch of ``schema`` for a dry run on the driver."""
    import pyarrow as pa

    arrays = [_filler(field.type) for field in schema]
    return Batch.from_arrow(pa.RecordBatch.from_arrays(arrays, schema=schema))
