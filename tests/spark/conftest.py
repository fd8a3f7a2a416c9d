"""One local Spark session shared by the Spark tests (``local[2]``, UI off,
loopback, two shuffle partitions). Spark needs Java: without it these tests
fail with a message saying so, rather than pass silently."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the Spark tests need Java 17 on PATH (or JAVA_HOME); .ci/run installs it")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("timely-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.extraJavaOptions",
                       "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.stage.maxConsecutiveAttempts", "4")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
