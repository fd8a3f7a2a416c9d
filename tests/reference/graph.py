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


_MASK64 = 2**64 - 1


def mix64(x: int) -> int:
    """SplitMix64's finalizer of an int64 id (taken modulo 2**64), as the
    workers route vertices by it."""
    x &= _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class LeastValues:
    """Worker ``index`` of ``peers``'s part of the least-value fixpoint, in
    dicts: the model of :class:`timely.algorithms._graph.LeastValues`.

    Owned vertices (``mix64(id) % peers == index``) hold a value per slot;
    far targets the least value proposed to each slot. A round sends each
    pending cell's value along every arc of its vertex, and new arcs carry
    the values their sources held, every value read before any is lowered;
    owned targets are lowered at once (pending for the next round), far
    ones keep their least offer."""

    def __init__(self, index: int, peers: int, *, floating: bool = False,
                 weighted: bool = False, self_seeded: bool = False, report_new: bool = False):
        self.index, self.peers = index, peers
        self.floating, self.weighted = floating, weighted
        self.self_seeded, self.report_new = self_seeded, report_new
        self.worst = float("inf") if floating else 2**63 - 1
        self.width = 1
        self.values: dict = {}           # (owned id, slot) -> value
        self.named: set = set()
        self.offered: dict = {}          # (far id, slot) -> least value proposed
        self.arcs: list = []             # (src, dst, weight) in order of arrival
        self.carried = 0
        self.pending: set = set()
        self.changed: set = set()
        self.touched: set = set()
        self.fresh = self.fresh_next = 0
        self.expanding = False

    def owns(self, vertex: int) -> bool:
        return mix64(vertex) % self.peers == self.index

    def plus(self, a, b):
        if self.floating:
            return a + b
        return (a + b + 2**63) % 2**64 - 2**63

    def value(self, cell):
        return self.values.get(cell, self.worst)

    def name_one(self, vertex: int) -> None:
        if vertex in self.named:
            return
        self.named.add(vertex)
        if not (self.self_seeded or self.report_new):
            return
        if self.expanding:
            self.fresh_next += 1
        else:
            self.fresh += 1
        if self.self_seeded:
            self.values[(vertex, 0)] = float(vertex) if self.floating else vertex
        self.changed.add((vertex, 0))

    def lower_cell(self, cell, value) -> None:
        if value < self.value(cell):
            self.values[cell] = value
            self.changed.add(cell)
            self.pending.add(cell)

    def absorb(self, src, dst, weight=None, name_targets: bool = False) -> None:
        for i, (u, t) in enumerate(zip(src, dst)):
            assert self.owns(u)
            self.name_one(u)
            if name_targets:
                if self.owns(t):
                    self.name_one(t)
                elif (t, 0) not in self.offered:
                    self.offered[(t, 0)] = self.worst
                    self.touched.add((t, 0))
            self.arcs.append((u, t, weight[i] if self.weighted else 1))

    def name(self, ids) -> None:
        for v in ids:
            assert self.owns(v)
            self.name_one(v)

    def lower(self, ids, slots, values, need_vertex: bool = False) -> list[int]:
        waiting = []
        for i, v in enumerate(ids):
            if need_vertex and v not in self.named:
                waiting.append(i)
                continue
            self.name_one(v)
            if values[i] != self.worst:
                self.lower_cell((v, slots[i] if slots is not None else 0), values[i])
        return waiting

    def propose(self, target: int, slot: int, value) -> None:
        if self.owns(target):
            self.name_one(target)
            self.lower_cell((target, slot), value)
            return
        cell = (target, slot)
        if cell not in self.offered or value < self.offered[cell]:
            self.offered[cell] = value
            self.touched.add(cell)

    def expand(self) -> int:
        count = self.fresh + len(self.pending)
        self.fresh = 0
        current, self.pending = self.pending, set()
        offers = []
        for u, t, w in set(self.arcs[self.carried:]):
            for s in range(self.width):
                if (u, s) not in current and self.value((u, s)) != self.worst:
                    offers.append((t, s, self.plus(self.value((u, s)), w)))
        self.carried = len(self.arcs)
        for u, t, w in set(self.arcs):
            for s in range(self.width):
                if (u, s) in current:
                    offers.append((t, s, self.plus(self.value((u, s)), w)))
        self.expanding = True
        for offer in offers:
            self.propose(*offer)
        self.expanding = False
        self.fresh, self.fresh_next = self.fresh_next, 0
        return count

    def _out(self, cells: set, values) -> list[tuple]:
        rows = sorted((v, s, values(v, s)) for v, s in cells)
        cells.clear()
        return rows

    def proposals(self) -> list[tuple]:
        """``(id, slot, value)`` per far cell offered a lower value this round."""
        return self._out(self.touched, lambda v, s: self.offered[(v, s)])

    def report(self) -> list[tuple]:
        """``(id, slot, value)`` per owned cell new or lowered since the last report."""
        return self._out(self.changed, lambda v, s: self.value((v, s)))
