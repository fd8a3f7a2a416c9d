"""Vertex programs (pregel) and strongly connected components against
plain references (tests/reference/scc.py), at 1, 2 and 3 workers: random
small directed graphs with sparse int64 ids (negative, 2**63 - 1),
isolated vertices, self-loops, duplicate edges and cycles; the same answers
at every worker count; rounds, quiet termination and misuse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from tests.reference import scc as reference
from timely.algorithms import pregel, strongly_connected_components
from timely.errors import AggregateError, ColumnarError, WorkerFailed

BIG = 2**63 - 1
SMALL = -2**63


def sssp_program(edges, vertices, **options):
    """Single-source shortest paths: the source is the active vertex with distance 0."""
    return pregel(
        edges, vertices,
        send=lambda b: timely.Batch(dst=b["dst"], dist=b["src_dist"] + b["weight"]),
        merge="min",
        update=lambda s, m: timely.Batch(dist=np.minimum(s["dist"], m["dist"])),
        **options)


def components_program(edges, vertices, **options):
    """Weakly connected components: each edge read both ways, a label sent
    where it is less than the destination's."""
    def both_ways(b):
        return timely.Batch(src=np.concatenate([b["src"], b["dst"]]),
                            dst=np.concatenate([b["dst"], b["src"]]))

    def send(b):
        better = b["src_label"] < b["dst_label"]
        return timely.Batch(dst=b["dst"][better], label=b["src_label"][better])

    return pregel(edges.map_batch(both_ways), vertices, send=send, merge={"label": "min"},
                  update=lambda s, m: timely.Batch(label=np.minimum(s["label"], m["label"])),
                  **options)


def run(build, src, dst, nodes, workers, weight=None, vertices=None):
    """Each worker introduces every ``workers``-th edge, node and vertex;
    ``build(edges, node_stream, vertex_stream)`` returns a dict of streams,
    whose rows come back sorted, per name."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    nodes = np.asarray(nodes, dtype=np.int64)
    weight = np.ones(len(src)) if weight is None else np.asarray(weight, dtype=np.float64)

    def work(worker):
        got: dict = {}
        with worker.dataflow() as scope:
            edge_input, edges = scope.new_input()
            node_input, node_stream = scope.new_input()
            vertex_input, vertex_stream = scope.new_input()
            for name, stream in build(edges, node_stream, vertex_stream).items():
                got[name] = []
                stream.inspect_batch(lambda t, b, rows=got[name]: rows.extend(b.to_records()))
        k, p = worker.index, worker.peers
        edge_input.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p], weight=weight[k::p]))
        node_input.send_batch(timely.Batch(node=nodes[k::p]))
        if vertices is not None:
            vertex_input.send_batch(vertices.take(np.arange(k, len(vertices), p)))
        for handle in (edge_input, node_input, vertex_input):
            handle.close()
        worker.drain()
        return got

    parts = timely.execute(work, workers=workers)
    return {name: sorted(row for part in parts for row in part[name]) for name in parts[0]}


def everything(ids, src, dst, weight, source):
    """SCC, and components and shortest paths written with pregel."""
    everyone = np.unique(np.concatenate([np.asarray(ids, np.int64), src, dst]))

    def build(edges, node_stream, vertex_stream):
        labels = vertex_stream.map_batch(lambda b: timely.Batch(id=b["id"], label=b["id"]))
        dists = vertex_stream.map_batch(lambda b: timely.Batch(
            id=b["id"], dist=np.where(b["id"] == source, 0.0, np.inf), active=b["id"] == source))
        return {"scc": strongly_connected_components(edges, node_stream),
                "cc": components_program(edges, labels),
                "sssp": sssp_program(edges, dists)}

    return everyone, build


id_values = st.one_of(st.sampled_from([BIG, SMALL, -1, 0, 1, BIG - 1]),
                      st.integers(SMALL, BIG), st.integers(-20, 20))


@st.composite
def graphs(draw):
    ids = draw(st.lists(id_values, min_size=1, max_size=8, unique=True))
    n = len(ids)
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=18))
    if n > 2 and draw(st.booleans()):
        ring = draw(st.permutations(range(n)))[:draw(st.integers(2, n))]
        pairs += list(zip(ring, ring[1:] + ring[:1]))
    weights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]), min_size=len(pairs),
                            max_size=len(pairs)))
    isolated = [ids[0]] + [v for v in ids[1:] if draw(st.booleans())]
    return ids, pairs, weights, isolated


@settings(max_examples=capped(40), deadline=None)
@given(graphs())
def test_random_graphs_at_every_worker_count(graph):
    ids, pairs, weights, isolated = graph
    src = np.array([ids[i] for i, _ in pairs], dtype=np.int64)
    dst = np.array([ids[j] for _, j in pairs], dtype=np.int64)
    source = ids[0]
    everyone, build = everything(isolated, src, dst, weights, source)
    vertices = timely.Batch(id=everyone)
    edges = list(zip(src.tolist(), dst.tolist()))
    nodes = everyone.tolist()
    strong = reference.tarjan(nodes, edges)
    assert strong == reference.kosaraju(nodes, edges)
    expected = {
        "scc": sorted(strong.items()),
        "cc": sorted(reference.weak_components(nodes, edges).items()),
        "sssp": sorted(reference.dijkstra(
            nodes, zip(src.tolist(), dst.tolist(), weights), source).items()),
    }
    answers = [run(build, src, dst, isolated, workers, weights, vertices) for workers in (1, 2, 3)]
    assert answers[0] == expected
    assert answers[1] == answers[0] and answers[2] == answers[0]


def test_components_of_chains_and_cycles(workers):
    # An ascending chain of cycles takes one phase per cycle; a descending
    # one takes one phase in all.
    src, dst = [], []
    for start in range(0, 30, 3):
        cycle = [start, start + 1, start + 2]
        src += cycle
        dst += cycle[1:] + cycle[:1]
        src.append(start + 2)
        dst.append(start + 3)
    src += [-1, -2, -3, -3, BIG, SMALL, 5]
    dst += [-2, -1, -3, -3, SMALL, BIG, -1]
    nodes = [1000, -1000]
    got = run(lambda e, n, v: {"scc": strongly_connected_components(e, n)}, src, dst, nodes,
              workers)["scc"]
    everyone = sorted(set(src) | set(dst) | set(nodes))
    assert got == sorted(reference.tarjan(everyone, list(zip(src, dst))).items())
    assert dict(got)[29] == 27 and dict(got)[30] == 30


def test_scc_of_no_edges_and_other_column_names(workers):
    def build(edges, node_stream, vertex_stream):
        renamed = edges.map_batch(lambda b: timely.Batch(a=b["src"], b=b["dst"]))
        return {"scc": strongly_connected_components(renamed, node_stream, src="a", dst="b")}

    assert run(build, [], [], [3, -4], workers)["scc"] == [(-4, -4), (3, 3)]
    assert run(build, [7, 8], [8, 7], [], workers)["scc"] == [(7, 7), (8, 7)]


def test_breadth_first_levels_and_max_rounds(workers):
    src = [0, 1, 2, 3, 4, 0]
    dst = [1, 2, 3, 4, 5, 5]
    src, dst = src + [9, 6, 7], dst + [9, 7, 6]
    ids = np.array(sorted(set(src) | set(dst)), dtype=np.int64)
    start = timely.Batch(id=ids, level=np.where(ids == 1, 0, -1), active=ids == 1)

    def levels(rounds):
        def build(edges, node_stream, vertex_stream):
            return {"bfs": pregel(
                edges, vertex_stream,
                send=lambda b: timely.Batch(dst=b["dst"], level=b["src_level"] + 1),
                merge="min",
                update=lambda s, m: timely.Batch(
                    level=np.where(s["level"] < 0, m["level"], s["level"])),
                max_rounds=rounds, with_dst=False)}

        return dict(run(build, src, dst, [], workers, vertices=start)["bfs"])

    everyone = ids.tolist()
    edges = list(zip(src, dst))
    assert levels(None) == reference.bfs_levels(everyone, edges, 1)
    for rounds in (0, 1, 2, 10):
        assert levels(rounds) == reference.bfs_levels(everyone, edges, 1, rounds)


def test_quiet_when_nothing_is_sent(workers):
    ids = np.array([5, -5, BIG], dtype=np.int64)
    start = timely.Batch(id=ids, x=np.array([1.5, 2.5, 3.5]))

    def build(edges, node_stream, vertex_stream):
        return {"none": pregel(edges, vertex_stream, send=lambda b: None, merge="sum",
                               update=lambda s, m: s),
                "inactive": pregel(edges, vertex_stream.map_batch(
                    lambda b: b.with_columns(active=np.zeros(len(b), dtype=bool))),
                    send=lambda b: timely.Batch(dst=b["dst"], x=b["src_x"]), merge="sum",
                    update=lambda s, m: timely.Batch(x=s["x"] + m["x"]))}

    got = run(build, [5, -5], [-5, BIG], [], workers, vertices=start)
    expected = [(-5, 2.5), (5, 1.5), (BIG, 3.5)]
    assert got == {"none": expected, "inactive": expected}


def float_sum_reference(ids, src, dst, values, rounds):
    state = dict(zip(ids, values))
    active = set(ids)
    for _ in range(rounds):
        got: dict = {}
        for u, v in zip(src, dst):
            if u in active:
                got.setdefault(v, []).append(state[u] / 3.0)
        for v, messages in got.items():
            state[v] = 0.25 + sum(sorted(messages))
        active = set(got)
    return sorted(state.items())


def test_float_sums_are_the_same_bit_for_bit(workers):
    rng = np.random.default_rng(7)
    ids = np.unique(rng.integers(-50, 50, 30)).astype(np.int64)
    src = rng.choice(ids, 200)
    dst = rng.choice(ids, 200)
    values = rng.random(len(ids)) * 10.0 ** rng.integers(-8, 8, len(ids))
    start = timely.Batch(id=ids, rank=values)

    def build(edges, node_stream, vertex_stream):
        return {"rank": pregel(
            edges, vertex_stream,
            send=lambda b: timely.Batch(dst=b["dst"], share=b["src_rank"] / 3.0,
                                        heard=np.ones(len(b), dtype=bool)),
            merge={"share": "sum", "heard": "count"},
            update=lambda s, m: timely.Batch(rank=0.25 + m["share"],
                                             active=m["heard"] > 0),
            max_rounds=4, with_dst=False)}

    got = run(build, src, dst, [], workers, vertices=start)["rank"]
    assert got == float_sum_reference(ids.tolist(), src.tolist(), dst.tolist(),
                                      values.tolist(), 4)


def test_merge_by_a_function_and_messages_to_sources(workers):
    # In-degree by count (messages to dst), out-degree by a merge function
    # (messages to src), in one program of one round.
    src, dst = [1, 1, 2, 3, 3, 3], [2, 3, 3, 1, 1, 3]
    ids = np.array([1, 2, 3, 4], dtype=np.int64)
    start = timely.Batch(id=ids, out=np.zeros(4, np.int64))

    def total(messages):
        keys, starts = np.unique(messages["dst"], return_index=True)
        return timely.Batch(dst=keys, n=np.add.reduceat(messages["n"], starts))

    def build(edges, node_stream, vertex_stream):
        indegree = pregel(edges, vertex_stream,
                          send=lambda b: timely.Batch(dst=b["dst"], n=np.ones(len(b))),
                          merge="count",
                          update=lambda s, m: timely.Batch(out=m["n"]), max_rounds=1)
        outdegree = pregel(edges, vertex_stream,
                           send=lambda b: timely.Batch(dst=b["src"], n=np.ones(len(b), np.int64)),
                           merge=total,
                           update=lambda s, m: timely.Batch(out=m["n"]), max_rounds=1)
        return {"in": indegree, "out": outdegree}

    got = run(build, src, dst, [], workers, vertices=start)
    assert got == {"in": [(1, 2), (2, 1), (3, 3), (4, 0)], "out": [(1, 2), (2, 1), (3, 3), (4, 0)]}


def one_worker(src, dst, vertices, **options):
    def build(edges, node_stream, vertex_stream):
        return {"out": pregel(edges, vertex_stream, **options)}

    return run(build, src, dst, [], 1, vertices=vertices)["out"]


def min_options(**more):
    options = dict(send=lambda b: timely.Batch(dst=b["dst"], x=b["src_x"]), merge="min",
                   update=lambda s, m: timely.Batch(x=np.minimum(s["x"], m["x"])))
    options.update(more)
    return options


def test_misuse_before_the_run():
    def build(**options):
        def work(worker):
            with worker.dataflow() as scope:
                _, edges = scope.new_input()
                _, vertices = scope.new_input()
                pregel(edges, vertices, **min_options(**options))
        timely.execute_directly(work)

    with pytest.raises(TypeError, match="send is a function"):
        build(send="dst")
    with pytest.raises(TypeError, match="update is a function"):
        build(update=None)
    with pytest.raises(AggregateError, match="'mean'"):
        build(merge="mean")
    with pytest.raises(AggregateError, match="'x' to 'avg'"):
        build(merge={"x": "avg"})
    with pytest.raises(TypeError, match="merge is one of"):
        build(merge=3)
    with pytest.raises(ValueError, match="max_rounds"):
        build(max_rounds=-1)
    with pytest.raises(ValueError, match="max_rounds"):
        build(max_rounds=1.5)
    with pytest.raises(ValueError, match="src and dst"):
        build(src="a", dst="a")


@pytest.mark.parametrize("src, dst, vertices, options, message", [
    ([1], [9], timely.Batch(id=np.array([1]), x=np.array([1])), {}, "vertex 9, which is not"),
    ([1], [1], timely.Batch(id=np.array([1, 1]), x=np.array([1, 2])), {},
     "vertex 1 is given more than once"),
    ([1], [2], timely.Batch(node=np.array([1, 2]), x=np.array([1, 2])), {}, "no column 'id'"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array(["a", "b"])), {},
     "state column 'x' is numeric"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"send": lambda b: [1]}, "send returns a Batch"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"send": lambda b: timely.Batch(to=b["dst"], x=b["src_x"])}, "no column 'dst'"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"send": lambda b: timely.Batch(dst=b["dst"] + 5, x=b["src_x"])},
     "message to vertex 7, which is not"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"merge": {"y": "min"}}, "are not the columns merge names"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"update": lambda s, m: timely.Batch(y=m["x"])}, "update returns the state columns"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"update": lambda s, m: timely.Batch(x=m["x"] * 0.5)}, "does not fit its int64"),
    ([1], [2], timely.Batch(id=np.array([1, 2]), x=np.array([1, 2])),
     {"update": lambda s, m: timely.Batch(x=np.zeros(3, np.int64))}, "one row per vertex"),
])
def test_misuse_while_running(src, dst, vertices, options, message):
    with pytest.raises(ColumnarError, match=message):
        one_worker(src, dst, vertices, **min_options(**options))


def test_an_edge_column_that_looks_like_a_state_column():
    def build(edges, node_stream, vertex_stream):
        odd = edges.map_batch(lambda b: b.with_columns(src_x=b["src"]))
        return {"out": pregel(odd, vertex_stream, **min_options())}

    vertices = timely.Batch(id=np.array([1, 2]), x=np.array([1, 2]))
    with pytest.raises(ColumnarError, match="'src_x' starts with 'src_'"):
        run(build, [1], [2], [], 1, vertices=vertices)


def test_a_failure_at_several_workers_names_the_cause():
    vertices = timely.Batch(id=np.array([1, 2]), x=np.array([1, 2]))
    with pytest.raises(WorkerFailed, match="vertex 9, which is not"):
        def build(edges, node_stream, vertex_stream):
            return {"out": pregel(edges, vertex_stream, **min_options())}

        run(build, [1, 2], [2, 9], [], 2, vertices=vertices)
