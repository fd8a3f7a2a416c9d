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
:mod:`~timely.algorithms.ids`: vertex ids of text, numbered in sorted order;
:mod:`~timely.algorithms.generators`: R-MAT graphs in numpy.

The graph algorithms exported here are those of :mod:`~timely.algorithms.ids`:
each module's algorithm with one more keyword, ``ids="int64"`` (default: the
vertex ids as they are) or ``ids="string"`` (text ids).
"""

from timely.algorithms.generators import rmat_edges
from timely.algorithms.ids import (
    bfs,
    bfs_paths,
    connected_components,
    degrees,
    label_propagation,
    local_clustering_coefficient,
    pagerank,
    personalized_pagerank,
    pregel,
    shortest_paths,
    sssp,
    strongly_connected_components,
    triangle_count,
    triangles,
)

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
