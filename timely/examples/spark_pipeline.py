"""The main job: Spark partitions through timely and back, checked against Spark.

On a local Spark session (``local[2]``) this generates three inputs as
DataFrames, runs each through timely with 2 workers placed by Spark
(:func:`timely.spark.run`, one worker per task of a barrier stage), checks
the answers against Spark's own ``groupBy``, and prints a table of rows/s:

- word count: ``--words`` words drawn from the vocabulary of
  :mod:`timely.examples.wordcount` (10^4 words); timely counts per word (every row at epoch 0);
- tumbling sum: ``--records`` rows ``(epoch, key, value)`` with 100 epochs,
  key and value in [0, 1000); timely sums per (epoch, key), emitting each
  epoch's sums once the epoch is complete;
- graphs: an R-MAT graph of ``--edges`` edges (10^6; ``--edges 0`` skips
  it) in a DataFrame; its connected components and ``--iterations`` (10)
  PageRank iterations through timely (:mod:`timely.algorithms` in
  :func:`timely.spark.run`) and through the loop a PySpark user writes
  without extra jars (DataFrame joins and ``groupBy`` per round, until a
  fixpoint for components, ``localCheckpoint()`` every
  ``--checkpoint-every`` rounds), both checked against scipy, with each
  round of Spark's loops, and of timely's PageRank (from its worker 0),
  printed as it ends.

Both dataflows are vectorized: :func:`sum_per_epoch` pre-aggregates each
batch in a compiled hash table, routes the partial sums by key in C and folds
them on the key's worker, emitting each epoch once it is complete.

Run: ``python -m timely.examples.spark_pipeline [--words N] [--records N] [--edges N]
[--iterations K] [-w W]``
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import timely
from timely.examples.cli import parser
from timely.dataflow.channels import Pipeline


def sum_per_epoch(stream, key: str = "key", value: str | None = "value", out: str = "total"):
    """Per epoch and ``key``: the sum of ``value`` (or the row count when
    ``value`` is None) as a batch ``(epoch, key, out)``, emitted once the epoch
    is complete. Exact at any worker count: :meth:`~timely.Stream.aggregate`
    pre-aggregates each batch where it is, exchanges the partial sums by
    ``key`` and folds them in a compiled hash table."""
    how = "count" if value is None else "sum"

    def stamp(time, totals):
        epoch = np.full(len(totals), time, dtype=np.int64)
        return timely.Batch({"epoch": epoch, key: totals[key],
                             out: totals[how].astype(np.int64, copy=False)})

    def constructor(capability, info):
        def logic(inp, output):
            for cap, totals in inp:
                output.session(cap).give_container(stamp(cap.time, totals))
        return logic

    return stream.aggregate(key, value, how=how).unary(Pipeline(), "StampEpoch", constructor)


def session(cores: int = 2):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{cores}]").appName("timely-spark-pipeline")
             .config("spark.ui.enabled", "false")
             # Rounds reported by the tasks print between Spark's own lines.
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(cores))
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def inputs(spark, words: int, records: int, partitions: int):
    from timely.examples.wordcount import make_vocabulary

    vocabulary = np.array(make_vocabulary(), dtype=object)
    rng = np.random.default_rng(7)
    picks = vocabulary[rng.integers(0, len(vocabulary), words)]
    import pandas as pd

    text = spark.createDataFrame(pd.DataFrame({"word": picks})).repartition(partitions).cache()
    tumbling = spark.range(0, records, numPartitions=partitions).selectExpr(
        f"id div {max(1, records // 100)} as epoch",
        "(id * 2654435761) % 1000 as key",
        "(id * 40503) % 1000 as value").cache()
    text.count()
    tumbling.count()
    return text, tumbling


def graph_input(spark, edges: int, partitions: int, seed: int = 7):
    """An R-MAT graph of ``edges`` directed edges on ``2**scale`` nodes
    (about 16 edges per node) as a cached DataFrame ``(src long, dst long)``
    in ``partitions`` partitions, and the numpy arrays it was made from."""
    import pandas as pd

    from timely.algorithms import rmat_edges

    scale = max(4, int(np.log2(max(16, edges) / 16)))
    src, dst = rmat_edges(scale, edges, seed=seed)
    df = (spark.createDataFrame(pd.DataFrame({"src": src, "dst": dst}))
          .repartition(partitions).cache())
    df.count()
    return df, src, dst


def reference_components(src, dst) -> tuple[np.ndarray, np.ndarray]:
    """The nodes of the edges and, per node, the least node of its
    component: scipy's ``connected_components``, relabelled by each
    component's least node."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    nodes = np.unique(np.concatenate([src, dst]))
    n = int(nodes[-1]) + 1 if len(nodes) else 0
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, component = connected_components(graph, directed=True, connection="weak")
    least = np.full(component.max() + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(least, component[nodes], nodes)
    return nodes, least[component[nodes]]


def reference_pagerank(src, dst, iterations: int, damping: float = 0.85):
    """Per node of the edges, its rank after ``iterations`` steps from 1 of
    ``r = (1 - damping) + damping * A r / outdeg`` (dangling ranks not passed
    on), by scipy sparse products."""
    from scipy.sparse import csr_matrix

    nodes = np.unique(np.concatenate([src, dst]))
    n = int(nodes[-1]) + 1 if len(nodes) else 0
    degree = np.bincount(src, minlength=n).astype(np.float64)
    into = csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    rank = np.ones(n)
    for _ in range(iterations):
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(degree > 0, rank / degree, 0.0)
        rank = (1.0 - damping) + damping * (into @ share)
    return nodes, rank[nodes]


def _ends(edges):
    from pyspark.sql import functions as F

    return (edges.select(F.col("src").alias("node"))
            .union(edges.select(F.col("dst").alias("node"))).distinct())


def _cut(df, round_: int, every: int):
    """``df`` kept for the next round: cached, and every ``every`` rounds
    cut from its lineage with ``localCheckpoint()`` (no checkpoint directory
    needed), so that the plan does not grow round after round."""
    return df.localCheckpoint(eager=True) if round_ % every == 0 else df.cache()


def spark_components(edges, every: int = 3, progress=print):
    """Connected components as a PySpark user writes them without extra
    jars: min-label propagation by DataFrame joins until a fixpoint, each
    round a join of the labels with the (undirected) edges and a ``groupBy``
    min, ``localCheckpoint()`` every ``every`` rounds. Returns the
    ``(node, label)`` DataFrame and the rounds taken (the last changes
    nothing)."""
    from pyspark.sql import functions as F

    both = (edges.select(F.col("src").alias("node"), F.col("dst").alias("next"))
            .union(edges.select(F.col("dst").alias("node"), F.col("src").alias("next")))
            .where("node != next").distinct().cache())
    labels = _ends(edges).withColumn("label", F.col("node")).cache()
    rounds = 0
    while True:
        rounds += 1
        start = time.perf_counter()
        proposals = labels.join(both, "node").select(F.col("next").alias("node"), "label")
        new = _cut(labels.union(proposals).groupBy("node").agg(F.min("label").alias("label")),
                   rounds, every)
        changed = new.join(labels.withColumnRenamed("label", "old"), "node").where(
            "label < old").count()
        labels.unpersist()
        labels = new
        progress(f"    Spark CC round {rounds}: {changed} labels improved "
                 f"({time.perf_counter() - start:.1f} s)")
        if changed == 0:
            both.unpersist()
            return labels, rounds


def spark_pagerank(edges, iterations: int, damping: float = 0.85, every: int = 3,
                   progress=print):
    """PageRank as a PySpark user writes it: ``iterations`` rounds of a join
    of the ranks with the out-edges (weighted by 1 / out-degree) and a
    ``groupBy`` sum, ``localCheckpoint()`` every ``every`` rounds. The same
    ranks as :func:`timely.algorithms.pagerank` (from 1, unnormalized,
    dangling ranks not passed on). Returns the ``(node, rank)`` DataFrame."""
    from pyspark.sql import functions as F

    degree = edges.groupBy("src").agg(F.count("*").alias("degree"))
    weighted = edges.join(degree, "src").select(
        "src", "dst", (F.lit(1.0) / F.col("degree")).alias("w")).cache()
    nodes = _ends(edges).cache()
    ranks = nodes.withColumn("rank", F.lit(1.0))
    for round_ in range(1, iterations + 1):
        start = time.perf_counter()
        sums = (weighted.join(ranks.withColumnRenamed("node", "src"), "src")
                .groupBy("dst").agg(F.sum(F.col("rank") * F.col("w")).alias("c"))
                .withColumnRenamed("dst", "node"))
        new = _cut(nodes.join(sums, "node", "left").select(
            "node", (F.lit(1.0 - damping) + F.lit(damping) * F.coalesce(F.col("c"), F.lit(0.0)))
            .alias("rank")), round_, every)
        count = new.count()
        if round_ > 1:
            ranks.unpersist()
        ranks = new
        progress(f"    Spark PageRank round {round_}/{iterations}: {count} ranks "
                 f"({time.perf_counter() - start:.1f} s)")
    weighted.unpersist()
    nodes.unpersist()
    return ranks


def node_arrays(df, value: str):
    """``(node, value)`` of a DataFrame as numpy arrays ordered by node."""
    frame = df.toPandas().sort_values("node")
    return frame["node"].to_numpy(np.int64), frame[value].to_numpy()


def graph_jobs(spark, edges: int, workers: int, iterations: int, every: int = 3) -> list:
    """Connected components and PageRank of an R-MAT graph of ``edges``
    edges held in a DataFrame, through timely and through a PySpark loop in
    ``spark``, both checked against scipy; returns the table's rows
    ``(job, edges, nodes, timely s, timely rounds, Spark s, Spark rounds)``."""
    from timely.algorithms import connected_components, pagerank
    from timely.spark import run

    graph, src, dst = graph_input(spark, edges, workers)
    rows = []

    nodes, labels = reference_components(src, dst)
    print(f"  connected components of {edges} R-MAT edges, {len(nodes)} nodes, "
          f"{len(np.unique(labels))} components", flush=True)
    components = run(graph, connected_components, "node long, label long", workers=workers)
    (got_nodes, got), timely_s = timed("connected components through timely (one barrier stage)",
                                       lambda: node_arrays(components, "label"))
    if not (np.array_equal(got_nodes, nodes) and np.array_equal(got, labels)):
        raise SystemExit("connected components: timely and scipy disagree")
    print("  connected components in Spark (joins until a fixpoint) ...", flush=True)
    start = time.perf_counter()
    found, rounds = spark_components(graph, every)
    got_nodes, got = node_arrays(found, "label")
    spark_s = time.perf_counter() - start
    if not (np.array_equal(got_nodes, nodes) and np.array_equal(got, labels)):
        raise SystemExit("connected components: Spark's loop and scipy disagree")
    # the default method gathers the workers' union-find forests: no rounds
    rows.append(("components", edges, len(nodes), timely_s, 0, spark_s, rounds))

    nodes, ranks = reference_pagerank(src, dst, iterations)
    print(f"  PageRank of the same graph, {iterations} iterations", flush=True)
    ranked = run(graph, lambda s: pagerank(s, iterations,
                                           on_round=round_printer("PageRank", s.scope.index)),
                 "node long, rank double", workers=workers,
                 # the schema is known; a dry run on the driver would print its rounds
                 dry_run=False)
    (got_nodes, got), timely_s = timed("PageRank through timely (one barrier stage)",
                                       lambda: node_arrays(ranked, "rank"))
    if not (np.array_equal(got_nodes, nodes) and np.allclose(got, ranks, rtol=1e-9, atol=0)):
        raise SystemExit("PageRank: timely and scipy disagree")
    print("  PageRank in Spark (a join and a groupBy per round) ...", flush=True)
    start = time.perf_counter()
    got_nodes, got = node_arrays(spark_pagerank(graph, iterations, every=every), "rank")
    spark_s = time.perf_counter() - start
    if not (np.array_equal(got_nodes, nodes) and np.allclose(got, ranks, rtol=1e-9, atol=0)):
        raise SystemExit("PageRank: Spark's loop and scipy disagree")
    rows.append(("PageRank", edges, len(nodes), timely_s, iterations, spark_s, iterations))
    graph.unpersist()
    return rows


def round_printer(job: str, index: int):
    """The ``on_round`` callback of worker ``index``: worker 0's prints
    each round of ``job`` as it ends (from the Spark task, whose output a
    local session shows), the others' stay quiet. Every worker passes one,
    so that all build the same dataflow."""

    def report(round_: int, rows: int) -> None:
        if index == 0:
            print(f"    timely {job} round {round_}: {rows} rows on worker 0",
                  file=sys.stderr, flush=True)

    return report


def timed(label, action):
    print(f"  {label} ...", flush=True)
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def main(argv=None, spark=None) -> int:
    """Runs the job; on ``spark`` when given (left running), else on a new local session."""
    p = parser("spark_pipeline", __doc__, workers=2)
    p.add_argument("--words", type=int, default=10**6, help="words (default 10^6)")
    p.add_argument("--records", type=int, default=10**6, help="records (default 10^6)")
    p.add_argument("--edges", type=int, default=10**6,
                   help="edges of the R-MAT graph (0: no graph jobs)")
    p.add_argument("--iterations", type=int, default=10, help="PageRank iterations")
    p.add_argument("--checkpoint-every", type=int, default=3,
                   help="rounds of Spark's loops between localCheckpoint()s")
    args = p.parse_args(argv)
    if args.processes != 1 or args.hostfile is not None:
        p.error("Spark places the workers: -w only, no -n or -h")

    from timely.spark import run

    own = spark is None
    if own:
        print(f"starting local Spark with {args.workers} cores", flush=True)
        spark = session(args.workers)
    try:
        text, tumbling = inputs(spark, args.words, args.records, args.workers)
        rows = []

        counted = run(text, lambda s: sum_per_epoch(s, key="word", value=None, out="count"),
                      "epoch long, word string, count long", workers=args.workers)
        ours, seconds = timed("word count through timely",
                              lambda: sorted((r.word, r["count"]) for r in counted.collect()))
        theirs, spark_s = timed("word count in Spark",
                                lambda: sorted(tuple(r) for r in text.groupBy("word").count()
                                               .collect()))
        if ours != theirs:
            raise SystemExit("word count: timely and Spark disagree")
        _, bare_s = timed("word count: a bare barrier mapInArrow pass-through",
                          lambda: pass_through(text))
        rows.append(("word count", args.words, len(ours), seconds, spark_s, bare_s))

        summed = run(tumbling, sum_per_epoch, "epoch long, key long, total long",
                     workers=args.workers, epoch_col="epoch")
        ours, seconds = timed("tumbling sum through timely",
                              lambda: sorted(tuple(r) for r in summed.collect()))
        theirs, spark_s = timed("tumbling sum in Spark",
                                lambda: sorted(tuple(r) for r in tumbling.groupBy("epoch", "key")
                                               .sum("value").collect()))
        if ours != theirs:
            raise SystemExit("tumbling sum: timely and Spark disagree")
        _, bare_s = timed("tumbling sum: a bare barrier mapInArrow pass-through",
                          lambda: pass_through(tumbling))
        rows.append(("tumbling sum", args.records, len(ours), seconds, spark_s, bare_s))
        graphs = graph_jobs(spark, args.edges, args.workers, args.iterations,
                            args.checkpoint_every) if args.edges else []
    finally:
        if own:
            spark.stop()

    print()
    print(f"{'job':<14}{'rows':>10}{'groups':>9}{'timely rows/s':>16}{'Spark rows/s':>15}"
          f"{'pass-through rows/s':>21}{'to Spark':>10}{'to pass-through':>17}  answer")
    for name, n, groups, ours_s, spark_s, bare_s in rows:
        print(f"{name:<14}{n:>10}{groups:>9}{n / ours_s:>16,.0f}{n / spark_s:>15,.0f}"
              f"{n / bare_s:>21,.0f}{spark_s / ours_s:>10.2f}{bare_s / ours_s:>17.2f}  "
              "equal to Spark's groupBy")
    if graphs:
        print(f"\n{'graph job':<14}{'edges':>10}{'nodes':>9}{'timely rows/s':>16}"
              f"{'rounds':>8}{'Spark loop rows/s':>19}{'rounds':>8}{'timely / Spark':>16}  answer")
        for name, n, nodes, ours_s, ours_rounds, spark_s, spark_rounds in graphs:
            print(f"{name:<14}{n:>10}{nodes:>9}{n / ours_s:>16,.0f}{ours_rounds:>8}"
                  f"{n / spark_s:>19,.0f}{spark_rounds:>8}{spark_s / ours_s:>16.1f}  "
                  "both equal to scipy")
        print("\nrows/s: edges over the whole computation, answer collected. timely's "
              "connected components gather\nthe workers' union-find forests (no rounds); "
              "Spark's loop propagates least labels by joins until\nnothing changes, "
              f"with localCheckpoint() every {args.checkpoint_every} rounds.")
    print("\nEach timely run collects its answer; the pass-through only counts rows that went "
          "to Python and back.\nFor a one-pass aggregation Spark's own groupBy is the right "
          "tool: the JVM's row-to-Arrow conversion\nbounds any Python step. timely's place is "
          "iteration and low-latency progress over the same data.")
    return 0


def pass_through(df) -> int:
    """Rows through a bare barrier ``mapInArrow`` that does nothing: what any
    Python step over ``df`` pays before it does any work."""
    return df.mapInArrow(lambda batches: batches, df.schema, barrier=True).count()


if __name__ == "__main__":
    raise SystemExit(main())
