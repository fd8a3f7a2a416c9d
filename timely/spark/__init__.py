"""Spark partitions feeding timely, and timely workers placed by Spark.

Needs the ``spark`` extra (``pip install "timely-dataflow[spark]"``: pyspark
4, pyarrow, pandas < 3) and Java 17. Nothing here is imported by ``import
timely``.

- :func:`run`: a timely computation over a DataFrame (or several, a dict
  of name -> DataFrame, each an input stream), one worker per Spark task of
  a barrier-mode stage; the result is a DataFrame.
- :func:`map_batches`: a stateless vectorized step over every Arrow batch,
  no barrier and no exchange.
- :func:`foreach_batch`: the callable for Structured Streaming's
  ``foreachBatch``, with the batch id as the epoch.
- :func:`preflight`: fails in seconds, saying what to change, where a
  barrier stage would otherwise hang.
- :class:`Window`: event-time windows over a timestamp column for
  ``run(..., epoch_col=..., window=...)``, as Spark's ``window()``.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque

import numpy as np

from timely.container import ArrowColumn, Batch
from timely.errors import (
    DataflowError,
    TimelyError,
    SparkConfigError,
    SparkSchemaError,
    SparkTaskError,
    WorkerFailed,
)
from timely.spark.windows import Window

__all__ = ["SparkConfigError", "SparkSchemaError", "Window", "foreach_batch", "map_batches",
           "preflight", "run"]

log = logging.getLogger("timely.spark")


def _struct(spark, schema):
    """A StructType for ``schema`` (a StructType or a DDL string)."""
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        return schema
    struct = _DDL.get(schema)
    if struct is None:                  # a round trip to the JVM: once per DDL string
        struct = _DDL[schema] = spark.createDataFrame([], schema).schema
    return struct


_DDL: dict = {}


def _schemas(df, schema, epoch_col, window=None):
    """The declared output's StructType and Arrow schema, and the input's
    Arrow schema, checked at the driver: every type carries to Arrow, the
    epoch column exists and holds integers (times, with a window)."""
    from timely.spark.schema import arrow_schema, session_time_zone

    spark = df.sparkSession
    zone = session_time_zone(spark)
    struct = _struct(spark, schema)
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
    return struct, arrow_schema(struct, zone), incoming


class _TaskContextWatch:
    """Notes whether code run within it asked Spark for its task context
    (``TaskContext.get()``, ``BarrierTaskContext.get()``), which the driver
    does not have."""

    def __init__(self) -> None:
        self.asked = False
        self._saved: list = []

    def __enter__(self) -> _TaskContextWatch:
        from pyspark.taskcontext import BarrierTaskContext, TaskContext

        for cls in (TaskContext, BarrierTaskContext):
            original = cls.__dict__["get"]
            self._saved.append((cls, original))
            setattr(cls, "get", classmethod(self._noting(original.__func__)))
        return self

    def _noting(self, get):
        def noted(cls):
            self.asked = True
            return get(cls)
        return noted

    def __exit__(self, *exc: object) -> None:
        for cls, original in self._saved:
            setattr(cls, "get", original)
        self._saved = []


class _BuildFailed(Exception):
    """The user's dataflow function raised ``error`` while the dry run built
    the dataflow (before any row)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


#: Exceptions that say the code is wrong whatever its rows hold: a dry run
#: raises them at once.
_MISUSE = (TypeError, AttributeError, NameError, ImportError, TimelyError)


def _only_in_a_task(error: BaseException, watch: _TaskContextWatch) -> str | None:
    """Why ``error`` of a dry run is left to the tasks: the code cannot run
    outside a task, or what failed may be the made-up row's doing; None
    when the code is wrong whatever its rows hold."""
    if watch.asked:
        return "it asks for Spark's task context, which the driver has not"
    from pyspark.errors import PySparkException

    seen: set = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, PySparkException):
            return "it calls Spark in a way only a task may"
        link = link.__cause__ or link.__context__
    if not isinstance(error, _MISUSE):
        return "the made-up row may be what it failed on"
    return None


def _note(error: BaseException, text: str) -> None:
    """Adds ``text`` to the notes Python prints after ``error`` (3.11+; kept
    in ``__notes__`` before)."""
    add = getattr(error, "add_note", None)
    if add is not None:
        add(text)
        return
    try:
        error.__notes__ = [*getattr(error, "__notes__", []), text]  # type: ignore[attr-defined]
    except AttributeError:
        pass


DRY_RUN_NOTE = (
    "(timely.spark ran the dataflow on the driver, on one worker and one made-up row of the "
    "input's schema: zeros, empty text, nulls in nested types, before starting any task; pass "
    "dry_run=False if the code cannot run on such a row)")


def _dry_run(body, incoming, outgoing, epoch_col, cast: bool, label=None) -> None:
    """Pushes one made-up row of ``incoming`` (an Arrow schema, or a list of
    them for several inputs) through ``body`` (a dataflow builder, or a
    batch function when not a dataflow) on one worker in the driver, and
    holds whatever comes out against ``outgoing``: a missing, renamed or
    mistyped column raises here, before any task starts, and so does any
    exception of the user's code, as it is (its type, message and
    traceback, with a note saying where it was raised): any exception while
    the dataflow is built, and one of the code's logic on the made-up row
    that says the code is wrong whatever its rows hold (``TypeError``,
    ``AttributeError``, ``NameError``, ``ImportError``, timely's own
    errors). Anything else may be the made-up row's doing: it is logged
    at WARNING and left to the tasks, as is code that cannot run outside a
    task (it asks for Spark's task context, or calls Spark as only a task
    may), logged at INFO. The tasks check every batch the same way. ``label`` (with a window) adds the window's
    label columns to an output batch, as the tasks do."""
    from timely.spark.schema import conform, probe

    probes = []
    for schema in (incoming if isinstance(incoming, list) else [incoming]):
        batch = probe(schema)
        if epoch_col is not None and label is None:
            batch = batch.select([n for n in batch.names if n != epoch_col])
        probes.append(batch)
    outputs: list = []
    watch = _TaskContextWatch()
    try:
        with watch:
            outputs.extend(body(*probes))
    except SparkSchemaError:
        raise
    except _BuildFailed as failed:
        _note(failed.error, DRY_RUN_NOTE)
        raise failed.error from None
    except Exception as error:
        why = _only_in_a_task(error, watch)
        if why is None:
            _note(error, DRY_RUN_NOTE)
            raise
        made_up = why.startswith("the made-up row")
        log.log(logging.WARNING if made_up else logging.INFO,
                "timely.spark: the dry run on the driver raised %s: %s, and the dataflow is left "
                "to the tasks, as %s (they check the output's schema)%s", type(error).__name__,
                error, why, "; dry_run=False skips the dry run" if made_up else "")
        return
    for out in outputs:
        if isinstance(out, Batch) and out.names:
            conform(out if label is None else label(out), outgoing, cast)


def _through_dataflow(dataflow, names=None):
    """``batch -> [output batches]`` of ``dataflow`` on one worker here; with
    ``names`` (several inputs) the function takes one batch per name."""
    def body(*batches):
        from timely.dataflow.channels import Pipeline
        from timely.launch import execute_directly

        outputs: list = []

        def work(worker):
            with worker.dataflow() as scope:
                inputs, streams = _inputs(scope, names)
                try:
                    result = _apply(dataflow, streams, names)
                except Exception as error:
                    raise _BuildFailed(error) from error
                result.sink(Pipeline(), "SparkOutput",
                            lambda input_: outputs.extend(d for _, d in input_))
            for (handle, cap), batch in zip(inputs, batches):
                handle.session(cap).give_container(batch)
                handle.flush()
                cap.drop()

        execute_directly(work)
        return outputs

    return body


def _inputs(scope, names):
    """One unordered input per name (one for None): ``[(handle, cap)]`` and
    the streams, a dict by name for several."""
    if names is None:
        entry, stream = scope.new_unordered_input()
        return [entry], stream
    inputs, streams = [], {}
    for name in names:
        entry, streams[name] = scope.new_unordered_input()
        inputs.append(entry)
    return inputs, streams


def _apply(dataflow, streams, names):
    from timely.dataflow.stream import Stream

    result = dataflow(streams)
    if names is not None and isinstance(result, dict):
        raise DataflowError("the dataflow of several inputs returns one stream, not a dict")
    if not isinstance(result, Stream):
        name = getattr(dataflow, "__qualname__", repr(dataflow))
        raise DataflowError(f"the dataflow function {name} returned "
                            f"{type(result).__name__}, not a Stream: return the stream whose "
                            "batches form the output")
    return result


def _conf(spark, key: str, default=None):
    """A session conf value, or ``default`` (classic and Spark Connect alike)."""
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a conf the server does not know
        value = None
    return default if value is None else value


def _is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no RDDs)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[n]``, ``local[*]`` or
    ``local[n,failures]`` master; None for any other master."""
    if not master.startswith("local"):
        return None
    inside = master[len("local"):].strip("[]").split(",")[0]
    if inside == "":
        return 1
    if inside == "*":
        return os.cpu_count() or 1
    return int(inside)


def slots(spark) -> int:
    """How many tasks the session can run at once: what Spark's own barrier
    check counts (every executor's free cores over ``spark.task.cpus``, from
    the scheduler backend), not ``defaultParallelism``. Under Spark Connect,
    which has no SparkContext: a local master's cores, else
    ``spark.executor.instances`` × ``spark.executor.cores``."""
    cpus = int(_conf(spark, "spark.task.cpus", "1"))
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        context = None
    if context is not None:
        jsc = context._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager()
                                             .defaultResourceProfile()))
    master = _conf(spark, "spark.master", "")
    cores = _local_cores(master)
    if cores is None:
        instances = _conf(spark, "spark.executor.instances")
        if instances is None:
            return -1                     # unknown: Spark's own check decides
        cores = int(instances) * int(_conf(spark, "spark.executor.cores", "1"))
    return max(0, cores // cpus)


def preflight(spark, workers: int) -> None:
    """Raises :class:`SparkConfigError` when a barrier stage of ``workers``
    tasks could hang or be refused: dynamic allocation on, or fewer free
    slots than workers. Costs no Spark job."""
    if workers < 1:
        raise SparkConfigError(f"workers must be at least 1, not {workers}")
    if str(_conf(spark, "spark.dynamicAllocation.enabled", "false")).lower() == "true":
        raise SparkConfigError(
            "barrier stages cannot run with dynamic allocation: set "
            "spark.dynamicAllocation.enabled=false for this session")
    available = slots(spark)
    if 0 <= available < workers:
        raise SparkConfigError(
            f"{workers} timely workers need {workers} task slots at once, the session has "
            f"{available} (master {_conf(spark, 'spark.master', '?')!r}, spark.task.cpus "
            f"{_conf(spark, 'spark.task.cpus', '1')}): ask for fewer workers or more cores")


def _epochs(batch: Batch, epoch_col: str):
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


def _window_epochs(batch: Batch, epoch_col: str, window):
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


def _labelled(batch: Batch, epoch: int, window, schema) -> Batch:
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


def _times(bounds, kind, which: str, n: int):
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


def _union(frames: dict):
    """One DataFrame of the rows of every DataFrame in ``frames``: a column
    :data:`INPUT_COLUMN` with the input's index, then the columns of every
    input (as :func:`_column_alias`), null outside that input's rows."""
    from functools import reduce

    import importlib

    first = next(iter(frames.values()))
    # The classic functions need a SparkContext, which a Connect client has not.
    F = importlib.import_module("pyspark.sql.connect.functions" if _is_connect(first.sparkSession)
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


def _splitter(schemas: list):
    """``record_batch -> [(input index, record_batch)]`` for a union of
    inputs of these Arrow ``schemas`` (see :func:`_union`): each input's rows
    with its own columns under their own names and types."""
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = [([_column_alias(k, i) for i in range(len(schema))], schema)
              for k, schema in enumerate(schemas)]

    def one(record_batch, k):
        aliases, schema = layout[k]
        arrays = [record_batch.column(a) for a in aliases]
        return pa.RecordBatch.from_arrays(
            [a.cast(f.type) if a.type != f.type else a for a, f in zip(arrays, schema)],
            names=schema.names)

    def split(record_batch):
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


def _run_task(index, peers, all_gather, batches, dataflow, arrow_schema, epoch_col, host, options,
              ports=None, cast=False, log_paths=False, names=None, split=None, window=None):
    """The body of one barrier task: yields the output as Arrow record batches."""
    from timely.dataflow.channels import Pipeline
    from timely.spark._task import TaskWorker
    from timely.spark.schema import conform
    from timely.worker import Worker

    task = TaskWorker(index, peers, all_gather, host, ports=ports)
    if log_paths and index == 0:
        from timely.spark.rendezvous import describe_paths

        log.info("timely.spark stage of %d workers: data paths %s", peers,
                 describe_paths(task.everyone))
    try:
        worker = Worker(task.allocator, **options)
        out: deque = deque()

        def collect(input_):
            for cap, data in input_:
                out.append((cap.time, data))

        with worker.dataflow() as scope:
            inputs, streams = _inputs(scope, names)
            _apply(dataflow, streams, names).sink(Pipeline(), "SparkOutput", collect)
        if split is None:
            def split(record_batch):
                return [(0, record_batch)]

        def emit():
            while out:
                time, data = out.popleft()
                if not isinstance(data, Batch):
                    raise SparkSchemaError(f"the dataflow's output carries "
                                           f"{type(data).__name__}, not timely.Batch")
                if len(data):
                    if window is not None:
                        data = _labelled(data, time, window, arrow_schema)
                    yield conform(data, arrow_schema, cast)

        for record_batch in batches:
            for k, part in split(record_batch):
                handle, cap = inputs[k]
                batch = Batch.from_arrow(part)
                if window is not None:
                    groups = _window_epochs(batch, epoch_col, window)
                else:
                    groups = _epochs(batch, epoch_col) if epoch_col else [(0, batch)]
                for epoch, rows in groups:
                    handle.session(cap.delayed(epoch)).give_container(rows)
                handle.flush()
            worker.step()
            yield from emit()
        for _, cap in inputs:
            cap.drop()
        while worker.step_or_park(0.01):
            yield from emit()
        yield from emit()
        worker.close()                    # ends the worker's log streams, if any
        task.allocator.close_links()
    finally:
        task.allocator.shutdown()
        task.close()


#: Session conf keys read by :func:`run` (``spark.conf.set`` or ``--conf``).
CONF_LISTEN_ADDRESS = "spark.timely.listenAddress"
CONF_PORTS = "spark.timely.ports"
CONF_WATCHDOG = "spark.timely.watchdogTimeout"
WATCHDOG_DEFAULT = 300.0
CONF_RETRIES = "spark.timely.retries"
RETRIES_DEFAULT = 1


def _retries(spark) -> int:
    """How many times a stage is retried after a task failed with the same
    exception each time (``spark.timely.retries``, 1 by default)."""
    value = _conf(spark, CONF_RETRIES, RETRIES_DEFAULT)
    try:
        retries = int(str(value).strip())
    except ValueError:
        retries = -1
    if retries < 0:
        raise SparkConfigError(f"{CONF_RETRIES} is a count of retries (0, 1, ...), not "
                               f"{value!r}")
    return retries


def _task_error(error: BaseException) -> SparkTaskError:
    """The error a task raises for ``error``: a SparkTaskError whose message
    starts with the user's exception type, message and traceback."""
    import traceback

    if isinstance(error, SparkTaskError):
        return error
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"
    trace = "".join(traceback.format_tb(error.__traceback__))
    return SparkTaskError(f"{name}: {error}\n{trace}".rstrip())


def _cancel_stage(spark):
    """A function that cancels a stage of ``spark`` with a reason, or None
    where the session has no SparkContext (Spark Connect)."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has none
        return None
    jsc = context._jsc.sc()

    def cancel(stage: int, reason: str) -> None:
        if stage >= 0:
            jsc.cancelStage(stage, reason)

    return cancel


def _raise_with_cause(error: BaseException, partition: int, meeting) -> None:
    """Reports how this task failed to the driver; a task stopped because a
    peer went away raises that peer's own exception instead."""
    import traceback

    if isinstance(error, WorkerFailed) and meeting is not None:
        cause = meeting.cause()
        if cause is not None:
            meeting.failed(error, traceback.format_exc(), secondary=True)
            raise SparkTaskError(
                f"timely worker {partition} stopped because worker {cause['partition']} "
                f"failed: {cause['type']}: {cause['message']}\n"
                f"--- the traceback of worker {cause['partition']} ---\n"
                f"{cause['traceback']}") from error
    if meeting is not None:
        meeting.failed(error, traceback.format_exc())


def run(df, dataflow, schema, workers: int | None = None, epoch_col: str | None = None,
        host: str | None = None, rendezvous: str = "auto", cast: bool = False,
        dry_run: bool = True, repartition: bool = True, window=None, **options):
    """Runs ``dataflow`` over ``df`` with one timely worker per Spark task.

    ``dataflow(stream) -> stream`` is called in every worker's root scope with
    the stream of its partition's rows as :class:`timely.Batch` es (at the
    epoch in ``epoch_col``, dropped from the batch, or at epoch 0) and
    returns the stream whose batches form the output, with exactly the
    columns of ``schema`` (a StructType or DDL string), of its types unless
    ``cast=True`` (:func:`timely.spark.schema.conform`). Every Arrow type
    Spark produces arrives: numbers, times and text without nulls as numpy
    columns or StringColumns, the rest (nulls, decimals, binary, arrays,
    structs, maps) as :class:`timely.container.ArrowColumn`, null rows
    null. The input closes when the partition ends and each worker runs
    until its dataflow completes.

    Event-time windows: with ``window`` (a :class:`timely.spark.Window`, or
    its length as text for tumbling windows: ``"10 minutes"``) ``epoch_col``
    is a ``timestamp`` or ``timestamp_ntz`` column, kept in the rows, and
    each window is one epoch: a row arrives once at each window holding its
    time (Spark's ``window(epoch_col, ...)``), a row with a null time in
    none (Spark leaves it out too). Output batches get the window label columns the
    schema declares and the dataflow does not make: ``window``
    (``struct<start: timestamp, end: timestamp>``, as Spark's
    ``groupBy(window(...))`` names it), ``window_start``, ``window_end``.
    Every window's result is complete when a worker sends it: a DataFrame
    has all its rows before any window completes, so no row is late (see
    :mod:`timely.spark.windows`).

    Several DataFrames: ``df`` a dict of name -> DataFrame (one session);
    ``dataflow(streams) -> stream`` then gets a dict of name -> stream, each
    the rows of that DataFrame in this worker (at the epoch in ``epoch_col``,
    which every input then has), each closing when the partition ends. The
    inputs are co-partitioned into the one barrier stage by a union: each
    DataFrame's rows tagged with its index (:data:`INPUT_COLUMN`) and its
    columns side by side with the others' (null outside its rows, so free in
    Arrow), repartitioned round robin to ``workers`` partitions (by default
    the most any input has); each task splits its Arrow batches back into
    the inputs' own columns. A barrier ``mapInArrow`` stage has one parent
    DataFrame, and DataFrames have no zip of partitions (an RDD's ``zip``
    needs equal rows per partition and leaves Arrow), so a union is what
    keeps every row in Arrow and in the executors, Spark Connect included.

    Checked at the driver before any task starts: every column's type, the
    epoch column, and (``dry_run=True``) the output's columns, by pushing one
    made-up row through the dataflow on one worker in the driver (a missing,
    renamed or mistyped column raises :class:`SparkSchemaError` naming it).
    An exception of the user's code in that dry run is raised from ``run``
    itself, as it is (its type, message and traceback, with a note saying it
    came from the dry run), unless the code cannot run outside a task (it
    asks for Spark's task context, or calls Spark as only a task may): that
    is left to the tasks, and logged at INFO.

    A failure in the tasks: each task raises :class:`SparkTaskError` whose
    message starts with the user's exception type, message and traceback.
    When a task fails with the same exception (type and message) in
    ``spark.timely.retries`` + 1 attempts of the stage in a row (1 retry by
    default; 0: none), the driver's rendezvous cancels the stage at once,
    with that exception as the reason, instead of leaving Spark to retry it
    up to ``spark.stage.maxConsecutiveAttempts`` times; the action then
    fails with Spark's job-cancelled error, whose message carries it.

    The stage is barrier mode (``mapInArrow(..., barrier=True)``), so Spark
    starts all ``workers`` tasks together (``df`` is repartitioned to that
    many partitions when it differs) and retries them together; workers find
    each other through one rendezvous and then talk directly: shared-memory
    rings between tasks on one machine (same boot id and network namespace),
    authenticated TCP otherwise. Each task decides its own listen address on
    its executor (``host``, else the session conf ``spark.timely.listenAddress``,
    else the executor's ``SPARK_LOCAL_IP``, else the address of its route to
    the driver) and port (the first free one in ``spark.timely.ports``, e.g.
    ``7100-7199``, else any). The rendezvous is a small server in the driver
    (``rendezvous="driver"``, milliseconds; it logs the data path of every
    pair at INFO on the ``timely.spark`` logger once per stage attempt) or the
    barrier context's ``allGather`` (``rendezvous="allgather"``, about a
    second per stage: the JVM polls); ``"auto"`` (the default) takes the
    driver's server, and ``allGather`` from a Spark Connect session, whose
    client the executors may not reach; see :mod:`timely.spark.rendezvous`.

    Spark Connect: ``df`` of a Connect session works the same (no
    SparkContext is used; the stage is always repartitioned to ``workers``,
    by default the session's task slots); the watchdog and the peer's own
    exception need the driver's server, which a Connect client can offer
    with ``rendezvous="driver"`` when the executors reach it.

    Never a silent hang: :func:`preflight` first; then, with the driver's
    rendezvous, a watchdog cancels the stage when its tasks have not all
    started, or a failed attempt has not been retried, within
    ``spark.timely.watchdogTimeout`` seconds (300 by default); a task that
    stops because a peer failed raises the peer's own exception, type,
    message and traceback.

    The result is repartitioned (``repartition=True``): a shuffle boundary
    after the barrier stage, so that Spark accepts any later step on it.
    Without it
    (``repartition=False``, one shuffle of the output less) Spark refuses
    ``take``, ``first``, ``show``, ``limit`` and ``coalesce`` directly on the
    result (its barrier-stage check); ``collect``, ``count``, writes and
    aggregations work. Lazy, like any DataFrame.
    """
    from pyspark import BarrierTaskContext

    from timely.spark._task import listen_address, parse_ports

    if window is not None and not isinstance(window, Window):
        window = Window(window)
    names = split = None
    if isinstance(df, dict):
        frames = _frames(df)
        names = list(frames)
        first = next(iter(frames.values()))
        spark = first.sparkSession
        connect = _is_connect(spark)
        partitions = None if connect else max(f.rdd.getNumPartitions()
                                               for f in frames.values())
        peers = workers or partitions or slots(spark)
        preflight(spark, peers)
        checked = [_schemas(f, schema, epoch_col, window) for f in frames.values()]
        struct, arrow_schema = checked[0][:2]
        incoming = [c[2] for c in checked]
        split = _splitter(incoming)
        df = _union(frames).repartition(peers)
    else:
        spark = df.sparkSession
        connect = _is_connect(spark)
        partitions = None if connect else df.rdd.getNumPartitions()
        peers = workers or partitions or slots(spark)
        preflight(spark, peers)
        if partitions != peers:                # unknown under Spark Connect: always
            df = df.repartition(peers)
        struct, arrow_schema, incoming = _schemas(df, schema, epoch_col, window)
    if dry_run:
        label = None if window is None else (
            lambda batch: _labelled(batch, 1 << 63, window, arrow_schema))
        _dry_run(_through_dataflow(dataflow, names), incoming, arrow_schema, epoch_col, cast,
                 label)
    configured = host or _conf(spark, CONF_LISTEN_ADDRESS)
    ports = parse_ports(_conf(spark, CONF_PORTS))
    watchdog = float(_conf(spark, CONF_WATCHDOG, WATCHDOG_DEFAULT))
    retries = _retries(spark)
    driver_host = _conf(spark, "spark.driver.host") or os.environ.get("SPARK_LOCAL_IP") \
        or "127.0.0.1"
    if rendezvous == "auto":
        rendezvous = "allgather" if connect else "driver"
    if rendezvous == "driver":
        from timely.spark.rendezvous import driver_server

        server = driver_server(driver_host)
        meeting = (server.address, server.secret,
                   server.new_run(peers, watchdog, _cancel_stage(spark), retries),
                   watchdog)
    elif rendezvous == "allgather":
        meeting = None
    else:
        raise SparkConfigError(f"rendezvous is 'auto', 'driver' or 'allgather', not "
                               f"{rendezvous!r}")

    def task(batches):
        context = BarrierTaskContext.get()
        partition = context.partitionId()
        here = listen_address(configured, driver_host)
        if meeting is None:
            gather, met = context.allGather, None
        else:
            from timely.spark.rendezvous import Meeting

            met = Meeting(meeting[0], meeting[1], meeting[2], partition, timeout=meeting[3],
                          stage=context.stageId())
            gather = met.gather
        try:
            yield from _run_task(partition, peers, gather, batches, dataflow,
                                 arrow_schema, epoch_col, here, options, ports, cast,
                                 window=window,
                                 log_paths=met is None, names=names, split=split)
        except Exception as error:
            _raise_with_cause(error, partition, met)
            raise _task_error(error) from error
        finally:
            if met is not None:
                met.done()

    result = df.mapInArrow(task, struct, barrier=True)
    return result.repartition(peers) if repartition else result


def _frames(frames: dict) -> dict:
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


def map_batches(df, fn, schema, cast: bool = False, dry_run: bool = True):
    """``fn(batch) -> Batch`` (or a dict of arrays) over every Arrow batch of
    ``df``: numpy views of the columns in (nulls and nested types as
    :class:`timely.container.ArrowColumn`), the result held to ``schema`` as
    :func:`run` does (checked on one made-up row at the driver first). No
    barrier and no exchange: for stateless steps and pre-aggregation."""
    from timely.spark.schema import conform

    struct, arrow_schema, incoming = _schemas(df, schema, None)

    def one(batch):
        result = fn(batch)
        return result if isinstance(result, Batch) else Batch(result)

    if dry_run:
        _dry_run(lambda batch: [one(batch)], incoming, arrow_schema, None, cast)

    def task(batches):
        for record_batch in batches:
            yield conform(one(Batch.from_arrow(record_batch)), arrow_schema, cast)

    return df.mapInArrow(task, struct)


def query_identity(batch_df, checkpoint: str | None = None) -> str | None:
    """The id of the streaming query a micro-batch belongs to: Spark's
    ``sql.streaming.queryId`` of the micro-batch's thread, else the ``id`` in
    ``checkpoint``'s ``metadata`` file (the same for every run of the query
    from that checkpoint, new for a new checkpoint)."""
    try:
        found = batch_df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext
        found = None
    if found:
        return str(found)
    if checkpoint:
        try:
            with open(os.path.join(checkpoint, "metadata")) as f:
                return str(json.loads(f.readline())["id"])
        except (OSError, ValueError, KeyError):
            return None
    return None


class _Applied:
    """The highest batch id applied by a callable sink and the query it
    belongs to, kept in a small JSON file so that it survives a restart.
    Written after the sink returned: at least once, not exactly once."""

    def __init__(self, path: str | None):
        self.path = path
        self.frontier = -1
        self.query = None
        if path and os.path.exists(path):
            with open(path) as f:
                saved = json.load(f)
            self.frontier = int(saved["applied"])
            self.query = saved.get("query")

    def committed(self, query: str | None) -> int:
        if self.query is not None and query is not None and query != self.query:
            raise SparkConfigError(
                f"the progress file {self.path!r} belongs to streaming query {self.query}, not "
                f"to this one ({query}): give each query its own progress_path (a new "
                "checkpoint is a new query)")
        return self.frontier

    def write(self, sink, result, batch_id: int, query: str | None) -> None:
        sink(result, batch_id)
        self.frontier = batch_id
        self.query = query or self.query
        if self.path:
            temporary = self.path + ".tmp"
            with open(temporary, "w") as f:
                json.dump({"applied": batch_id, "query": self.query}, f)
            os.replace(temporary, self.path)


class _Transactional:
    """A sink that keeps its own frontier: ``sink.write(result_df, batch_id,
    query)`` writes the output and the batch id in one atomic step, and
    ``sink.committed(query)`` is the highest batch id so written (-1 for
    none), refusing another query's output. See
    :class:`timely.spark.sinks.DirectorySink`."""

    def __init__(self, sink):
        self.sink = sink

    def committed(self, query: str | None) -> int:
        return self.sink.committed(query)

    def write(self, sink, result, batch_id: int, query: str | None) -> None:
        sink.write(result, batch_id, query)


def foreach_batch(dataflow, schema, sink, workers: int | None = None,
                  epoch_col: str | None = None, progress_path: str | None = None,
                  checkpoint: str | None = None, **options):
    """The callable for ``writeStream.foreachBatch``: each micro-batch runs
    :func:`run` with the batch id as its epoch (unless ``epoch_col`` names a
    column), and the sink receives the output.

    Exactly once: ``sink`` is transactional (has ``write`` and ``committed``,
    as :class:`timely.spark.sinks.DirectorySink`): the output and the batch
    id are committed together by the sink, and a batch id at or below what
    it committed, replayed after a failure or a restart, is not applied
    again; whatever a crash left half-written is discarded by the replay.

    At least once: ``sink(result_df, batch_id)`` is a plain callable; the
    highest batch id applied is then kept in ``progress_path`` (a JSON file)
    after the sink returns, so a crash between the two applies that batch
    again.

    Either way the frontier is tied to the streaming query (its id, from the
    micro-batch or from ``checkpoint``'s metadata): a sink or progress file
    of another query raises :class:`SparkConfigError` instead of skipping
    batches.
    """
    frontier: _Transactional | _Applied
    if hasattr(sink, "write") and hasattr(sink, "committed"):
        frontier = _Transactional(sink)
    else:
        frontier = _Applied(progress_path)

    def apply(batch_df, batch_id: int) -> None:
        query = query_identity(batch_df, checkpoint)
        if batch_id <= frontier.committed(query):
            return
        if epoch_col is None:
            from pyspark.sql import functions as F

            frame = batch_df.withColumn("__timely_epoch", F.lit(batch_id).cast("long"))
            result = run(frame, dataflow, schema, workers=workers, epoch_col="__timely_epoch",
                         **options)
        else:
            result = run(batch_df, dataflow, schema, workers=workers, epoch_col=epoch_col,
                         **options)
        frontier.write(sink, result, batch_id, query)

    apply.frontier = frontier  # type: ignore[attr-defined]  # read by callers and tests
    return apply
