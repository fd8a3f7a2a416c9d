"""PySpark baselines for timely's graph algorithms: components, PageRank,
label propagation, triangles, distances to landmarks and degrees, by
DataFrame operations alone.

Each function takes an edges DataFrame with int64 columns ``src`` and
``dst`` (any values: sparse, negative, self-loops, duplicates) and returns
a DataFrame, already computed (``localCheckpoint()``) with its own caches
freed, except :func:`degrees`, one lazy pass; none needs a jar, a Python
UDF or a checkpoint directory.
They are written as a careful PySpark user writes them, to be the baseline
timely is measured against:

- the edges are read once into the layout every round reads, ``cache()``-d
  and partitioned by the key the round's join or ``groupBy`` uses, so a
  round shuffles only what changed hands (a ``localCheckpoint()`` would
  forget that partitioning);
- a side small enough (at most ``broadcast_rows`` rows, counted once) is
  broadcast (``F.broadcast``), so the edges are not shuffled at all;
- state carried between rounds is cut from its lineage with
  ``localCheckpoint()`` every ``checkpoint_every`` rounds (kept on the
  executors, not fault tolerant: a lost executor fails the job), so plans
  do not grow round after round. The default is every round: on
  ``local[2]`` with 10^6 edges that takes half the time of every third
  round, cached in between (a chain of cached or lazy rounds costs the
  driver more, planning and describing it for each job, than a checkpoint's
  job);
- no ``collect()`` in a loop: the one job per round beyond the checkpoints
  is a ``count()`` where a fixpoint must be detected.

The algorithms:

- :func:`large_small_star_components`: connected components by alternating
  large-star and small-star (Kiveris et al., SoCC 2014), to a fixpoint;
- :func:`join_pagerank`: PageRank as GraphX defines it, a broadcast join
  and a ``groupBy`` sum per iteration;
- :func:`label_propagation`: Graphalytics' CDLP, synchronous;
- :func:`triangle_count`: per vertex, triangles by joins of the edges
  oriented by degree;
- :func:`landmark_distances`: GraphFrames' ``shortestPaths``, a
  breadth-first search from the landmarks over the reversed edges;
- :func:`degrees`: in-, out- and total degrees in one ``groupBy``.

Run: ``python -m timely.examples.spark_baselines [--edges N] [--iterations K]
[-w W]``: each baseline on an R-MAT graph in a local session, checked against
the same algorithm through timely (:func:`timely.spark.run`, one barrier
stage), with both times printed. :func:`jobs` pairs them, for this and for
``benchmarks/test_spark_graph.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

# A side of a join with at most this many rows is broadcast: 2^21 rows of
# (long, double) are 32 MB on the driver and on every executor.
BROADCAST_ROWS = 1 << 21


def _partitions(df: Any) -> int:
    return int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))


def _cached(df: Any) -> tuple[Any, int]:
    """``df`` cached and computed now (one job), and its row count."""
    df = df.cache()
    return df, df.count()


def _vertex_ids(edges: Any) -> Any:
    """The distinct ends of ``edges`` as ``(id)``: one shuffle."""
    from pyspark.sql import functions as F

    return edges.select(F.explode(F.array("src", "dst")).alias("id")).distinct()


def _small(df: Any, rows: int, broadcast_rows: int) -> Any:
    """``df`` marked for broadcast when its ``rows`` are at most ``broadcast_rows``."""
    from pyspark.sql import functions as F

    return F.broadcast(df) if rows <= broadcast_rows else df


def _keep(df: Any, round_: int, every: int) -> Any:
    """``df``, read by the next round: every ``every`` rounds cut from its
    lineage by an eager ``localCheckpoint()``, else cached."""
    return df.localCheckpoint(eager=True) if round_ % every == 0 else df.cache()


# -- connected components ------------------------------------------------------------


def _star_round(pairs: Any, least_rows: int, broadcast_rows: int, partitions: int) -> Any:
    """One round on ``pairs`` (rows ``src > dst``, each undirected edge
    once, partitioned by ``src``): ``small_star(large_star(pairs))``, the
    result again distinct, ``src > dst`` and partitioned by ``src``.

    Both stars need, per vertex ``u``, ``m(u)``: the least of ``u`` and its
    neighbours (for small-star, its smaller neighbours); since ``u``'s
    smaller neighbours are exactly the ``dst`` of its rows, that is the
    least ``dst`` of its rows, or ``u`` itself. Large-star replaces every
    row ``(v, u)`` by ``(v, m(u))`` (``v`` is a larger neighbour of ``u``):
    a ``groupBy`` min by ``src``, which the partitioning makes local, and a
    join on ``dst`` with it (``least_rows`` rows at most: broadcast when
    that is at most ``broadcast_rows``, and then the rows keep their
    partitioning). Small-star links ``u`` and each of its smaller
    neighbours to the least of them: a window min by ``src``, local again,
    and two rows per row, made distinct after the round's one shuffle."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    least = pairs.groupBy(F.col("src").alias("u")).agg(F.min("dst").alias("m"))
    large = (pairs.join(_small(least, least_rows, broadcast_rows), F.col("dst") == F.col("u"),
                        "left")
             .select("src", F.coalesce("m", "dst").alias("dst")))
    with_least = large.withColumn("m", F.min("dst").over(Window.partitionBy("src")))
    linked = with_least.select(F.inline(F.array(
        F.struct(F.col("src"), F.col("m").alias("dst")),
        F.struct(F.col("dst").alias("src"), F.col("m").alias("dst")))))
    return (linked.where(F.col("src") != F.col("dst"))
            .repartition(partitions, "src").distinct())


def large_small_star_components(edges: Any, *, checkpoint_every: int = 1,
                                broadcast_rows: int = BROADCAST_ROWS,
                                on_round: Callable[[int, int], None] | None = None) -> Any:
    """Weakly connected components by alternating large-star and small-star
    (Kiveris, Lattanzi, Mirrokni, Rastogi and Vassilvitskii, "Connected
    Components in MapReduce and Beyond", SoCC 2014): ``(id, component)``
    for every end of ``edges``, ``component`` the least id of its component
    (a vertex with only self-loops is alone). Computed (``localCheckpoint()``)
    before it is returned.

    The edges are read once into a set of undirected pairs ``src > dst``
    (cached, partitioned by ``src``; self-loops give only vertex ids) and
    each round replaces that set by ``small_star(large_star(pairs))``
    until a round changes nothing; then every
    component is a star whose centre is its least vertex. Large-star links
    each vertex's larger neighbours to the least of its neighbourhood,
    small-star each vertex and its smaller neighbours to the least of them.
    Rounds: O(log^2 n), in practice a handful. Cost per round: one shuffle
    of at most twice the pairs (plus a join's shuffle when more than
    ``broadcast_rows`` vertices stop the broadcast), and the round's one
    job, a ``count()`` of the pairs that changed (a ``union`` and a
    ``groupBy``: one more shuffle). The new pairs are
    ``localCheckpoint()``-ed every ``checkpoint_every`` rounds, cached
    (by that count) in between.

    ``on_round(round, changed)`` is called after each round with the number
    of pairs that changed (0 in the last).
    """
    from pyspark.sql import functions as F

    partitions = _partitions(edges)
    canonical, _ = _cached(edges.select(F.greatest("src", "dst").alias("src"),
                                        F.least("src", "dst").alias("dst"))
                           .distinct().repartition(partitions, "src"))
    ids, vertices = _cached(_vertex_ids(canonical))
    pairs = canonical.where(F.col("src") != F.col("dst"))
    round_ = 0
    while True:
        round_ += 1
        new = _keep(_star_round(pairs, vertices, broadcast_rows, partitions), round_,
                    checkpoint_every)
        # Both are sets: a pair in only one of them changed.
        changed = (new.union(pairs).groupBy("src", "dst").count()
                   .where(F.col("count") == 1).count())
        if round_ > 1:
            pairs.unpersist()
        pairs = new
        if on_round is not None:
            on_round(round_, changed)
        if changed == 0:
            break
    # Every vertex with a smaller neighbour has one pair left: to its centre.
    component = (ids.join(pairs, F.col("id") == F.col("src"), "left")
                 .select("id", F.coalesce("dst", "id").alias("component"))
                 .localCheckpoint(eager=True))
    for df in (pairs, ids, canonical):
        df.unpersist()
    return component


# -- PageRank ------------------------------------------------------------------------


def join_pagerank(edges: Any, iterations: int, damping: float = 0.85, *,
                  checkpoint_every: int = 1, broadcast_rows: int = BROADCAST_ROWS,
                  on_round: Callable[[int], None] | None = None) -> Any:
    """PageRank as GraphX defines it: ``(id, rank)`` for every end of
    ``edges`` after ``iterations`` steps from 1.0 of ``r(v) = (1 - damping)
    + damping * sum(r(u) / outdeg(u) for u -> v)``; unnormalized, the rank
    of a vertex without out-edges is not passed on, every edge counts as
    given (a duplicate twice, a self-loop as an edge to itself).

    Set-up (three reads of ``edges``): the vertex ids, cached and counted,
    and the edges with ``1 / outdeg(src)``, cached. When there are at most
    ``broadcast_rows`` vertices the ranks are broadcast each iteration and
    the edges are partitioned by ``dst``: an iteration is then a broadcast
    hash join and a ``groupBy`` sum with no shuffle, and a merge of the sums
    with the cached vertex ids (for the vertices nothing reaches). Else the
    edges are partitioned by ``src`` beside the ranks and an iteration
    shuffles the partial sums once. The ranks are ``localCheckpoint()``-ed
    every ``checkpoint_every`` iterations and after the last; no other job
    runs in the loop.

    ``on_round(iteration)`` is called after each checkpointed iteration.
    """
    from pyspark.sql import functions as F

    ids, vertices = _cached(_vertex_ids(edges))
    small = vertices <= broadcast_rows
    pairs = edges.select("src", "dst")
    out_degree = pairs.groupBy("src").agg(F.count("*").alias("degree"))
    weighted, _ = _cached(
        pairs.join(out_degree, "src")
        .select("src", "dst", (F.lit(1.0) / F.col("degree")).alias("w"))
        .repartition(_partitions(edges), "dst" if small else "src"))
    ranks = ids.select("id", F.lit(1.0).alias("rank"))
    for iteration in range(1, iterations + 1):
        sources = ranks.select(F.col("id").alias("src"), "rank")
        sums = (weighted.join(_small(sources, vertices, broadcast_rows), "src")
                .groupBy(F.col("dst").alias("id")).agg(F.sum(F.col("rank") * F.col("w"))
                                                       .alias("sum")))
        ranks = ids.join(sums, "id", "left").select(
            "id", (F.lit(1.0 - damping) + F.lit(damping) * F.coalesce("sum", F.lit(0.0)))
            .alias("rank"))
        if iteration % checkpoint_every == 0 or iteration == iterations:
            ranks = ranks.localCheckpoint(eager=True)
            if on_round is not None:
                on_round(iteration)
    if not iterations:
        ranks = ranks.localCheckpoint(eager=True)
    ids.unpersist()
    weighted.unpersist()
    return ranks


# -- community detection by label propagation -----------------------------------------


def label_propagation(edges: Any, iterations: int, *, checkpoint_every: int = 1,
                      broadcast_rows: int = BROADCAST_ROWS) -> Any:
    """Community detection by label propagation, Graphalytics' CDLP as
    :func:`timely.algorithms.label_propagation` computes it (its default,
    ``directed=True``): ``(id, label)`` for every end of ``edges``.

    Synchronous: every vertex starts with its id as its label; in each of
    ``iterations`` steps every vertex takes the label most frequent among
    its neighbours' labels of the step before, the least such label on a
    tie; a vertex without neighbours keeps its label. The edges are read as
    a set of ordered pairs without self-loops; a vertex hears each in- and
    each out-neighbour once per pair, so a neighbour linked both ways is
    heard twice.

    Set-up: the vertex ids, cached and counted, and the heard pairs (both
    directions of each distinct edge), cached, partitioned by the hearer
    when at most ``broadcast_rows`` vertices let the labels be broadcast.
    An iteration is then a broadcast hash join of the heard pairs with the
    labels, a count per (vertex, label) and a least ``(-count, label)`` per
    vertex, none of which shuffles, and a merge with the cached ids. With
    more vertices the pairs sit beside the labels by speaker and the counts
    are shuffled. The labels are ``localCheckpoint()``-ed every
    ``checkpoint_every`` iterations and after the last; no other job runs
    in the loop.
    """
    from pyspark.sql import functions as F

    ids, vertices = _cached(_vertex_ids(edges))
    small = vertices <= broadcast_rows
    arcs = edges.where(F.col("src") != F.col("dst")).select("src", "dst").distinct()
    # (src, dst): dst hears src.
    heard, _ = _cached(arcs.select(F.inline(F.array(
        F.struct("src", "dst"),
        F.struct(F.col("dst").alias("src"), F.col("src").alias("dst")))))
        .repartition(_partitions(edges), "dst" if small else "src"))
    labels = ids.select("id", F.col("id").alias("label"))
    for iteration in range(1, iterations + 1):
        if iteration == 1:
            got = heard.select("dst", F.col("src").alias("label"))     # every label its id
        else:
            speakers = labels.select(F.col("id").alias("src"), "label")
            got = heard.join(_small(speakers, vertices, broadcast_rows), "src")
        best = (got.groupBy("dst", "label").count()
                .groupBy(F.col("dst").alias("id"))
                .agg(F.min(F.struct((-F.col("count")).alias("c"), "label"))["label"]
                     .alias("best")))
        labels = ids.join(best, "id", "left").select(
            "id", F.coalesce("best", "id").alias("label"))
        if iteration % checkpoint_every == 0 or iteration == iterations:
            labels = labels.localCheckpoint(eager=True)
    if not iterations:
        labels = labels.localCheckpoint(eager=True)
    ids.unpersist()
    heard.unpersist()
    return labels


# -- triangles -----------------------------------------------------------------------


def triangle_count(edges: Any, *, broadcast_rows: int = BROADCAST_ROWS) -> Any:
    """Per vertex, the triangles it is in, as GraphFrames' ``triangleCount``
    counts them: ``(id, count)`` for every end of ``edges``, the edges read
    as undirected and as a set (self-loops dropped, duplicates and both
    directions one edge). Computed (``localCheckpoint()``) before it is
    returned.

    Each undirected edge is oriented from the end of lower ``(degree, id)``
    to the higher; a triangle is then seen once, from its lowest vertex, as
    two of that vertex's out-edges ``u -> v``, ``u -> w`` (``v < w``) closed
    by the edge ``{v, w}``. Orienting by degree bounds those wedges by
    ``O(m^1.5)`` for ``m`` edges, where a hub would otherwise give the
    square of its degree. Cost: the simple edges and the oriented edges
    cached (a ``distinct``, a degree ``groupBy`` and two joins with it), a
    self-join of the oriented edges by their source (cached partitioned
    and sorted by it: no shuffle, no sort), each wedge probed against the
    simple edges (broadcast when there are at most ``broadcast_rows`` of
    them: the wedges, the largest rows here, are then never shuffled; the
    degrees likewise), and a count per vertex. No loop.
    """
    from pyspark.sql import functions as F

    simple, pairs = _cached(edges.where(F.col("src") != F.col("dst")).select(
        F.least("src", "dst").alias("a"), F.greatest("src", "dst").alias("b")).distinct())
    degree, vertices = _cached(
        simple.select(F.explode(F.array("a", "b")).alias("id")).groupBy("id").count())
    degree_of = _small(degree, vertices, broadcast_rows)
    ranked = (simple
              .join(degree_of.select(F.col("id").alias("a"), F.col("count").alias("da")), "a")
              .join(degree_of.select(F.col("id").alias("b"), F.col("count").alias("db")), "b"))
    a_first = (F.col("da") < F.col("db")) | ((F.col("da") == F.col("db")) & (F.col("a") < F.col("b")))
    oriented, _ = _cached(ranked.select(
        F.when(a_first, F.col("a")).otherwise(F.col("b")).alias("u"),
        F.when(a_first, F.col("b")).otherwise(F.col("a")).alias("v"))
        .repartition(_partitions(edges), "u").sortWithinPartitions("u"))
    other = oriented.select("u", F.col("v").alias("w"))
    wedges = oriented.join(other, "u").where(F.col("v") < F.col("w"))
    closed = wedges.join(_small(simple, pairs, broadcast_rows),
                         (F.col("v") == F.col("a")) & (F.col("w") == F.col("b")), "left_semi")
    counts = (closed.select(F.explode(F.array("u", "v", "w")).alias("id"))
              .groupBy("id").agg(F.count("*").alias("found")))
    result = (_vertex_ids(edges).join(counts, "id", "left")
              .select("id", F.coalesce("found", F.lit(0)).alias("count"))
              .localCheckpoint(eager=True))
    for df in (oriented, degree, simple):
        df.unpersist()
    return result


# -- distances to landmarks -------------------------------------------------------------


def landmark_distances(edges: Any, landmarks: list[int], *, checkpoint_every: int = 1,
                       broadcast_rows: int = BROADCAST_ROWS,
                       on_round: Callable[[int, int], None] | None = None) -> Any:
    """GraphFrames' ``shortestPaths``: per vertex and landmark it reaches,
    the least number of edges on a path from the vertex to the landmark
    (edges as directed), as rows ``(id, landmark, distance)``; no row where
    a vertex reaches no landmark. Landmarks that are not ends of ``edges``
    are dropped; a landmark is at distance 0 from itself. GraphFrames gives
    a map per vertex: ``groupBy("id").agg(F.map_from_entries(...))`` of
    these rows is that.

    A breadth-first search from all landmarks at once over the reversed
    edges: round ``k`` joins the pairs ``(vertex, landmark)`` first reached
    in round ``k - 1`` with the edges into their vertex (the distinct edges
    without self-loops, cached by ``dst``; the frontier broadcast when its
    count is at most ``broadcast_rows``), drops the pairs reached before
    (an anti-join with all reached so far) and counts the rest; the search
    ends at 0. Rounds: the largest distance plus one. The new pairs are
    ``localCheckpoint()``-ed each round before they are counted (so the
    count reads them), and the union of all reached so far every
    ``checkpoint_every`` rounds and after the last.

    ``on_round(round, found)`` is called after each round with the pairs
    it reached.
    """
    from pyspark.sql import functions as F

    arcs, _ = _cached(edges.where(F.col("src") != F.col("dst")).select("src", "dst").distinct()
                      .repartition(_partitions(edges), "dst"))
    spark = edges.sparkSession
    marks = spark.createDataFrame([(int(mark),) for mark in sorted(set(landmarks))], "id long")
    frontier, found = _cached(
        marks.join(_vertex_ids(edges), "id", "left_semi")
        .select("id", F.col("id").alias("landmark"), F.lit(0).cast("long").alias("distance")))
    landmarks_found = frontier
    reached = frontier
    round_ = 0
    while found:
        round_ += 1
        at = frontier.select(F.col("id").alias("dst"), "landmark")
        step = (arcs.join(_small(at, found, broadcast_rows), "dst")
                .select(F.col("src").alias("id"), "landmark").distinct())
        frontier = (step.join(reached, ["id", "landmark"], "left_anti")
                    .withColumn("distance", F.lit(round_).cast("long"))
                    .localCheckpoint(eager=True))
        found = frontier.count()
        if on_round is not None:
            on_round(round_, found)
        reached = reached.unionByName(frontier)
        if round_ % checkpoint_every == 0 or not found:
            reached = reached.localCheckpoint(eager=True)
    if round_ == 0:
        reached = reached.localCheckpoint(eager=True)
    landmarks_found.unpersist()
    arcs.unpersist()
    return reached


# -- degrees ---------------------------------------------------------------------------


def degrees(edges: Any) -> Any:
    """In-, out- and total degree of every end of ``edges``: ``(id,
    inDegree, outDegree, degree)``, every edge counted as given (a
    duplicate twice, a self-loop once in and once out). One pass: each edge
    gives a row per end and one ``groupBy`` sums them (partial sums before
    the shuffle). Nothing cached: the edges are read once."""
    from pyspark.sql import functions as F

    ends = edges.select(F.inline(F.array(
        F.struct(F.col("src").alias("id"), F.lit(0).alias("i"), F.lit(1).alias("o")),
        F.struct(F.col("dst").alias("id"), F.lit(1).alias("i"), F.lit(0).alias("o")))))
    return (ends.groupBy("id").agg(F.sum("i").alias("inDegree"), F.sum("o").alias("outDegree"))
            .withColumn("degree", F.col("inDegree") + F.col("outDegree")))


# -- the example: each baseline beside timely -------------------------------------------

KEYS = {"components": ["id"], "PageRank": ["id"], "label propagation": ["id"],
        "triangles": ["id"], "distances": ["id", "landmark"], "degrees": ["id"]}


def most_reached(src: np.ndarray, dst: np.ndarray, k: int = 4) -> list[int]:
    """The ``k`` vertices with the most in-edges (the least id on a tie):
    landmarks that many vertices reach."""
    ids, counts = np.unique(dst, return_counts=True)
    return [int(v) for v in ids[np.lexsort((ids, -counts))[:k]]]


def frame(df: Any, columns: list[str], keys: list[str]) -> Any:
    """``df`` collected (``toPandas()``) as a pandas frame with ``columns``
    (renamed in order), sorted by ``keys``."""
    got = df.toPandas()
    got.columns = columns
    return got.sort_values(keys, kind="stable").reset_index(drop=True)


def agree(ours: Any, theirs: Any, rtol: float = 1e-9) -> bool:
    """Whether two collected answers are the same: the same rows, integer
    columns equal, float columns within ``rtol``."""
    if list(ours.columns) != list(theirs.columns) or len(ours) != len(theirs):
        return False
    for column in ours.columns:
        a, b = ours[column].to_numpy(), theirs[column].to_numpy()
        same = (np.allclose(a, b, rtol=rtol, atol=0) if a.dtype.kind == "f"
                else np.array_equal(a.astype(np.int64), b.astype(np.int64)))
        if not same:
            return False
    return True


def jobs(edges: Any, workers: int, landmarks: list[int], pagerank_iterations: int = 10,
         cdlp_iterations: int = 5, checkpoint_every: int = 1
         ) -> tuple[dict[str, tuple[Callable[[], Any], Callable[[], Any]]], dict[str, int]]:
    """Per algorithm, ``(timely, spark)``: two calls computing it over the
    ``edges`` DataFrame and returning the answer as a sorted pandas frame
    with the same columns (:func:`frame`), one through timely
    (:func:`timely.spark.run` of :mod:`timely.algorithms` at ``workers``
    workers, one barrier stage), one by this module's baseline; and a dict
    that each Spark call fills with the rounds it took."""
    from timely import algorithms
    from timely.spark import run

    rounds: dict[str, int] = {}
    spark = edges.sparkSession
    marks = spark.createDataFrame([(mark,) for mark in landmarks], "node long")

    def through_timely(name: str, dataflow: Callable[[Any], Any], schema: str,
                       columns: list[str]) -> Callable[[], Any]:
        def call() -> Any:
            return frame(run(edges, dataflow, schema, workers=workers), columns, KEYS[name])

        return call

    def counting(name: str) -> Callable[..., None]:
        def count(round_: int, *_: Any) -> None:
            rounds[name] = round_
        return count

    def distances_through_timely() -> Any:
        found = run({"edges": edges, "landmarks": marks},
                    lambda s: algorithms.shortest_paths(s["edges"], s["landmarks"]),
                    "node long, landmark long, distance long", workers=workers)
        return frame(found, ["id", "landmark", "distance"], KEYS["distances"])

    pairs = {
        "components": (
            through_timely("components", algorithms.connected_components,
                           "node long, label long", ["id", "component"]),
            lambda: frame(large_small_star_components(
                edges, checkpoint_every=checkpoint_every, on_round=counting("components")),
                ["id", "component"], ["id"])),
        "PageRank": (
            through_timely("PageRank", lambda s: algorithms.pagerank(s, pagerank_iterations),
                           "node long, rank double", ["id", "rank"]),
            lambda: frame(join_pagerank(edges, pagerank_iterations,
                                        checkpoint_every=checkpoint_every,
                                        on_round=counting("PageRank")), ["id", "rank"], ["id"])),
        "label propagation": (
            through_timely("label propagation",
                           lambda s: algorithms.label_propagation(s, iterations=cdlp_iterations),
                           "node long, label long", ["id", "label"]),
            lambda: frame(label_propagation(edges, cdlp_iterations,
                                            checkpoint_every=checkpoint_every),
                          ["id", "label"], ["id"])),
        "triangles": (
            through_timely("triangles", algorithms.triangles, "node long, triangles long",
                           ["id", "triangles"]),
            lambda: frame(triangle_count(edges), ["id", "triangles"], ["id"])),
        "distances": (
            distances_through_timely,
            lambda: frame(landmark_distances(edges, landmarks, checkpoint_every=checkpoint_every,
                                             on_round=counting("distances")),
                          ["id", "landmark", "distance"], KEYS["distances"])),
        "degrees": (
            through_timely("degrees", algorithms.degrees,
                           "node long, in_degree long, out_degree long, degree long",
                           ["id", "in_degree", "out_degree", "degree"]),
            lambda: frame(degrees(edges), ["id", "in_degree", "out_degree", "degree"], ["id"])),
    }
    rounds["label propagation"] = cdlp_iterations
    return pairs, rounds


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Runs every baseline and timely on an R-MAT graph, on ``spark`` when
    given (left running), else on a new local session; prints a table."""
    from timely.examples.cli import parser
    from timely.examples.spark_pipeline import graph_input, session

    p = parser("spark_baselines", __doc__, workers=2)
    p.add_argument("--edges", type=int, default=2000, help="edges of the R-MAT graph (2000)")
    p.add_argument("--iterations", type=int, default=5,
                   help="PageRank and label propagation iterations (5)")
    args = p.parse_args(argv)
    if args.processes != 1 or args.hostfile is not None:
        p.error("Spark places the workers: -w only, no -n or -h")
    own = spark is None
    if own:
        spark = session(args.workers)
    rows = []
    try:
        graph, src, dst = graph_input(spark, args.edges, args.workers)
        marks = most_reached(src, dst)
        pairs, rounds = jobs(graph, args.workers, marks, args.iterations, args.iterations)
        for name, (ours, theirs) in pairs.items():
            start = time.perf_counter()
            timely_answer = ours()
            timely_s = time.perf_counter() - start
            start = time.perf_counter()
            spark_answer = theirs()
            spark_s = time.perf_counter() - start
            if not agree(timely_answer, spark_answer):
                raise SystemExit(f"{name}: timely and the PySpark baseline disagree")
            rows.append((name, len(spark_answer), rounds.get(name), spark_s, timely_s))
        graph.unpersist()
    finally:
        if own:
            spark.stop()
    print(f"{args.edges} R-MAT edges, landmarks {marks}, {args.iterations} iterations\n")
    print(f"{'algorithm':<19}{'rows':>8}{'rounds':>8}{'PySpark s':>11}{'timely s':>10}"
          f"{'PySpark / timely':>18}  answer")
    for name, n, spent, spark_s, timely_s in rows:
        print(f"{name:<19}{n:>8}{'-' if spent is None else spent:>8}{spark_s:>11.2f}"
              f"{timely_s:>10.2f}{spark_s / timely_s:>18.1f}  the same")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
