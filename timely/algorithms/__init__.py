"""Algorithms as library functions over columnar streams.

:mod:`~timely.algorithms.graph`: connected components, PageRank and
breadth-first distances over streams of edge :class:`~timely.Batch`\\ es;
:mod:`~timely.algorithms.graphalytics`: PageRank, label propagation, local
clustering coefficients, triangles, degrees and weighted shortest paths by
the LDBC Graphalytics definitions;
:mod:`~timely.algorithms.generators`: R-MAT graphs in numpy.
"""

from timely.algorithms.generators import rmat_edges
from timely.algorithms.graph import bfs, connected_components, pagerank
from timely.algorithms.graphalytics import (
    degrees,
    label_propagation,
    local_clustering_coefficient,
    pagerank_normalized,
    shortest_paths,
    triangle_count,
    triangles,
)

__all__ = [
    "bfs",
    "connected_components",
    "degrees",
    "label_propagation",
    "local_clustering_coefficient",
    "pagerank",
    "pagerank_normalized",
    "rmat_edges",
    "shortest_paths",
    "triangle_count",
    "triangles",
]
