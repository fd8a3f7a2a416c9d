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
  :func:`timely.spark.run`) and through the strongest baselines a PySpark
  user writes without extra jars (:mod:`timely.examples.spark_baselines`:
  large-star/small-star contraction to a fixpoint for components, a
  broadcast join and a ``groupBy`` sum per PageRank iteration; the edges
  read once into a cached layout, ``localCheckpoint()`` every
  ``--checkpoint-every`` rounds, 1 by default), both checked against
  scipy, with each round of the baselines, and of timely's PageRank (from
  its worker 0), printed as it ends.

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
from timely.dataflow.channels import Pipeline
from timely.examples.cli import parser


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


def node_arrays(df, value: str):
    """``(node, value)`` of a DataFrame as numpy arrays ordered by node."""
    frame = df.toPandas().sort_values("node")
    return frame["node"].to_numpy(np.int64), frame[value].to_numpy()


def graph_jobs(spark, edges: int, workers: int, iterations: int, every: int = 1) -> list:
    """Connected components and PageRank of an R-MAT graph of ``edges``
    edges held in a DataFrame, through timely and through the PySpark
    baselines of :mod:`timely.examples.spark_baselines` in ``spark``, both
    checked against scipy; returns the table's rows ``(job, edges, nodes,
    timely s, timely rounds, Spark s, Spark rounds)``."""
    from timely.algorithms import connected_components, pagerank
    from timely.examples.spark_baselines import join_pagerank, large_small_star_components
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
    print("  connected components in Spark (large-star/small-star to a fixpoint) ...",
          flush=True)
    stars = RoundPrinter("CC")
    start = time.perf_counter()
    found = large_small_star_components(graph, checkpoint_every=every, on_round=stars.changed)
    got_nodes, got = node_arrays(found.withColumnRenamed("id", "node"), "component")
    spark_s = time.perf_counter() - start
    if not (np.array_equal(got_nodes, nodes) and np.array_equal(got, labels)):
        raise SystemExit("connected components: the Spark baseline and scipy disagree")
    # the default method gathers the workers' union-find forests: no rounds
    rows.append(("components", edges, len(nodes), timely_s, 0, spark_s, stars.rounds))

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
    print("  PageRank in Spark (a broadcast join and a groupBy per iteration) ...", flush=True)
    steps = RoundPrinter("PageRank", iterations)
    start = time.perf_counter()
    got_nodes, got = node_arrays(
        join_pagerank(graph, iterations, checkpoint_every=every, on_round=steps.checkpointed)
        .withColumnRenamed("id", "node"), "rank")
    spark_s = time.perf_counter() - start
    if not (np.array_equal(got_nodes, nodes) and np.allclose(got, ranks, rtol=1e-9, atol=0)):
        raise SystemExit("PageRank: the Spark baseline and scipy disagree")
    rows.append(("PageRank", edges, len(nodes), timely_s, iterations, spark_s, iterations))
    graph.unpersist()
    return rows


class RoundPrinter:
    """The ``on_round`` callbacks of a Spark baseline: each prints the
    round that ended and the seconds since the one before."""

    def __init__(self, job: str, of: int | None = None) -> None:
        self.job, self.of = job, of
        self.rounds = 0
        self.last = time.perf_counter()

    def _lap(self) -> float:
        now = time.perf_counter()
        spent, self.last = now - self.last, now
        return spent

    def changed(self, round_: int, pairs: int) -> None:
        """After a round of components: ``pairs`` changed."""
        self.rounds = round_
        print(f"    Spark {self.job} round {round_}: {pairs} pairs changed "
              f"({self._lap():.1f} s)", flush=True)

    def checkpointed(self, round_: int) -> None:
        """After a checkpointed iteration of PageRank."""
        self.rounds = round_
        print(f"    Spark {self.job} round {round_}/{self.of}: ranks checkpointed "
              f"({self._lap():.1f} s since the last)", flush=True)


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
    p.add_argument("--checkpoint-every", type=int, default=1,
                   help="rounds of the Spark baselines between localCheckpoint()s "
                        "(default 1: every round, their fastest)")
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
        between = args.checkpoint_every
        every = "every round" if between == 1 else f"every {between} rounds"
        print(f"\n{'graph job':<14}{'edges':>10}{'nodes':>9}{'timely rows/s':>16}"
              f"{'rounds':>8}{'PySpark rows/s':>16}{'rounds':>8}{'timely / Spark':>16}  answer")
        for name, n, nodes, ours_s, ours_rounds, spark_s, spark_rounds in graphs:
            print(f"{name:<14}{n:>10}{nodes:>9}{n / ours_s:>16,.0f}{ours_rounds:>8}"
                  f"{n / spark_s:>16,.0f}{spark_rounds:>8}{spark_s / ours_s:>16.1f}  "
                  "both equal to scipy")
        print("\nrows/s: edges over the whole computation, answer collected. timely's "
              "connected components gather\nthe workers' union-find forests (no rounds). "
              "PySpark: the baselines of timely.examples.spark_baselines,\nlarge-star/small-star "
              "rounds until nothing changes and broadcast-join PageRank iterations, "
              f"localCheckpoint()\n{every}.")
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
