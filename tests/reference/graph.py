"""Plain references for the graph algorithms: scipy's csgraph and numpy."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix, csgraph


def _matrix(src, dst, n: int):
    return coo_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))),
                      shape=(n, n)).tocsr()


def component_labels(src, dst, n: int) -> np.ndarray:
    """Per node ``0..n-1``, the least node of its weakly connected component."""
    count, labels = csgraph.connected_components(_matrix(src, dst, n), directed=True,
                                                 connection="weak")
    least = np.full(count, n, dtype=np.int64)
    np.minimum.at(least, labels, np.arange(n))
    return least[labels]


def bfs_distances(src, dst, n: int, roots) -> dict[int, int]:
    """Per node reachable from ``roots`` along directed edges, its least distance."""
    if len(roots) == 0:
        return {}
    dist = csgraph.shortest_path(_matrix(src, dst, n), unweighted=True,
                                 indices=np.asarray(roots)).reshape(len(roots), n).min(0)
    return {int(v): int(d) for v, d in enumerate(dist) if np.isfinite(d)}


def pagerank(src, dst, n: int, iterations: int, damping: float = 0.85) -> np.ndarray:
    """``iterations`` steps of r = (1 - d) + d * A^T (r / outdeg) from r = 1."""
    a = _matrix(src, dst, n)
    outdeg = np.asarray(a.sum(1)).ravel()
    rank = np.ones(n)
    for _ in range(iterations):
        share = np.divide(rank, outdeg, out=np.zeros(n), where=outdeg > 0)
        rank = (1 - damping) + damping * (a.T @ share)
    return rank
