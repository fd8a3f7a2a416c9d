"""Plain references for the vertex-program tests: strongly connected
components by Tarjan's algorithm and by Kosaraju's, weakly connected
components, shortest paths by Dijkstra's algorithm and BFS distances, all
over any hashable node ids, written one node at a time."""

from __future__ import annotations

import heapq


def _successors(nodes, edges) -> dict:
    out: dict = {v: [] for v in nodes}
    for u, v in edges:
        out.setdefault(u, []).append(v)
        out.setdefault(v, [])
    return out


def tarjan(nodes, edges) -> dict:
    """Per node, the least node of its strongly connected component
    (Tarjan's algorithm, iterative)."""
    succ = _successors(nodes, edges)
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    result: dict = {}
    counter = 0
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            recurse = False
            children = succ[v]
            while i < len(children):
                w = children[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    members.append(w)
                    if w == v:
                        break
                least = min(members)
                for w in members:
                    result[w] = least
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result


def kosaraju(nodes, edges) -> dict:
    """Per node, the least node of its strongly connected component
    (Kosaraju's algorithm: finishing order on the graph, then search on the
    reversed graph)."""
    succ = _successors(nodes, edges)
    pred: dict = {v: [] for v in succ}
    for u, v in edges:
        pred[v].append(u)
    seen: set = set()
    order: list = []
    for start in sorted(succ):
        if start in seen:
            continue
        seen.add(start)
        work = [(start, iter(succ[start]))]
        while work:
            v, children = work[-1]
            for w in children:
                if w not in seen:
                    seen.add(w)
                    work.append((w, iter(succ[w])))
                    break
            else:
                work.pop()
                order.append(v)
    result: dict = {}
    for start in reversed(order):
        if start in result:
            continue
        members = [start]
        result[start] = start
        todo = [start]
        while todo:
            v = todo.pop()
            for u in pred[v]:
                if u not in result:
                    result[u] = start
                    members.append(u)
                    todo.append(u)
        least = min(members)
        for w in members:
            result[w] = least
    return result


def weak_components(nodes, edges) -> dict:
    """Per node, the least node of its weakly connected component."""
    parent = {v: v for v in _successors(nodes, edges)}

    def root(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for u, v in edges:
        a, b = root(u), root(v)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {v: root(v) for v in parent}


def dijkstra(nodes, weighted_edges, source) -> dict:
    """Per node, the least total weight of a path from ``source`` (``inf``
    where none)."""
    succ: dict = {v: [] for v in nodes}
    for u, v, w in weighted_edges:
        succ.setdefault(u, []).append((v, w))
        succ.setdefault(v, [])
    dist = {v: float("inf") for v in succ}
    dist[source] = 0.0
    heap = [(0.0, source)]
    while heap:
        d, v = heapq.heappop(heap)
        if d > dist[v]:
            continue
        for w, weight in succ[v]:
            if d + weight < dist[w]:
                dist[w] = d + weight
                heapq.heappush(heap, (dist[w], w))
    return dist


def bfs_levels(nodes, edges, source, limit=None) -> dict:
    """Per node, its distance in edges from ``source`` (-1 where none, or
    where it is more than ``limit``)."""
    succ = _successors(nodes, edges)
    dist = {v: -1 for v in succ}
    dist[source] = 0
    frontier = [source]
    level = 0
    while frontier and (limit is None or level < limit):
        level += 1
        reached = []
        for v in frontier:
            for w in succ[v]:
                if dist[w] < 0:
                    dist[w] = level
                    reached.append(w)
        frontier = reached
    return dist
