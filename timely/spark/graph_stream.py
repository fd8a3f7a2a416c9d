"""A graph answer kept up to date over a Structured Streaming query of
edges: the callable for ``writeStream.foreachBatch``, exactly once.

:class:`GraphUpdates` keeps one timely dataflow of an incremental algorithm
of :mod:`timely.algorithms` (connected components, hop distances to
landmarks, weighted shortest paths from a source) running in ``workers``
processes beside the driver, where ``foreachBatch`` calls it. Each
micro-batch's edges go in as the next time (Arrow from the JVM, split over
the workers); what comes out is a DataFrame of the vertices whose answer
changed in that micro-batch, which the sink receives. The work of a
micro-batch is its edges plus the changes they make, not the graph.

Exactly once, as :func:`timely.spark.foreach_batch` with a transactional
sink (:class:`timely.spark.sinks.DirectorySink`): the sink commits each
batch's output with its batch id. The edges of every micro-batch are kept
in ``log_path`` (one Arrow IPC file per batch id, written before the batch
is applied). When a query starts or restarts, the state is rebuilt from
the logged batches the sink has committed (in one step, their output not
written again); logged batches beyond it are removed, as Spark replays
them; a batch id at or below what the sink committed is skipped.

Vertex ids are 64-bit integers (Spark ``long`` or narrower integers):
numbers that identify vertices across micro-batches without a dictionary.

    updates = GraphUpdates("connectedComponents", DirectorySink(out), log_path=log)
    query = edges.writeStream.foreachBatch(updates).option(
        "checkpointLocation", checkpoint).start()
    ...
    query.stop(); updates.close()
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import queue
import threading
from typing import Any

import numpy as np

from timely.errors import SparkConfigError, SparkSchemaError
from timely.spark.streaming import query_identity

__all__ = ["ALGORITHMS", "GraphUpdates"]

#: The algorithms and the columns of their output, as ``(name, Spark type)``.
ALGORITHMS: dict[str, tuple[tuple[str, str], ...]] = {
    "connectedComponents": (("id", "long"), ("component", "long")),
    "shortestPaths": (("id", "long"), ("landmark", "long"), ("distance", "long")),
    "sssp": (("id", "long"), ("distance", "double")),
}

_POLL = 0.5     # seconds between looks at whether the workers are still running


def _build(algorithm: str, landmarks: np.ndarray, source: int | None, directed: bool):
    """``build(edges, marks)`` making the algorithm's stream of
    ``(node, ...)`` Batches."""
    from timely.algorithms import connected_components, shortest_paths, sssp

    if algorithm == "connectedComponents":
        return lambda edges, marks: connected_components(edges)
    if algorithm == "shortestPaths":
        return lambda edges, marks: shortest_paths(edges, marks, directed=directed)
    assert source is not None
    return lambda edges, marks: sssp(edges, source, directed=directed)


class GraphUpdates:
    """The callable for ``writeStream.foreachBatch`` that keeps ``algorithm``'s
    answer over every edge so far: each micro-batch's output (to ``sink``)
    is the rows of the vertices whose answer changed in it.

    ``algorithm``: ``"connectedComponents"`` (``id``, ``component``: the
    least vertex id of its component); ``"shortestPaths"`` (``id``,
    ``landmark``, ``distance``: hops from ``id`` to each landmark of
    ``landmarks`` it reaches, as GraphFrames' ``shortestPaths``, one row
    per pair); ``"sssp"`` (``id``, ``distance``: the least total
    ``weight`` from ``source``, ``inf`` for a vertex not reached). A
    micro-batch has columns ``src`` and ``dst`` (and ``weight`` for
    ``"sssp"``); ``directed=False`` reads each edge both ways.

    ``sink``: transactional (``write(df, batch_id, query)`` and
    ``committed(query)``, as :class:`~timely.spark.sinks.DirectorySink`).
    ``log_path``: a directory that keeps the edges of every applied
    micro-batch, one per query (as the sink). ``workers``: the timely
    worker processes beside the driver (default 2). Call :meth:`close` (or
    use it as a context manager) to stop them.
    """

    def __init__(self, algorithm: str, sink: Any, *, log_path: str, workers: int = 2,
                 landmarks: Any = (), source: int | None = None, weight: str = "weight",
                 directed: bool = True, checkpoint: str | None = None,
                 config: Any = None) -> None:
        if algorithm not in ALGORITHMS:
            raise SparkConfigError(f"the algorithm is one of {sorted(ALGORITHMS)}, not "
                                   f"{algorithm!r}")
        if not (hasattr(sink, "write") and hasattr(sink, "committed")):
            raise SparkConfigError("the sink of graph updates is transactional: it has "
                                   "write(df, batch_id, query) and committed(query), as "
                                   "timely.spark.sinks.DirectorySink")
        if algorithm == "sssp" and source is None:
            raise SparkConfigError("sssp needs source=, the vertex the distances start from")
        if workers < 1:
            raise SparkConfigError(f"workers must be at least 1, not {workers}")
        self.algorithm = algorithm
        self.sink = sink
        self.log_path = log_path
        self.workers = workers
        self.landmarks = np.asarray(list(landmarks), dtype=np.int64)
        self.source = None if source is None else int(source)
        self.weight = weight
        self.directed = directed
        self.checkpoint = checkpoint
        self.config = config
        self._started = False
        self._epoch = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._inboxes: list[Any] = []
        self._outbox: Any = None

    # -- the workers -------------------------------------------------------------------------

    def _start(self) -> None:
        from timely.container import Batch
        from timely.launch import execute

        context = multiprocessing.get_context("fork")
        self._failure = None
        self._inboxes = [context.Queue() for _ in range(self.workers)]
        self._outbox = context.Queue()
        inboxes, outbox = self._inboxes, self._outbox
        build = _build(self.algorithm, self.landmarks, self.source, self.directed)
        landmarks = self.landmarks

        def work(worker: Any) -> None:
            k, p = worker.index, worker.peers
            found: list = []
            with worker.dataflow() as scope:
                edge_input, edges = scope.new_input()
                mark_input, marks = scope.new_input()
                out = build(edges, marks)
                out.inspect_batch(lambda t, b: found.append(b))
                probe = out.probe()
            mark_input.send_batch(Batch(node=landmarks[k::p]))
            mark_input.close()
            epoch = 0
            while True:
                message = inboxes[k].get()
                if message is None:
                    break
                src, dst, weight, report = message
                edge_input.send_batch(Batch(src=src, dst=dst, weight=weight))
                epoch += 1
                edge_input.advance_to(epoch)
                worker.step_while(lambda now=epoch: probe.less_than(now))
                rows = Batch.concat(found) if found and report else None
                found.clear()
                outbox.put((k, None if rows is None else dict(rows.columns)))
            edge_input.close()

        def main() -> None:
            try:
                execute(work, workers=self.workers, config=self.config)
            except BaseException as error:  # noqa: BLE001 - raised by the next call
                self._failure = error

        self._thread = threading.Thread(target=main, name="timely-graph-updates", daemon=True)
        self._thread.start()
        self._started = True

    def _apply(self, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
               report: bool) -> dict[str, np.ndarray] | None:
        """Gives the edges to the workers as the next time; the changed rows."""
        p = self.workers
        for k, inbox in enumerate(self._inboxes):
            inbox.put((src[k::p].copy(), dst[k::p].copy(), weight[k::p].copy(), report))
        parts: list[dict[str, np.ndarray]] = []
        answered = 0
        while answered < p:
            try:
                _, rows = self._outbox.get(timeout=_POLL)
            except queue.Empty:
                self._check_running()
                continue
            answered += 1
            if rows is not None:
                parts.append(rows)
        self._epoch += 1
        if not report:
            return None
        names = parts[0].keys() if parts else ()
        return {n: np.concatenate([part[n] for part in parts]) for n in names}

    def _check_running(self) -> None:
        thread = self._thread
        if self._failure is not None or thread is None or not thread.is_alive():
            failure = self._failure
            self._started = False
            raise SparkConfigError(f"the graph's timely workers stopped: {failure}") from failure

    # -- the log -----------------------------------------------------------------------------

    def _logged(self) -> list[tuple[int, str]]:
        paths = glob.glob(os.path.join(self.log_path, "batch-*.arrow"))
        found = []
        for path in paths:
            stem = os.path.basename(path)[len("batch-"):-len(".arrow")]
            if stem.isdigit():
                found.append((int(stem), path))
        return sorted(found)

    def _log(self, batch_id: int, table: Any) -> None:
        import pyarrow as pa

        os.makedirs(self.log_path, exist_ok=True)
        path = os.path.join(self.log_path, f"batch-{batch_id:020d}.arrow")
        temporary = f"{path}.{os.getpid()}.tmp"
        with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(temporary, path)

    def _recover(self, committed: int) -> None:
        """The state of every committed batch, from the log, in one time."""
        import pyarrow as pa

        logged = self._logged()
        if committed >= 0 and not any(batch_id <= committed for batch_id, _ in logged):
            raise SparkConfigError(
                f"the sink has committed batches up to {committed} but {self.log_path!r} "
                "keeps none of their edges: give the log_path this query's sink was "
                "written with")
        tables = []
        for batch_id, path in logged:
            if batch_id <= committed:
                with pa.memory_map(path) as source:
                    tables.append(pa.ipc.open_file(source).read_all())
            else:
                os.remove(path)
        if tables:
            src, dst, weight = self._arrays(pa.concat_tables(tables))
            self._apply(src, dst, weight, report=False)

    def _arrays(self, table: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = table.column("src").to_numpy().astype(np.int64, copy=False)
        dst = table.column("dst").to_numpy().astype(np.int64, copy=False)
        if self.algorithm == "sssp":
            weight = table.column("weight").to_numpy().astype(np.float64, copy=False)
        else:
            weight = np.ones(len(src), dtype=np.float64)
        return src, dst, weight

    # -- foreachBatch ------------------------------------------------------------------------

    def _edges(self, batch_df: Any) -> Any:
        """The micro-batch's edges as an Arrow table ``(src, dst[, weight])``."""
        from pyspark.sql import functions as F

        from timely.spark.graphs import _is_integral

        columns = ["src", "dst"] + (["weight"] if self.algorithm == "sssp" else [])
        fields = {f.name: f.dataType for f in batch_df.schema.fields}
        for name in columns:
            if name not in fields:
                raise SparkSchemaError(f"the edges have no column {name!r}; they have "
                                       f"{list(fields)}")
        for name in ("src", "dst"):
            if not _is_integral(fields[name]):
                raise SparkSchemaError(
                    f"graph updates take 64-bit integer vertex ids; {name!r} is "
                    f"{fields[name].simpleString()}")
        selected = [F.col("src").cast("long"), F.col("dst").cast("long")]
        if self.algorithm == "sssp":
            selected.append(F.col(self.weight).cast("double").alias("weight"))
        table = batch_df.select(*selected).toArrow()
        if self.algorithm == "sssp":
            w = table.column("weight").to_numpy(zero_copy_only=False)
            if len(w) and not (w >= 0).all():
                raise SparkSchemaError(f"sssp needs non-negative weights; {self.weight!r} "
                                       f"has {w[~(w >= 0)][0]}")
        return table

    def _frame(self, spark: Any, rows: dict[str, np.ndarray] | None) -> Any:
        import pyarrow as pa

        spec = ALGORITHMS[self.algorithm]
        names = {"id": "node", "component": "label"}
        arrays = []
        for name, kind in spec:
            column = (rows or {}).get(names.get(name, name))
            dtype = np.float64 if kind == "double" else np.int64
            arrays.append(pa.array(np.zeros(0, dtype) if column is None else
                                   np.asarray(column).astype(dtype, copy=False)))
        table = pa.table(arrays, names=[name for name, _ in spec])
        schema = ", ".join(f"{name} {kind}" for name, kind in spec)
        return spark.createDataFrame(table.to_pandas(), schema)

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        with self._lock:
            query = query_identity(batch_df, self.checkpoint)
            committed = self.sink.committed(query)
            if not self._started:
                self._start()
                self._recover(committed)
            if batch_id <= committed:
                return
            table = self._edges(batch_df)
            self._log(batch_id, table)
            try:
                rows = self._apply(*self._arrays(table), report=True)
                self.sink.write(self._frame(batch_df.sparkSession, rows), batch_id, query)
            except BaseException:
                # The workers' state may hold a batch the sink did not commit:
                # the next call rebuilds it from the log of what the sink has.
                self._shutdown()
                raise

    def _shutdown(self) -> None:
        if self._started:
            for inbox in self._inboxes:
                inbox.put(None)
            if self._thread is not None:
                self._thread.join(60)
            self._started = False
        for box in [*self._inboxes, self._outbox]:
            if box is not None:
                box.close()
                box.join_thread()
        self._inboxes, self._outbox = [], None

    def close(self) -> None:
        """Stops the workers (they end their dataflow) and waits for them."""
        with self._lock:
            self._shutdown()

    def __enter__(self) -> GraphUpdates:  # noqa: PYI034 - typing.Self is 3.11+
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
