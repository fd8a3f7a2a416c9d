"""Structured Streaming: each micro-batch through :func:`timely.spark.run`
at its batch id, and the ledgers that make the sink exactly once
(transactional sinks) or at least once (a progress file)."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from timely.errors import SparkConfigError
from timely.spark.stage import run

__all__ = ["foreach_batch", "query_identity"]

def query_identity(batch_df: Any, checkpoint: str | None = None) -> str | None:
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

    def write(self, sink: Any, result: Any, batch_id: int, query: str | None) -> None:
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

    def __init__(self, sink: Any) -> None:
        self.sink = sink

    def committed(self, query: str | None) -> int:
        return self.sink.committed(query)

    def write(self, sink: Any, result: Any, batch_id: int, query: str | None) -> None:
        sink.write(result, batch_id, query)


def foreach_batch(dataflow: Callable[[Any], Any], schema: Any, sink: Any,
                  workers: int | None = None, epoch_col: str | None = None,
                  progress_path: str | None = None, checkpoint: str | None = None,
                  **options: Any) -> Callable[[Any, int], None]:
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

    def apply(batch_df: Any, batch_id: int) -> None:
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
