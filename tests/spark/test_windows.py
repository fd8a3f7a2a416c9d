"""Event-time windows (``run(..., epoch_col=, window=)``) against Spark's
own ``groupBy(window(...))`` on the same DataFrame, in a session that never
set a time zone: tumbling and sliding windows, a start offset, times before
and after 1970 in no order, null times (in no window, as in Spark) and null
keys, labels as Spark's ``window`` struct or as ``window_start`` /
``window_end``, ``timestamp`` and ``timestamp_ntz``; and each misuse named
at the driver."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference.windows import windows_of
from timely.errors import ConfigurationError, SparkSchemaError
from timely.spark import Window, run
from timely.spark.windows import duration

SCHEMA = "window struct<start: timestamp, end: timestamp>, user long, count long, sum long"


def events(spark, n=400):
    from pyspark.sql import functions as F

    seconds = (F.col("id") * 7919) % 20_000 - 6_000          # out of order, some before 1970
    return spark.range(n).select(
        F.when(F.col("id") % 13 == 0, None).otherwise(F.col("id") % 5).alias("user"),
        F.when(F.col("id") % 17 == 0, None).otherwise(F.timestamp_seconds(seconds)).alias("ts"),
        (F.col("id") % 11).alias("amount"))


def spark_answer(df, *window_args, label="window"):
    from pyspark.sql import functions as F

    grouped = df.groupBy(F.window("ts", *window_args).alias("window"), "user").agg(
        F.count("amount").alias("count"), F.sum("amount").alias("sum"))
    if label == "window":
        return sorted(map(tuple, grouped.select("window", "user", "count", "sum").collect()),
                      key=repr)
    return sorted(map(tuple, grouped.select(F.col("window.start"), F.col("window.end"), "user",
                                            "count", "sum").collect()), key=repr)


def per_window(stream):
    return stream.aggregate("user", "amount", how=("count", "sum"))


CASES = [
    ("10 minutes", (), ("10 minutes",)),
    (Window("10 minutes", "4 minutes"), (), ("10 minutes", "4 minutes")),
    (Window("1 hour", "15 minutes", "5 minutes"), (), ("1 hour", "15 minutes", "5 minutes")),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", range(len(CASES)), ids=["tumbling", "sliding", "offset"])
def test_windows_equal_spark_s_group_by_window(spark, workers, case):
    window, _, spark_args = CASES[case]
    fresh = spark.newSession()
    assert fresh.conf.get("spark.sql.session.timeZone", None) is None
    df = events(fresh)
    result = run(df, per_window, SCHEMA, workers=workers, epoch_col="ts", window=window)
    got = sorted(map(tuple, result.collect()), key=repr)
    assert got == spark_answer(df, *spark_args)
    assert any(row[1] is None for row in got)                  # the null key's group too


def test_window_bounds_as_two_columns_of_timestamp_ntz(spark):
    from pyspark.sql import functions as F

    df = events(spark).withColumn("ts", F.to_timestamp_ntz(F.col("ts").cast("string")))
    result = run(df, per_window, "window_start timestamp_ntz, window_end timestamp_ntz, "
                 "user long, count long, sum long", workers=2, epoch_col="ts",
                 window="30 minutes")
    got = sorted(map(tuple, result.select("window_start", "window_end", "user", "count", "sum")
                     .collect()), key=repr)
    assert got == spark_answer(df, "30 minutes", label="columns")


def test_the_time_column_stays_in_the_rows(spark):
    """Unlike an integer epoch column, a windowed time column is data: the
    latest event of each window, as Spark's ``max(ts)`` gives it."""
    from pyspark.sql import functions as F

    from timely import Batch

    def latest(stream):
        def micros(batch):
            ts = batch["ts"]
            return Batch(user=batch["user"],
                         t=np.asarray(ts).astype("datetime64[us]").view(np.int64))
        return stream.map_batch(micros).aggregate("user", "t", how="max")

    df = events(spark).where("user is not null")
    result = run(df, latest, "window struct<start: timestamp, end: timestamp>, user long, "
                 "max long", workers=2, epoch_col="ts", window="10 minutes")
    want = df.groupBy(F.window("ts", "10 minutes"), "user").agg(
        F.max(F.unix_micros("ts")).alias("max"))
    assert sorted(map(tuple, result.collect()), key=repr) == sorted(
        map(tuple, want.select("window", "user", "max").collect()), key=repr)


def test_misuse_is_named_at_the_driver(spark):
    df = events(spark, 10)
    with pytest.raises(SparkSchemaError, match="a window needs epoch_col"):
        run(df, per_window, SCHEMA, workers=2, window="10 minutes")
    with pytest.raises(SparkSchemaError, match="'user' holds int64; windows are of a timestamp"):
        run(df, per_window, SCHEMA, workers=2, epoch_col="user", window="10 minutes")
    with pytest.raises(SparkSchemaError, match="pass window= to run each window"):
        run(df, per_window, SCHEMA, workers=2, epoch_col="ts")
    with pytest.raises(ConfigurationError, match="'10 fortnights' has the unit 'fortnights'"):
        run(df, per_window, SCHEMA, workers=2, epoch_col="ts", window="10 fortnights")
    with pytest.raises(ConfigurationError, match="slide '20 minutes' is longer than its length"):
        Window("10 minutes", "20 minutes")
    with pytest.raises(SparkSchemaError, match="the declared column 'window' is int64"):
        run(df, per_window, "window long, user long, count long, sum long", workers=2,
            epoch_col="ts", window="10 minutes")


@given(st.lists(st.one_of(st.none(), st.integers(-10**12, 10**12)), max_size=30),
       st.integers(1, 50), st.integers(1, 50), st.integers(0, 49))
def test_assign_follows_the_oracle(times, length, slide, start):
    """Every (row, window) pair, for any times (null ones included), lengths,
    slides and offsets, against a plain loop over the windows."""
    slide = min(slide, length)
    start = start % slide
    window = Window(np.timedelta64(length, "s"), np.timedelta64(slide, "s"),
                    np.timedelta64(start, "s"))
    micros = np.array([0 if t is None else t for t in times], dtype=np.int64)
    valid = np.array([t is not None for t in times], dtype=bool)
    rows, epochs = window.assign(micros, valid)
    got = sorted((int(r), window.bounds(int(e))) for r, e in zip(rows, epochs))
    assert got == windows_of(times, length * 10**6, slide * 10**6, start * 10**6)


def test_durations_read_as_spark_writes_them():
    assert duration("1 day 2 hours") == (26 * 3600) * 10**6
    assert duration("interval 90 seconds") == 90 * 10**6
    assert duration("250 ms") == 250_000
    assert duration(np.timedelta64(3, "m")) == 180 * 10**6
    with pytest.raises(ConfigurationError, match="'1 month' has the unit 'month'"):
        duration("1 month")
    with pytest.raises(ConfigurationError, match="not a duration"):
        duration("ten minutes")


def test_the_example_checks_itself_against_spark(spark, capsys):
    from timely.examples.spark_windows import main

    assert main(["--events", "3000"], spark=spark) == 0
    out = capsys.readouterr().out
    assert out.count("same as Spark") == 2
