"""A DataFrame's partitions as the batches of timely inputs: the declared
schemas checked at the driver, each Arrow batch's rows split by epoch (or by
event-time window, each window an epoch, with its label added to the
output), and several DataFrames as one union that each task splits back."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from timely.container import ArrowColumn, Batch
from timely.errors import SparkConfigError, SparkSchemaError
from timely.spark.session import is_connect
from timely.spark.windows import Window

__all__ = ["INPUT_COLUMN", "Schemas", "check_schemas", "checked_frames", "declared_struct",
           "epochs_of", "labelled", "splitter", "union_inputs", "window_epochs"]

_DDL: dict[str, Any] = {}


def declared_struct(spark: Any, schema: Any) -> Any:
    """A StructType for ``schema`` (a StructType or a DDL string)."""
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        return schema
    struct = _DDL.get(schema)
    if struct is None:                  # a round trip to the JVM: once per DDL string
        struct = _DDL[schema] = spark.createDataFrame([], schema).schema
    return struct


class Schemas(NamedTuple):
    """The schemas of one run, checked at the driver."""

    struct: Any       # the declared output, a StructType
    output: Any       # the declared output as the Arrow schema mapInArrow hands over
    incoming: Any     # the DataFrame's rows as Arrow hands them to a task


def check_schemas(df: Any, schema: Any, epoch_col: str | None,
                  window: Window | None = None) -> Schemas:
    """The declared output's StructType and Arrow schema, and the input's
    Arrow schema, checked at the driver: every type carries to Arrow, the
    epoch column exists and holds integers (times, with a window)."""
    from timely.spark.schema import arrow_schema, session_time_zone

    spark = df.sparkSession
    zone = session_time_zone(spark)
    struct = declared_struct(spark, schema)
    incoming = arrow_schema(df.schema, zone)
    if epoch_col is not None:
        import pyarrow as pa

        if epoch_col not in incoming.names:
            raise SparkSchemaError(f"the epoch column {epoch_col!r} is not a column of the "
                                   f"DataFrame, which has {incoming.names}")
        kind = incoming.field(epoch_col).type
        if window is not None and not pa.types.is_timestamp(kind):
            raise SparkSchemaError(f"the epoch column {epoch_col!r} holds {kind}; windows are "
                                   "of a timestamp or timestamp_ntz column (cast a date with "
                                   "to_timestamp)")
        if window is None and not pa.types.is_integer(kind):
            hint = (": pass window= to run each window of a time as an epoch"
                    if pa.types.is_timestamp(kind) else "")
            raise SparkSchemaError(f"the epoch column {epoch_col!r} holds {kind}, not "
                                   f"integers{hint}")
    elif window is not None:
        raise SparkSchemaError("a window needs epoch_col, the timestamp column it windows")
    return Schemas(struct, arrow_schema(struct, zone), incoming)


def epochs_of(batch: Batch, epoch_col: str) -> list[tuple[int, Batch]]:
    """``[(epoch, rows)]`` of ``batch`` grouped by its epoch column, without the column."""
    epochs = np.asarray(batch[epoch_col])
    if epochs.dtype.kind not in "iu":
        raise SparkSchemaError(f"epoch column {epoch_col!r} holds {epochs.dtype}, not integers")
    rest = batch.select([n for n in batch.names if n != epoch_col])
    if len(batch) == 0:
        return []
    if epochs.dtype.kind == "i" and epochs.min() < 0:
        raise SparkSchemaError(f"epoch column {epoch_col!r} holds a negative epoch "
                               f"{int(epochs.min())}")
    first = int(epochs[0])
    if (epochs == first).all():
        return [(first, rest)]
    order = np.argsort(epochs, kind="stable")
    values, starts = np.unique(epochs[order], return_index=True)
    bounds = [*starts.tolist(), len(batch)]
    return [(int(v), rest.take(order[bounds[k]:bounds[k + 1]])) for k, v in enumerate(values)]


def window_epochs(batch: Batch, epoch_col: str, window: Window) -> list[tuple[int, Batch]]:
    """``[(epoch, rows)]`` of ``batch`` by the windows of its time column
    ``epoch_col`` (kept in the rows): a row once per window holding its
    time, a row whose time is null in none."""
    import pyarrow as pa

    if len(batch) == 0:
        return []
    column = batch.column(epoch_col)
    if type(column) is ArrowColumn:
        array = column.array
        valid = np.asarray(array.is_valid())
        micros = np.asarray(array.cast(pa.timestamp("us", array.type.tz)).cast(pa.int64())
                            .fill_null(0))
    else:
        valid = None
        micros = np.asarray(column).astype("datetime64[us]").view(np.int64)
    rows, epochs = window.assign(micros, valid)
    order = np.argsort(epochs, kind="stable")
    values, starts = np.unique(epochs[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    return [(int(v), batch.take(rows[order[bounds[k]:bounds[k + 1]]]))
            for k, v in enumerate(values)]


def labelled(batch: Batch, epoch: int, window: Window, schema: Any) -> Batch:
    """``batch`` with the window label columns ``schema`` declares and
    ``batch`` lacks: ``window`` (a struct of ``start`` and ``end``),
    ``window_start``, ``window_end``."""
    import pyarrow as pa

    bounds = window.bounds(epoch)
    n = len(batch)
    columns = dict(batch.columns)
    for name in ("window", "window_start", "window_end"):
        if name not in schema.names or name in columns:
            continue
        kind = schema.field(name).type
        if name == "window":
            if not pa.types.is_struct(kind) or {f.name for f in kind} != {"start", "end"}:
                raise SparkSchemaError(f"the declared column 'window' is {kind}; the window's "
                                       "label is struct<start: timestamp, end: timestamp>")
            parts = [_times(bounds, kind.field(f.name).type, f.name, n) for f in kind]
            array = pa.StructArray.from_arrays(parts, fields=list(kind))
        else:
            array = _times(bounds, kind, name.split("_")[1], n)
        columns[name] = ArrowColumn(array)
    return Batch.from_columns(columns, n)


def _times(bounds: tuple[int, int], kind: Any, which: str, n: int) -> Any:
    """``n`` times: the window's ``which`` ("start" or "end") bound, of
    Arrow type ``kind``."""
    import pyarrow as pa

    value = bounds[0] if which == "start" else bounds[1]
    micros = pa.array(np.full(n, value, dtype=np.int64))
    try:
        return micros.cast(pa.timestamp("us")).cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise SparkSchemaError(f"the window's {which} is declared {kind}, which a time cannot "
                               f"be: {error}") from error


#: The column of a union of several inputs saying which input a row is of.
INPUT_COLUMN = "__timely_input"


def _column_alias(k: int, position: int) -> str:
    """The name of input ``k``'s column at ``position`` in the union of
    several inputs (by position: a name may hold dots or backticks)."""
    return f"__timely_{k}_{position}"


def union_inputs(frames: dict[str, Any]) -> Any:
    """One DataFrame of the rows of every DataFrame in ``frames``: a column
    :data:`INPUT_COLUMN` with the input's index, then the columns of every
    input (as :func:`_column_alias`), null outside that input's rows."""
    from functools import reduce

    import importlib

    first = next(iter(frames.values()))
    # The classic functions need a SparkContext, which a Connect client has not.
    F = importlib.import_module("pyspark.sql.connect.functions" if is_connect(first.sparkSession)
                                else "pyspark.sql.functions")

    fields = [(k, i, f) for k, df in enumerate(frames.values())
              for i, f in enumerate(df.schema.fields)]
    parts = []
    for k, df in enumerate(frames.values()):
        columns = [F.lit(k).cast("int").alias(INPUT_COLUMN)]
        for j, i, field in fields:
            quoted = "`" + field.name.replace("`", "``") + "`"     # dots name no struct field
            column = df[quoted] if j == k else F.lit(None).cast(field.dataType)
            columns.append(column.alias(_column_alias(j, i)))
        parts.append(df.select(*columns))
    return reduce(lambda a, b: a.union(b), parts)


def splitter(schemas: list[Any]) -> Callable[[Any], list[tuple[int, Any]]]:
    """``record_batch -> [(input index, record_batch)]`` for a union of
    inputs of these Arrow ``schemas`` (see :func:`union_inputs`): each input's rows
    with its own columns under their own names and types."""
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = [([_column_alias(k, i) for i in range(len(schema))], schema)
              for k, schema in enumerate(schemas)]

    def one(record_batch: Any, k: int) -> Any:
        aliases, schema = layout[k]
        arrays = [record_batch.column(a) for a in aliases]
        return pa.RecordBatch.from_arrays(
            [a.cast(f.type) if a.type != f.type else a for a, f in zip(arrays, schema)],
            names=schema.names)

    def split(record_batch: Any) -> list[tuple[int, Any]]:
        if record_batch.num_rows == 0:
            return []
        tags = record_batch.column(INPUT_COLUMN).to_numpy(zero_copy_only=False)
        first = int(tags[0])
        if (tags == first).all():
            return [(first, one(record_batch, first))]
        return [(int(k), one(record_batch.filter(pc.equal(record_batch.column(INPUT_COLUMN),
                                                          int(k))), int(k)))
                for k in np.unique(tags)]

    return split


def checked_frames(frames: dict[str, Any]) -> dict[str, Any]:
    """``frames`` checked: at least one, names are strings, one session."""
    if not frames:
        raise SparkConfigError("run needs at least one DataFrame, not an empty dict")
    sessions = set()
    for name, frame in frames.items():
        if not isinstance(name, str):
            raise SparkConfigError(f"the inputs are named by strings, not {name!r}")
        if not hasattr(frame, "sparkSession"):
            raise SparkConfigError(f"input {name!r} is {type(frame).__name__}, not a DataFrame")
        sessions.add(id(frame.sparkSession))
    if len(sessions) > 1:
        raise SparkConfigError("the DataFrames of one run belong to one Spark session")
    return dict(frames)
