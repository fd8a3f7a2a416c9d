"""Algorithms as library functions over columnar streams.

:mod:`~timely.algorithms.graph`: connected components, PageRank and
breadth-first distances over streams of edge :class:`~timely.Batch`\\ es;
:mod:`~timely.algorithms.generators`: R-MAT graphs in numpy.
"""

from timely.algorithms.generators import rmat_edges
from timely.algorithms.graph import bfs, connected_components, pagerank

__all__ = ["bfs", "connected_components", "pagerank", "rmat_edges"]
