"""timely.spark on a real local Spark session."""

from __future__ import annotations

import os
import time
from multiprocessing import shared_memory

import numpy as np
import pytest

from timely.examples.spark_pipeline import main as pipeline_main
from timely.examples.spark_pipeline import sum_per_epoch as sum_by_key
from timely.communication.shm import PREFIX, SHM_DIRECTORY, owner_of, segment_name
from timely.spark import SparkConfigError, foreach_batch, map_batches, preflight, run


def records(spark, rows=20_000, partitions=2):
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id % 5 as epoch", "(id * 7919) % 101 as key", "id % 13 as value")


def spark_answer(df):
    return sorted(tuple(r) for r in df.groupBy("epoch", "key")
                  .agg({"value": "sum"}).collect())


def timely_answer(result):
    return sorted(tuple(r) for r in result.collect())


SCHEMA = "epoch long, key long, total long"


@pytest.mark.parametrize(("workers", "rendezvous"), [(1, "driver"), (2, "driver"),
                                                     (2, "allgather")])
def test_run_equals_spark_group_by(spark, workers, rendezvous):
    df = records(spark)
    result = run(df, sum_by_key, SCHEMA, workers=workers, epoch_col="epoch",
                 rendezvous=rendezvous)
    assert timely_answer(result) == spark_answer(df)
    # the result is an ordinary DataFrame for later Spark steps
    assert result.filter("total > 0").count() == 5 * 101


def test_a_frame_of_more_partitions_than_slots_runs_on_every_slot(spark):
    """A DataFrame read in more splits than the session has task slots (7
    partitions on local[2]) runs on as many workers as there are slots, by
    default, alone or beside another input."""
    df = records(spark, partitions=7)
    assert timely_answer(run(df, sum_by_key, SCHEMA, epoch_col="epoch")) == spark_answer(df)
    both = run({"a": df, "b": records(spark, rows=10, partitions=1)},
               lambda streams: sum_by_key(streams["a"]), SCHEMA, epoch_col="epoch")
    assert timely_answer(both) == spark_answer(df)


def test_run_without_an_epoch_column_uses_epoch_zero(spark):
    df = records(spark).drop("epoch")
    result = run(df, sum_by_key, SCHEMA, workers=2)
    expected = sorted((0, k, t) for k, t in df.groupBy("key").agg({"value": "sum"}).collect())
    assert timely_answer(result) == expected


def _labelled_edges(streams):
    from timely import Batch
    from timely.dataflow.operators.relational import join

    joined = join(streams["edges"], streams["seeds"], left_on="src", right_on="node")
    return joined.map_batch(lambda b: Batch(src=b["src"], dst=b["dst"], label=b["label"]))


@pytest.mark.parametrize("workers", [1, 2])
def test_run_takes_several_dataframes_as_inputs(spark, workers):
    edges = spark.range(0, 3000, numPartitions=3).selectExpr("id % 97 as src",
                                                            "(id * 7) % 101 as dst")
    # another schema, another partition count, a column of another type
    seeds = spark.range(0, 60, numPartitions=1).selectExpr("cast(id * 2 as int) as node",
                                                          "id * 10 as `la.bel`")

    def labelled(streams):
        streams["seeds"] = streams["seeds"].map_batch(
            lambda b: b.select(["node"]).with_columns(label=b["la.bel"]))
        return _labelled_edges(streams)

    result = run({"edges": edges, "seeds": seeds}, labelled,
                 "src long, dst long, label long", workers=workers, cast=True)
    expected = sorted(tuple(r) for r in edges.join(seeds, edges.src == seeds.node)
                      .select("src", "dst", "`la.bel`").collect())
    assert timely_answer(result) == expected
    assert len(expected) > 1000


def joined_per_epoch(streams):
    """Per epoch, the rows of ``left`` and ``right`` joined by key, counted per key."""
    from timely.dataflow.operators.relational import join

    joined = join(streams["left"], streams["right"], on="key")
    return sum_by_key(joined, key="key", value=None, out="total")


def epoch_frames(session):
    left = session.range(0, 4000, numPartitions=3).selectExpr(
        "id % 4 as epoch", "(id * 13) % 37 as key", "id as a")
    right = session.range(0, 900, numPartitions=2).selectExpr(
        "id % 4 as epoch", "(id * 7) % 41 as key", "id * 2 as b")
    expected = sorted(tuple(r) for r in left.join(right, ["epoch", "key"])
                      .groupBy("epoch", "key").count().collect())
    return left, right, expected


@pytest.mark.parametrize("workers", [1, 2])
def test_several_dataframes_meet_at_each_epoch(spark, workers):
    left, right, expected = epoch_frames(spark)
    result = run({"left": left, "right": right}, joined_per_epoch, SCHEMA, workers=workers,
                 epoch_col="epoch")
    assert timely_answer(result) == expected
    assert {e for e, _, _ in expected} == {0, 1, 2, 3}


def test_every_input_needs_the_epoch_column(spark):
    left, right, _ = epoch_frames(spark)
    from timely.spark import SparkSchemaError

    with pytest.raises(SparkSchemaError, match="epoch"):
        run({"left": left, "right": right.drop("epoch")}, joined_per_epoch, SCHEMA,
            workers=2, epoch_col="epoch")


@pytest.mark.parametrize("workers", [1, 2])
def test_inputs_spread_by_a_hash_of_their_rows(spark, workers):
    """``spread="hash"``: the same answer, each row sent by a hash of its
    columns (a dotted name among them) with no sort."""
    left, right, expected = epoch_frames(spark)
    right = right.withColumnRenamed("b", "b.c")
    result = run({"left": left, "right": right}, joined_per_epoch, SCHEMA, workers=workers,
                 epoch_col="epoch", spread="hash")
    assert timely_answer(result) == expected
    with pytest.raises(SparkConfigError, match="spread is 'rows' or 'hash'"):
        run({"left": left, "right": right}, joined_per_epoch, SCHEMA, workers=2,
            epoch_col="epoch", spread="random")


def test_run_refuses_an_empty_dict_of_inputs(spark):
    with pytest.raises(SparkConfigError, match="at least one"):
        run({}, _labelled_edges, SCHEMA)


def test_map_batches_sees_numpy_columns(spark):
    df = records(spark)

    def double(batch):
        assert isinstance(batch["value"], np.ndarray)
        return {"key": batch["key"], "twice": batch["value"] * 2}

    out = map_batches(df, double, "key long, twice long")
    assert out.selectExpr("sum(twice)").first()[0] == 2 * df.selectExpr("sum(value)").first()[0]


def test_preflight_fails_fast_on_too_few_slots(spark):
    start = time.monotonic()
    with pytest.raises(SparkConfigError, match="3 task slots"):
        preflight(spark, 3)
    with pytest.raises(SparkConfigError, match="slots"):
        run(records(spark), sum_by_key, SCHEMA, workers=5)
    # At once, not after the stage watchdog's 300 s (a loaded machine may
    # take a few seconds for the two Spark jobs).
    assert time.monotonic() - start < 60
    preflight(spark, 2)


def _segments():
    return sorted(n for n in os.listdir(SHM_DIRECTORY) if n.startswith(PREFIX))


def _descendants(pid: int) -> set:
    """The pids of the running processes below ``pid`` (Spark's JVM, its
    Python daemon and the Python workers that run the tasks)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_a_failed_task_is_retried_with_the_same_answer(spark, tmp_path):
    marker = tmp_path / "failed-once"
    pids = tmp_path / "task-pids"
    pids.mkdir()

    def flaky(stream):
        # Each task says which process it is: its segments are named after it.
        (pids / str(os.getpid())).touch()

        def fail_once(batch):
            if not marker.exists():
                marker.write_text("x")
                raise RuntimeError("a task failure, once")
            return batch

        # runs in one task only: the partition holding key 0 at epoch 0
        def check(time_, data):
            from pyspark import TaskContext

            if TaskContext.get() is None:          # the driver's dry run
                return
            if len(data) and time_ == 0 and (data["key"] == 0).any():
                fail_once(data)

        return sum_by_key(stream.inspect_batch(check))

    before = set(_segments())
    # Another program's segment appearing meanwhile is none of this test's
    # business (its owner, the shell that started the tests, outlives it).
    foreign = shared_memory.SharedMemory(name=segment_name(os.getppid()), create=True, size=64)
    try:
        df = records(spark)
        result = run(df, flaky, SCHEMA, workers=2, epoch_col="epoch")
        assert timely_answer(result) == spark_answer(df)
        assert marker.exists()
        tasks = {int(p.name) for p in pids.iterdir()}
        assert len(tasks) >= 2                 # both tasks of the stage ran
        owners = tasks | _descendants(os.getpid())
        time.sleep(0.5)
        left = [n for n in _segments() if n not in before and owner_of(n) in owners]
        assert left == [], left
    finally:
        foreign.close()
        foreign.unlink()


def test_foreach_batch_applies_each_batch_id_once_across_a_restart(spark, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    checkpoint = tmp_path / "checkpoint"
    progress = str(tmp_path / "applied.json")
    seen: list = []

    def sink(result, batch_id):
        seen.append((batch_id, sorted(tuple(r) for r in result.collect())))

    def write(name, rows):
        spark.createDataFrame(rows, "key long, value long").coalesce(1).write.json(
            str(source / name))

    def query():
        stream = (spark.readStream.schema("key long, value long")
                  .json(str(source / "*")))
        apply = foreach_batch(sum_by_key, SCHEMA, sink, workers=2, progress_path=progress)
        return (stream.writeStream.foreachBatch(apply)
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True).start())

    write("a", [(1, 10), (2, 20), (1, 5)])
    q = query()
    q.awaitTermination(120)
    assert [b for b, _ in seen] == [0]
    assert seen[0][1] == [(0, 1, 15), (0, 2, 20)]

    write("b", [(2, 1), (3, 3)])
    q = query()                 # a restart from the checkpoint
    q.awaitTermination(120)
    assert [b for b, _ in seen] == [0, 1]
    assert seen[1][1] == [(1, 2, 1), (1, 3, 3)]

    # a replayed batch id at or below the frontier is not applied again
    again = foreach_batch(sum_by_key, SCHEMA, sink, workers=2, progress_path=progress)
    again(spark.createDataFrame([(9, 9)], "key long, value long"), 1)
    assert [b for b, _ in seen] == [0, 1]


def test_the_main_job_checks_its_answers_against_spark(spark, capsys):
    assert pipeline_main(["--words", "20000", "--records", "20000", "--edges", "4000",
                          "--iterations", "4"], spark=spark) == 0
    out = capsys.readouterr().out
    assert out.count("equal to Spark's groupBy") == 2
    # connected components and PageRank: timely and Spark's loops both equal to scipy
    assert out.count("both equal to scipy") == 2
    assert "Spark CC round 1:" in out and "Spark PageRank round 4/4:" in out


def test_the_graph_references_agree_with_plain_python():
    from timely.algorithms import rmat_edges
    from timely.examples.spark_pipeline import reference_components, reference_pagerank

    src, dst = rmat_edges(6, 40, seed=3)
    nodes, labels = reference_components(src, dst)
    parent = {int(v): int(v) for v in nodes}

    def root(v):
        while parent[v] != v:
            v = parent[v]
        return v

    for s, d in zip(src.tolist(), dst.tolist()):
        a, b = sorted((root(s), root(d)))
        parent[b] = a
    assert labels.tolist() == [root(int(v)) for v in nodes]    # the least node is the root

    _, ranks = reference_pagerank(src, dst, 3)
    rank = {int(v): 1.0 for v in nodes}
    degree = {int(v): int((src == v).sum()) for v in nodes}
    for _ in range(3):
        got = {v: 0.0 for v in rank}
        for s, d in zip(src.tolist(), dst.tolist()):
            got[d] += rank[s] / degree[s]
        rank = {v: 0.15 + 0.85 * got[v] for v in rank}
    assert np.allclose(ranks, [rank[int(v)] for v in nodes], rtol=1e-12)
