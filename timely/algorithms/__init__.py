"""Algorithms as library functions over columnar streams.

:mod:`~timely.algorithms.graph`: connected components, PageRank and
breadth-first distances over streams of edge :class:`~timely.Batch`\\ es;
:mod:`~timely.algorithms.graphalytics`: PageRank, label propagation, local
clustering coefficients, triangles, degrees and weighted shortest paths by
the LDBC Graphalytics definitions;
:mod:`~timely.algorithms.graphframes`: personalized PageRank, hop distances
to landmarks and breadth-first paths, as GraphFrames names them;
:mod:`~timely.algorithms.vertex_program`: Pregel-style vertex programs and
strongly connected components;
:mod:`~timely.algorithms.generators`: R-MAT graphs in numpy.
"""

from timely.algorithms.generators import rmat_edges
from timely.algorithms.graph import bfs, connected_components, pagerank
from timely.algorithms.graphalytics import (
    degrees,
    label_propagation,
    local_clustering_coefficient,
    sssp,
    triangle_count,
    triangles,
)
from timely.algorithms.graphframes import bfs_paths, personalized_pagerank, shortest_paths
from timely.algorithms.vertex_program import pregel, strongly_connected_components

__all__ = [
    "bfs",
    "bfs_paths",
    "connected_components",
    "degrees",
    "label_propagation",
    "local_clustering_coefficient",
    "pagerank",
    "personalized_pagerank",
    "pregel",
    "rmat_edges",
    "shortest_paths",
    "sssp",
    "strongly_connected_components",
    "triangle_count",
    "triangles",
]
