"""Plain references for personalized PageRank, hop distances to landmarks
and breadth-first paths (:mod:`timely.algorithms.paths`), written
from the definitions with dicts, sets and loops.

A graph is a list of ``(u, v)`` edges (in the given direction) and a list
of extra vertices; the vertex set is those and every edge end.
"""

from __future__ import annotations

from collections import Counter, deque

from tests.reference.graphalytics import vertices


def personalized_pagerank(edges, sources, nodes, iterations: int,
                          damping: float = 0.85) -> dict[int, float]:
    """``p`` uniform over the distinct ``sources``; ``PR_0 = p``;
    ``PR_i(v) = (1-d) p(v) + d * (sum over edges u -> v of PR(u)/outdeg(u)
    + D p(v))``, ``D`` the rank of the vertices without out-edges; every
    rank 0 without sources. The vertex set includes the sources."""
    everyone = vertices(edges, list(nodes) + list(sources))
    chosen = set(sources)
    p = {v: (1.0 / len(chosen) if v in chosen else 0.0) for v in everyone}
    outdeg = Counter(u for u, _ in edges)
    rank = dict(p)
    for _ in range(iterations):
        dangling = sum(rank[v] for v in everyone if outdeg[v] == 0)
        received = {v: 0.0 for v in everyone}
        for u, v in edges:
            received[v] += rank[u] / outdeg[u]
        rank = {v: (1 - damping) * p[v] + damping * (received[v] + dangling * p[v])
                for v in everyone}
    return rank


def _out(edges, directed: bool) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for u, v in edges:
        out.setdefault(u, set()).add(v)
        if not directed:
            out.setdefault(v, set()).add(u)
    return out


def _hops_from(out: dict[int, set[int]], starts) -> dict[int, int]:
    """Breadth-first distances from the set ``starts`` along ``out``."""
    distance = {s: 0 for s in starts}
    queue = deque(distance)
    while queue:
        u = queue.popleft()
        for v in out.get(u, ()):
            if v not in distance:
                distance[v] = distance[u] + 1
                queue.append(v)
    return distance


def shortest_paths(edges, landmarks, nodes, directed: bool) -> dict[tuple[int, int], int]:
    """``{(vertex, landmark): hops}`` for every vertex that reaches a
    landmark that is a vertex: one breadth-first search per vertex."""
    everyone = vertices(edges, nodes)
    out = _out(edges, directed)
    marks = set(landmarks) & everyone
    result = {}
    for v in everyone:
        for target, hops in _hops_from(out, [v]).items():
            if target in marks:
                result[(v, target)] = hops
    return result


def bfs_paths(edges, from_nodes, to_nodes, directed: bool,
              max_length: int | None = None) -> list[tuple[int, ...]]:
    """Every path ``(v0, ..., vL)`` of consecutive edges with ``v0`` in
    ``from_nodes`` and ``vL`` in ``to_nodes`` of the least length ``L``,
    sorted; by enumerating the walks of each length in turn."""
    out = _out(edges, directed)
    starts, ends = set(from_nodes), set(to_nodes)
    walks = [(v,) for v in sorted(starts)]
    length = 0
    reachable = _hops_from(out, starts)
    if not any(t in reachable for t in ends):
        return []
    while True:
        found = sorted(w for w in walks if w[-1] in ends)
        if found:
            return found if max_length is None or length <= max_length else []
        walks = [w + (v,) for w in walks for v in sorted(out.get(w[-1], ()))]
        length += 1
