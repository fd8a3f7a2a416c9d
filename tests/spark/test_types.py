"""Every Arrow type Spark produces through timely and back, nulls kept, and
schemas checked at the driver before any task starts."""

from __future__ import annotations

import datetime
import decimal

import pytest

from timely.spark import SparkSchemaError, map_batches, run

TYPES = ("k long, i int, s smallint, t tinyint, d double, f float, b boolean, text string, "
         "ts timestamp, ntz timestamp_ntz, day date, money decimal(10,2), raw binary, "
         "list array<bigint>, pair struct<a:bigint,b:string>, tags map<string,bigint>")


def row(k: int, nulls: bool) -> tuple:
    if nulls and k % 2:
        return (k, *([None] * 15))
    return (k, k, k % 100, k % 50, k / 3, k / 4, k % 3 == 0, f"w{k}",
            datetime.datetime(2024, 3, 31, 1, 30) + datetime.timedelta(hours=k),
            datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=k),
            datetime.date(2020, 2, 29) + datetime.timedelta(days=k),
            decimal.Decimal(k) / 100, bytes([k % 256, 0]), [k, None, -k],
            {"a": k, "b": None}, {"x": k, "y": None})


@pytest.fixture
def new_york(spark):
    """A session time zone with daylight saving, so timestamps prove the zone is used."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield spark
    spark.conf.set("spark.sql.session.timeZone", before)


@pytest.mark.parametrize("nulls", [False, True], ids=["no nulls", "nulls"])
@pytest.mark.parametrize("through", ["identity", "exchange"])
def test_every_type_comes_back_as_it_went_in(new_york, nulls, through):
    spark = new_york
    df = spark.createDataFrame([row(k, nulls) for k in range(40)], TYPES).repartition(2)

    def dataflow(stream):
        return stream if through == "identity" else stream.exchange("k")

    result = run(df, dataflow, df.schema, workers=2)
    assert result.schema == df.schema
    got = sorted(result.collect(), key=lambda r: r.k)
    want = sorted(df.collect(), key=lambda r: r.k)
    assert got == want
    if nulls:
        assert got[1].i is None and got[1].tags is None and got[1].money is None


def test_a_nullable_number_stays_null_in_numpy(spark):
    df = spark.createDataFrame([(1, 2.0), (None, None)], "n long, x double").coalesce(1)

    def count_nulls(batch):
        import numpy as np

        assert isinstance(batch["n"], np.ma.MaskedArray)
        return {"n": batch["n"] * 2, "x": batch["x"]}

    out = map_batches(df, count_nulls, "n long, x double").collect()
    assert sorted(out, key=lambda r: r.n is None) == [(2, 2.0), (None, None)]


SCHEMA_CASES = {
    "missing": ("key long, total long, extra long", "'extra' of the declared schema"),
    "renamed": ("key long, sum long", r"'sum' of the declared schema .* \(renamed\? 'total'"),
    "mistyped": ("key string, total long", "column 'key' is int64"),
}


@pytest.mark.parametrize("case", SCHEMA_CASES, ids=SCHEMA_CASES)
def test_a_schema_that_does_not_fit_fails_at_the_driver_before_any_task(spark, case, tmp_path):
    declared, message = SCHEMA_CASES[case]
    df = spark.range(0, 100, numPartitions=2).selectExpr("id % 7 as key", "id as total")
    started = tmp_path / "a task started"

    def dataflow(stream):
        def mark(_time, _batch):
            from pyspark import TaskContext

            if TaskContext.get() is not None:
                started.write_text("x")
        return stream.inspect_batch(mark)

    with pytest.raises(SparkSchemaError, match=message):
        run(df, dataflow, declared, workers=2)
    with pytest.raises(SparkSchemaError, match=message):
        map_batches(df, lambda b: b, declared)
    assert not started.exists()
    # a cast happens only when asked for
    if case == "mistyped":
        out = run(df, dataflow, declared, workers=2, cast=True).collect()
        assert sorted(r.key for r in out)[:2] == ["0", "0"]


def test_an_epoch_column_that_is_missing_or_not_integral_fails_at_once(spark):
    df = spark.range(0, 10).selectExpr("id as key", "cast(id as double) as when")
    with pytest.raises(SparkSchemaError, match="'epoch' is not a column"):
        run(df, lambda s: s, "key long", epoch_col="epoch", workers=1)
    with pytest.raises(SparkSchemaError, match="'when' holds double"):
        run(df, lambda s: s, "key long", epoch_col="when", workers=1)


def test_a_nullable_key_groups_as_spark_groups_it(spark):
    """``filter_batch`` and ``aggregate`` by a nullable bigint key through
    ``run`` equal Spark's ``filter().groupBy().agg()``: a null key is one
    group, null values are skipped, a group without values has null sums."""
    from pyspark.sql import functions as F

    rows = [(None if k % 5 == 0 else k % 7, None if k % 3 == 0 or k % 7 == 2 else k,
             None if k % 13 == 0 else k % 11 != 0) for k in range(60)]
    df = spark.createDataFrame(rows, "key bigint, value bigint, keep boolean").repartition(2)

    def dataflow(stream):
        return (stream.filter_batch(lambda b: b["keep"])
                .aggregate("key", "value", how=("count", "sum", "min", "max")))

    schema = "key bigint, count bigint, sum bigint, min bigint, max bigint"
    got = run(df, dataflow, schema, workers=2).collect()
    want = (df.filter("keep").groupBy("key")
            .agg(F.count("value"), F.sum("value"), F.min("value"), F.max("value")).collect())
    order = lambda r: (r[0] is None, r[0] or 0)  # noqa: E731
    assert sorted(map(tuple, got), key=order) == sorted(map(tuple, want), key=order)
    assert any(r.key is None for r in got) and any(r.sum is None for r in got)


def test_a_timestamp_column_in_a_session_that_never_set_a_time_zone(spark):
    """A user's default session: nobody set ``spark.sql.session.timeZone``,
    and ``timestamp`` (Spark's default time type) still goes through."""
    from pyspark.sql import functions as F

    fresh = spark.newSession()
    assert fresh.conf.get("spark.sql.session.timeZone", None) is None
    df = fresh.range(6).select(F.col("id").alias("k"), F.timestamp_seconds("id").alias("ts"))
    result = run(df, lambda stream: stream, "k long, ts timestamp", workers=2)
    assert sorted(result.collect()) == sorted(df.collect())


def test_a_numpy_datetime_column_is_a_declared_timestamp_without_a_cast(spark):
    """A dataflow that makes its times with numpy (``datetime64[ns]``, or
    seconds) gives a declared ``timestamp`` column as it is, in a session
    that never set a time zone: no value changes, so no ``cast=True``."""
    import numpy as np
    from pyspark.sql import functions as F

    from timely import Batch

    fresh = spark.newSession()
    assert fresh.conf.get("spark.sql.session.timeZone", None) is None
    df = fresh.range(-3, 5).select(F.col("id").alias("k"))

    def times(batch):
        k = np.asarray(batch["k"], dtype=np.int64)
        return Batch(k=k, ts=(k * 1_000_003_000).astype("datetime64[ns]"),
                     day=(k * 86_400).astype("datetime64[s]"))

    result = run(df, lambda stream: stream.map_batch(times),
                 "k long, ts timestamp, day timestamp_ntz", workers=2)
    want = df.select("k", F.timestamp_micros(F.expr("k * 1000003")).alias("ts"),
                     F.expr("to_timestamp_ntz(timestamp_seconds(k * 86400))").alias("day"))
    assert sorted(result.collect()) == sorted(want.collect())


def test_times_finer_than_the_declared_unit_name_the_column():
    """Nanoseconds that are not whole microseconds would change: the column
    is named and the fix given; ``cast=True`` truncates them."""
    import numpy as np
    import pyarrow as pa

    from timely import Batch
    from timely.errors import SparkSchemaError
    from timely.spark.schema import conform

    batch = Batch(ts=np.array([1_000, 1_001], dtype="datetime64[ns]"))
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    with pytest.raises(SparkSchemaError, match="column 'ts' .*finer than a microsecond"):
        conform(batch, schema)
    assert conform(batch, schema, cast=True).column(0).cast(pa.int64()).to_pylist() == [1, 1]
    whole = Batch(ts=np.array([1_000, 2_000, "NaT"], dtype="datetime64[ns]"))
    assert conform(whole, schema).column(0).to_pylist()[2] is None
