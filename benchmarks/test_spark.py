"""Spark → timely → Spark against a bare ``mapInArrow`` pass-through.

Both pipelines read the same cached DataFrame of ``ROWS`` rows
``(epoch, key, value)`` in 2 partitions on ``local[2]`` and end in
``repartition(2).count()``, so both pay the JVM's row-to-Arrow conversion and
one shuffle:

- ``bare``: ``df.mapInArrow(identity, schema, barrier=True)``;
- ``timely``: :func:`timely.spark.run` with an identity dataflow at 2
  workers: the barrier stage, the ``allGather`` rendezvous, the rings between
  the two tasks, every batch through a timely input and out again.

Reported: rows/s of each and the time timely adds as a share of the bare
pass-through (target: at most 25%). Row counts are checked. A second figure
runs the tumbling sum of the main job (``sum_per_epoch``) through timely and
compares it with Spark's ``groupBy("epoch", "key").sum("value")``.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

ROWS = 4_000_000


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("timely-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def best_of(n, action):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return min(times), result


def test_spark_timely_spark_against_bare_map_in_arrow(benchmark, spark):
    from timely.spark import run

    df = spark.range(0, ROWS, numPartitions=2).selectExpr(
        "id div 40000 as epoch", "(id * 2654435761) % 1000 as key", "id % 1000 as value").cache()
    assert df.count() == ROWS
    schema = df.schema

    def bare():
        return df.mapInArrow(lambda batches: batches, schema, barrier=True).repartition(2).count()

    def through_timely():
        return run(df, lambda stream: stream, schema, workers=2).count()

    bare()
    through_timely()
    bare_s, n_bare = best_of(3, bare)
    timely_s = benchmark.pedantic(lambda: best_of(3, through_timely)[0], rounds=1, iterations=1)
    assert n_bare == ROWS
    assert through_timely() == ROWS
    benchmark.extra_info.update({
        "rows": ROWS,
        "bare_rows_per_s": round(ROWS / bare_s),
        "timely_rows_per_s": round(ROWS / timely_s),
        "timely_adds": round(timely_s / bare_s - 1, 3),
        "target_adds_at_most": 0.25,
        "meets_target": timely_s / bare_s - 1 <= 0.25,
    })


def test_tumbling_sum_through_spark(benchmark, spark):
    from timely.examples.spark_pipeline import sum_per_epoch
    from timely.spark import run

    df = spark.range(0, ROWS, numPartitions=2).selectExpr(
        "id div 40000 as epoch", "(id * 2654435761) % 1000 as key", "id % 1000 as value").cache()
    df.count()

    def ours():
        # a new plan each time: Spark would otherwise reuse the last shuffle's files
        result = run(df, sum_per_epoch, "epoch long, key long, total long", workers=2,
                     epoch_col="epoch")
        return sorted(tuple(r) for r in result.collect())

    def theirs():
        return sorted(tuple(r) for r in df.groupBy("epoch", "key").sum("value").collect())

    spark_s, expected = best_of(2, theirs)
    timely_s = benchmark.pedantic(lambda: best_of(2, ours)[0], rounds=1, iterations=1)
    assert ours() == expected
    benchmark.extra_info.update({
        "rows": ROWS,
        "timely_rows_per_s": round(ROWS / timely_s),
        "spark_group_by_rows_per_s": round(ROWS / spark_s),
    })
