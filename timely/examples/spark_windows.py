"""Event-time windows over a timestamp column, through timely on Spark,
checked against Spark's ``groupBy(window(...))``.

On a local Spark session (``local[W]``, no time zone set) this makes
``--events`` events ``(user, ts, amount)``: times spread over a day before
and after 1970 in no order, one in 23 of them null (in no window, as in
Spark), users in [0, 50). Then, per window and user, the count, the sum and
the largest amount, through :func:`timely.spark.run` with ``window=``
(tumbling windows of ``--length``, and sliding ones every ``--slide``) and
through Spark's own ``groupBy(window("ts", ...), "user")``; it prints each
job's rows and seconds and stops with an error if the two disagree.

Run: ``python -m timely.examples.spark_windows [--events N] [--length 10 minutes]
[--slide 5 minutes] [-w W]``
"""

from __future__ import annotations

import time

from timely.examples.cli import parser

SCHEMA = "window struct<start: timestamp, end: timestamp>, user long, " \
         "count long, sum long, max long"


def events(spark, n: int):
    """``n`` events ``(user, ts, amount)``, times out of order, some null."""
    from pyspark.sql import functions as F

    seconds = (F.col("id") * 7919) % 172_800 - 86_400          # a day either side of 1970
    return spark.range(n).select(
        (F.col("id") * 31 % 50).alias("user"),
        F.when(F.col("id") % 23 == 0, None).otherwise(F.timestamp_seconds(seconds)).alias("ts"),
        (F.col("id") % 1000).alias("amount"))


def per_window(stream):
    """Per window (the epoch) and user: count, sum and max of ``amount``."""
    return stream.aggregate("user", "amount", how=("count", "sum", "max"))


def through_spark(df, length: str, slide: str | None):
    """The same answer by Spark's ``groupBy(window(...))``."""
    from pyspark.sql import functions as F

    window = F.window("ts", length) if slide is None else F.window("ts", length, slide)
    return df.groupBy(window, "user").agg(
        F.count("amount").alias("count"), F.sum("amount").alias("sum"),
        F.max("amount").alias("max"))


def compare(df, workers: int, length: str, slide: str | None) -> tuple[int, float, float]:
    """Rows, timely's seconds and Spark's, of one kind of window; raises
    SystemExit when the answers differ."""
    from timely.spark import Window, run

    window = Window(length, slide)
    result = run(df, per_window, SCHEMA, workers=workers, epoch_col="ts", window=window)
    start = time.perf_counter()
    ours = sorted(tuple(r) for r in result.collect())
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = sorted(tuple(r) for r in through_spark(df, length, slide)
                    .select("window", "user", "count", "sum", "max").collect())
    theirs_s = time.perf_counter() - start
    if ours != theirs:
        raise SystemExit(f"windows of {length} every {slide or length}: timely and Spark "
                         f"disagree ({len(ours)} rows against {len(theirs)})")
    return len(ours), ours_s, theirs_s


def main(argv=None, spark=None) -> int:
    """Runs both jobs; on ``spark`` when given (left running), else on a new local session."""
    p = parser("spark_windows", __doc__, workers=2)
    p.add_argument("--events", type=int, default=100_000, help="events (default 10^5)")
    p.add_argument("--length", default="10 minutes", help="window length (default 10 minutes)")
    p.add_argument("--slide", default="5 minutes", help="sliding windows' slide (5 minutes)")
    args = p.parse_args(argv)
    if args.processes != 1 or args.hostfile is not None:
        p.error("Spark places the workers: -w only, no -n or -h")
    own = spark is None
    if own:
        from timely.examples.spark_pipeline import session

        print(f"starting local Spark with {args.workers} cores", flush=True)
        spark = session(args.workers)
    try:
        df = events(spark, args.events)
        rows = [(f"tumbling {args.length}", *compare(df, args.workers, args.length, None)),
                (f"sliding {args.length} / {args.slide}",
                 *compare(df, args.workers, args.length, args.slide))]
    finally:
        if own:
            spark.stop()
    print(f"{'windows':<30}{'rows':>8}{'timely s':>10}{'Spark s':>10}  answer")
    for name, n, ours_s, theirs_s in rows:
        print(f"{name:<30}{n:>8}{ours_s:>10.2f}{theirs_s:>10.2f}  same as Spark")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
