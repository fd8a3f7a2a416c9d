"""The driver's dry run: one made-up row of each input through the user's
dataflow (or batch function) on one worker, before any task starts, so that
a wrong output schema, or a user's bug, fails at once."""

from __future__ import annotations

import logging
from typing import Any, Callable

from timely.container import Batch
from timely.errors import DataflowError, SparkSchemaError, TimelyError

__all__ = ["DRY_RUN_NOTE", "DataflowBody", "TaskContextWatch", "apply_dataflow", "dry_run",
           "note", "only_in_a_task", "open_inputs", "through_dataflow"]

log = logging.getLogger("timely.spark")

class TaskContextWatch:
    """Notes whether code run within it asked Spark for its task context
    (``TaskContext.get()``, ``BarrierTaskContext.get()``), which the driver
    does not have."""

    def __init__(self) -> None:
        self.asked = False
        self._saved: list[tuple[type, Any]] = []

    def __enter__(self) -> TaskContextWatch:
        from pyspark.taskcontext import BarrierTaskContext, TaskContext

        for cls in (TaskContext, BarrierTaskContext):
            original = cls.__dict__["get"]
            self._saved.append((cls, original))
            setattr(cls, "get", classmethod(self._noting(original.__func__)))
        return self

    def _noting(self, get: Callable[[type], Any]) -> Callable[[type], Any]:
        def noted(cls: type) -> Any:
            self.asked = True
            return get(cls)
        return noted

    def __exit__(self, *exc: object) -> None:
        for cls, original in self._saved:
            setattr(cls, "get", original)
        self._saved = []


class DataflowBody:
    """``batch -> [output batches]`` of a dataflow on one worker in the
    driver (see :func:`through_dataflow`); ``failed_building`` is the
    exception its dataflow function raised while the dataflow was built,
    before any row, if it did."""

    def __init__(self, dataflow: Callable[[Any], Any], names: list[str] | None) -> None:
        self.dataflow = dataflow
        self.names = names
        self.failed_building: BaseException | None = None

    def __call__(self, *batches: Batch) -> list[Any]:
        from timely.dataflow.channels import Pipeline
        from timely.launch import execute_directly

        outputs: list[Any] = []
        names = self.names

        def work(worker: Any) -> None:
            with worker.dataflow() as scope:
                inputs, streams = open_inputs(scope, names)
                try:
                    result = apply_dataflow(self.dataflow, streams, names)
                except BaseException as error:
                    self.failed_building = error
                    raise
                result.sink(Pipeline(), "SparkOutput",
                            lambda input_: outputs.extend(d for _, d in input_))
            for (handle, cap), batch in zip(inputs, batches):
                handle.session(cap).give_container(batch)
                handle.flush()
                cap.drop()

        execute_directly(work)
        return outputs


#: Exceptions that say the code is wrong whatever its rows hold: a dry run
#: raises them at once.
MISUSE = (TypeError, AttributeError, NameError, ImportError, TimelyError)


def only_in_a_task(error: BaseException, watch: TaskContextWatch) -> str | None:
    """Why ``error`` of a dry run is left to the tasks: the code cannot run
    outside a task, or what failed may be the made-up row's doing; None
    when the code is wrong whatever its rows hold."""
    if watch.asked:
        return "it asks for Spark's task context, which the driver has not"
    from pyspark.errors import PySparkException

    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, PySparkException):
            return "it calls Spark in a way only a task may"
        link = link.__cause__ or link.__context__
    if not isinstance(error, MISUSE):
        return "the made-up row may be what it failed on"
    return None


def note(error: BaseException, text: str) -> None:
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


def dry_run(body: Callable[..., list[Any]], incoming: Any, outgoing: Any, epoch_col: str | None,
            cast: bool, label: Callable[[Batch], Batch] | None = None) -> None:
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
    may), logged at INFO. The tasks check every batch the same way.
    ``label`` (with a window) adds the window's label columns to an output
    batch, as the tasks do."""
    from timely.spark.schema import conform, probe

    probes = []
    for schema in (incoming if isinstance(incoming, list) else [incoming]):
        batch = probe(schema)
        if epoch_col is not None and label is None:
            batch = batch.select([n for n in batch.names if n != epoch_col])
        probes.append(batch)
    outputs: list[Any] = []
    watch = TaskContextWatch()
    try:
        with watch:
            outputs.extend(body(*probes))
    except SparkSchemaError:
        raise
    except Exception as error:
        if isinstance(body, DataflowBody) and body.failed_building is error:
            note(error, DRY_RUN_NOTE)
            raise
        why = only_in_a_task(error, watch)
        if why is None:
            note(error, DRY_RUN_NOTE)
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


def through_dataflow(dataflow: Callable[[Any], Any],
                     names: list[str] | None = None) -> DataflowBody:
    """``batch -> [output batches]`` of ``dataflow`` on one worker here; with
    ``names`` (several inputs) the function takes one batch per name."""
    return DataflowBody(dataflow, names)


def open_inputs(scope: Any, names: list[str] | None) -> tuple[list[Any], Any]:
    """One unordered input per name (one for None): ``[(handle, cap)]`` and
    the streams, a dict by name for several."""
    if names is None:
        entry, stream = scope.new_unordered_input()
        return [entry], stream
    inputs: list[Any] = []
    streams: dict[str, Any] = {}
    for name in names:
        entry, streams[name] = scope.new_unordered_input()
        inputs.append(entry)
    return inputs, streams


def apply_dataflow(dataflow: Callable[[Any], Any], streams: Any,
                   names: list[str] | None) -> Any:
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
