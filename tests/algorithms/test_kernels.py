"""The compiled graph kernels against plain models: the adjacency's arcs of
a set of sources across rebuilds of its index, the union-find's labels and
reported label changes across batches, ``lower``, a worker's local
numbering of the ids it holds (the triangles' own kernels:
``test_triangle_kernels.py``), and one worker's part of the least-value
fixpoint round by round."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import capped, examples
from tests.reference import graph as reference
from timely.algorithms._graph import (
    Adjacency,
    Components,
    LeastValues,
    LocalIds,
    arc_sums,
    hook,
    lower,
    scatter_add,
    tally,
    vertex_hash,
)
from timely.algorithms.pagerank import _exact_parts

I64 = np.int64


@settings(max_examples=capped(200), deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 40), max_size=20),
                          st.sets(st.integers(0, 40), max_size=8)), max_size=8),
       st.integers(0, 3))
def test_adjacency_gathers_every_arc_of_the_sources(steps, repeat):
    arcs, sources = Adjacency(), np.zeros(0, dtype=I64)
    for added, probe in steps:
        # Large additions make the index rebuild; small ones stay in the tail.
        added = np.array(added * (1 + 9000 * repeat), dtype=I64)
        first = arcs.add(added)
        assert first == len(sources)
        sources = np.concatenate([sources, added])
        nodes = np.array(sorted(probe), dtype=I64)
        got, which = arcs.gather(nodes, 41)
        # Every arc whose source is probed, by a plain scan of the sources.
        wanted = np.flatnonzero(np.isin(sources, nodes))
        order = np.argsort(got, kind="stable")
        assert np.array_equal(got[order], wanted)
        assert np.array_equal(nodes[which][order], sources[wanted])
        assert len(arcs) == len(sources)


def test_adjacency_refuses_nodes_out_of_range():
    arcs = Adjacency()
    with pytest.raises(IndexError):
        arcs.add(np.array([-1], dtype=I64))
    with pytest.raises(IndexError):
        arcs.gather(np.array([5], dtype=I64), 5)


@settings(max_examples=capped(200), deadline=None)
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


@settings(max_examples=capped(200), deadline=None)
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


_IDS = st.one_of(st.integers(-3, 40), st.integers(-(2**63), 2**63 - 1),
                 st.integers(0, 2**22).map(lambda x: x * 1024))


@settings(max_examples=capped(300), deadline=None)
@given(st.lists(st.tuples(st.lists(_IDS, max_size=60), st.lists(_IDS, max_size=10)),
                max_size=8))
def test_local_ids_number_ids_in_order_of_arrival(steps):
    ids, numbers = LocalIds(), {}
    for inserted, probed in steps:
        got = ids.insert(np.array(inserted, dtype=I64))
        expected = [numbers.setdefault(x, len(numbers)) for x in inserted]
        assert got.dtype == np.int32 and got.tolist() == expected
        assert ids.lookup(np.array(probed, dtype=I64)).tolist() == [
            numbers.get(x, -1) for x in probed]
        assert len(ids) == len(numbers)
        assert ids.view().tolist() == list(numbers)
        assert ids.ids(np.array(expected, dtype=np.int32)).tolist() == inserted


def test_local_ids_grow_past_many_rebuilds_and_refuse_numbers_not_held():
    ids = LocalIds()
    keys = np.random.default_rng(3).permutation(200_000).astype(I64) * 7919
    for part in np.array_split(keys, 13):
        ids.insert(part)
    assert ids.lookup(keys).tolist() == list(range(len(keys)))
    assert (ids.lookup(keys + 1)[keys % 7919 == 0] == -1).all()
    with pytest.raises(IndexError):
        ids.ids(np.array([len(keys)]))
    with pytest.raises(IndexError):
        ids.ids(np.array([-1]))


@settings(max_examples=capped(200), deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_arc_sums_scatter_add_and_tally_add_in_the_order_given(targets, sources, data):
    arcs = data.draw(st.lists(st.tuples(st.integers(0, targets - 1),
                                        st.integers(0, sources - 1)), max_size=30))
    share = data.draw(st.lists(st.floats(-1e6, 1e6), min_size=sources, max_size=sources))
    target = np.array([t for t, _ in arcs], dtype=np.int32)
    source = np.array([s for _, s in arcs], dtype=np.int32)
    start = data.draw(st.lists(st.floats(-1e6, 1e6), min_size=targets, max_size=targets))
    # The model adds one term at a time, in the order of the arcs.
    expected = list(start)
    for t, s in arcs:
        expected[t] += share[s]
    sums = np.array(start)
    arc_sums(sums, target, source, np.array(share))
    assert sums.tolist() == expected
    total = np.array(start)
    scatter_add(total, target, np.array([share[s] for _, s in arcs]))
    assert total.tolist() == expected
    counts = np.zeros(targets, dtype=np.int32)
    tally(counts, target)
    assert counts.tolist() == [sum(1 for t, _ in arcs if t == k) for k in range(targets)]


def test_arc_sums_scatter_add_and_tally_refuse_numbers_out_of_range():
    one = np.array([1], dtype=np.int32)
    with pytest.raises(IndexError):
        arc_sums(np.zeros(1), one, np.array([0], dtype=np.int32), np.zeros(1))
    with pytest.raises(IndexError):
        arc_sums(np.zeros(2), one, one, np.zeros(1))
    with pytest.raises(IndexError):
        scatter_add(np.zeros(1), one, np.zeros(1))
    with pytest.raises(IndexError):
        tally(np.zeros(1, dtype=np.int32), one)


@settings(max_examples=capped(300), deadline=None)
@given(st.integers(1, 6), st.data())
def test_hook_keeps_the_least_label_and_links_every_other_to_it(n, data):
    seen0 = data.draw(st.lists(st.sampled_from([0, 0, 1, 2]), min_size=n, max_size=n))
    least0 = data.draw(st.lists(st.integers(-5, 20), min_size=n, max_size=n))
    rows = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(-5, 20)),
                              max_size=25))
    # The model, one row at a time: a node's first label is its least; a
    # greater label is linked to the least, a lower one links the least to
    # it and takes its place; a change is a first label, a fall, or any
    # label of a node marked 2.
    least, seen, edges, expected_changed = list(least0), list(seen0), [], []
    for x, r in rows:
        if not seen[x]:
            seen[x], least[x] = 1, r
            expected_changed.append(x)
            continue
        confirmed, seen[x] = seen[x] == 2, 1
        if r > least[x]:
            edges.append((r, least[x]))
        elif r < least[x]:
            edges.append((least[x], r))
            least[x] = r
            expected_changed.append(x)
            continue
        if confirmed:
            expected_changed.append(x)
    least_a, seen_a = np.array(least0, dtype=I64), np.array(seen0, dtype=np.uint8)
    hi, lo, got = hook(np.array([x for x, _ in rows], dtype=np.int32),
                       np.array([r for _, r in rows], dtype=I64), least_a, seen_a)
    assert list(zip(hi.tolist(), lo.tolist())) == edges
    assert got.tolist() == expected_changed
    assert least_a.tolist() == least and seen_a.tolist() == seen


# Ids that share their low bits, sparse ones and a few small ones.
IDS = [0, 1, 2, 3, 5, 8, 1024, 2048, 3072, -7, 2**40, -(2**62), 2**63 - 1]


def _rows(take, more, most: int) -> list[tuple]:
    """Every row of one report (or round of proposals), taken ``most`` at a time."""
    rows: list[tuple] = []
    while True:
        ids, slots, values = take(most)
        assert most < 0 or len(ids) <= most
        slots = np.zeros(len(ids), dtype=I64) if slots is None else slots
        rows.extend(zip(ids.tolist(), slots.tolist(), values.tolist()))
        if not more():
            return sorted(rows)


@settings(max_examples=capped(150), deadline=None)
@given(st.integers(1, 3), st.data())
def test_least_values_round_by_round_match_the_model(peers, data):
    index = data.draw(st.integers(0, peers - 1), label="index")
    floating = data.draw(st.booleans(), label="floating")
    weighted = data.draw(st.booleans(), label="weighted")
    self_seeded = data.draw(st.booleans(), label="self_seeded")
    report_new = data.draw(st.booleans(), label="report_new")
    # Large batches (every arc many times) overflow the tail into the rows.
    repeat = data.draw(st.sampled_from([1, 1, 1, 3000]), label="repeat")
    options = dict(floating=floating, weighted=weighted, self_seeded=self_seeded,
                   report_new=report_new)
    got, model = LeastValues(index, peers, **options), reference.LeastValues(index, peers,
                                                                            **options)
    most = data.draw(st.sampled_from([-1, 1, 3]), label="most")
    owned = [v for v in IDS if model.owns(v)]

    def proposals():
        return _rows(got.proposals, lambda: got.has_proposals, most)

    def report():
        return _rows(got.report, lambda: got.has_report, most)

    assert [bool(vertex_hash(np.array([v]))[0] % np.uint64(peers) == index) for v in IDS] == [
        model.owns(v) for v in IDS]
    dtype = np.float64 if floating else I64
    value = (st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.5, 2.75]) if floating
             else st.integers(-3, 9))
    # Weights are not negative (the values are), so the rounds end.
    weight = (st.sampled_from([0.0, 0.25, 0.5, 1.5, 2.75]) if floating
              else st.integers(0, 9))
    for _ in range(data.draw(st.integers(1, 10), label="steps")):
        op = data.draw(st.sampled_from(["arcs", "name", "lower", "widen", "round"]), label="op")
        if op == "arcs" and owned:
            pairs = data.draw(st.lists(st.tuples(st.sampled_from(owned), st.sampled_from(IDS)),
                                       max_size=8), label="arcs")
            weights = data.draw(st.lists(weight, min_size=len(pairs), max_size=len(pairs)),
                                label="weights")
            pairs, weights = pairs * repeat, weights * repeat
            name_targets = data.draw(st.booleans(), label="name_targets")
            src = np.array([u for u, _ in pairs], dtype=I64)
            dst = np.array([t for _, t in pairs], dtype=I64)
            w = np.array(weights, dtype=dtype) if weighted else None
            got.absorb(src, dst, w, name_targets=name_targets)
            model.absorb(src.tolist(), dst.tolist(), w.tolist() if weighted else None,
                         name_targets)
        elif op == "name" and owned:
            ids = data.draw(st.lists(st.sampled_from(owned), max_size=4), label="named")
            got.name(np.array(ids, dtype=I64))
            model.name(ids)
        elif op == "lower" and owned:
            rows = data.draw(st.lists(st.tuples(st.sampled_from(owned),
                                                st.integers(0, model.width - 1), value),
                                      max_size=5), label="rows")
            need = data.draw(st.booleans(), label="need_vertex")
            ids = [v for v, _, _ in rows]
            slots = [s for _, s, _ in rows] if model.width > 1 else None
            values = [x for _, _, x in rows]
            left = got.lower(np.array(ids, dtype=I64),
                             None if slots is None else np.array(slots, dtype=I64),
                             np.array(values, dtype=dtype), need)
            assert left.tolist() == model.lower(ids, slots, values, need)
        elif op == "widen":
            width = data.draw(st.integers(1, 4), label="width")
            got.widen(width)
            model.width = max(model.width, width)
            assert got.width == model.width
        else:
            assert got.expand() == model.expand()
            assert got.has_pending == bool(model.pending)
            assert proposals() == model.proposals()
        if data.draw(st.booleans(), label="report"):
            assert report() == model.report()
    while got.has_pending:
        assert got.expand() == model.expand()
        assert proposals() == model.proposals()
    assert not model.pending
    assert report() == model.report()
    assert got.arcs == len(model.arcs)


def test_least_values_refuse_what_another_worker_owns():
    state = LeastValues(0, 2)
    theirs = next(v for v in range(100) if int(vertex_hash(np.array([v]))[0] % np.uint64(2)))
    with pytest.raises(ValueError):
        state.absorb(np.array([theirs], dtype=I64), np.array([0], dtype=I64))
    with pytest.raises(ValueError):
        state.name(np.array([theirs], dtype=I64))
    with pytest.raises(ValueError):
        LeastValues(2, 2)
    with pytest.raises(ValueError):
        LeastValues(0, 1, weighted=True).absorb(np.array([0], dtype=I64),
                                                 np.array([1], dtype=I64))


@settings(max_examples=examples(0.2), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300,
                          max_value=1e300), max_size=40), st.integers(1, 5))
def test_pagerank_sums_from_exact_parts_round_as_the_whole_sum(values, pieces):
    """The dangling rank and the teleport count are added from each
    message's exact parts: whatever the split into messages, the parts'
    correctly rounded sum is that of all the values."""
    split = [values[i::pieces] for i in range(pieces)]
    parts = [p for piece in split for p in _exact_parts(np.array(piece, dtype=np.float64))]
    assert math.fsum(parts) == math.fsum(values)
