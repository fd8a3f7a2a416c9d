"""join, distinct and improve on Batch streams against plain-Python
references, at 1, 2 and 3 workers, inside loops and out; the compiled key
index and kernels against dicts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely.dataflow.operators._relational import bucket, expand
from timely.dataflow.operators._relational import improve as improve_kernel
from timely.dataflow.operators.relational import (
    KeyIndex,
    Pace,
    at_complete_times,
    distinct,
    improve,
    join,
)

rows = st.lists(st.tuples(st.integers(-3, 5), st.integers(0, 3), st.integers(0, 99)),
                max_size=40)


def batch(records, names):
    columns = list(zip(*records)) if records else [[] for _ in names]
    return timely.Batch({n: np.array(c, dtype=np.int64) for n, c in zip(names, columns)})


def run_binary(make, left_by_time, right_by_time, workers, mode="processes", steps=0):
    """``make(left, right)``'s rows per time; input ``i`` of each time is
    introduced by worker ``i % peers``, and each worker takes ``steps``
    steps after introducing a time's rows (so later rows come while the
    operators act on earlier times)."""

    def work(worker):
        got = []
        with worker.dataflow() as scope:
            lh, left = scope.new_input()
            rh, right = scope.new_input()
            make(left, right).inspect_batch(
                lambda t, b: got.extend((t, r) for r in b.to_records()))
        times = sorted(set(left_by_time) | set(right_by_time))
        for t in times:
            lh.advance_to(t)
            rh.advance_to(t)
            for i, (names, recs) in enumerate(left_by_time.get(t, [])):
                if i % worker.peers == worker.index:
                    lh.send_batch(batch(recs, names))
            for i, (names, recs) in enumerate(right_by_time.get(t, [])):
                if i % worker.peers == worker.index:
                    rh.send_batch(batch(recs, names))
            lh.advance_to(t + 1)
            rh.advance_to(t + 1)
            for _ in range(steps):
                worker.step()
        lh.close()
        rh.close()
        worker.drain()
        return got

    return sorted(r for part in timely.execute(work, workers=workers, mode=mode) for r in part)


def join_reference(left, right, persist):
    out = []
    for t, lrecs in left.items():
        for s, rrecs in right.items():
            if s == t or (persist == "right" and s <= t) or (persist == "left" and t <= s):
                for _, lr in lrecs:
                    for _, rr in rrecs:
                        for a in lr:
                            for b in rr:
                                if a[0] == b[0] and a[1] == b[1]:
                                    out.append((max(s, t), a + b[2:]))
    return sorted(out)


@pytest.mark.parametrize("persist", [None, "right", "left"])
def test_join_by_two_columns_across_times(workers, persist):
    rng = np.random.default_rng(7)

    def recs(n):
        return [tuple(int(x) for x in r) for r in rng.integers(0, 4, (n, 3))]

    left = {t: [(("a", "b", "x"), recs(12)), (("a", "b", "x"), recs(5))] for t in (0, 1, 3)}
    right = {t: [(("a", "b", "y"), recs(10))] for t in (0, 2, 3)}
    got = run_binary(lambda l, r: join(l, r, ("a", "b"), persist=persist), left, right, workers)
    assert got == join_reference(left, right, persist)


@settings(max_examples=capped(40))
@given(rows, rows)
def test_join_of_random_rows(lrecs, rrecs):
    left = {0: [(("k", "j", "x"), lrecs)]}
    right = {0: [(("k", "j", "y"), rrecs)]}
    expected = sorted((0, (a[0], a[1], a[2], b[2])) for a in lrecs for b in rrecs
                      if a[:2] == b[:2])
    for workers in (1, 2, 3):
        got = run_binary(lambda l, r: join(l, r, ["k", "j"]), left, right, workers, "threads")
        assert got == expected


def test_join_with_other_key_names_and_refusals():
    left = {0: [(("node", "label"), [(1, 10), (2, 20)])]}
    right = {0: [(("src", "dst"), [(1, 2), (1, 3), (4, 5)])]}
    got = run_binary(lambda l, r: join(l, r, left_on="node", right_on="src"), left, right, 1)
    assert got == [(0, (1, 10, 2)), (0, (1, 10, 3))]
    clash = {0: [(("node", "label"), [(1, 5)])]}
    with pytest.raises(timely.ColumnarError):
        run_binary(lambda l, r: join(l, r, "node"), left, clash, 1)
    with pytest.raises(timely.ColumnarError):
        run_binary(lambda l, r: join(l, r, "node", persist="both"), left, clash, 1)
    with pytest.raises(timely.ColumnarError):
        run_binary(lambda l, r: join(l, r), left, clash, 1)


def totals_and_counts(left, right, pace):
    """An at_complete_times with two outputs: ``right``'s ``(k, w)`` taken in
    as they arrive into a total per key, ``left``'s ``(k, v)`` held; per
    time, ``(k, v, total of k so far)`` a row a message, made as it is
    sent, and ``(k, count)`` of ``left``'s rows at the time."""
    totals: dict = {}

    def take(_time, rows):
        for k, w in zip(rows["k"].tolist(), rows["w"].tolist()):
            totals[k] = totals.get(k, 0) + w

    def step(_cap, rows):
        got, taken = rows
        assert taken is None            # taken in, never held for the step
        if got is None:
            return None
        ks, vs = got["k"].tolist(), got["v"].tolist()
        keys, counts = np.unique(np.array(ks, dtype=np.int64), return_counts=True)

        def made():
            yield 1, timely.Batch(k=keys, n=counts)
            for k, v in zip(ks, vs):
                # Read as it is sent: a later time's rows must not be in yet.
                yield 0, timely.Batch(k=np.array([k]), v=np.array([v]),
                                      total=np.array([totals.get(k, 0)]))

        return made()

    rows, counts = at_complete_times("Totals", [(left, "k"), (right, "k", take)], step,
                                     outputs=2, pace=pace)
    return rows.concat(counts.map_batch(lambda b: b.with_columns(
        v=np.full(len(b), -1), total=b["n"]).select(["k", "v", "total"])))


@pytest.mark.parametrize("pace", [None, Pace(), Pace(messages=3)], ids=["at-once", "1", "3"])
def test_at_complete_times_with_two_outputs_paced_and_taken_in(workers, pace):
    rng = np.random.default_rng(11)

    def recs(n, hi):
        return [tuple(int(x) for x in r) for r in rng.integers(0, hi, (n, 2))]

    left = {t: [(("k", "v"), recs(9, 5)), (("k", "v"), recs(4, 5))] for t in (0, 1, 3, 4)}
    right = {t: [(("k", "w"), recs(7, 5)), (("k", "w"), recs(3, 5))] for t in (0, 2, 3)}
    got = run_binary(lambda l, r: totals_and_counts(l, r, pace), left, right, workers,
                     steps=4)
    expected = []
    for t, parts in left.items():
        seen = [r for _, recs_ in parts for r in recs_]
        for k, v in seen:
            total = sum(w for s, ps in right.items() if s <= t for _, rs in ps
                        for kk, w in rs if kk == k)
            expected.append((t, (k, v, total)))
        for k in sorted({k for k, _ in seen}):
            expected.append((t, (k, -1, sum(1 for kk, _ in seen if kk == k))))
    assert got == sorted(expected)


def run_unary(make, by_time, workers, mode="processes"):
    return run_binary(lambda l, r: make(l.concat(r)), by_time, {}, workers, mode)


@pytest.mark.parametrize("persist", [False, True])
def test_distinct(workers, persist):
    by_time = {0: [(("a", "b"), [(1, 2), (1, 2), (3, 4)]), (("a", "b"), [(3, 4), (5, 6)])],
               1: [(("a", "b"), [(1, 2), (7, 8), (7, 8)])]}
    got = run_unary(lambda s: distinct(s, ["a", "b"], persist=persist), by_time, workers)
    expected = [(0, (1, 2)), (0, (3, 4)), (0, (5, 6)), (1, (7, 8))]
    if not persist:
        expected.append((1, (1, 2)))
    assert got == sorted(expected)


@pytest.mark.parametrize("how", ["min", "max"])
def test_improve_across_times(workers, how):
    by_time = {0: [(("k", "v"), [(1, 5), (1, 3), (2, 9)])],
               1: [(("k", "v"), [(1, 4), (2, 1), (3, 3)])],
               2: [(("k", "v"), [(1, 7), (1, 2)])]}
    got = run_unary(lambda s: improve(s, "k", "v", how), by_time, workers)
    best: dict = {}
    expected = []
    for t in sorted(by_time):
        now: dict = {}
        for _, recs in by_time[t]:
            for k, v in recs:
                held = now.get(k, best.get(k))
                if held is None or (v < held if how == "min" else v > held):
                    now[k] = v
        expected += [(t, (k, v)) for k, v in now.items()]
        best.update(now)
    assert got == sorted(expected)


def test_improve_keeps_floats_and_refuses_other_hows():
    def work(worker):
        got = []
        with worker.dataflow() as scope:
            h, s = scope.new_input()
            s.improve("k", "v", "max").inspect_batch(lambda t, b: got.extend(b.to_records()))
        h.send_batch(timely.Batch(k=np.array([1, 1]), v=np.array([0.5, 1.5])))
        h.close()
        worker.drain()
        return got

    assert timely.execute_directly(work) == [(1, 1.5)]
    with pytest.raises(timely.ColumnarError):
        timely.execute_directly(lambda w: w.dataflow().__enter__().new_input()[1]
                                .improve("k", "v", "median"))


def test_relational_operators_in_a_loop(workers):
    # Reachability from node 0 by join + improve in an iterative scope: a
    # persisted edge side, a changing frontier, exchange inside the loop.
    src = np.array([0, 1, 2, 2, 5, 6, 3])
    dst = np.array([1, 2, 3, 0, 6, 5, 4])

    def work(worker):
        got = []
        with worker.dataflow() as scope:
            eh, edges = scope.new_input()
            rh, roots = scope.new_input()
            with scope.iterative() as inner:
                handle, loop = inner.feedback(1)
                reached = roots.enter(inner).concat(loop).exchange("node").improve(
                    "node", "hops")
                reached.join(edges.enter(inner), left_on="node", right_on="src",
                             persist="right").map_batch(
                    lambda b: timely.Batch(node=b["dst"], hops=b["hops"] + 1)).connect_loop(handle)
                reached.leave().distinct(["node"]).inspect_batch(
                    lambda t, b: got.extend(b["node"].tolist()))
        k, p = worker.index, worker.peers
        eh.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p]))
        if k == 0:
            rh.send_batch(timely.Batch(node=np.array([0]), hops=np.array([0])))
        eh.close()
        rh.close()
        worker.drain()
        return got

    got = sorted(n for part in timely.execute(work, workers=workers) for n in part)
    assert got == [0, 1, 2, 3, 4]


keys = st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(0, 300), max_size=80)


@given(st.lists(keys, max_size=4), st.integers(1, 2))
def test_key_index_numbers_keys_as_a_dict_does(chunks, width):
    index = KeyIndex(width)
    numbers: dict = {}
    for chunk in chunks:
        columns = [np.array(chunk, dtype=np.int64)] + [
            np.array(chunk[::-1], dtype=np.int64)] * (width - 1)
        rows_ = list(zip(*[c.tolist() for c in columns]))
        before = dict(numbers)
        assert index.lookup(columns).tolist() == [before.get(r, -1) for r in rows_]
        for r in rows_:
            numbers.setdefault(r, len(numbers))
        assert index.insert(columns).tolist() == [numbers[r] for r in rows_]
        assert len(index) == len(numbers)
    held = list(zip(*[k.tolist() for k in index.keys()]))
    assert held == list(numbers)
    ids = np.arange(len(numbers))[::-1]
    assert list(zip(*[k.tolist() for k in index.take(ids)])) == held[::-1]


@pytest.mark.parametrize("asked", [False, True])
def test_key_index_numbers_alike_as_it_moves_between_direct_cells_and_hashing(asked):
    # Dense ids are addressed directly; a far id moves the index to hashing;
    # enough ids below it make it dense enough to move back; a negative id
    # moves it to hashing again. The numbers never change, whether the keys
    # are asked for along the way (kept beside the table from then on) or
    # only at the end (read from the table).
    index = KeyIndex(1)
    numbers: dict = {}
    rng = np.random.default_rng(7)
    chunks = [np.arange(1000), np.array([10**7]), *np.array_split(
        rng.permutation(np.arange(1000, 2_000_000)), 7), np.array([-5, 3, 10**7, -5])]
    for chunk in chunks:
        chunk = chunk.astype(np.int64)
        for k in chunk.tolist():
            numbers.setdefault(k, len(numbers))
        assert index.insert([chunk]).tolist() == [numbers[k] for k in chunk.tolist()]
        probe = np.array([*rng.choice(list(numbers), 50), 10**9, -7], dtype=np.int64)
        assert index.lookup([probe]).tolist() == [numbers.get(k, -1) for k in probe.tolist()]
        if asked:
            held = list(numbers)
            assert index.take(np.array([0, len(held) - 1]))[0].tolist() == [held[0], held[-1]]
    assert index.keys()[0].tolist() == list(numbers)
    assert index.take(np.array([len(numbers) - 1, 0]))[0].tolist() == [-5, 0]


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(-50, 50)), max_size=60))
def test_improve_kernel_and_join_kernels(pairs):
    state = np.full(10, 20, dtype=np.int64)
    ids = np.array([p[0] for p in pairs], dtype=np.int64)
    values = np.array([p[1] for p in pairs], dtype=np.int64)
    better, where = improve_kernel(state, ids, values, True)
    expected = np.full(10, 20)
    order = []
    first = []
    for i, (g, v) in enumerate(pairs):
        if v < expected[g]:
            expected[g] = v
            if g not in order:
                order.append(g)
                first.append(i)
    assert state.tolist() == expected.tolist() and better.tolist() == order
    assert where.tolist() == first
    groups = np.where(ids % 3 == 0, -1, ids)
    order_, starts = bucket(groups, 10)
    probe = np.array([g for g, _ in pairs[:10]] + [-1], dtype=np.int64)
    left, right = expand(probe, order_, starts)
    pairs_expected = Counter((i, j) for i, g in enumerate(probe) if g >= 0
                             for j, h in enumerate(groups) if h == g)
    assert Counter(zip(left.tolist(), right.tolist())) == pairs_expected


def test_relational_refuses_records():
    # The exchange by column refuses a list of records before the operator sees it.
    with pytest.raises(timely.RouteError):
        timely.example(lambda scope: scope.to_stream([(1, 2)]).distinct(["a"]))
