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


def triangle_links(own, visiting, n: int) -> tuple[list[int], list[int]]:
    """Per node ``0..n-1``, over the triangles ``u -> v, u -> w, v -> w``
    with ``u -> v`` and ``u -> w`` among the ``(lo, hi, weight)`` edges
    ``own`` and ``v -> w`` among ``visiting``: how many it is in, and the
    sum of the weights of the edges opposite it."""
    triangles, links = [0] * n, [0] * n
    for u, v, uv in own:
        for u2, w, uw in own:
            if u2 != u:
                continue
            for v2, w2, vw in visiting:
                if v2 == v and w2 == w:
                    for node, opposite in ((u, vw), (v, uw), (w, uv)):
                        triangles[node] += 1
                        links[node] += opposite
    return triangles, links
