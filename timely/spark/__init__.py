"""Spark partitions feeding timely, and timely workers placed by Spark.

Needs the ``spark`` extra (``pip install "timely-dataflow[spark]"``: pyspark
4, pyarrow, pandas < 3) and Java 17. Nothing here is imported by ``import
timely``.

- :func:`run`: a timely computation over a DataFrame, one worker per Spark
  task of a barrier-mode stage; the result is a DataFrame.
- :func:`map_batches`: a stateless vectorized step over every Arrow batch,
  no barrier and no exchange.
- :func:`foreach_batch`: the callable for Structured Streaming's
  ``foreachBatch``, with the batch id as the epoch.
- :func:`preflight`: fails in seconds, saying what to change, where a
  barrier stage would otherwise hang.
"""

from __future__ import annotations

import json
import os
from collections import deque

import numpy as np

from timely.container import Batch
from timely.errors import SparkConfigError, TimelyError

__all__ = ["SparkConfigError", "foreach_batch", "map_batches", "preflight", "run"]


def _struct(spark, schema):
    """A StructType for ``schema`` (a StructType or a DDL string)."""
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        return schema
    return spark.createDataFrame([], schema).schema


def _arrow_schema(struct):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct)


def slots(spark) -> int:
    """How many tasks the session can run at once."""
    conf = spark.sparkContext.getConf()
    cpus = int(conf.get("spark.task.cpus", "1"))
    master = spark.sparkContext.master
    if master.startswith("local"):
        inside = master[len("local"):].strip("[]").split(",")[0]
        if inside in ("", "1"):
            cores = 1
        elif inside == "*":
            cores = os.cpu_count() or 1
        else:
            cores = int(inside)
        return max(0, cores // cpus)
    return max(0, spark.sparkContext.defaultParallelism // cpus)


def preflight(spark, workers: int) -> None:
    """Raises :class:`SparkConfigError` when a barrier stage of ``workers``
    tasks could hang or be refused: dynamic allocation on, or fewer free
    slots than workers. Costs no Spark job."""
    if workers < 1:
        raise SparkConfigError(f"workers must be at least 1, not {workers}")
    conf = spark.sparkContext.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        raise SparkConfigError(
            "barrier stages cannot run with dynamic allocation: set "
            "spark.dynamicAllocation.enabled=false for this session")
    available = slots(spark)
    if available < workers:
        raise SparkConfigError(
            f"{workers} timely workers need {workers} task slots at once, the session has "
            f"{available} (master {spark.sparkContext.master!r}, spark.task.cpus "
            f"{conf.get('spark.task.cpus', '1')}): ask for fewer workers or more cores")


def _epochs(batch: Batch, epoch_col: str):
    """``[(epoch, rows)]`` of ``batch`` grouped by its epoch column, without the column."""
    epochs = np.asarray(batch[epoch_col])
    if epochs.dtype.kind not in "iu":
        raise TimelyError(f"epoch column {epoch_col!r} holds {epochs.dtype}, not integers")
    rest = batch.select([n for n in batch.names if n != epoch_col])
    if len(batch) == 0:
        return []
    if epochs.dtype.kind == "i" and epochs.min() < 0:
        raise TimelyError(f"epoch column {epoch_col!r} holds a negative epoch {int(epochs.min())}")
    first = int(epochs[0])
    if (epochs == first).all():
        return [(first, rest)]
    order = np.argsort(epochs, kind="stable")
    values, starts = np.unique(epochs[order], return_index=True)
    bounds = [*starts.tolist(), len(batch)]
    return [(int(v), rest.take(order[bounds[k]:bounds[k + 1]])) for k, v in enumerate(values)]


def _run_task(index, peers, all_gather, batches, dataflow, arrow_schema, epoch_col, host, options):
    """The body of one barrier task: yields the output as Arrow record batches."""
    from timely.dataflow.channels import Pipeline
    from timely.spark._task import TaskWorker
    from timely.worker import Worker

    task = TaskWorker(index, peers, all_gather, host)
    try:
        worker = Worker(task.allocator, **options)
        out: deque = deque()

        def collect(input_):
            for _, data in input_:
                out.append(data)

        with worker.dataflow() as scope:
            (handle, cap), stream = scope.new_unordered_input()
            dataflow(stream).sink(Pipeline(), "SparkOutput", collect)

        def emit():
            while out:
                data = out.popleft()
                if not isinstance(data, Batch):
                    raise TimelyError(f"the dataflow's output carries {type(data).__name__}, "
                                      "not timely.Batch")
                if len(data):
                    yield data.to_arrow(arrow_schema)

        for record_batch in batches:
            batch = Batch.from_arrow(record_batch)
            groups = _epochs(batch, epoch_col) if epoch_col else [(0, batch)]
            for epoch, rows in groups:
                handle.session(cap.delayed(epoch)).give_container(rows)
            handle.flush()
            worker.step()
            yield from emit()
        cap.drop()
        while worker.step_or_park(0.01):
            yield from emit()
        yield from emit()
        worker.close()                    # ends the worker's log streams, if any
        task.allocator.close_links()
    finally:
        task.allocator.shutdown()
        task.close()


def run(df, dataflow, schema, workers: int | None = None, epoch_col: str | None = None,
        host: str | None = None, rendezvous: str = "driver", **options):
    """Runs ``dataflow`` over ``df`` with one timely worker per Spark task.

    ``dataflow(stream) -> stream`` is called in every worker's root scope with
    the stream of its partition's rows as :class:`timely.Batch` es (at the
    epoch in ``epoch_col``, dropped from the batch, or at epoch 0) and
    returns the stream whose batches form the output, cast to ``schema`` (a
    StructType or DDL string). The input closes when the partition ends and
    each worker runs until its dataflow completes.

    The stage is barrier mode (``mapInArrow(..., barrier=True)``), so Spark
    starts all ``workers`` tasks together (``df`` is repartitioned to that
    many partitions when it differs) and retries them together; workers find
    each other through one rendezvous and then talk directly: shared-memory
    rings on one host, authenticated TCP (listening on ``host``, by default
    ``SPARK_LOCAL_IP`` or loopback) between hosts. The rendezvous is a small
    server in the driver (``rendezvous="driver"``, milliseconds) or the
    barrier context's ``allGather`` (``rendezvous="allgather"``, about a
    second per stage: the JVM polls); see :mod:`timely.spark.rendezvous`. The
    result is repartitioned so that a failed task reruns the whole stage.
    Lazy, like any DataFrame.
    """
    from pyspark import BarrierTaskContext

    spark = df.sparkSession
    peers = workers or df.rdd.getNumPartitions()
    preflight(spark, peers)
    if df.rdd.getNumPartitions() != peers:
        df = df.repartition(peers)
    struct = _struct(spark, schema)
    arrow_schema = _arrow_schema(struct)
    host = host or os.environ.get("SPARK_LOCAL_IP") or "127.0.0.1"
    if rendezvous == "driver":
        from timely.spark.rendezvous import driver_server

        driver_host = spark.sparkContext.getConf().get("spark.driver.host", host)
        server = driver_server(driver_host)
        meeting = (server.address, server.secret, server.new_run(peers))
    elif rendezvous == "allgather":
        meeting = None
    else:
        raise SparkConfigError(f"rendezvous is 'driver' or 'allgather', not {rendezvous!r}")

    def task(batches):
        context = BarrierTaskContext.get()
        partition = context.partitionId()
        if meeting is None:
            gather = context.allGather
        else:
            from timely.spark.rendezvous import driver_gather

            gather = driver_gather(meeting[0], meeting[1], meeting[2], partition)
        yield from _run_task(partition, peers, gather, batches, dataflow,
                             arrow_schema, epoch_col, host, options)

    return df.mapInArrow(task, struct, barrier=True).repartition(peers)


def map_batches(df, fn, schema):
    """``fn(batch) -> Batch`` (or a dict of arrays) over every Arrow batch of
    ``df``: numpy views of the columns in, the result cast to ``schema``. No
    barrier and no exchange: for stateless steps and pre-aggregation."""
    spark = df.sparkSession
    struct = _struct(spark, schema)
    arrow_schema = _arrow_schema(struct)

    def task(batches):
        for record_batch in batches:
            result = fn(Batch.from_arrow(record_batch))
            if not isinstance(result, Batch):
                result = Batch(result)
            yield result.to_arrow(arrow_schema)

    return df.mapInArrow(task, struct)


class _Applied:
    """The highest batch id already applied, kept in a small JSON file so that
    it survives a restart of the streaming query."""

    def __init__(self, path: str | None):
        self.path = path
        self.frontier = -1
        if path and os.path.exists(path):
            with open(path) as f:
                self.frontier = int(json.load(f)["applied"])

    def advance(self, batch_id: int) -> None:
        self.frontier = batch_id
        if self.path:
            temporary = self.path + ".tmp"
            with open(temporary, "w") as f:
                json.dump({"applied": batch_id}, f)
            os.replace(temporary, self.path)


def foreach_batch(dataflow, schema, sink, workers: int | None = None,
                  epoch_col: str | None = None, progress_path: str | None = None, **options):
    """The callable for ``writeStream.foreachBatch``: each micro-batch runs
    :func:`run` with the batch id as its epoch (unless ``epoch_col`` names a
    column), and ``sink(result_df, batch_id)`` receives the output.

    The highest batch id applied is the frontier, kept in ``progress_path``
    (a JSON file; use one beside the query's checkpoint). A batch id at or
    below it, replayed after a failure or a restart, is not applied twice.
    """
    applied = _Applied(progress_path)

    def apply(batch_df, batch_id: int) -> None:
        if batch_id <= applied.frontier:
            return
        if epoch_col is None:
            from pyspark.sql import functions as F

            frame = batch_df.withColumn("__timely_epoch", F.lit(batch_id).cast("long"))
            result = run(frame, dataflow, schema, workers=workers, epoch_col="__timely_epoch",
                         **options)
        else:
            result = run(batch_df, dataflow, schema, workers=workers, epoch_col=epoch_col,
                         **options)
        sink(result, batch_id)
        applied.advance(batch_id)

    apply.applied = applied
    return apply
