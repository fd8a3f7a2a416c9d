"""Graphs of Spark DataFrames, as GraphFrames offers them, computed by
:mod:`timely.algorithms` in one barrier stage.

A :class:`GraphFrame` (also named :class:`Graph`) is a vertices DataFrame
(a column ``id``, and any others) and an edges DataFrame (columns ``src``
and ``dst``). Its methods are named as GraphFrames' ``GraphFrame`` names
them and return what those return: ``pageRank`` a GraphFrame (the vertices
with ``pagerank``, the edges with ``weight``); the other algorithms
DataFrames of the vertices' columns plus the result's (``component``,
``label``, ``count``, ``distances``), one row per vertex of the vertices
DataFrame; ``bfs`` gives paths and ``aggregateMessages`` (over :data:`AM`'s
columns) aggregated messages, as GraphFrames' do; ``degrees``,
``inDegrees`` and ``outDegrees`` are ``(id, ...)`` for the vertices with
such edges, as GraphFrames gives them. The graph operations of
GraphFrames (``triplets``, ``filterVertices``, ``filterEdges``,
``dropIsolatedVertices``, ``as_undirected``, ``as_reversed``,
``validate``, the typed degrees, ``cache``, ``persist`` and
``unpersist``) are Spark's own DataFrame operations, as there.

Vertex ids are 64-bit integers of any value, or any other type Spark can
join on (strings, ...). Edges whose ends are not vertices are left out
(GraphFrames leaves them to the algorithm; here a vertex is what the
vertices DataFrame names). Integer ids go to the barrier stage as they are
(cast to long), the vertices before the edges, and the dataflow itself
drops the edges with an end that is not a vertex
(:func:`~timely.algorithms.edges.known_edges`: each edge checked at the
owner of its ``src``, then at the owner of its ``dst``); the results are
the vertices' own rows with the result's columns, one join in Spark.
Other ids are numbered first (``zipWithIndex`` of the distinct ids, one
Spark job, and a sort of the ids for ``distinct``), the edges joined with
those numbers at each end (two shuffles of the edges, each end's rows
sorted: at 10^8 edges these joins take Spark tens of minutes on two
cores, where the integer path's semi-join takes the dataflow two
exchanges of the edges) and the results joined back to the ids.

For example (``tests/spark/test_graphs.py`` runs it)::

    g = GraphFrame(spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], ["id", "name"]),
                   spark.createDataFrame([(1, 2)], ["src", "dst"]))
    sorted(map(tuple, g.connectedComponents().collect()))
    # [(1, 'a', 1), (2, 'b', 1), (3, 'c', 3)]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from timely.container import Batch
from timely.errors import GraphSchemaError, SparkSchemaError

__all__ = ["AM", "Graph", "GraphFrame"]


class _Messages:
    """The columns of :meth:`Graph.aggregateMessages`, as GraphFrames'
    ``AggregateMessages``: ``src``, ``dst`` (structs of the vertex columns
    at each end), ``edge`` (a struct of the edge columns) and ``msg`` (the
    message, in the aggregates)."""

    @property
    def src(self) -> Any:
        from pyspark.sql import functions as F

        return F.col("src")

    @property
    def dst(self) -> Any:
        from pyspark.sql import functions as F

        return F.col("dst")

    @property
    def edge(self) -> Any:
        from pyspark.sql import functions as F

        return F.col("edge")

    @property
    def msg(self) -> Any:
        from pyspark.sql import functions as F

        return F.col("MSG")


#: The names GraphFrames' ``connectedComponents`` takes for its algorithms.
_COMPONENT_ALGORITHMS = ("graphframes", "two_phase", "randomized_contraction", "graphx")


def _between(edges: Any, vertices: Any, columns: list[str]) -> Any:
    """``columns`` of the ``edges`` whose ends are both ids of ``vertices``."""
    ids = vertices.select("id")
    return (edges.join(ids.withColumnRenamed("id", "src"), "src", "left_semi")
            .join(ids.withColumnRenamed("id", "dst"), "dst", "left_semi")
            .select(*columns))


def _check_components_options(algorithm: str, checkpoint_interval: int,
                              broadcast_threshold: int, max_iter: int) -> None:
    """Raises as GraphFrames' ``connectedComponents`` would for options it refuses."""
    if algorithm not in _COMPONENT_ALGORITHMS:
        raise ValueError(f"algorithm is one of {', '.join(map(repr, _COMPONENT_ALGORITHMS))}"
                         f", not {algorithm!r}")
    for name, value in (("checkpointInterval", checkpoint_interval),
                        ("broadcastThreshold", broadcast_threshold), ("max_iter", max_iter)):
        if type(value) is not int:
            raise TypeError(f"{name} is an int, not {value!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter is a positive count, not {max_iter}")


def _check_pregel_options(algorithm: str, checkpoint_interval: int) -> None:
    """Raises as GraphFrames' ``labelPropagation`` and ``shortestPaths``
    would for options they refuse."""
    if algorithm not in ("graphx", "graphframes"):
        raise ValueError(f"algorithm is 'graphx' or 'graphframes', not {algorithm!r}")
    if type(checkpoint_interval) is not int:
        raise TypeError(f"checkpoint_interval is an int, not {checkpoint_interval!r}")


#: BFS's result rows (one per vertex of a path) joined with the vertices and
#: the edges by broadcasting them, at most.
_BROADCAST_ROWS = 1 << 20

#: The columns messages and aggregates of :meth:`Graph.aggregateMessages` are written in.
AM = _Messages()


def _known(integral: bool, edges: Any, nodes: Any) -> Any:
    """The edge stream of a dataflow: with integer ids (``integral``) the
    edges whose ends are both vertices of ``nodes`` (a ``node`` stream),
    decided in the dataflow; with other ids ``edges`` as they are (only
    the edges between vertices were numbered)."""
    if not integral:
        return edges
    from timely.algorithms.edges import known_edges

    return known_edges(edges, nodes)


def _is_integral(data_type: Any) -> bool:
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    return isinstance(data_type, (ByteType, ShortType, IntegerType, LongType))


class GraphFrame:
    """A graph of a ``vertices`` DataFrame (column ``id``) and an ``edges``
    DataFrame (columns ``src`` and ``dst``), as GraphFrames' ``GraphFrame``:
    ``GraphFrame(v, e)``. A frame without those columns raises
    :class:`~timely.errors.GraphSchemaError` (a ``ValueError`` and a
    ``SparkSchemaError``) naming the column.

    ``workers`` (default: the session's task slots) and ``run_options``
    (keywords of :func:`timely.spark.run`, such as ``config=``) are used for
    every algorithm's barrier stage, and kept by the graphs made from this
    one."""

    ID = "id"
    SRC = "src"
    DST = "dst"
    EDGE = "edge"
    WEIGHT = "weight"

    def __init__(self, v: Any, e: Any, *, workers: int | None = None,
                 **run_options: Any) -> None:
        for frame, columns, what in ((v, ("id",), "vertices"), (e, ("src", "dst"), "edges")):
            missing = [c for c in columns if c not in frame.columns]
            if missing:
                raise GraphSchemaError(f"the {what} DataFrame has no column {missing[0]!r}; "
                                        f"it has {frame.columns}")
        self.vertices = v
        self.edges = e
        self.workers = workers
        self.run_options = run_options
        self._numbered: tuple[Any, Any] | None = None

    def _derive(self, vertices: Any, edges: Any) -> GraphFrame:
        """A graph of ``vertices`` and ``edges`` run as this one is."""
        return GraphFrame(vertices, edges, workers=self.workers, **self.run_options)

    @property
    def nodes(self) -> Any:
        """The vertices DataFrame (GraphFrames' alias)."""
        return self.vertices

    def __repr__(self) -> str:
        v = [self.ID] + [c for c in self.vertices.columns if c != self.ID]
        e = [self.SRC, self.DST] + [c for c in self.edges.columns
                                    if c not in (self.SRC, self.DST)]
        return (f"GraphFrame(v:{self.vertices.select(*v)!r}, "
                f"e:{self.edges.select(*e)!r})")

    # -- GraphFrames' graph operations (Spark's DataFrame operations) ----------------------

    def cache(self) -> GraphFrame:
        """The graph with both DataFrames cached (``DataFrame.cache``)."""
        return self._derive(self.vertices.cache(), self.edges.cache())

    def persist(self, storageLevel: Any = None) -> GraphFrame:
        """The graph with both DataFrames persisted at ``storageLevel``
        (default ``StorageLevel.MEMORY_ONLY``, as GraphFrames)."""
        if storageLevel is None:
            from pyspark import StorageLevel

            storageLevel = StorageLevel.MEMORY_ONLY
        return self._derive(self.vertices.persist(storageLevel),
                            self.edges.persist(storageLevel))

    def unpersist(self, blocking: bool = False) -> GraphFrame:
        """The graph with both DataFrames no longer persisted."""
        return self._derive(self.vertices.unpersist(blocking), self.edges.unpersist(blocking))

    @property
    def triplets(self) -> Any:
        """A row per edge whose ends are both vertices: ``src``, ``edge`` and
        ``dst``, structs of the source vertex's, the edge's and the
        destination vertex's columns."""
        from pyspark.sql import functions as F

        vertex = F.struct(*[F.col(c) for c in self.vertices.columns])
        edge = F.struct(*[F.col(c) for c in self.edges.columns])
        src = self.vertices.select(F.col("id").alias("__src_id"), vertex.alias("src"))
        dst = self.vertices.select(F.col("id").alias("__dst_id"), vertex.alias("dst"))
        edges = self.edges.select(F.col("src").alias("__edge_src"),
                                  F.col("dst").alias("__edge_dst"), edge.alias("edge"))
        return (src.join(edges, F.col("__src_id") == F.col("__edge_src"))
                .join(dst, F.col("__dst_id") == F.col("__edge_dst"))
                .select("src", "edge", "dst"))

    def filterVertices(self, condition: Any) -> GraphFrame:
        """The vertices that meet ``condition`` (a SQL expression or a
        Column) and the edges between them."""
        vertices = self.vertices.filter(condition)
        return self._derive(vertices, _between(self.edges, vertices, self.edges.columns))

    def filterEdges(self, condition: Any) -> GraphFrame:
        """Every vertex and the edges that meet ``condition``."""
        return self._derive(self.vertices, self.edges.filter(condition))

    def dropIsolatedVertices(self) -> GraphFrame:
        """The vertices that are an end of some edge, and every edge."""
        from pyspark.sql import functions as F

        ends = self.edges.select(F.explode(F.array("src", "dst")).alias("id"))
        return self._derive(self.vertices.join(ends, "id", "left_semi"), self.edges)

    def _edge_columns(self, src: str, dst: str) -> list[Any]:
        from pyspark.sql import functions as F

        return [F.col(src).alias("src"), F.col(dst).alias("dst"),
                *[F.col(c) for c in self.edges.columns if c not in ("src", "dst")]]

    def as_reversed(self) -> GraphFrame:
        """Every edge turned around (``dst`` to ``src``), its other columns kept."""
        return self._derive(self.vertices, self.edges.select(*self._edge_columns("dst", "src")))

    def as_undirected(self) -> GraphFrame:
        """Every edge both ways: each edge and its reverse, other columns kept."""
        forward = self.edges.select(*self._edge_columns("src", "dst"))
        return self._derive(self.vertices,
                            forward.unionByName(self.edges.select(
                                *self._edge_columns("dst", "src"))))

    def validate(self, check_vertices: bool = True, intermediate_storage_level: Any = None) -> None:
        """Raises ``ValueError`` when the graph is inconsistent, as
        GraphFrames' ``validate``: an id on several vertices; with
        ``check_vertices``, an edge end that is not a vertex. Returns None."""
        from pyspark.sql import functions as F

        if intermediate_storage_level is None:
            from pyspark import StorageLevel

            intermediate_storage_level = StorageLevel.MEMORY_AND_DISK_DESER
        vertices = self.vertices.persist(intermediate_storage_level)
        try:
            distinct, total = vertices.agg(F.count_distinct("id"), F.count(F.lit(1))).first()
            if distinct != total:
                raise ValueError(f"Graph contains ({total - distinct}) duplicate vertices.")
            if not check_vertices:
                return
            ends = (self.edges.select(F.col("src").alias("id"))
                    .union(self.edges.select(F.col("dst").alias("id"))).distinct()
                    .persist(intermediate_storage_level))
            try:
                named = ends.count()
                if named > distinct:
                    raise ValueError(f"Graph is inconsistent: edges has {named} vertices, but "
                                     f"vertices has {distinct} vertices.")
                unknown = ends.join(self.vertices, "id", "left_anti").count()
                if unknown:
                    raise ValueError("Vertices DataFrame does not contain all edges src/dst. "
                                     f"Found {unknown} edges src/dst that are not in the "
                                     "vertices DataFrame.")
            finally:
                ends.unpersist()
        finally:
            vertices.unpersist()

    def _typed_degrees(self, ends: Any, edge_type_col: str, edge_types: list[Any] | None,
                       name: str) -> Any:
        from pyspark.sql import functions as F

        grouped = ends.groupBy("id")
        pivoted = (grouped.pivot(edge_type_col) if edge_types is None
                   else grouped.pivot(edge_type_col, edge_types))
        counts = pivoted.agg(F.count(F.lit(1))).na.fill(0)
        fields = [F.col(f"`{c}`").cast("int").alias(c) for c in counts.columns if c != "id"]
        return counts.select("id", F.struct(*fields).alias(name))

    def type_out_degree(self, edge_type_col: str, edge_types: list[Any] | None = None) -> Any:
        """Per vertex with out-edges, ``outDegrees``: a struct of its out-degree
        per value of ``edge_type_col`` (those of ``edge_types``, else every
        value found), as GraphFrames' ``type_out_degree``."""
        from pyspark.sql import functions as F

        ends = self.edges.select(F.col("src").alias("id"), F.col(edge_type_col))
        return self._typed_degrees(ends, edge_type_col, edge_types, "outDegrees")

    def type_in_degree(self, edge_type_col: str, edge_types: list[Any] | None = None) -> Any:
        """Per vertex with in-edges, ``inDegrees`` by edge type (as
        :meth:`type_out_degree`)."""
        from pyspark.sql import functions as F

        ends = self.edges.select(F.col("dst").alias("id"), F.col(edge_type_col))
        return self._typed_degrees(ends, edge_type_col, edge_types, "inDegrees")

    def type_degree(self, edge_type_col: str, edge_types: list[Any] | None = None) -> Any:
        """Per vertex with edges, ``degrees`` (in and out) by edge type (as
        :meth:`type_out_degree`)."""
        from pyspark.sql import functions as F

        ends = self.edges.select(F.explode(F.array("src", "dst")).alias("id"),
                                 F.col(edge_type_col))
        return self._typed_degrees(ends, edge_type_col, edge_types, "degrees")

    # -- plumbing --------------------------------------------------------------------------

    def _integral(self) -> bool:
        return _is_integral(self.vertices.schema["id"].dataType)

    def _numbers(self) -> tuple[Any, Any]:
        """``(vertices as (node, id), edges as (src, dst) numbers)``: the
        vertices numbered 0, 1, ... (ids as they are when integers), and
        the edges in those numbers: with integer ids every edge, cast to
        long (the dataflow drops those with an end that is not a vertex,
        :func:`_known`), else only the edges between vertices."""
        if self._numbered is not None:
            return self._numbered
        from pyspark.sql import functions as F

        if self._integral():
            nodes = self.vertices.select(F.col("id").cast("long").alias("node"),
                                         F.col("id"))
            edges = self._cast(self.edges)
        else:
            spark = self.vertices.sparkSession
            ids = self.vertices.select("id").distinct()
            nodes = spark.createDataFrame(
                ids.rdd.zipWithIndex().map(lambda pair: (pair[1], pair[0][0])),
                f"node long, id {self.vertices.schema['id'].dataType.simpleString()}")
            by_src = nodes.select(F.col("id").alias("src"), F.col("node").alias("s"))
            by_dst = nodes.select(F.col("id").alias("dst"), F.col("node").alias("d"))
            edges = (self.edges.select("src", "dst").join(by_src, "src").join(by_dst, "dst")
                     .select(F.col("s").alias("src"), F.col("d").alias("dst")))
        self._numbered = (nodes, edges)
        return self._numbered

    def _options(self) -> dict[str, Any]:
        """The keywords of every stage: the vertices and edges spread by a
        hash of their rows (no sort of them, as dealing them out round
        robin needs), unless ``run_options`` say otherwise."""
        return {"spread": "hash", **self.run_options}

    @staticmethod
    def _cast(edges: Any) -> Any:
        from pyspark.sql import functions as F

        return edges.select(F.col("src").cast("long").alias("src"),
                            F.col("dst").cast("long").alias("dst"))

    def _named(self, frame: Any, column: str, name: str) -> Any:
        """``frame`` with its vertex number ``column`` as the vertex id
        ``name`` (dropping ``column``): integer ids are their numbers, cast
        back to the vertices' type; other ids are joined in."""
        from pyspark.sql import functions as F

        id_type = self.vertices.schema["id"].dataType
        if self._integral():
            named = frame.withColumn(name, F.col(column).cast(id_type))
            return named if name == column else named.drop(column)
        nodes, _ = self._numbers()
        ids = nodes.select(F.col("node").alias(column), F.col("id").alias(f"__{name}"))
        return frame.join(ids, column).drop(column).withColumnRenamed(f"__{name}", name)

    def _vertex_result(self, algorithm: Callable[[Any, Any], Any],
                       columns: dict[str, str], labels_as_ids: bool = True) -> Any:
        """The vertices with ``columns`` (result column -> Spark type) of
        ``algorithm(edges, nodes)``, a dataflow over the edge and node
        streams giving Batches of ``node`` and those columns. A
        ``component`` or ``label`` is a vertex: with ids that are not
        integers it is named by its id, unless ``labels_as_ids`` is False
        (then it is the vertex's number, a long)."""
        from timely.spark.stage import run

        nodes, edges = self._numbers()
        schema = "node long, " + ", ".join(f"{name} {kind}" for name, kind in columns.items())
        integral = self._integral()

        def dataflow(streams: dict[str, Any]) -> Any:
            return algorithm(_known(integral, streams["edges"], streams["nodes"]),
                             streams["nodes"])

        # The vertices first: most edges then find both ends named as they come.
        result = run({"nodes": nodes.select("node"), "edges": edges}, dataflow, schema,
                     workers=self.workers, **self._options())
        labelled = self._named(result, "node", "id")
        for name in columns:
            if name in ("component", "label") and labels_as_ids and not self._integral():
                # a component or label is a vertex: named by its id
                labelled = self._named(labelled, name, name)
        return self.vertices.join(labelled, "id", "left")

    # -- GraphFrames' methods ---------------------------------------------------------------

    def connectedComponents(self, algorithm: str = "graphframes", checkpointInterval: int = 2,
                            broadcastThreshold: int = 1000000,
                            useLabelsAsComponents: bool = False,
                            use_local_checkpoints: bool = False, max_iter: int = 31,
                            storage_level: Any = None) -> Any:
        """Weakly connected components: the vertices with ``component``
        (edges as undirected; a vertex without edges is its own component).
        With integer ids the component is the least vertex id in it. With
        other ids, as GraphFrames: a long naming the component (the number
        :class:`GraphFrame` gave its least vertex), or with
        ``useLabelsAsComponents`` the id of its least vertex (least by
        number).

        The other parameters are GraphFrames' choices of how Spark is to
        compute the components (``algorithm``: ``"graphframes"``,
        ``"two_phase"``, ``"randomized_contraction"`` or ``"graphx"``;
        checkpoints, broadcasts, storage, the iteration bound): one
        dataflow computes them exactly here, so they are checked and
        change nothing."""
        from timely.algorithms import connected_components

        _check_components_options(algorithm, checkpointInterval, broadcastThreshold, max_iter)
        return self._vertex_result(
            lambda edges, nodes: connected_components(edges, nodes).map_batch(
                lambda b: Batch(node=b["node"], component=b["label"])),
            {"component": "long"}, labels_as_ids=bool(useLabelsAsComponents))

    def labelPropagation(self, maxIter: int, algorithm: str = "graphx",
                         use_local_checkpoints: bool = False, checkpoint_interval: int = 2,
                         storage_level: Any = None) -> Any:
        """Community detection by label propagation, ``maxIter`` synchronous
        steps (Graphalytics' CDLP over the edges as directed: in- and
        out-neighbours heard, ties to the least label): the vertices with
        ``label``. ``algorithm`` (``"graphx"`` or ``"graphframes"``), the
        checkpoints and the storage level are GraphFrames' choices of how
        Spark is to compute it: checked, and they change nothing here."""
        from timely.algorithms import label_propagation

        _check_pregel_options(algorithm, checkpoint_interval)

        return self._vertex_result(
            lambda edges, nodes: label_propagation(edges, nodes, maxIter), {"label": "long"})

    def pageRank(self, resetProbability: float = 0.15, maxIter: int | None = None,
                 tol: float | None = None) -> GraphFrame:
        """PageRank as GraphFrames (GraphX) computes it, with ``damping = 1 -
        resetProbability``, ``maxIter`` steps or to ``tol``, then scaled so
        that the ranks sum to the number of vertices (GraphX's last step
        since Spark 2.3: where dangling vertices let rank go, every rank is
        scaled up alike, :func:`timely.algorithms.pagerank.rescaled`).
        Returns a GraphFrame: the vertices with ``pagerank``, and the edges
        between vertices with ``weight``, 1 over their source's out-degree."""
        from pyspark.sql import functions as F

        from timely.algorithms import pagerank
        from timely.algorithms.pagerank import rescaled

        if (maxIter is None) == (tol is None):
            raise SparkSchemaError("pageRank needs exactly one of maxIter and tol")
        damping = 1.0 - resetProbability

        def ranks(edges: Any, nodes: Any) -> Any:
            return rescaled(pagerank(edges, maxIter, damping=damping, tolerance=tol,
                                     nodes=nodes)).map_batch(
                lambda b: Batch(node=b["node"], pagerank=b["rank"]))

        vertices = self._vertex_result(ranks, {"pagerank": "double"})
        columns = [c for c in self.edges.columns if c != "weight"]
        known = _between(self.edges, self.vertices, columns)
        out = known.groupBy("src").agg(F.count(F.lit(1)).alias("__out"))
        edges = (known.join(out, "src")
                 .withColumn("weight", F.lit(1.0) / F.col("__out").cast("double"))
                 .select(*columns, "weight"))
        return self._derive(vertices, edges)

    def stronglyConnectedComponents(self, maxIter: int | None = None) -> Any:
        """Strongly connected components: the vertices with ``component``,
        the least vertex id of the vertex's component (GraphFrames names a
        component otherwise; the groups are the same). ``maxIter`` is
        GraphFrames' bound on its iterations; the components here are
        computed to the end, exactly, so it must be None or positive and
        changes nothing."""
        from timely.algorithms import strongly_connected_components

        if maxIter is not None and maxIter < 1:
            raise SparkSchemaError(f"maxIter is a positive count, not {maxIter!r}")
        return self._vertex_result(
            lambda edges, nodes: strongly_connected_components(edges, nodes),
            {"component": "long"})

    def triangleCount(self) -> Any:
        """Per vertex, the triangles of the undirected simple graph it is in:
        the vertices with ``count``."""
        from timely.algorithms import triangles

        return self._vertex_result(
            lambda edges, nodes: triangles(edges, nodes).map_batch(
                lambda b: Batch(node=b["node"], count=b["triangles"])),
            {"count": "long"})

    def shortestPaths(self, landmarks: list[Any], algorithm: str = "graphx",
                      use_local_checkpoints: bool = False, checkpoint_interval: int = 2,
                      storage_level: Any = None, is_directed: bool = True) -> Any:
        """Per vertex, the least number of edges on a path from it to each
        landmark it reaches (edges as directed; with ``is_directed=False``
        either way): the vertices with ``distances``, a map from landmark id
        to distance (empty when it reaches none), as GraphFrames gives it.
        Landmarks that are not vertices are left out. ``algorithm``
        (``"graphx"`` or ``"graphframes"``), the checkpoints and the storage
        level are GraphFrames' choices of how Spark is to compute it:
        checked, and they change nothing here."""
        _check_pregel_options(algorithm, checkpoint_interval)
        from pyspark.sql import functions as F
        from pyspark.sql.types import IntegerType, MapType

        from timely.algorithms import shortest_paths
        from timely.spark.stage import run

        nodes, edges = self._numbers()
        id_type = self.vertices.schema["id"].dataType
        spark = self.vertices.sparkSession
        marks = (spark.createDataFrame([(mark,) for mark in landmarks],
                                       f"id {id_type.simpleString()}")
                 .join(nodes, "id").select("node").distinct())

        integral = self._integral()

        def dataflow(streams: dict[str, Any]) -> Any:
            edges = _known(integral, streams["edges"], streams["nodes"])
            if not is_directed:
                edges = edges.concat(edges.map_batch(
                    lambda b: Batch(src=b["dst"], dst=b["src"])))
            return shortest_paths(edges, streams["landmarks"], streams["nodes"])

        pairs = run({"nodes": nodes.select("node"), "landmarks": marks, "edges": edges},
                    dataflow, "node long, landmark long, distance long", workers=self.workers,
                    **self._options())
        named = (self._named(self._named(pairs, "node", "id"), "landmark", "landmark_id")
                 .groupBy("id").agg(F.map_from_entries(F.collect_list(F.struct(
                     "landmark_id", F.col("distance").cast("int")))).alias("distances")))
        empty = F.create_map().cast(MapType(id_type, IntegerType(), False))
        return (self.vertices.join(named, "id", "left")
                .withColumn("distances", F.coalesce(F.col("distances"), empty)))

    def bfs(self, fromExpr: str, toExpr: str, edgeFilter: str | None = None,
            maxPathLength: int = 10) -> Any:
        """Every shortest path from a vertex matching ``fromExpr`` to one
        matching ``toExpr`` (SQL expressions over the vertices' columns),
        along the directed edges matching ``edgeFilter`` (over the edges'
        columns), as GraphFrames' ``bfs``: one row per path, columns
        ``from``, ``e0``, ``v1``, ``e1``, ..., ``to``, each a struct of the
        vertex's or the edge's columns (parallel edges make one row each).
        No rows when the nearest target is beyond ``maxPathLength`` edges;
        a vertex matching both is a path of itself (``from`` and ``to``).

        The search is :func:`timely.algorithms.bfs_paths` in one barrier
        stage; the paths come back one row per vertex of a path and are
        joined with the vertices and edges by Spark."""
        from pyspark.sql import functions as F

        from timely.algorithms import bfs_paths
        from timely.spark.stage import run

        if type(maxPathLength) is not int or maxPathLength < 0:
            raise SparkSchemaError(f"maxPathLength is an int >= 0, not {maxPathLength!r}")
        nodes, numbered = self._numbers()
        integral = self._integral()
        if integral:
            with_numbers = self.vertices.withColumn("node", F.col("id").cast("long"))
        else:
            with_numbers = self.vertices.join(nodes, "id")
        starts = with_numbers.where(fromExpr).select("node")
        ends = with_numbers.where(toExpr).select("node")
        if edgeFilter is not None:
            kept = self.edges.where(edgeFilter)
            if integral:
                numbered = self._cast(kept)
            else:
                by_src = nodes.select(F.col("id").alias("src"), F.col("node").alias("s"))
                by_dst = nodes.select(F.col("id").alias("dst"), F.col("node").alias("d"))
                numbered = (kept.select("src", "dst").join(by_src, "src").join(by_dst, "dst")
                            .select(F.col("s").alias("src"), F.col("d").alias("dst")))
        inputs = {"from": starts, "to": ends, "edges": numbered}
        if integral:
            inputs = {"nodes": nodes.select("node"), **inputs}

        def dataflow(streams: dict[str, Any]) -> Any:
            edges = streams["edges"]
            if integral:
                edges = _known(integral, edges, streams["nodes"])
            paths = bfs_paths(edges, streams["from"], streams["to"], max_length=maxPathLength)

            def steps(b: Batch) -> Batch:
                hops = [n for n in b.names if n.startswith("v")]
                length = len(hops)
                count = len(b)
                return Batch(path=np.repeat(np.arange(count, dtype=np.int64), length),
                             step=np.tile(np.arange(length, dtype=np.int64), count),
                             node=np.stack([np.asarray(b[f"v{i}"]) for i in range(length)],
                                           axis=1).reshape(-1) if count else
                             np.zeros(0, dtype=np.int64))

            return paths.map_batch(steps)

        rows = run(inputs, dataflow, "path long, step long, node long", workers=self.workers,
                   **self._options()).cache()
        found, count = rows.agg(F.max("step"), F.count(F.lit(1))).collect()[0]
        vertex = F.struct(*[F.col(c) for c in self.vertices.columns])
        # Few paths (as a search between a few vertices finds) are sent to
        # every task, so that the vertices and the edges are read where
        # they are instead of shuffled to meet them.
        few = F.broadcast if count <= _BROADCAST_ROWS else (lambda frame: frame)
        named = self.vertices.join(few(self._named(rows, "node", "id")), "id").select(
            "path", "step", "id", vertex.alias("vertex"))
        length = -1 if found is None else int(found)
        if length < 0:
            rows.unpersist()
            return self.vertices.limit(0).select(vertex.alias("from"), vertex.alias("to"))
        hops = [named.where(F.col("step") == k).select(
            "path", F.col("id").alias(f"id{k}"), F.col("vertex").alias(f"v{k}"))
            for k in range(length + 1)]
        paths = hops[0]
        for k in range(1, length + 1):
            paths = paths.join(hops[k], "path")
        edge = F.struct(*[F.col(c) for c in self.edges.columns])
        edges = self.edges if edgeFilter is None else self.edges.where(edgeFilter)
        columns: list[Any] = [F.col("v0").alias("from")]
        for k in range(length):
            step = edges.select(F.col("src").alias(f"id{k}"), F.col("dst").alias(f"id{k + 1}"),
                                edge.alias(f"e{k}"))
            paths = step.join(few(paths), [f"id{k}", f"id{k + 1}"])
            columns.append(F.col(f"e{k}"))
            if k + 1 < length:
                columns.append(F.col(f"v{k + 1}"))
        columns.append(F.col(f"v{length}").alias("to"))
        return paths.select(*columns)

    def aggregateMessages(self, *aggregates: Any, sendToSrc: Any = None,
                          sendToDst: Any = None) -> Any:
        """Messages along every edge, aggregated per receiving vertex, as
        GraphFrames' ``aggregateMessages``: ``sendToSrc`` and ``sendToDst``
        are Column expressions over :data:`AM`'s ``src``, ``dst`` and
        ``edge`` (structs of the vertex and edge columns); each non-null
        message goes to that end; ``aggregates`` are aggregate Columns over
        ``AM.msg``. Returns ``id`` and one column per aggregate, for each
        vertex that received a message. One join of the edges with the
        vertices at each end and one ``groupBy``, in Spark."""
        from pyspark.sql import functions as F

        if not aggregates:
            raise SparkSchemaError("aggregateMessages needs an aggregate of AM.msg")
        if sendToSrc is None and sendToDst is None:
            raise SparkSchemaError("aggregateMessages needs sendToSrc, sendToDst or both")
        vertex = F.struct(*[F.col(c) for c in self.vertices.columns])
        src = self.vertices.select(F.col("id").alias("__src"), vertex.alias("src"))
        dst = self.vertices.select(F.col("id").alias("__dst"), vertex.alias("dst"))
        edge = F.struct(*[F.col(c) for c in self.edges.columns])
        triplets = (self.edges.select(F.col("src").alias("__src"), F.col("dst").alias("__dst"),
                                      edge.alias("edge"))
                    .join(src, "__src").join(dst, "__dst"))
        sent = []
        if sendToSrc is not None:
            sent.append(triplets.select(F.col("src.id").alias("id"), sendToSrc.alias("MSG")))
        if sendToDst is not None:
            sent.append(triplets.select(F.col("dst.id").alias("id"), sendToDst.alias("MSG")))
        messages = sent[0] if len(sent) == 1 else sent[0].unionByName(sent[1])
        return messages.where(F.col("MSG").isNotNull()).groupBy("id").agg(*aggregates)

    def _degrees(self, column: str, keep: str) -> Any:
        from pyspark.sql import functions as F

        from timely.algorithms import degrees

        result = self._vertex_result(
            lambda edges, nodes: degrees(edges, nodes).map_batch(
                lambda b: Batch({"node": b["node"], column: np.asarray(b[keep], np.int64)})),
            {column: "long"})
        return result.select("id", F.col(column).cast("int").alias(column)).where(
            F.col(column) > 0)

    @property
    def degrees(self) -> Any:
        """``(id, degree)`` of every vertex with an edge (in and out)."""
        return self._degrees("degree", "degree")

    @property
    def inDegrees(self) -> Any:
        """``(id, inDegree)`` of every vertex with an in-edge."""
        return self._degrees("inDegree", "in_degree")

    @property
    def outDegrees(self) -> Any:
        """``(id, outDegree)`` of every vertex with an out-edge."""
        return self._degrees("outDegree", "out_degree")


#: The same class under the name :mod:`timely.spark` gave it first.
Graph = GraphFrame
