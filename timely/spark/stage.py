"""The barrier stage of :func:`run`: one timely worker per Spark task, the
rendezvous that connects them, the body each task runs, and what a failed
task tells the driver."""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from timely.config import Config, configured
from timely.container import Batch
from timely.errors import SparkConfigError, SparkSchemaError, SparkTaskError, WorkerFailed
from timely.spark import dryrun
from timely.spark.dryrun import apply_dataflow, open_inputs
from timely.spark.partitions import (
    check_schemas,
    checked_frames,
    epochs_of,
    labelled,
    splitter,
    union_inputs,
    window_epochs,
)
from timely.spark.session import conf, is_connect, preflight, session_settings, slots
from timely.spark.windows import Window

__all__ = ["run"]

log = logging.getLogger("timely.spark")

# The most rows of one Arrow record batch a task hands back to Spark.
_OUTPUT_ROWS = 1 << 16


@dataclass(frozen=True)
class MeetingPlace:
    """Where the tasks of one run meet: the driver's rendezvous server
    (:mod:`timely.spark.rendezvous`), the run's id there, and how long a
    task waits for its peers."""

    address: tuple[str, int]
    secret: bytes
    run: str
    timeout: float


@dataclass(frozen=True)
class Stage:
    """What every task of one run's barrier stage needs, shipped with it."""

    peers: int
    dataflow: Callable[[Any], Any]
    output: Any                        # the declared Arrow schema
    epoch_col: str | None
    window: Window | None
    cast: bool
    names: list[str] | None            # the inputs' names, for several DataFrames
    split: Callable[[Any], list[tuple[int, Any]]] | None
    listen: str | None                 # the listen address asked for, if any
    driver_host: str
    config: Config                     # the driver's, with the session's spark.timely.* keys
    meeting: MeetingPlace | None       # None: BarrierTaskContext.allGather


def _run_task(stage: Stage, index: int, gather: Callable[[str], list[str]], batches: Any,
              host: str) -> Iterator[Any]:
    """The body of task ``index``: yields the output as Arrow record batches."""
    from timely.dataflow.channels import Pipeline
    from timely.spark._task import TaskWorker
    from timely.spark.schema import conform
    from timely.worker import Worker

    task = TaskWorker(index, stage.peers, gather, host, ports=stage.config.spark.ports,
                      config=stage.config)
    if stage.meeting is None and index == 0:
        from timely.spark.rendezvous import describe_paths

        log.info("timely.spark stage of %d workers: data paths %s", stage.peers,
                 describe_paths(task.everyone))
    try:
        worker = Worker(task.allocator, **stage.config.worker.options())
        out: deque[tuple[Any, Any]] = deque()

        def collect(input_: Any) -> None:
            for cap, data in input_:
                out.append((cap.time, data))

        with worker.dataflow() as scope:
            inputs, streams = open_inputs(scope, stage.names)
            apply_dataflow(stage.dataflow, streams, stage.names).sink(
                Pipeline(), "SparkOutput", collect)
        split = stage.split or (lambda record_batch: [(0, record_batch)])
        window, epoch_col = stage.window, stage.epoch_col

        def emit() -> Iterator[Any]:
            while out:
                time, data = out.popleft()
                if not isinstance(data, Batch):
                    raise SparkSchemaError(f"the dataflow's output carries "
                                           f"{type(data).__name__}, not timely.Batch")
                if len(data):
                    if window is not None:
                        data = labelled(data, time, window, stage.output)
                    # In slices: a worker's whole share in one record batch
                    # (PageRank's ranks, say) would be copied whole on its way to Spark.
                    for at in range(0, len(data), _OUTPUT_ROWS):
                        yield conform(data if len(data) <= _OUTPUT_ROWS else
                                      data.slice(at, at + _OUTPUT_ROWS), stage.output, stage.cast)

        for record_batch in batches:
            for k, part in split(record_batch):
                handle, cap = inputs[k]
                batch = Batch.from_arrow(part)
                if window is not None and epoch_col is not None:
                    groups = window_epochs(batch, epoch_col, window)
                else:
                    groups = epochs_of(batch, epoch_col) if epoch_col else [(0, batch)]
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


def _task(stage: Stage, batches: Any) -> Iterator[Any]:
    """What ``mapInArrow`` runs in each task of the stage."""
    from pyspark import BarrierTaskContext

    from timely.spark._task import listen_address

    context = BarrierTaskContext.get()
    partition = context.partitionId()
    here = listen_address(stage.listen, stage.driver_host)
    met = None
    gather: Callable[[str], list[str]]
    if stage.meeting is None:
        gather = context.allGather
    else:
        from timely.spark.rendezvous import Meeting

        place = stage.meeting
        met = Meeting(place.address, place.secret, place.run, partition,
                      timeout=place.timeout, stage=context.stageId())
        gather = met.gather
    try:
        yield from _run_task(stage, partition, gather, batches, here)
    except Exception as error:
        _raise_with_cause(error, partition, met)
        raise _task_error(error) from error
    finally:
        if met is not None:
            met.done()


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


def _cancel_stage(spark: Any) -> Callable[[int, str], None] | None:
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


def _raise_with_cause(error: BaseException, partition: int, meeting: Any) -> None:
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


def default_workers(spark: Any, partitions: int | None) -> int:
    """The workers of a stage whose input has ``partitions`` partitions
    (None: unknown, as under Spark Connect): one per partition, at most the
    session's task slots (:func:`~timely.spark.session.slots`)."""
    free = slots(spark)
    return free if not partitions else min(partitions, free)

def _spread(df: Any, peers: int, spread: str) -> Any:
    """``df`` repartitioned to ``peers`` partitions as :func:`run`'s ``spread`` says."""
    if spread == "rows":
        return df.repartition(peers)
    if spread == "hash":
        return df.repartition(peers, *[df[f"`{c.replace('`', '``')}`"] for c in df.columns])
    raise SparkConfigError(f"spread is 'rows' or 'hash', not {spread!r}")


def run(df: Any, dataflow: Callable[[Any], Any], schema: Any, workers: int | None = None,
        epoch_col: str | None = None, host: str | None = None, rendezvous: str = "auto",
        cast: bool = False, dry_run: bool = True, repartition: bool = True,
        window: Window | str | None = None, config: Config | None = None,
        spread: str = "rows", **options: Any) -> Any:
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
    Arrow), repartitioned to ``workers`` partitions (by default the most any
    input has, at most the session's task slots) as ``spread`` says; each task
    splits its Arrow batches back into the inputs' own columns. A barrier
    ``mapInArrow`` stage has one parent DataFrame, and DataFrames have no
    zip of partitions (an RDD's ``zip`` needs equal rows per partition and
    leaves Arrow), so a union is what keeps every row in Arrow and in the
    executors, Spark Connect included.

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
    many partitions when it differs, and always for several DataFrames) and
    retries them together. ``spread``: ``"rows"`` (the default) deals the
    rows out round robin, which Spark makes repeatable for a retried task by
    sorting each partition's rows first (at 10^8 rows on two cores, minutes
    of the stage's time); ``"hash"`` sends each row by a hash of all its
    columns, with no sort, so that equal rows meet on one worker: for
    inputs of few repeated rows, as a graph's edges and vertices. By default
    ``workers`` is the number of ``df``'s partitions, at most the session's
    task slots (a barrier stage needs every task running at once, so a
    Parquet file read in 19 splits on ``local[2]`` runs on 2 workers);
    given explicitly, more workers than slots fail at once
    (:func:`preflight`). Workers find
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

    Settings: ``config`` (a :class:`timely.Config`; by default the driver's
    ``TIMELY_*`` environment, :meth:`timely.Config.from_env`) with the
    keyword ``options`` over it (``check_progress=``, ``window=``,
    ``heartbeat=``, ...) and the session's ``spark.timely.*`` keys over its
    ``spark`` group is read and checked at the driver (a bad value is a
    :class:`~timely.errors.ConfigurationError` naming it, before any task
    starts) and goes whole to every task: its worker, allocator and links.
    """
    if window is not None and not isinstance(window, Window):
        window = Window(window)
    names = split = None
    if isinstance(df, dict):
        frames = checked_frames(df)
        names = list(frames)
        first = next(iter(frames.values()))
        spark = first.sparkSession
        connect = is_connect(spark)
        partitions = None if connect else max(f.rdd.getNumPartitions()
                                               for f in frames.values())
        peers = workers or default_workers(spark, partitions)
        preflight(spark, peers)
        checked = [check_schemas(f, schema, epoch_col, window) for f in frames.values()]
        struct, arrow_schema = checked[0].struct, checked[0].output
        incoming = [c.incoming for c in checked]
        split = splitter(incoming)
        df = _spread(union_inputs(frames), peers, spread)
    else:
        spark = df.sparkSession
        connect = is_connect(spark)
        partitions = None if connect else df.rdd.getNumPartitions()
        peers = workers or default_workers(spark, partitions)
        preflight(spark, peers)
        if partitions != peers:                # unknown under Spark Connect: always
            df = _spread(df, peers, spread)
        schemas = check_schemas(df, schema, epoch_col, window)
        struct, arrow_schema, incoming = schemas.struct, schemas.output, schemas.incoming
    settings = session_settings(spark, configured(config, options))
    if dry_run:
        label = None if window is None else (
            lambda batch: labelled(batch, 1 << 63, window, arrow_schema))
        dryrun.dry_run(dryrun.through_dataflow(dataflow, names), incoming, arrow_schema,
                       epoch_col, cast, label)
    watchdog = settings.spark.watchdog_timeout
    driver_host = conf(spark, "spark.driver.host") or os.environ.get("SPARK_LOCAL_IP") \
        or "127.0.0.1"
    if rendezvous == "auto":
        rendezvous = "allgather" if connect else "driver"
    meeting = None
    if rendezvous == "driver":
        from timely.spark.rendezvous import driver_server

        server = driver_server(driver_host)
        meeting = MeetingPlace(server.address, server.secret,
                               server.new_run(peers, watchdog, _cancel_stage(spark),
                                              settings.spark.retries),
                               watchdog)
    elif rendezvous != "allgather":
        raise SparkConfigError(f"rendezvous is 'auto', 'driver' or 'allgather', not "
                               f"{rendezvous!r}")
    stage = Stage(peers=peers, dataflow=dataflow, output=arrow_schema, epoch_col=epoch_col,
                  window=window, cast=cast, names=names, split=split,
                  listen=host or settings.spark.listen_address, driver_host=driver_host,
                  config=settings, meeting=meeting)

    def task(batches: Any) -> Iterator[Any]:
        return _task(stage, batches)

    result = df.mapInArrow(task, struct, barrier=True)
    return result.repartition(peers) if repartition else result
