"""Connected components, BFS, weighted shortest paths and distances to
landmarks with edges arriving at many times, against plain references at
1, 2 and 3 workers: the output at each time is exactly the vertices whose
answer over everything given so far differs from the answer at the time
before (new vertices included), whatever the worker count and however the
inputs are spread over the workers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from tests.reference import graphalytics as reference
from tests.reference.paths import _hops_from, _out, shortest_paths
from tests.reference.scc import weak_components
from timely.algorithms import bfs, connected_components, pagerank, sssp
from timely.algorithms import shortest_paths as landmarks_of

IDS = [-(2**63), -7, 0, 3, 10**12, 2**40 + 1, 2**62, 2**63 - 1]


def run_at_times(build, edges, extra=None, *, workers: int, one_worker: bool = False):
    """``build(edges_stream, *extra_streams)``'s rows as ``(time, *row)``,
    sorted. ``edges``: ``(time, u, v, weight)``; ``extra``: per extra input,
    ``(time, node)`` rows. Every input is fed epoch by epoch without waiting
    for the dataflow, so the epochs' rounds overlap; each worker introduces
    every ``workers``-th row of each time, or worker 0 all of them."""
    extra = extra or []
    times = sorted({t for t, *_ in edges} | {t for rows in extra for t, _ in rows} | {0})

    def work(worker):
        got: list = []
        with worker.dataflow() as scope:
            edge_input, edge_stream = scope.new_input()
            opened = [scope.new_input() for _ in extra]
            build(edge_stream, *(s for _, s in opened)).inspect_batch(
                lambda t, b: got.extend((t, *row) for row in b.to_records()))
        k, p = worker.index, worker.peers
        handles = [edge_input, *(h for h, _ in opened)]

        def mine(rows):
            if one_worker:
                return rows if k == 0 else []
            return rows[k::p]

        for t in times:
            for handle in handles:
                handle.advance_to(t)
            now = mine([e for e in edges if e[0] == t])
            edge_input.send_batch(timely.Batch(
                src=np.array([e[1] for e in now], dtype=np.int64),
                dst=np.array([e[2] for e in now], dtype=np.int64),
                weight=np.array([e[3] for e in now], dtype=np.float64)))
            for (handle, _), rows in zip(opened, extra):
                handle.send_batch(timely.Batch(node=np.array(
                    [v for s, v in mine([r for r in rows if r[0] == t])], dtype=np.int64)))
        for handle in handles:
            handle.close()
        worker.drain()
        return got

    return sorted(row for part in timely.execute(work, workers=workers) for row in part)


def changes(answer_at, times):
    """``(time, *key, value)`` for every key whose answer at a time differs
    from its answer at the time before (or that is new)."""
    rows, before = [], {}
    for t in times:
        now = answer_at(t)
        for key, value in now.items():
            if key not in before or before[key] != value:
                rows.append((t, *(key if isinstance(key, tuple) else (key,)), value))
        before = now
    return sorted(rows)


def upto(edges, t):
    return [(u, v) for s, u, v, _ in edges if s <= t]


def nodes_upto(rows, t):
    return [v for s, v in rows if s <= t]


@st.composite
def timed_graphs(draw, max_times: int = 4):
    times = draw(st.integers(1, max_times))
    pool = draw(st.lists(st.sampled_from(IDS) | st.integers(-50, 50), min_size=1,
                         max_size=12, unique=True))
    vertex = st.sampled_from(pool)
    edges = draw(st.lists(st.tuples(st.integers(0, times - 1), vertex, vertex,
                                    st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0])),
                          max_size=30))
    nodes = draw(st.lists(st.tuples(st.integers(0, times - 1), vertex), max_size=5))
    return edges, nodes, pool, list(range(times))


@settings(max_examples=capped(25), deadline=None)
@given(timed_graphs(), st.booleans())
def test_components_follow_the_edges_time_by_time(graph, one_worker):
    edges, nodes, _, times = graph
    expected = changes(lambda t: weak_components(nodes_upto(nodes, t), upto(edges, t)),
                       times)
    for method in ("union-find", "propagate"):
        for workers in (1, 2, 3):
            got = run_at_times(
                lambda e, n, m=method: connected_components(e, n, method=m), edges, [nodes],
                workers=workers, one_worker=one_worker)
            assert got == expected, (method, workers)


@settings(max_examples=capped(25), deadline=None)
@given(timed_graphs(), st.data())
def test_bfs_distances_follow_the_edges_and_roots(graph, data):
    edges, _, pool, times = graph
    roots = data.draw(st.lists(st.tuples(st.sampled_from(times), st.sampled_from(pool)),
                               min_size=1, max_size=3), label="roots")

    def answer(t):
        return _hops_from(_out(upto(edges, t), True), nodes_upto(roots, t))

    expected = changes(answer, times)
    for workers in (1, 2, 3):
        assert run_at_times(bfs, edges, [roots], workers=workers) == expected


@settings(max_examples=capped(25), deadline=None)
@given(timed_graphs(), st.booleans(), st.data())
def test_sssp_follows_the_weighted_edges(graph, directed, data):
    edges, nodes, pool, times = graph
    source = data.draw(st.sampled_from(pool), label="source")

    def answer(t):
        now = [e for e in edges if e[0] <= t]
        return reference.sssp([(u, v) for _, u, v, _ in now], [w for *_, w in now],
                              nodes_upto(nodes, t), source, directed)

    expected = changes(answer, times)
    for workers in (1, 2, 3):
        got = run_at_times(lambda e, n: sssp(e, source, n, directed=directed), edges, [nodes],
                           workers=workers)
        assert got == expected


@settings(max_examples=capped(25), deadline=None)
@given(timed_graphs(), st.booleans(), st.data())
def test_landmark_distances_follow_edges_and_landmarks(graph, directed, data):
    edges, nodes, pool, times = graph
    marks = data.draw(st.lists(st.tuples(st.sampled_from(times), st.sampled_from(pool)),
                               max_size=3), label="landmarks")

    def answer(t):
        return shortest_paths(upto(edges, t), nodes_upto(marks, t), nodes_upto(nodes, t),
                              directed)

    expected = changes(answer, times)
    for workers in (1, 2, 3):
        got = run_at_times(lambda e, n, m: landmarks_of(e, m, n, directed=directed), edges,
                           [nodes, marks], workers=workers)
        assert got == expected


def chain(length: int, time: int = 0):
    return [(time, i, i + 1, 1.0) for i in range(length)]


@pytest.mark.parametrize("method", ["union-find", "propagate"])
def test_a_late_edge_relabels_only_the_component_whose_label_falls(method, workers):
    # Time 0: two chains, 100..140 and 0..5; time 1 joins them. Only the
    # chain labelled 100 changes, and at time 2 an edge inside a component
    # changes nothing.
    edges = [(0, 100 + i, 101 + i, 1.0) for i in range(40)] + chain(5)
    edges += [(1, 140, 3, 1.0), (2, 0, 105, 1.0)]
    got = run_at_times(lambda e: connected_components(e, method=method), edges,
                       workers=workers)
    assert [row for row in got if row[0] == 0] == sorted(
        [(0, v, 0) for v in range(6)] + [(0, v, 100) for v in range(100, 141)])
    assert [row for row in got if row[0] == 1] == [(1, v, 0) for v in range(100, 141)]
    assert [row for row in got if row[0] == 2] == []


def test_an_earlier_epoch_still_iterating_reaches_the_arcs_of_a_later_one(workers):
    # Time 0's distances take 30 rounds down a chain; time 1 adds an edge
    # from the chain's end before they arrive. The later edge must carry
    # the distance time 0 finds for its source.
    edges = chain(30) + [(1, 30, 1000, 1.0)]
    got = run_at_times(bfs, edges, [[(0, 0)]], workers=workers)
    assert (1, 1000, 31) in got
    assert [row for row in got if row[0] == 1] == [(1, 1000, 31)]


def graphx_fixpoint(edges, nodes, damping=0.85):
    """GraphX's ranks solved exactly: ``r = (1 - d) + d * M r``, ``M[v, u]``
    the edges ``u -> v`` over ``outdeg(u)`` (a dangling vertex passes nothing)."""
    everyone = sorted(reference.vertices(edges, nodes))
    at = {v: i for i, v in enumerate(everyone)}
    n = len(everyone)
    outdeg = np.zeros(n)
    for u, _ in edges:
        outdeg[at[u]] += 1
    m = np.zeros((n, n))
    for u, v in edges:
        m[at[v], at[u]] += 1.0 / outdeg[at[u]]
    ranks = np.linalg.solve(np.eye(n) - damping * m, np.full(n, 1.0 - damping))
    return dict(zip(everyone, ranks))


@settings(max_examples=capped(25), deadline=None)
@given(timed_graphs())
def test_pagerank_reconverges_from_the_ranks_so_far(graph):
    edges, nodes, _, times = graph
    tolerance = 1e-10
    for workers in (1, 2, 3):
        got = run_at_times(lambda e, n: pagerank(e, tolerance=tolerance, nodes=n), edges,
                           [nodes], workers=workers)
        held: dict = {}
        for t in times:
            now = [(v, r) for s, v, r in got if s == t]
            assert len({v for v, _ in now}) == len(now)
            held.update(now)
            expected = graphx_fixpoint(upto(edges, t), nodes_upto(nodes, t))
            assert held.keys() == expected.keys()
            bound = 10 * tolerance * max(len(expected), 1) / 0.15
            for v, rank in expected.items():
                assert abs(held[v] - rank) <= bound + 1e-9 * abs(rank), (t, v, held[v], rank)
