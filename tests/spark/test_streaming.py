"""Exactly-once ``foreach_batch``: a crash at every point between the sink's
write and its commit, then a restart from the checkpoint, leaves every batch
applied exactly once; a sink or progress file of another query is refused."""

from __future__ import annotations

import pytest

from timely.examples.spark_pipeline import sum_per_epoch
from timely.spark import SparkConfigError, foreach_batch
from timely.spark.sinks import DirectorySink

SCHEMA = "epoch long, key long, total long"


class Crash(Exception):
    """Stands for the driver dying at a point of the sink's write."""


class CrashingSink(DirectorySink):
    def __init__(self, path, point=None, batch=None):
        super().__init__(path)
        self.crash = (point, batch)
        self.batch = None

    def write(self, result, batch_id, query=None):
        self.batch = batch_id
        super().write(result, batch_id, query)

    def _point(self, name):
        if (name, self.batch) == self.crash:
            raise Crash(f"crashed {name} of batch {self.batch}")


def _source(spark, tmp_path, files):
    source = tmp_path / "in"
    source.mkdir(exist_ok=True)
    for name, rows in files.items():
        spark.createDataFrame(rows, "key long, value long").coalesce(1).write.json(
            str(source / name))
    return source


def _query(spark, source, checkpoint, apply):
    stream = (spark.readStream.schema("key long, value long").option("maxFilesPerTrigger", 1)
              .json(str(source / "*")))
    return (stream.writeStream.foreachBatch(apply).option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


FILES = {"a": [(1, 10), (2, 20), (1, 5)], "b": [(2, 1), (3, 3)]}
EXPECTED = [(0, 1, 15), (0, 2, 20), (1, 2, 1), (1, 3, 3)]


@pytest.mark.parametrize("point", ["before write", "after write", "after commit"])
def test_a_crash_between_write_and_commit_applies_each_batch_once(spark, tmp_path, point):
    source = _source(spark, tmp_path, FILES)
    out, checkpoint = str(tmp_path / "out"), tmp_path / "checkpoint"
    crashing = foreach_batch(sum_per_epoch, SCHEMA, CrashingSink(out, point, 1), workers=2)
    q = _query(spark, source, checkpoint, crashing)
    with pytest.raises(Exception, match=f"crashed {point} of batch 1"):
        q.awaitTermination(120)
    assert DirectorySink(out).committed() == (1 if point == "after commit" else 0)
    q = _query(spark, source, checkpoint,
               foreach_batch(sum_per_epoch, SCHEMA, DirectorySink(out), workers=2))
    q.awaitTermination(120)
    rows = spark.read.parquet(out).collect()
    assert sorted((r.epoch, r.key, r.total) for r in rows) == EXPECTED
    assert sorted({r.batch for r in rows}) == [0, 1]


def test_a_sink_or_progress_file_of_another_query_is_refused(spark, tmp_path):
    source = _source(spark, tmp_path, {"a": FILES["a"]})
    out = str(tmp_path / "out")
    q = _query(spark, source, tmp_path / "first",
               foreach_batch(sum_per_epoch, SCHEMA, DirectorySink(out), workers=2))
    q.awaitTermination(120)
    assert DirectorySink(out).committed() == 0
    # a new checkpoint is a new query: its batch 0 is not the first query's
    q = _query(spark, source, tmp_path / "second",
               foreach_batch(sum_per_epoch, SCHEMA, DirectorySink(out), workers=2))
    with pytest.raises(Exception, match="holds the output of streaming query"):
        q.awaitTermination(120)

    progress = str(tmp_path / "applied.json")
    seen = []
    q = _query(spark, source, tmp_path / "third",
               foreach_batch(sum_per_epoch, SCHEMA, lambda df, b: seen.append(b), workers=2,
                             progress_path=progress))
    q.awaitTermination(120)
    assert seen == [0]
    q = _query(spark, source, tmp_path / "fourth",
               foreach_batch(sum_per_epoch, SCHEMA, lambda df, b: seen.append(b), workers=2,
                             progress_path=progress))
    with pytest.raises(Exception, match="belongs to streaming query"):
        q.awaitTermination(120)
    assert seen == [0]
    with pytest.raises(SparkConfigError):
        foreach_batch(sum_per_epoch, SCHEMA, DirectorySink(out)).frontier.committed("another")
