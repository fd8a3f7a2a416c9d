"""Plain references for the LDBC Graphalytics algorithms, written from the
definitions with dicts, sets and loops.

A graph is a list of ``(u, v)`` edges (in the given direction) and a list
of extra vertices; the vertex set is those and every edge end. Duplicate
edges and self-loops are treated as :mod:`timely.algorithms`
documents: PageRank and the degrees count every edge as given; label
propagation, clustering coefficients and triangles read the edges as a set
without self-loops; shortest paths take the lightest of parallel edges.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter


def vertices(edges, nodes) -> set[int]:
    """Every vertex named by ``nodes`` or by an edge."""
    found = set(nodes)
    for u, v in edges:
        found.add(u)
        found.add(v)
    return found


def pagerank_normalized(edges, nodes, iterations: int, damping: float = 0.85) -> dict[int, float]:
    """``PR_0(v) = 1/N``; ``PR_i(v) = (1-d)/N + d * (sum over edges u -> v
    of PR(u)/outdeg(u) + D/N)``, ``D`` the rank of the vertices without
    out-edges; an edge counts as often as it is listed."""
    everyone = vertices(edges, nodes)
    n = len(everyone)
    outdeg = Counter(u for u, _ in edges)
    rank = {v: 1.0 / n for v in everyone}
    for _ in range(iterations):
        dangling = sum(rank[v] for v in everyone if outdeg[v] == 0)
        received = {v: 0.0 for v in everyone}
        for u, v in edges:
            received[v] += rank[u] / outdeg[u]
        rank = {v: (1 - damping) / n + damping * (received[v] + dangling / n)
                for v in everyone}
    return rank


def label_propagation(edges, nodes, iterations: int, directed: bool) -> dict[int, int]:
    """Synchronous label propagation: each vertex takes the most frequent
    label of its neighbours, the least on a tie, and keeps its own when it
    has none. Directed: a neighbour is heard once per edge direction
    linking the two; undirected: once."""
    everyone = vertices(edges, nodes)
    heard: dict[int, list[int]] = {v: [] for v in everyone}
    if directed:
        for u, v in {(u, v) for u, v in edges if u != v}:
            heard[v].append(u)          # u is an in-neighbour of v
            heard[u].append(v)          # v is an out-neighbour of u
    else:
        for pair in {frozenset((u, v)) for u, v in edges if u != v}:
            u, v = tuple(pair)
            heard[v].append(u)
            heard[u].append(v)
    labels = {v: v for v in everyone}
    for _ in range(iterations):
        new = {}
        for v in everyone:
            if not heard[v]:
                new[v] = labels[v]
                continue
            counts = Counter(labels[u] for u in heard[v])
            most = max(counts.values())
            new[v] = min(label for label, c in counts.items() if c == most)
        labels = new
    return labels


def _neighbours(edges, everyone) -> dict[int, set[int]]:
    near: dict[int, set[int]] = {v: set() for v in everyone}
    for u, v in edges:
        if u != v:
            near[u].add(v)
            near[v].add(u)
    return near


def local_clustering_coefficient(edges, nodes, directed: bool) -> dict[int, float]:
    """``N(v)`` = in- and out-neighbours of ``v``. Directed: the edges
    ``u -> w`` with ``u, w`` in ``N(v)`` over ``|N(v)| (|N(v)| - 1)``;
    undirected: ``2 e / (k (k - 1))`` for the ``e`` undirected edges among
    the ``k`` neighbours. 0 for fewer than two neighbours."""
    everyone = vertices(edges, nodes)
    near = _neighbours(edges, everyone)
    result = {}
    if directed:
        arcs = {(u, v) for u, v in edges if u != v}
        for v in everyone:
            k = len(near[v])
            links = sum(1 for u in near[v] for w in near[v] if (u, w) in arcs)
            result[v] = links / (k * (k - 1)) if k >= 2 else 0.0
    else:
        undirected = {frozenset((u, v)) for u, v in edges if u != v}
        for v in everyone:
            k = len(near[v])
            e = sum(1 for u, w in itertools.combinations(near[v], 2)
                    if frozenset((u, w)) in undirected)
            result[v] = 2 * e / (k * (k - 1)) if k >= 2 else 0.0
    return result


def triangles(edges, nodes) -> dict[int, int]:
    """Per vertex, the triangles of the undirected simple graph it is in."""
    everyone = vertices(edges, nodes)
    near = _neighbours(edges, everyone)
    return {v: sum(1 for u, w in itertools.combinations(near[v], 2) if w in near[u])
            for v in everyone}


def triangle_count(edges) -> int:
    """The sets of three vertices pairwise linked (in either direction)."""
    everyone = vertices(edges, [])
    near = _neighbours(edges, everyone)
    return sum(1 for a, b, c in itertools.combinations(sorted(everyone), 3)
               if b in near[a] and c in near[a] and c in near[b])


def degrees(edges, nodes) -> dict[int, tuple[int, int, int]]:
    """Per vertex ``(in, out, in + out)``, counting every edge as listed."""
    everyone = vertices(edges, nodes)
    into = Counter(v for _, v in edges)
    out = Counter(u for u, _ in edges)
    return {v: (into[v], out[v], into[v] + out[v]) for v in everyone}


def sssp(edges, weights, nodes, source: int, directed: bool) -> dict[int, float]:
    """Dijkstra from ``source`` over ``edges`` with ``weights``; ``inf``
    where no path reaches, everything when ``source`` is no vertex."""
    everyone = vertices(edges, nodes)
    out: dict[int, list[tuple[int, float]]] = {v: [] for v in everyone}
    for (u, v), w in zip(edges, weights):
        out[u].append((v, float(w)))
        if not directed:
            out[v].append((u, float(w)))
    distance = {v: math.inf for v in everyone}
    if source not in everyone:
        return distance
    distance[source] = 0.0
    queue = [(0.0, source)]
    done: set[int] = set()
    while queue:
        d, u = heapq.heappop(queue)
        if u in done:
            continue
        done.add(u)
        for v, w in out[u]:
            if d + w < distance[v]:
                distance[v] = d + w
                heapq.heappush(queue, (d + w, v))
    return distance

