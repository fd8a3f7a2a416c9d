"""Spark partitions feeding timely, and timely workers placed by Spark.

Needs the ``spark`` extra (``pip install "timely-dataflow[spark]"``: pyspark
4, pyarrow, pandas < 3) and Java 17. Nothing here is imported by ``import
timely``.

- :func:`run`: a timely computation over a DataFrame (or several, a dict
  of name -> DataFrame, each an input stream), one worker per Spark task of
  a barrier-mode stage; the result is a DataFrame.
- :func:`map_batches`: a stateless vectorized step over every Arrow batch,
  no barrier and no exchange.
- :func:`foreach_batch`: the callable for Structured Streaming's
  ``foreachBatch``, with the batch id as the epoch.
- :func:`preflight`: fails in seconds, saying what to change, where a
  barrier stage would otherwise hang.
- :class:`Window`: event-time windows over a timestamp column for
  ``run(..., epoch_col=..., window=...)``, as Spark's ``window()``.
- :class:`GraphFrame` (also :class:`Graph`): a graph of a vertices and an
  edges DataFrame, with GraphFrames' methods (:mod:`timely.spark.graphs`).
- :class:`GraphUpdates`: the ``foreachBatch`` callable that keeps
  components or distances up to date over a stream of edges, exactly once
  (:mod:`timely.spark.graph_stream`).

The modules: :mod:`~timely.spark.stage` (the barrier stage: ``run``, the
task body, the rendezvous it uses), :mod:`~timely.spark.session` (conf keys,
task slots, ``preflight``), :mod:`~timely.spark.partitions` (schemas checked
at the driver; partitions as epochs, windows or several inputs),
:mod:`~timely.spark.dryrun` (the driver's dry run),
:mod:`~timely.spark.batches` (``map_batches``), :mod:`~timely.spark.streaming`
(``foreach_batch`` and its ledgers), :mod:`~timely.spark.schema`,
:mod:`~timely.spark.windows`, :mod:`~timely.spark.sinks` and
:mod:`~timely.spark.rendezvous`.
"""

from timely.errors import SparkConfigError, SparkSchemaError
from timely.spark.batches import map_batches
from timely.spark.graph_stream import GraphUpdates
from timely.spark.graphs import AM, Graph, GraphFrame
from timely.spark.partitions import INPUT_COLUMN
from timely.spark.session import preflight, slots
from timely.spark.stage import run
from timely.spark.streaming import foreach_batch, query_identity
from timely.spark.windows import Window

__all__ = ["AM", "INPUT_COLUMN", "Graph", "GraphFrame", "GraphUpdates", "SparkConfigError", "SparkSchemaError", "Window",
           "foreach_batch",
           "map_batches", "preflight", "query_identity", "run", "slots"]
