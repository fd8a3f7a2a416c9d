"""Plain models of the triangle kernels of ``timely.algorithms._graph``:
lists and dicts, written from what each kernel promises."""

from __future__ import annotations


def simple_pairs(src, dst, directed: bool):
    """``(lo, hi, arcs, loops)``: per edge not a self-loop, its ends lower
    first and (directed) 1 for an edge from lo to hi, 2 for one from hi to
    lo; per self-loop, its vertex."""
    lo, hi, arcs, loops = [], [], [], []
    for s, d in zip(src, dst):
        if s == d:
            loops.append(s)
            continue
        lo.append(min(s, d))
        hi.append(max(s, d))
        arcs.append(1 if s < d else 2)
    return lo, hi, (arcs if directed else None), loops


def distinct_pairs(lo, hi, arcs, ids):
    """The distinct pairs as ``(x, y, weight)`` over positions among the
    sorted ``ids``, sorted; ``weight`` the number of directions (None
    without arcs)."""
    position = {v: i for i, v in enumerate(ids)}
    seen: dict = {}
    for k, (a, b) in enumerate(zip(lo, hi)):
        key = (position[a], position[b])
        seen[key] = seen.get(key, 0) | (arcs[k] if arcs is not None else 0)
    return [(x, y, (bits.bit_count() if arcs is not None else None))
            for (x, y), bits in sorted(seen.items())]


def end_counts(pairs, n: int) -> list[int]:
    """Per position, the pairs ``(x, y, _)`` with an end there."""
    counts = [0] * n
    for x, y, _ in pairs:
        counts[x] += 1
        counts[y] += 1
    return counts


def orient(pairs, degree, gid):
    """Each pair ``(x, y, _)`` as ``(gid, gid)`` from its end lower in
    (degree, gid) order."""
    out = []
    for x, y, _ in pairs:
        if (degree[x], gid[x]) > (degree[y], gid[y]):
            x, y = y, x
        out.append((gid[x], gid[y]))
    return out


def rows_by_source(edges, ids):
    """Per position among the sorted ``ids``, the sorted ``(target
    position, weight)`` of the edges ``(a, b, weight)`` from it."""
    position = {v: i for i, v in enumerate(ids)}
    rows: list[list] = [[] for _ in ids]
    for a, b, w in edges:
        rows[position[a]].append((position[b], w))
    return [sorted(r) for r in rows]


def visiting_kept(edges, ids):
    """Of the visiting edges ``(v, w, weight)``, in order, those with both
    ends among ``ids``: ``(source position, target position, weight)``."""
    position = {v: i for i, v in enumerate(ids)}
    return [(position[v], position[w], weight) for v, w, weight in edges
            if v in position and w in position]
