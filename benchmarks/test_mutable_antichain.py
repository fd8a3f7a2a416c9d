"""MutableAntichain: a frontier that changes on every update, compiled vs the oracle.

Workload at size n: a fresh ``MutableAntichain``; ``update_iter([(t, +1)])`` for n
distinct times in a random order (fixed seed), then ``update_iter([(t, -1)])``
for every time in increasing (lexicographic) order. Lexicographic order extends
the product order, so each retired time is minimal: the frontier changes on
every retirement. One timed call is all 2n updates; the answer is the list of
the 2n returned frontier changes, checked against a closed-form sweep over the
2-d staircase of minimal elements (``expected_changes``) before any figure.

Shapes of the n times:

- ``chain``, arity 1: ``0 .. n-1``. The frontier is one time.
- ``grid100``, arity 2: ``(i // 100, i % 100)``, rows of 100 in product order;
  while retiring, the frontier holds at most two times ``(g, j)`` and ``(g+1, 0)``.
- ``antichain``, arity 2, with s = isqrt(n): ``(g + j, g + s-1 - j)`` for
  ``i = g*s + j``: antichains of s times stacked so that each is above the
  previous one, a frontier of about sqrt(n) times throughout.

The compiled structure runs at n = 10^4, 10^5 and 10^6 (the growth per
tenfold should be close to n log n, 12.5x and 12x, and far from n^2, 100x)
and at the oracle's sizes. Python's cyclic garbage collector is off during
each timed call: the structure makes no garbage cycles, but the call keeps
2n result lists, and the collector's full passes over them (and over the
prepared arguments) grow faster than n log n and would be what is measured. The oracle recomputes the minimal elements from every count
with a pairwise scan on each ``update_iter``, up to O(n^2) per update; it runs only at a few hundred to a thousand times,
where its growth curve is measured too. n = 10^4 would take it minutes
(arity 1) to hours (arity 2), so it is not run there.
"""

from __future__ import annotations

import bisect
import functools
import gc
import math
import random

import harness
import pytest

SEED = 20240601
SUITE = "MutableAntichain"
COMPILED_SIZES = (10**4, 10**5, 10**6)
ORACLE_SIZES = {"chain": (250, 500, 1000), "grid100": (100, 200, 400), "antichain": (100, 200, 400)}
ORACLE_ROUNDS = (3, 2, 1)  # fewer rounds as the oracle's size grows
SHAPES = {
    "chain": "chain, arity 1",
    "grid100": "rows of 100 (i // 100, i % 100), arity 2",
    "antichain": "antichains of √n stacked, arity 2",
}


def points(shape: str, n: int) -> list[tuple[int, int]]:
    """The n times as (a, b) pairs in lexicographic order; arity 1 as (t, t)."""
    if shape == "chain":
        return [(i, i) for i in range(n)]
    if shape == "grid100":
        return [(i // 100, i % 100) for i in range(n)]
    s = math.isqrt(n)
    return sorted((i // s + i % s, i // s + s - 1 - i % s) for i in range(n))


def expected_changes(
    pts: list[tuple[int, int]], insert_order: list[int], fmt
) -> list[list[tuple[object, int]]]:
    """The frontier changes of every update of the workload, in O(n log n).

    ``pts`` are distinct (a, b) pairs in lexicographic order. In two dimensions
    the minimal elements form a staircase: a increasing, b decreasing, and a
    time is dominated exactly when the staircase element before it in a has a
    b no greater than its own.

    Inserting y: unless dominated, y joins and evicts the run of staircase
    elements it is <= (contiguous, right after y's place in a).

    Retiring in lexicographic order: with ``nxt[k]`` the first index after k
    with a smaller b, the staircase of ``pts[k:]`` is k, nxt[k], nxt[nxt[k]], ...
    Retiring k therefore adds the chain from k+1 up to (not including) nxt[k].
    """
    out: list[list[tuple[object, int]]] = []
    stair_a: list[int] = []
    stair: list[tuple[int, int]] = []
    for k in insert_order:
        a, b = pts[k]
        pos = bisect.bisect_left(stair_a, a)
        dominated = (pos > 0 and stair[pos - 1][1] <= b) or (
            pos < len(stair) and stair[pos][0] == a and stair[pos][1] < b
        )
        if dominated:
            out.append([])
            continue
        end = pos
        while end < len(stair) and stair[end][1] >= b:
            end += 1
        evicted = stair[pos:end]
        stair[pos:end] = [(a, b)]
        stair_a[pos:end] = [a]
        out.append([(fmt((a, b)), 1)] + [(fmt(p), -1) for p in evicted])

    n = len(pts)
    nxt = [n] * n
    stack: list[int] = []
    for k in range(n - 1, -1, -1):
        while stack and pts[stack[-1]][1] >= pts[k][1]:
            stack.pop()
        nxt[k] = stack[-1] if stack else n
        stack.append(k)
    # The staircase built by the insertions must be the chain from index 0.
    chain, k = [], 0
    while k < n:
        chain.append(pts[k])
        k = nxt[k]
    assert chain == stair, "expected_changes: insertion and retirement sweeps disagree"
    for k in range(n):
        changes = [(fmt(pts[k]), -1)]
        j = k + 1
        while j < n and j != nxt[k]:
            changes.append((fmt(pts[j]), 1))
            j = nxt[j]
        out.append(changes)
    return out


class Workload:
    def __init__(self, shape: str, n: int) -> None:
        self.arity = 1 if shape == "chain" else 2
        pts = points(shape, n)
        fmt = (lambda p: p[0]) if self.arity == 1 else (lambda p: p)
        order = list(range(n))
        random.Random(SEED + n).shuffle(order)
        # One argument list per call, built here so the timed loop holds no tuple-making.
        self.inserts = [[(fmt(pts[k]), 1)] for k in order]
        self.retires = [[(fmt(p), -1)] for p in pts]
        self.expected = expected_changes(pts, order, fmt)


@functools.cache
def workload(shape: str, n: int) -> Workload:
    return Workload(shape, n)


def make(shape: str, n: int):
    def make_run(impl: harness.Impl):
        antichain_class = impl.MutableAntichain
        w = workload(shape, n)
        inserts, retires, arity = w.inserts, w.retires, w.arity

        def run() -> object:
            collecting = gc.isenabled()
            gc.disable()
            try:
                frontier = antichain_class(arity=arity)
                update_iter = frontier.update_iter
                out = [update_iter(u) for u in inserts]
                out += [update_iter(u) for u in retires]
            finally:
                if collecting:
                    gc.enable()
            return out

        return run

    return make_run


def check(shape: str, n: int):
    def check_result(result: object) -> None:
        harness.expect_equal("frontier changes", result, workload(shape, n).expected)  # type: ignore[arg-type]

    return check_result


def _cases() -> list[harness.Case]:
    out = []
    for shape, subject in SHAPES.items():
        oracle_sizes = ORACLE_SIZES[shape]
        not_run = (
            f"the oracle is not run at n ≥ 10^4: it rescans every count pairwise on each "
            f"update (largest n measured: {oracle_sizes[-1]:,})"
        )
        sizes = [(n, rounds) for n, rounds in zip(oracle_sizes, ORACLE_ROUNDS)]
        sizes += [(n, 0) for n in COMPILED_SIZES]
        for n, rounds in sizes:
            out.append(
                harness.Case(
                    suite=SUITE,
                    subject=subject,
                    key=f"{shape}-{n}",
                    size=n,
                    unit="times",
                    make=make(shape, n),
                    check=check(shape, n),
                    ops=2 * n,
                    op="update",
                    oracle_rounds=rounds,
                    note="" if rounds else not_run,
                    scaling=f"{SUITE}: {subject}",
                    curve=(harness.ORACLE,) if rounds else (harness.COMPILED,),
                )
            )
    return out


CASES = _cases()


@pytest.mark.parametrize(("case", "impl"), harness.params(CASES))
def test_mutable_antichain(run_case, case: harness.Case, impl: str) -> None:
    run_case(case, impl)
