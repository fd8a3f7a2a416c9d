"""Graph algorithms as library functions over columnar streams.

Each takes streams of :class:`~timely.Batch`\\ es of edges (``src``,
``dst``) and vertices (``node``), with int64 ids or, with ``ids="string"``,
text ids (:mod:`~timely.algorithms.ids`), and answers the same at any worker
count. One module per family:

- :mod:`~timely.algorithms.components`: connected components;
- :mod:`~timely.algorithms.pagerank`: PageRank (GraphX's and Graphalytics'
  definitions) and personalized PageRank;
- :mod:`~timely.algorithms.paths`: BFS, SSSP, distances to landmarks and
  breadth-first paths;
- :mod:`~timely.algorithms.communities`: label propagation;
- :mod:`~timely.algorithms.triangles`: triangles and local clustering
  coefficients;
- :mod:`~timely.algorithms.vertex_program`: Pregel-style vertex programs
  and strongly connected components;
- :mod:`~timely.algorithms.edges`: checking, spreading and counting edges
  (degrees);
- :mod:`~timely.algorithms.propagation`: the loops' operators;
- :mod:`~timely.algorithms.ids`: text vertex ids, numbered in sorted order;
- :mod:`~timely.algorithms.generators`: R-MAT graphs in numpy.
"""

from timely.algorithms.communities import label_propagation
from timely.algorithms.components import connected_components
from timely.algorithms.edges import degrees
from timely.algorithms.generators import rmat_edges
from timely.algorithms.pagerank import pagerank, personalized_pagerank
from timely.algorithms.paths import bfs, bfs_paths, shortest_paths, sssp
from timely.algorithms.triangles import local_clustering_coefficient, triangle_count, triangles
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
