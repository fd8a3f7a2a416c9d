"""Graph generators in numpy, shared by the tests, benchmarks and examples."""

from __future__ import annotations

import numpy as np


def rmat_edges(scale: int, edges: int, seed: int = 0, probabilities=(0.57, 0.19, 0.19, 0.05)):
    """``(src, dst)``: ``edges`` directed edges of an R-MAT graph on ``2**scale``
    nodes (Chakrabarti, Zhan and Faloutsos), as two int64 arrays.

    Each edge picks one quadrant of the adjacency matrix per bit of the node
    ids with ``probabilities`` (a, b, c, d), which gives the skewed degrees
    and small diameter of real graphs; self-loops and duplicate edges are
    kept. Node ids are scrambled by a fixed permutation so that high-degree
    nodes are not the low ids. Cost: O(edges * scale) in numpy.

    >>> src, dst = rmat_edges(4, 5, seed=1)
    >>> len(src), int(max(src.max(), dst.max())) < 16
    (5, True)
    """
    a, b, c, d = probabilities
    if abs(a + b + c + d - 1.0) > 1e-9 or min(probabilities) < 0:
        raise ValueError(f"R-MAT probabilities must be >= 0 and sum to 1, not {probabilities}")
    rng = np.random.default_rng(seed)
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for bit in range(scale):
        u = rng.random(edges)
        down = u >= a + b                  # quadrants c and d: the source bit is 1
        right = ((u >= a) & (u < a + b)) | (u >= a + b + c)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    permutation = rng.permutation(1 << scale).astype(np.int64)
    return permutation[src], permutation[dst]
