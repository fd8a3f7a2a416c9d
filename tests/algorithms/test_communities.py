"""Label propagation spread over the workers: the answers of the reference
(``tests/reference/graphalytics.py``) on random graphs with sparse 64-bit
ids, with and without heavy vertices (whose arcs are spread by a hash of
both ends), at many times, all on worker 0 or spread; and, from the message
log, that a hub's arcs and the rounds' labels reach every worker about
equally."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.algorithms.helpers import logged_graph_run, rows_received
from tests.progress.strategies import capped
from tests.reference import graphalytics as reference
from timely.algorithms import communities, label_propagation, rmat_edges

IDS = st.integers(-2**63, 2**63 - 1)


def run_times(edges_at: list, nodes_at: list, iterations: int, directed: bool, workers: int,
              all_on_first: bool = False) -> dict:
    """Per time, the ``{node: label}`` of ``label_propagation`` given the
    edges and nodes of each time (worker ``k`` of ``W`` introduces every
    ``W``-th, or worker 0 all of them)."""

    def work(worker):
        got: list = []
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, nodes = scope.new_input()
            label_propagation(edges, nodes, iterations, directed=directed).inspect_batch(
                lambda t, b: got.extend((t, *row) for row in b.to_records()))
        k, p = worker.index, worker.peers
        for time, (pairs, ids) in enumerate(zip(edges_at, nodes_at)):
            src = np.array([u for u, _ in pairs], dtype=np.int64)
            dst = np.array([v for _, v in pairs], dtype=np.int64)
            ids = np.array(ids, dtype=np.int64)
            if all_on_first:
                src, dst, ids = (c if k == 0 else c[:0] for c in (src, dst, ids))
            else:
                src, dst, ids = src[k::p], dst[k::p], ids[k::p]
            edge_input.send_batch(timely.Batch(src=src, dst=dst))
            node_input.send_batch(timely.Batch(node=ids))
            edge_input.advance_to(time + 1)
            node_input.advance_to(time + 1)
        edge_input.close()
        node_input.close()
        worker.drain()
        return got

    per_time: dict = {}
    for part in timely.execute(work, workers=workers):
        for time, node, label in part:
            assert node not in per_time.setdefault(time, {}), "a vertex answered twice"
            per_time[time][node] = label
    return per_time


def expected(edges_at: list, nodes_at: list, iterations: int, directed: bool) -> dict:
    return {time: reference.label_propagation(pairs, ids, iterations, directed)
            for time, (pairs, ids) in enumerate(zip(edges_at, nodes_at))
            if reference.vertices(pairs, ids)}


graphs = st.lists(st.tuples(st.lists(st.tuples(IDS | st.integers(0, 12), st.integers(0, 12)),
                                     max_size=40),
                            st.lists(IDS | st.integers(0, 15), max_size=4)),
                  min_size=1, max_size=2)


@settings(max_examples=capped(25), deadline=None)
@given(graphs, st.integers(0, 4), st.booleans(), st.booleans(), st.sampled_from([1, 2, 3]))
def test_random_graphs_at_many_times_with_heavy_vertices(monkeypatch_module, times, iterations,
                                                         directed, all_on_first, workers):
    # Any vertex with two ends on a worker is heavy: the counts of its
    # labels meet on the workers of each (vertex, label) pair.
    edges_at = [pairs for pairs, _ in times]
    nodes_at = [ids for _, ids in times]
    got = run_times(edges_at, nodes_at, iterations, directed, workers, all_on_first)
    assert got == expected(edges_at, nodes_at, iterations, directed)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(communities, "HEAVY_AT", 2)
        yield patch


@pytest.mark.parametrize("directed", [True, False])
def test_rmat_graph_as_the_reference_labels_it(workers, directed):
    src, dst = rmat_edges(11, 6000, seed=3)
    pairs = list(zip(src.tolist(), dst.tolist()))
    nodes = list(range(0, 2100, 7))
    got = run_times([pairs], [nodes], 6, directed, workers)
    assert got == expected([pairs], [nodes], 6, directed)


def shares(received: dict, name: str, workers: int) -> list[int]:
    return [received.get((k, name), 0) for k in range(workers)]


def test_a_hub_s_arcs_are_spread_and_its_label_decided_by_its_owner():
    # A star around one hub, its leaves' ids multiples of 1024, every edge
    # on worker 0: the hub is heavy, its arcs spread by a hash of both ends.
    hub = np.full(6000, 1 << 40, dtype=np.int64)
    leaves = np.arange(1, 6001, dtype=np.int64) * 1024
    rows, logs = logged_graph_run(lambda e: label_propagation(e, iterations=3, directed=False),
                                  hub, leaves, 4)
    pairs = list(zip(hub.tolist(), leaves.tolist()))
    assert dict(rows) == reference.label_propagation(pairs, [], 3, False)
    received = rows_received(logs)
    records = shares(received, "LabelPropagation", 4)
    assert max(records) <= 1.2 * sum(records) / 4
    # The hub's label counts: a row per distinct (hub, label) pair per worker
    # holding its arcs, summed where the pair's hash sends them.
    counts = shares(received, "HeavyLabelCounts", 4)
    assert max(counts) <= 1.3 * sum(counts) / 4 + 8


def test_the_rounds_send_only_the_labels_that_change():
    src, dst = rmat_edges(12, 20_000, seed=1)
    rows, logs = logged_graph_run(lambda e: label_propagation(e, iterations=8), src, dst, 3,
                                  all_on_first=False)
    pairs = list(zip(src.tolist(), dst.tolist()))
    assert dict(rows) == reference.label_propagation(pairs, [], 8, True)
    received = rows_received(logs, by_time=True)
    per_round: dict = {}
    for (_worker, name, time), count in received.items():
        if name == "LabelPropagation" and time[-1] > 0:
            per_round[time[-1]] = per_round.get(time[-1], 0) + count
    # Round r's changed labels, each once to every other worker holding its
    # vertex: no more than the arcs, and falling as the labels settle.
    assert per_round and max(per_round.values()) <= 2 * len(src)
    assert per_round[max(per_round)] < per_round[1]


def test_workers_holding_only_named_vertices_answer_them(workers):
    # Worker 0 is given the edges; every worker names vertices of its own,
    # most of them without edges (some workers then keep no arc at all).
    edges = [(1, 2), (5, 5), (2, 3)]
    nodes = list(range(0, 40, 3)) + [2**62, -2**62]
    got = run_times([edges], [nodes], 3, True, workers, all_on_first=True)
    assert got == expected([edges], [nodes], 3, True)
