"""timely.spark on a real Spark standalone cluster whose workers are two
hosts: a master (and the driver) on host 0, a worker of two cores on each of
hosts 1 and 2, every host a network namespace with its own address and host
name (the machinery of ``tests/runtime/test_hosts.py``). The master and
workers are started with pyspark's own ``bin/spark-class`` and stopped by
their PIDs; nothing they started is left afterwards.

One driver program runs every scenario in one Spark application (one JVM
start for the module) and prints what it saw; each test checks one part:

- four timely workers, two tasks per host: rings within a host, TCP between
  hosts (the data paths logged by the driver), the answer equal to Spark's
  ``groupBy``;
- three workers over event-time sliding windows of a timestamp column, the
  answer equal to Spark's ``groupBy(window(...))``;
- a task that raises: the driver's error carries its own exception, type,
  message and traceback, not a peer's "disconnected";
- an executor killed mid-stage while a slot is spare: the stage is retried
  and the answer is right;
- a whole host lost with no spare slot: the job fails within the watchdog's
  time instead of waiting for slots forever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.runtime.test_hosts import Hosts, _can_make_namespaces

ROOT = Path(__file__).resolve().parent.parent.parent
WATCHDOG = 8

DRIVER = textwrap.dedent("""
    import json, logging, os, signal, sys, time
    from pyspark.sql import SparkSession
    from timely.examples.spark_pipeline import sum_per_epoch
    from timely.spark import preflight, run

    begun = time.monotonic()
    master, tmp = sys.argv[1], sys.argv[2]
    paths = []

    class Paths(logging.Handler):
        def emit(self, record):
            if "data paths" in record.getMessage():
                paths.append(record.getMessage())

    logging.getLogger("timely.spark").addHandler(Paths())
    logging.getLogger("timely.spark").setLevel(logging.INFO)

    spark = (SparkSession.builder.master(master).appName("timely-hosts")
             .config("spark.ui.enabled", "false")
             .config("spark.executor.cores", "2")
             .config("spark.executor.memory", "512m")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.stage.maxConsecutiveAttempts", "2")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.executor.extraJavaOptions",
                     "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.timely.ports", "7300-7399")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    deadline = time.monotonic() + 120
    while len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) < 3:
        assert time.monotonic() < deadline, "the executors never registered"
        time.sleep(0.2)
    out = {}
    ready = time.monotonic() - begun

    def report(key, value):
        value["at"] = round(time.monotonic() - begun, 1)
        out[key] = value
        print(json.dumps({key: value}), flush=True)

    df = spark.range(0, 20000, numPartitions=4).selectExpr(
        "id % 5 as epoch", "(id * 7919) % 101 as key", "id % 13 as value").cache()
    expected = sorted(tuple(r) for r in df.groupBy("epoch", "key").agg({"value": "sum"}).collect())
    schema = "epoch long, key long, total long"

    preflight(spark, 4)
    result = run(df, sum_per_epoch, schema, workers=4, epoch_col="epoch")
    report("across", {"ready": round(ready, 1), "equal": sorted(tuple(r) for r in result.collect()) == expected,
                      "paths": list(paths)})

    from pyspark.sql import functions as F
    from timely.spark import Window
    events = spark.range(0, 5000, numPartitions=3).select(
        (F.col("id") % 7).alias("user"),
        F.when(F.col("id") % 17 == 0, None).otherwise(
            F.timestamp_seconds((F.col("id") * 7919) % 20000 - 6000)).alias("ts"),
        (F.col("id") % 11).alias("amount"))
    windowed = run(events, lambda s: s.aggregate("user", "amount", how=("count", "sum")),
                   "window struct<start: timestamp, end: timestamp>, user long, count long, "
                   "sum long", workers=3, epoch_col="ts", window=Window("10 minutes", "4 minutes"))
    spark_windows = events.groupBy(F.window("ts", "10 minutes", "4 minutes").alias("window"),
                                   "user").agg(F.count("amount").alias("count"),
                                               F.sum("amount").alias("sum"))
    ours = sorted(map(repr, windowed.collect()))
    report("windows", {"rows": len(ours), "equal": ours == sorted(map(repr, spark_windows.select(
        "window", "user", "count", "sum").collect()))})

    def explode(stream):
        def check(time_, batch):
            from pyspark import TaskContext
            if TaskContext.get().partitionId() == 2:
                raise ValueError("boom from partition 2")
        return sum_per_epoch(stream.inspect_batch(check))

    start = time.monotonic()
    try:
        run(df, explode, schema, workers=4, epoch_col="epoch").collect()
        report("raising", {"raised": False})
    except Exception as error:
        report("raising", {"raised": True, "message": str(error),
                           "seconds": time.monotonic() - start})

    def killer(marker, host_too):
        def kill(stream):
            def check(time_, batch):
                from pyspark import TaskContext
                if TaskContext.get().partitionId() != 1 or os.path.exists(marker):
                    return
                open(marker, "w").close()
                pid, chain = os.getpid(), []
                while pid > 1:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        chain.append((pid, f.read()))
                    with open(f"/proc/{pid}/stat") as f:
                        pid = int(f.read().rsplit(")", 1)[1].split()[1])
                for pid, cmdline in chain:
                    if b"CoarseGrainedExecutorBackend" in cmdline or (
                            host_too and b"deploy.worker.Worker" in cmdline):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(30)
            return sum_per_epoch(stream.inspect_batch(check))
        return kill

    answer = sorted(tuple(r) for r in run(df, killer(os.path.join(tmp, "spare"), False),
                                          schema, workers=2, epoch_col="epoch").collect())
    report("spare", {"equal": answer == expected})

    from timely.spark import slots
    while slots(spark) < 4:                   # the killed executor's replacement
        assert time.monotonic() < deadline + 300, "the executor never came back"
        time.sleep(0.2)
    spark.conf.set("spark.timely.watchdogTimeout", "WATCHDOG")
    start = time.monotonic()
    try:
        run(df, killer(os.path.join(tmp, "host"), True), schema, workers=4,
            epoch_col="epoch").collect()
        report("no_spare", {"raised": False})
    except Exception as error:
        report("no_spare", {"raised": True, "message": str(error)[:4000],
                            "seconds": time.monotonic() - start})
    spark.stop()
""").replace("WATCHDOG", str(WATCHDOG))


def _descendants_env(marker: bytes) -> list[int]:
    """Processes whose environment holds ``marker`` (everything the cluster
    started inherits it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


class Cluster:
    """A standalone master on host 0 and a worker of two cores on hosts 1 and 2."""

    def __init__(self, tmp: Path):
        from pyspark.find_spark_home import _find_spark_home

        self.hosts = Hosts(3)
        self.tmp = tmp
        self.marker = f"TIMELY_TEST_CLUSTER={os.getpid()}-{time.monotonic_ns()}"
        self.procs: list[subprocess.Popen] = []
        home = _find_spark_home()
        self.master = f"spark://{self.hosts.addresses[0]}:7077"
        try:
            daemon = {"SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                      "SPARK_DAEMON_MEMORY": "256m"}
            self._start(0, [f"{home}/bin/spark-class", "org.apache.spark.deploy.master.Master",
                            "--host", self.hosts.addresses[0], "--port", "7077",
                            "--webui-port", "0"], daemon)
            for p in (1, 2):
                work = tmp / f"work-{p}"
                work.mkdir()
                self._start(p, [f"{home}/bin/spark-class", "org.apache.spark.deploy.worker.Worker",
                                "--host", self.hosts.addresses[p], "--cores", "2", "--memory",
                                "1g", "--webui-port", "0", "--work-dir", str(work), self.master],
                            daemon)
        except BaseException:
            self.stop()
            raise

    def env(self, p: int, **extra) -> dict:
        key, value = self.marker.split("=")
        return {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": self.hosts.addresses[p],
                "PYSPARK_PYTHON": sys.executable, key: value, **extra}

    def _start(self, p: int, argv, extra) -> None:
        log = open(self.tmp / f"host-{p}-{len(self.procs)}.log", "w")
        try:
            self.procs.append(self.hosts.spawn(p, argv, self.env(p, **extra), stdout=log,
                                               stderr=subprocess.STDOUT))
        finally:
            log.close()

    def stop(self) -> list[int]:
        """Stops every master and worker by PID (a worker stops its
        executors), removes the hosts; returns what is still running."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.procs = []
        deadline = time.monotonic() + 20
        left = _descendants_env(self.marker.encode())
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = _descendants_env(self.marker.encode())
        self.hosts.remove()
        return left


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = _can_make_namespaces()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Spark cluster tests: {reason}")
        pytest.skip(reason)
    made = Cluster(tmp_path_factory.mktemp("cluster"))
    yield made
    for pid in made.stop():
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def seen(cluster):
    """Everything the driver program saw, by scenario."""
    driver = cluster.hosts.spawn(0, [sys.executable, "-c", DRIVER, cluster.master,
                                     str(cluster.tmp)], cluster.env(0),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)
    result = {}
    for line in out.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    result["stderr"] = err[-20000:]
    return result


def test_four_workers_on_two_hosts_equal_spark_group_by(seen):
    assert "across" in seen, seen["stderr"]
    assert seen["across"]["equal"]
    (paths,) = seen["across"]["paths"][:1]
    # two tasks per host: rings inside a host, TCP between hosts
    pairs = dict(p.split(" ") for p in paths.split("data paths ")[1].split(", "))
    assert sorted(pairs.values()) == ["rings", "rings", "tcp", "tcp", "tcp", "tcp"], paths


def test_sliding_windows_at_three_workers_on_two_hosts_equal_spark_group_by_window(seen):
    windows = seen.get("windows")
    assert windows, seen["stderr"]
    assert windows["equal"] and windows["rows"] > 100


def test_a_raising_task_gives_the_driver_its_own_exception(seen):
    raising = seen.get("raising")
    assert raising and raising["raised"], seen["stderr"]
    message = raising["message"]
    assert "ValueError: boom from partition 2" in message
    assert "in check" in message            # its traceback, not only its message
    assert "disconnected" not in message.split("boom from partition 2")[0][-2000:]


def test_a_killed_executor_with_a_spare_slot_is_retried_to_the_right_answer(seen):
    assert seen.get("spare", {}).get("equal"), seen["stderr"]


def test_a_lost_host_with_no_spare_slot_fails_within_the_watchdog_time(seen):
    lost = seen.get("no_spare")
    assert lost and lost["raised"], seen["stderr"]
    assert "spark.timely.watchdogTimeout" in lost["message"]
    assert lost["seconds"] < WATCHDOG + 60


def test_the_cluster_stops_by_pid_and_leaves_nothing(cluster, seen):
    assert cluster.stop() == []
