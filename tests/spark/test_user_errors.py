"""A user's bug fails at once: the driver's dry run raises the user's own
exception before any task starts; code that cannot run outside a task is
left to the tasks (and the log says so); a failure in the tasks that repeats
is not retried more than ``spark.timely.retries`` times (1 by default) and
reaches the driver with the user's exception type, message and traceback.
All in sessions that set nothing a user would not."""

from __future__ import annotations

import logging
import traceback

import numpy as np
import pytest

from timely import Batch
from timely.errors import ColumnarError, ConfigurationError, DataflowError
from timely.spark import map_batches, run


class NotAKey(Exception):
    """A user's own exception class."""


def _frames(error: BaseException) -> list[str]:
    return [frame.name for frame in traceback.extract_tb(error.__traceback__)]


def _no_job_ran(spark, before: int) -> bool:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == before


def _jobs(spark) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


def test_an_exception_while_building_the_dataflow_is_raised_at_once(spark):
    df = spark.range(10)

    def dataflow(stream):
        raise NotAKey("the user's own failure")

    before = _jobs(spark)
    with pytest.raises(NotAKey, match="the user's own failure") as caught:
        run(df, dataflow, "id long", workers=2)
    assert "dataflow" in _frames(caught.value)
    assert any("made-up row" in note for note in caught.value.__notes__)
    assert _no_job_ran(spark, before)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_exception_in_the_operators_logic_is_raised_at_once(spark, workers):
    df = spark.range(10)

    def parse(batch):
        return Batch(id=np.asarray(batch["id"]) + "1")       # text added to numbers

    before = _jobs(spark)
    with pytest.raises(TypeError, match="ufunc 'add'") as caught:
        run(df, lambda stream: stream.map_batch(parse), "id long", workers=workers)
    assert "parse" in _frames(caught.value)
    assert _no_job_ran(spark, before)


def test_a_dataflow_that_returns_none_is_named(spark):
    def forgot_to_return(stream):
        stream.map_batch(lambda batch: batch)

    with pytest.raises(DataflowError, match="forgot_to_return returned NoneType, not a Stream"):
        run(spark.range(3), forgot_to_return, "id long", workers=2)


def test_a_record_operator_on_batches_is_named_at_once(spark):
    with pytest.raises(ColumnarError, match="map_batch"):
        run(spark.range(3), lambda stream: stream.map(lambda row: row), "id long", workers=2)


def test_a_batch_function_that_raises_is_raised_at_once(spark):
    def halve(batch):
        return {"id": batch["id"].halved()}          # numpy arrays have no such method

    with pytest.raises(AttributeError, match="halved"):
        map_batches(spark.range(3), halve, "id long")


def test_a_failure_the_made_up_row_may_cause_is_left_to_the_tasks(spark, caplog):
    """The dry run's row holds zeros: code that refuses a zero there is not
    wrong, so the dry run warns (on stderr by default) and the tasks run."""
    def inverse(batch):
        ids = np.asarray(batch["id"])
        if (ids == 0).any():
            raise ValueError("no inverse of 0")
        return Batch(id=ids, inverse=1.0 / ids)

    with caplog.at_level(logging.WARNING, logger="timely.spark"):
        result = run(spark.range(1, 7), lambda stream: stream.map_batch(inverse),
                     "id long, inverse double", workers=2)
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("ValueError: no inverse of 0" in r.getMessage()
               and "the made-up row may be what it failed on" in r.getMessage() for r in warned)
    assert sorted((r.id, r.inverse) for r in result.collect()) == [
        (i, 1.0 / i) for i in range(1, 7)]


def test_code_that_needs_a_task_is_left_to_the_tasks(spark, caplog):
    """``TaskContext.get()`` is None on the driver: the dry run cannot run
    such code, says so at INFO, and the tasks run it."""
    from pyspark import TaskContext

    def tag(batch):
        partition = TaskContext.get().partitionId()
        ids = np.asarray(batch["id"])
        return Batch(id=ids, partition=np.full(len(ids), partition, dtype=np.int64))

    with caplog.at_level(logging.INFO, logger="timely.spark"):
        result = run(spark.range(6), lambda stream: stream.map_batch(tag),
                     "id long, partition long", workers=2)
    assert any("asks for Spark's task context" in r.getMessage() for r in caplog.records)
    rows = result.collect()
    assert sorted(r.id for r in rows) == list(range(6))
    assert {r.partition for r in rows} <= {0, 1}


def _failing_in_tasks(attempts_dir):
    """A dataflow that passes the dry run and fails deterministically in
    the task holding id 0, noting each attempt."""
    def dataflow(stream):
        def check(batch):
            from pyspark import TaskContext

            context = TaskContext.get()
            if context is not None and (np.asarray(batch["id"]) == 0).any():
                (attempts_dir / f"{context.taskAttemptId()}").touch()
                raise NotAKey("a bad row in the tasks: 0")
            return batch
        return stream.map_batch(check)
    return dataflow


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_that_repeats_is_retried_once_and_names_the_user_s_exception(
        spark, tmp_path, workers):
    df = spark.range(8)
    with pytest.raises(Exception) as caught:
        run(df, _failing_in_tasks(tmp_path), "id long", workers=workers).collect()
    message = str(caught.value)
    start = message.index("NotAKey: a bad row in the tasks: 0")
    assert message[start:].split("\n")[1].startswith("Traceback (most recent call last):")
    assert "in check" in message and "spark.timely.retries is 1" in message
    assert len(list(tmp_path.iterdir())) == 2                # one retry, no more


def test_retries_zero_fails_on_the_first_failure(spark, tmp_path):
    session = spark.newSession()
    session.conf.set("spark.timely.retries", "0")
    df = session.range(8)
    with pytest.raises(Exception, match="NotAKey: a bad row in the tasks: 0"):
        run(df, _failing_in_tasks(tmp_path), "id long", workers=2).collect()
    assert len(list(tmp_path.iterdir())) == 1


def test_a_retries_setting_that_is_not_a_count_is_named(spark):
    session = spark.newSession()
    session.conf.set("spark.timely.retries", "twice")
    with pytest.raises(ConfigurationError, match="spark.timely.retries is a count .* not 'twice'"):
        run(session.range(3), lambda stream: stream, "id long", workers=2)


def test_the_configuration_goes_whole_to_every_task(spark):
    """A Config given to run (and keyword options over it) reaches each
    task's worker and allocator: the window and the stall warning."""
    from timely.config import CommunicationSettings, Config, WorkerSettings

    config = Config(communication=CommunicationSettings(window=1 << 20),
                    worker=WorkerSettings(stall_warning=7.5))

    def report(stream):
        def describe(batch):
            from pyspark import TaskContext

            if TaskContext.get() is None:                 # the driver's dry run
                return Batch(window=np.array([0]), stall=np.array([0.0]))
            worker = stream.scope.worker
            return Batch(window=np.array([worker.allocator.window]),
                         stall=np.array([worker.stall_warning]))
        return stream.map_batch(describe)

    rows = run(spark.range(4), report, "window long, stall double", workers=2,
               config=config).collect()
    assert sorted({(r.window, r.stall) for r in rows}) == [(1 << 20, 7.5)]
    with pytest.raises(ConfigurationError, match="window"):
        run(spark.range(4), report, "window long, stall double", workers=2, config=config,
            window=12)
