"""timely.spark from a Spark Connect session: ``run``, ``map_batches``,
``foreach_batch`` and ``preflight`` against a local Connect server started
from pyspark's own ``spark-submit`` (stopped by its PID)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from timely.examples.spark_pipeline import sum_per_epoch
from timely.spark import SparkConfigError, foreach_batch, map_batches, preflight, run

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMA = "epoch long, key long, total long"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    from pyspark.find_spark_home import _find_spark_home

    port = _free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT)}
    with open(log, "w") as out:
        server = subprocess.Popen(
            [f"{_find_spark_home()}/bin/spark-submit", "--class",
             "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=2",
             "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    session = None
    try:
        deadline = time.monotonic() + 120
        while "Spark Connect server started" not in log.read_text():
            assert server.poll() is None, log.read_text()[-5000:]
            assert time.monotonic() < deadline, "the Connect server did not start"
            time.sleep(0.2)
        from pyspark.sql.connect.session import SparkSession

        session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        yield session
    finally:
        if session is not None:
            session.stop()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def records(spark):
    return spark.range(0, 20_000, numPartitions=2).selectExpr(
        "id % 5 as epoch", "(id * 7919) % 101 as key", "id % 13 as value")


def spark_answer(df):
    return sorted(tuple(r) for r in df.groupBy("epoch", "key").agg({"value": "sum"}).collect())


@pytest.mark.parametrize("rendezvous", ["auto", "driver"])
def test_run_from_a_connect_session_equals_group_by(connect, rendezvous):
    df = records(connect)
    result = run(df, sum_per_epoch, SCHEMA, workers=2, epoch_col="epoch",
                 rendezvous=rendezvous)
    assert sorted(tuple(r) for r in result.collect()) == spark_answer(df)


def test_several_dataframes_from_a_connect_session_meet_at_each_epoch(connect):
    from tests.spark.test_spark import epoch_frames, joined_per_epoch

    left, right, expected = epoch_frames(connect)
    result = run({"left": left, "right": right}, joined_per_epoch, SCHEMA, workers=2,
                 epoch_col="epoch")
    assert sorted(tuple(r) for r in result.collect()) == expected


def test_map_batches_and_preflight_from_a_connect_session(connect):
    df = records(connect)
    out = map_batches(df, lambda b: {"key": b["key"], "twice": b["value"] * 2},
                      "key long, twice long")
    assert out.selectExpr("sum(twice)").first()[0] == 2 * df.selectExpr("sum(value)").first()[0]
    preflight(connect, 2)
    with pytest.raises(SparkConfigError, match="3 task slots"):
        preflight(connect, 3)


def test_foreach_batch_from_a_connect_session(connect, tmp_path):
    from timely.spark.sinks import DirectorySink

    source = tmp_path / "in"
    connect.createDataFrame([(1, 10), (2, 20), (1, 5)], "key long, value long").coalesce(1) \
        .write.json(str(source / "a"))
    out = str(tmp_path / "out")
    apply = foreach_batch(sum_per_epoch, SCHEMA, DirectorySink(out), workers=2,
                          checkpoint=str(tmp_path / "checkpoint"))
    q = (connect.readStream.schema("key long, value long").json(str(source / "*"))
         .writeStream.foreachBatch(apply)
         .option("checkpointLocation", str(tmp_path / "checkpoint"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    rows = connect.read.parquet(out).collect()
    assert sorted((r.epoch, r.key, r.total) for r in rows) == [(0, 1, 15), (0, 2, 20)]
