"""The compiled kernels of the triangles against plain models
(``tests/reference/triangles.py``): ids found by position, pairs numbered,
merged and counted by end, oriented, blocks indexed by source and sent
back as gids, visiting edges filtered, and the triangles of one block of
oriented edges against another."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import capped
from tests.reference import graph as graph_reference
from tests.reference import triangles as reference
from timely.algorithms._graph import (
    SortedIds,
    block_edges,
    distinct_sorted,
    end_counts,
    find_positions,
    merge_pairs,
    orient_pairs,
    pair_keys,
    place_edges,
    simple_pairs,
    triangle_links,
    union_sorted,
    visiting_targets,
)

I64 = np.int64
INT64 = st.integers(-2**63, 2**63 - 1)
GIDS = st.integers(0, 2**40)


def _key_shift(n: int) -> int:
    return max(1, (n - 1).bit_length())


@settings(max_examples=capped(300), deadline=None)
@given(st.sets(INT64, max_size=40), st.lists(INT64, max_size=40), st.data())
def test_sorted_ids_find_each_id_at_its_place(ids, probes, data):
    ids = sorted(ids)
    # Near each id too: a bucket's edges.
    probes = probes + [min(max(v + d, -2**63), 2**63 - 1) for v in ids for d in (-1, 1)]
    found = SortedIds(np.array(ids, dtype=I64))
    got = found.positions(np.array(probes + ids, dtype=I64)).tolist()
    place = {v: i for i, v in enumerate(ids)}
    assert got == [place.get(v, -1) for v in probes + ids]
    assert len(found) == len(ids) and found.ids.tolist() == ids


@settings(max_examples=capped(100), deadline=None)
@given(st.sets(st.integers(0, 5000), max_size=300), st.integers(-2**62, 2**62))
def test_sorted_ids_find_ids_clustered_anywhere(ids, offset):
    ids = sorted(v + offset for v in ids) + [2**63 - 1]
    found = SortedIds(np.array(ids, dtype=I64))
    assert found.positions(np.array(ids, dtype=I64)).tolist() == list(range(len(ids)))
    assert found.positions(np.array([offset - 1, 2**63 - 2], dtype=I64)).tolist() == [-1, -1]


@settings(max_examples=capped(200), deadline=None)
@given(st.sets(st.integers(0, 700), min_size=1, max_size=300), st.integers(-2**62, 2**62))
def test_sorted_ids_find_dense_ids_by_their_bits(ids, offset):
    # At least one id in 64 values: the index of bits.
    ids = sorted(v + offset for v in ids | {0, 700})
    found = SortedIds(np.array(ids, dtype=I64))
    probes = list(range(offset - 70, offset + 780))
    place = {v: i for i, v in enumerate(ids)}
    assert found.positions(np.array(probes, dtype=I64)).tolist() == [place.get(v, -1)
                                                                     for v in probes]


def test_sorted_ids_span_all_of_int64():
    ids = np.array([-2**63, -1, 0, 2**63 - 1], dtype=I64)
    assert SortedIds(ids).positions(np.array([2**63 - 1, 1, -2**63], dtype=I64)).tolist() == [
        3, -1, 0]


def test_sorted_ids_refuse_what_is_not_increasing():
    with pytest.raises(ValueError):
        SortedIds(np.array([1, 1], dtype=I64))
    with pytest.raises(ValueError):
        SortedIds(np.array([3, 2], dtype=I64))
    held = np.array([1, 5], dtype=I64)
    SortedIds(held)
    assert not held.flags.writeable


@settings(max_examples=capped(200), deadline=None)
@given(st.lists(INT64, max_size=60), st.sampled_from([np.int32, np.int64]))
def test_distinct_sorted_keeps_each_value_once(values, dtype):
    if dtype is np.int32:
        values = [v % 2**31 for v in values]
    a = np.array(sorted(values), dtype=dtype)
    k = distinct_sorted(a)
    assert a[:k].tolist() == sorted(set(values))
    if len(set(values)) > 1:
        with pytest.raises(ValueError):
            distinct_sorted(np.array(sorted(set(values))[::-1], dtype=dtype))


@settings(max_examples=capped(200), deadline=None)
@given(st.sets(INT64, max_size=40), st.sets(st.integers(-2**31, 2**31 - 1), max_size=40),
       st.sampled_from([np.int32, np.int64]))
def test_union_sorted_keeps_each_value_of_both_once(a, b, dtype):
    got = union_sorted(np.array(sorted(a), dtype=I64), np.array(sorted(b), dtype=dtype))
    assert got.dtype == I64 and got.tolist() == sorted(a | b)
    if len(b) > 1:
        with pytest.raises(ValueError):
            union_sorted(np.array(sorted(a), dtype=I64), np.array(sorted(b)[::-1], dtype=dtype))


@settings(max_examples=capped(200), deadline=None)
@given(st.lists(st.tuples(INT64, INT64), max_size=40), st.booleans())
def test_simple_pairs_match_the_model(edges, directed):
    src = np.array([s for s, _ in edges], dtype=I64)
    dst = np.array([d for _, d in edges], dtype=I64)
    lo, hi, arcs, loops = simple_pairs(src, dst, directed)
    want = reference.simple_pairs(src.tolist(), dst.tolist(), directed)
    assert lo.tolist() == want[0] and hi.tolist() == want[1] and loops.tolist() == want[3]
    assert (arcs is None) == (want[2] is None)
    if arcs is not None:
        assert arcs.tolist() == want[2]


@settings(max_examples=capped(200), deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), max_size=60),
       st.booleans())
def test_pairs_numbered_merged_and_counted_match_the_model(edges, directed):
    src = np.array([s for s, _ in edges], dtype=I64)
    dst = np.array([d for _, d in edges], dtype=I64)
    lo, hi, arcs, _ = simple_pairs(src, dst, directed)
    ids = sorted(set(lo.tolist()) | set(hi.tolist()))
    shift = _key_shift(len(ids))
    keys = np.empty(len(lo), dtype=np.uint64)
    pair_keys(SortedIds(np.array(ids, dtype=I64)), lo, hi, arcs, keys, shift)
    keys.sort()
    count, weight = merge_pairs(keys, directed)
    want = reference.distinct_pairs(lo.tolist(), hi.tolist(),
                                    arcs.tolist() if directed else None, ids)
    mask = (1 << shift) - 1
    got = [(int(k) >> shift, int(k) & mask) for k in keys[:count]]
    assert got == [(x, y) for x, y, _ in want]
    if directed:
        assert weight.tolist() == [w for _, _, w in want]
    else:
        assert weight is None
    assert end_counts(keys[:count], shift, len(ids)).tolist() == reference.end_counts(
        want, len(ids))


def test_pair_keys_and_merge_refuse_what_they_cannot_number():
    out = np.empty(1, dtype=np.uint64)
    with pytest.raises(KeyError):
        pair_keys(SortedIds(np.array([1, 2], dtype=I64)), np.array([1], dtype=I64),
                  np.array([3], dtype=I64), None, out, 1)
    with pytest.raises(ValueError):
        pair_keys(SortedIds(np.array([1, 2, 3], dtype=I64)), np.array([1], dtype=I64),
                  np.array([3], dtype=I64), None, out, 1)
    with pytest.raises(ValueError):
        merge_pairs(np.array([5, 1], dtype=np.uint64), False)
    with pytest.raises(IndexError):
        end_counts(np.array([3 << 2], dtype=np.uint64), 2, 3)


@settings(max_examples=capped(200), deadline=None)
@given(st.integers(1, 12), st.data(), st.sampled_from([np.int32, np.int64]))
def test_orient_pairs_matches_the_model(n, data, dtype):
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                               .filter(lambda p: p[0] != p[1]), max_size=30), label="pairs")
    degree = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n), label="degree")
    gid = data.draw(st.lists(GIDS if dtype is np.int64 else st.integers(0, 2**31 - 1),
                             min_size=n, max_size=n, unique=True), label="gid")
    shift = _key_shift(n)
    keys = np.array([x << shift | y for x, y in pairs], dtype=np.uint64)
    a, b = np.empty(len(pairs), dtype=dtype), np.empty(len(pairs), dtype=dtype)
    orient_pairs(keys, shift, np.array(degree, dtype=I64), np.array(gid, dtype=I64), a, b)
    assert list(zip(a.tolist(), b.tolist())) == reference.orient(
        [(x, y, None) for x, y in pairs], degree, gid)


def test_orient_pairs_refuses_gids_that_do_not_fit():
    a, b = np.empty(1, dtype=np.int32), np.empty(1, dtype=np.int32)
    with pytest.raises(OverflowError):
        orient_pairs(np.array([1], dtype=np.uint64), 1, np.array([1, 1], dtype=I64),
                     np.array([0, 2**31], dtype=I64), a, b)


@st.composite
def blocks(draw):
    """``(ids, edges, parts)``: sorted distinct gids, edges ``(a, b,
    weight)`` between them (weight None unweighted), in parts."""
    ids = sorted(draw(st.sets(GIDS, min_size=1, max_size=20)))
    weighted = draw(st.booleans())
    edges = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids),
                                    st.integers(1, 2) if weighted else st.none()),
                          max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(edges)), max_size=3)))
    parts = [edges[i:j] for i, j in zip([0] + cuts, cuts + [len(edges)])]
    return ids, edges, parts, weighted


def _indexed(ids, parts, weighted, dtype):
    found = SortedIds(np.array(ids, dtype=I64))
    counts = np.zeros(len(ids), dtype=I64)
    ends = []
    for p in parts:
        a = np.array([e[0] for e in p], dtype=dtype)
        b = np.array([e[1] for e in p], dtype=dtype)
        # In place where the gids are int32, as a block does with its rows.
        a_at = a if dtype is np.int32 else np.empty(len(a), dtype=np.int32)
        b_at = b if dtype is np.int32 else np.empty(len(b), dtype=np.int32)
        assert find_positions(found, a, a_at, counts) == 0
        assert find_positions(found, b, b_at) == 0
        ends.append((a_at, b_at, np.array([e[2] for e in p], dtype=np.uint8) if weighted
                     else None))
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(I64)
    place = starts[:-1].copy()
    m = int(starts[-1])
    targets = np.empty(m, dtype=np.int32)
    weights = np.empty(m, dtype=np.uint8) if weighted else None
    for a_at, b_at, w in ends:
        place_edges(a_at, b_at, w, place, targets, weights)
    assert place.tolist() == starts[1:].tolist()
    return found, starts, targets, weights


@settings(max_examples=capped(200), deadline=None)
@given(blocks(), st.sampled_from([np.int32, np.int64]), st.data())
def test_a_block_indexed_by_source_and_sent_back_holds_its_edges(block, dtype, data):
    ids, edges, parts, weighted = block
    if dtype is np.int32:
        ids = sorted({v % 2**31 for v in ids})
        edges = [(a % 2**31, b % 2**31, w) for a, b, w in edges]
        parts = [[(a % 2**31, b % 2**31, w) for a, b, w in p] for p in parts]
    found, starts, targets, weights = _indexed(ids, parts, weighted, dtype)
    rows = [sorted((int(targets[i]), int(weights[i]) if weighted else None)
                   for i in range(starts[x], starts[x + 1])) for x in range(len(ids))]
    assert rows == reference.rows_by_source(edges, ids)
    # Sent back in pieces, the edges come in order of source.
    first = data.draw(st.integers(0, len(edges)), label="first")
    k = data.draw(st.integers(0, len(edges) - first), label="count")
    a, b = np.empty(k, dtype=dtype), np.empty(k, dtype=dtype)
    block_edges(starts, targets, found, first, a, b)
    source = np.repeat(np.arange(len(ids)), np.diff(starts))
    assert a.tolist() == [ids[x] for x in source[first:first + k]]
    assert b.tolist() == [ids[t] for t in targets[first:first + k]]
    sources_only = np.empty(k, dtype=dtype)
    block_edges(starts, targets, found, first, sources_only, None)
    assert sources_only.tolist() == a.tolist()


@settings(max_examples=capped(200), deadline=None)
@given(st.sets(GIDS, max_size=20), st.lists(GIDS, max_size=30))
def test_find_positions_counts_what_it_finds(ids, values):
    ids = sorted(ids)
    values = values + ids[:3]
    counts = np.zeros(len(ids), dtype=I64)
    out = np.empty(len(values), dtype=np.int32)
    missing = find_positions(SortedIds(np.array(ids, dtype=I64)), np.array(values, dtype=I64),
                             out, counts)
    place = {v: i for i, v in enumerate(ids)}
    assert out.tolist() == [place.get(v, -1) for v in values]
    assert missing == sum(1 for v in values if v not in place)
    assert counts.tolist() == [values.count(v) for v in ids]
    amounts = np.arange(len(values), dtype=np.int32)
    weighed = np.zeros(len(ids), dtype=I64)
    find_positions(SortedIds(np.array(ids, dtype=I64)), np.array(values, dtype=I64), out, weighed,
                   amounts)
    assert weighed.tolist() == [sum(i for i, u in enumerate(values) if u == v) for v in ids]


def test_block_kernels_refuse_what_is_not_theirs():
    found = SortedIds(np.array([3, 8], dtype=I64))
    with pytest.raises(ValueError):
        find_positions(found, np.array([3], dtype=I64), np.empty(2, dtype=np.int32))
    with pytest.raises(IndexError):
        place_edges(np.array([0, 0], dtype=np.int32), np.array([1, 1], dtype=np.int32), None,
                    np.array([0, 1], dtype=I64), np.zeros(1, dtype=np.int32), None)
    with pytest.raises(IndexError):
        place_edges(np.array([-1], dtype=np.int32), np.array([1], dtype=np.int32), None,
                    np.array([0, 1], dtype=I64), np.zeros(1, dtype=np.int32), None)
    with pytest.raises(IndexError):
        block_edges(np.array([0, 1, 1], dtype=I64), np.array([0], dtype=np.int32), found, 1,
                    np.empty(1, dtype=I64), np.empty(1, dtype=I64))
    with pytest.raises(IndexError):
        block_edges(np.array([0, 1, 1], dtype=I64), np.array([5], dtype=np.int32), found, 0,
                    np.empty(1, dtype=I64), np.empty(1, dtype=I64))


@settings(max_examples=capped(200), deadline=None)
@given(st.sets(GIDS, min_size=1, max_size=15), st.lists(st.tuples(GIDS, GIDS), max_size=30),
       st.booleans(), st.integers(1, 4), st.data())
def test_visiting_targets_keep_the_edges_the_block_names(ids, edges, weighted, pieces, data):
    ids = sorted(ids)
    named = data.draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)),
                               max_size=20), label="named")
    edges = sorted(edges + named)       # in order of source, as a block is sent
    weight = [1 + (v + w) % 2 for v, w in edges] if weighted else None
    found = SortedIds(np.array(ids, dtype=I64))
    counts = np.zeros(len(ids), dtype=I64)
    kept, kept_weight, last = [], [], -1
    cut = len(edges) // pieces + 1
    for start in range(0, len(edges), cut):
        part = edges[start:start + cut]
        v = np.array([e[0] for e in part], dtype=I64)
        w = np.array([e[1] for e in part], dtype=I64)
        wt = np.array(weight[start:start + cut], dtype=np.uint8) if weighted else None
        targets = np.empty(len(part), dtype=np.int32)
        weights = np.empty(len(part), dtype=np.uint8) if weighted else None
        k, last = visiting_targets(found, v, w, wt, counts, targets, weights, last)
        kept += targets[:k].tolist()
        if weighted:
            kept_weight += weights[:k].tolist()
    want = reference.visiting_kept(
        [(v, w, weight[i] if weighted else None) for i, (v, w) in enumerate(edges)], ids)
    assert kept == [y for _, y, _ in want]
    if weighted:
        assert kept_weight == [wt for _, _, wt in want]
    assert counts.tolist() == [sum(1 for x, _, _ in want if x == p) for p in range(len(ids))]


def test_visiting_targets_refuse_edges_out_of_order():
    found = SortedIds(np.array([3, 8], dtype=I64))
    counts = np.zeros(2, dtype=I64)
    with pytest.raises(ValueError):
        visiting_targets(found, np.array([8, 3], dtype=I64), np.array([3, 8], dtype=I64), None,
                         counts, np.empty(2, dtype=np.int32), None, -1)


def _csr(edges, n: int):
    """``(starts, targets, weights)`` of ``(lo, hi, weight)`` edges over ``0..n-1``."""
    edges = sorted(edges)
    starts = np.zeros(n + 1, dtype=I64)
    for lo, _, _ in edges:
        starts[lo + 1] += 1
    return (np.cumsum(starts), np.array([e[1] for e in edges], dtype=np.int32),
            np.array([e[2] for e in edges], dtype=np.uint8))


@settings(max_examples=capped(200), deadline=None)
@given(st.integers(1, 12), st.data())
def test_triangle_links_between_blocks_match_the_model_and_find_each_triangle_once(n, data):
    # A simple graph, each edge oriented along a random total order of the
    # nodes, its edges split into blocks by their lower end.
    rank = data.draw(st.permutations(range(n)), label="order")
    pairs = data.draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                              .filter(lambda p: p[0] < p[1]), max_size=30), label="pairs")
    blocks_ = data.draw(st.integers(1, 4), label="blocks")
    owner = data.draw(st.lists(st.integers(0, blocks_ - 1), min_size=n, max_size=n),
                      label="owner")
    weighted = data.draw(st.booleans(), label="weighted")
    edges = []
    for a, b in sorted(pairs):
        lo, hi = (a, b) if rank[a] < rank[b] else (b, a)
        edges.append((lo, hi, data.draw(st.integers(1, 2), label="weight") if weighted else 1))
    block = [[e for e in edges if owner[e[0]] == k] for k in range(blocks_)]
    every = ([0] * n, [0] * n)
    for k in range(blocks_):
        starts, targets, weight = _csr(block[k], n)
        for j in range(blocks_):
            v_starts, v_targets, v_weight = _csr(block[j], n)
            links = np.zeros(n, dtype=I64)
            found = triangle_links(starts, targets, weight if weighted else None,
                                   v_starts, v_targets, v_weight if weighted else None, links)
            assert found == triangle_links(starts, targets, None, v_starts, v_targets, None,
                                           None)
            triangles, want = graph_reference.triangle_links(block[k], block[j], n)
            assert links.tolist() == want and found == sum(triangles) // 3
            for total, got in zip(every, (triangles, links.tolist())):
                for v in range(n):
                    total[v] += got[v]
    assert every == graph_reference.triangle_links(edges, edges, n)


def test_triangle_links_refuse_what_is_not_two_graphs_over_the_nodes():
    starts = np.array([0, 1, 1], dtype=I64)
    targets, weight = np.array([1], dtype=np.int32), np.array([1], dtype=np.uint8)
    links = np.zeros(2, dtype=I64)
    with pytest.raises(ValueError):
        triangle_links(starts, targets, weight, starts[:2], targets, weight, links)
    with pytest.raises(ValueError):
        triangle_links(starts, targets, weight, starts, targets, weight, links[:1])
    with pytest.raises(IndexError):
        triangle_links(starts, targets, weight, starts, np.array([2], dtype=np.int32), weight,
                       links)
