"""Graph answers kept up to date over a streaming query of edges
(:class:`timely.spark.GraphUpdates`): each micro-batch's output is exactly
the vertices whose answer changed in it, at 1, 2 and 3 workers; a crash
before the sink commits, then a restart from the checkpoint, applies every
batch once, the state rebuilt from the edge log; bad input is a typed
error."""

from __future__ import annotations

import pytest

from tests.reference import graphalytics as reference
from tests.reference.paths import shortest_paths
from tests.reference.scc import weak_components
from timely.spark import GraphUpdates, SparkConfigError
from timely.spark.sinks import DirectorySink

BIG = 2**63 - 1
# One file per micro-batch, in order: edges (src, dst, weight).
BATCHES = [
    [(BIG, 5, 1.0), (5, 6, 2.0), (-(2**40), -(2**40) + 1, 1.0), (10**12, 10**12, 0.5)],
    [(6, -(2**40), 0.25), (7, 8, 1.0)],
    [(8, 5, 4.0), (BIG, 7, 1.0)],
]


class Crash(Exception):
    """Stands for the driver dying before the sink committed a batch."""


class CrashingSink(DirectorySink):
    """Fails the first write of one batch, as a driver that died there."""

    def __init__(self, path, batch):
        super().__init__(path)
        self.crash_at = batch

    def write(self, result, batch_id, query=None):
        if batch_id == self.crash_at:
            self.crash_at = None
            raise Crash(f"crashed before committing batch {batch_id}")
        super().write(result, batch_id, query)


def _source(spark, tmp_path, batches):
    source = tmp_path / "edges"
    source.mkdir(exist_ok=True)
    for i, rows in enumerate(batches):
        spark.createDataFrame(rows, "src long, dst long, weight double").coalesce(1).write.json(
            str(source / f"{i:03d}"))
    return source


def _query(spark, source, checkpoint, apply):
    stream = (spark.readStream.schema("src long, dst long, weight double")
              .option("maxFilesPerTrigger", 1).json(str(source / "*")))
    return (stream.writeStream.foreachBatch(apply).option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


def _changes(answer_at, count):
    """``{batch: sorted rows}`` of keys whose answer differs from the batch before."""
    out, before = {}, {}
    for b in range(count):
        now = answer_at(b)
        out[b] = sorted((*(k if isinstance(k, tuple) else (k,)), v) for k, v in now.items()
                        if before.get(k, None) != v)
        before = now
    return out


def _edges_upto(b):
    return [(u, v) for batch in BATCHES[:b + 1] for u, v, _ in batch]


def _written(spark, out, columns):
    rows = spark.read.parquet(out).collect()
    found: dict = {}
    for r in rows:
        found.setdefault(r.batch, []).append(tuple(r[c] for c in columns))
    return {b: sorted(v) for b, v in found.items()}


def _expected_components():
    expected = _changes(lambda b: weak_components([], _edges_upto(b)), len(BATCHES))
    return {b: rows for b, rows in expected.items() if rows}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_components_change_batch_by_batch(spark, tmp_path, workers):
    source = _source(spark, tmp_path, BATCHES)
    out = str(tmp_path / "out")
    with GraphUpdates("connectedComponents", DirectorySink(out), log_path=str(tmp_path / "log"),
                      workers=workers) as updates:
        _query(spark, source, tmp_path / "checkpoint", updates).awaitTermination(120)
    assert _written(spark, out, ["id", "component"]) == _expected_components()


def test_a_crash_before_the_commit_then_a_restart_applies_each_batch_once(spark, tmp_path):
    source = _source(spark, tmp_path, BATCHES)
    out, log, checkpoint = str(tmp_path / "out"), str(tmp_path / "log"), tmp_path / "cp"
    with GraphUpdates("connectedComponents", CrashingSink(out, 2), log_path=log,
                      workers=2) as updates:
        query = _query(spark, source, checkpoint, updates)
        with pytest.raises(Exception, match="crashed before committing batch 2"):
            query.awaitTermination(120)
    assert DirectorySink(out).committed() == 1
    # A new driver: the state of batches 0 and 1 comes from the log, batch 2 is replayed.
    with GraphUpdates("connectedComponents", DirectorySink(out), log_path=log,
                      workers=2) as updates:
        _query(spark, source, checkpoint, updates).awaitTermination(120)
    assert _written(spark, out, ["id", "component"]) == _expected_components()


def test_a_failed_commit_then_a_restart_with_the_same_callable_applies_each_batch_once(
        spark, tmp_path):
    # The workers applied batch 1 before its write failed; the query restarted
    # with the same callable must not see batch 1 as already applied.
    source = _source(spark, tmp_path, BATCHES)
    out, checkpoint = str(tmp_path / "out"), tmp_path / "cp"
    with GraphUpdates("connectedComponents", CrashingSink(out, 1), log_path=str(tmp_path / "log"),
                      workers=2) as updates:
        query = _query(spark, source, checkpoint, updates)
        with pytest.raises(Exception, match="crashed before committing batch 1"):
            query.awaitTermination(120)
        _query(spark, source, checkpoint, updates).awaitTermination(120)
    assert _written(spark, out, ["id", "component"]) == _expected_components()


def test_distances_to_landmarks_and_weighted_distances_follow_the_stream(spark, tmp_path):
    source = _source(spark, tmp_path, BATCHES)
    marks = [5, -(2**40)]
    out = str(tmp_path / "landmarks")
    with GraphUpdates("shortestPaths", DirectorySink(out), log_path=str(tmp_path / "log1"),
                      landmarks=marks, workers=2) as updates:
        _query(spark, source, tmp_path / "cp1", updates).awaitTermination(120)
    expected = _changes(lambda b: shortest_paths(_edges_upto(b), marks, [], True), len(BATCHES))
    assert _written(spark, out, ["id", "landmark", "distance"]) == {
        b: rows for b, rows in expected.items() if rows}

    out = str(tmp_path / "sssp")
    with GraphUpdates("sssp", DirectorySink(out), log_path=str(tmp_path / "log2"), source=BIG,
                      directed=False, workers=3) as updates:
        _query(spark, source, tmp_path / "cp2", updates).awaitTermination(120)

    def answer(b):
        now = [e for batch in BATCHES[:b + 1] for e in batch]
        return reference.sssp([(u, v) for u, v, _ in now], [w for *_, w in now], [], BIG, False)

    expected = _changes(answer, len(BATCHES))
    assert _written(spark, out, ["id", "distance"]) == {b: r for b, r in expected.items() if r}


def test_bad_setups_and_edges_are_typed_errors(spark, tmp_path):
    with pytest.raises(SparkConfigError, match="transactional"):
        GraphUpdates("connectedComponents", lambda df, b: None, log_path=str(tmp_path))
    with pytest.raises(SparkConfigError, match="one of"):
        GraphUpdates("pagerank", DirectorySink(str(tmp_path / "o")), log_path=str(tmp_path))
    with pytest.raises(SparkConfigError, match="source="):
        GraphUpdates("sssp", DirectorySink(str(tmp_path / "o")), log_path=str(tmp_path))
    source = tmp_path / "named"
    spark.createDataFrame([("a", "b")], "src string, dst string").write.json(str(source / "0"))
    stream = spark.readStream.schema("src string, dst string").json(str(source / "*"))
    with GraphUpdates("connectedComponents", DirectorySink(str(tmp_path / "out")),
                      log_path=str(tmp_path / "log")) as updates:
        query = (stream.writeStream.foreachBatch(updates)
                 .option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        with pytest.raises(Exception, match="64-bit integer vertex ids"):
            query.awaitTermination(120)
