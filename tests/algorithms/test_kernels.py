"""The compiled graph kernels against plain models: the adjacency's arcs of
a set of sources across rebuilds of its index, the union-find's labels and
reported label changes across batches, and ``lower`` (the triangles' own
kernels: ``test_triangle_kernels.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timely.algorithms._graph import Adjacency, Components, lower

I64 = np.int64


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 40), max_size=20),
                          st.sets(st.integers(0, 40), max_size=8)), max_size=8),
       st.integers(0, 3))
def test_adjacency_gathers_every_arc_of_the_sources(steps, repeat):
    arcs, sources = Adjacency(), []
    for added, probe in steps:
        # Large additions make the index rebuild; small ones stay in the tail.
        added = added * (1 + 9000 * repeat)
        first = arcs.add(np.array(added, dtype=I64))
        assert first == len(sources)
        sources.extend(added)
        nodes = np.array(sorted(probe), dtype=I64)
        got, which = arcs.gather(nodes, 41)
        expected = sorted((a, s) for a, s in enumerate(sources) if s in probe)
        assert sorted(zip(got.tolist(), nodes[which].tolist())) == expected
        assert len(arcs) == len(sources)


def test_adjacency_refuses_nodes_out_of_range():
    arcs = Adjacency()
    with pytest.raises(IndexError):
        arcs.add(np.array([-1], dtype=I64))
    with pytest.raises(IndexError):
        arcs.gather(np.array([5], dtype=I64), 5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=25, unique=True),
       st.lists(st.tuples(st.integers(0, 25), st.lists(st.tuples(st.integers(0, 99),
                                                                   st.integers(0, 99)),
                                                         max_size=12)), max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_components_label_every_node_and_report_exactly_the_falls(keys, batches, reports):
    parts, parent, grown = Components(), {}, 0

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for more, edges in batches:
        more = min(more, len(keys) - grown)
        parts.grow(np.array(keys[grown:grown + more], dtype=I64))
        for i in range(grown, grown + more):
            parent[i] = i
        grown += more
        if not grown:
            continue
        edges = [(a % grown, b % grown) for a, b in edges]
        before = parts.labels(np.arange(grown, dtype=I64)).tolist()
        report = reports[len(parent) % 6]
        fell = parts.union(np.array([a for a, _ in edges], dtype=I64),
                           np.array([b for _, b in edges], dtype=I64), report=report).tolist()
        for a, b in edges:
            parent[find(a)] = find(b)
        least: dict = {}
        for i in range(grown):
            least[find(i)] = min(least.get(find(i), keys[i]), keys[i])
        now = [least[find(i)] for i in range(grown)]
        assert parts.labels(np.arange(grown, dtype=I64)).tolist() == now
        if not report:               # labels set at the end, nothing reported
            assert fell == []
            continue
        assert len(fell) == len(set(fell))
        assert sorted(fell) == [i for i in range(grown) if now[i] != before[i]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=10), st.data())
def test_lower_keeps_the_least_and_names_each_lowered_cell_once(state, data):
    size = len(state)
    cells = data.draw(st.lists(st.integers(0, size - 1), max_size=20), label="cells")
    values = data.draw(st.lists(st.integers(-9, 9), min_size=len(cells), max_size=len(cells)),
                       label="values")
    held = np.array(state, dtype=I64)
    mark = np.zeros(size, dtype=np.uint8)
    got = lower(held, np.array(cells, dtype=I64), np.array(values, dtype=I64), mark).tolist()
    model, order = list(state), []
    for c, v in zip(cells, values):
        if v < model[c]:
            model[c] = v
            if c not in order:
                order.append(c)
    assert held.tolist() == model
    assert got == order
    assert not mark.any()
