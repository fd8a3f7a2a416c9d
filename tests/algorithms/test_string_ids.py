"""Every graph algorithm over text vertex ids (``ids="string"``) against
the same algorithm over int64 ids: random graphs whose vertices are
strings (the empty string, unicode, strings that differ only in case,
long ones), given as StringColumns, numpy ``U`` arrays and object arrays
(a different kind on each worker), at 1, 2 and 3 workers. The expected
answer numbers the strings in sorted order, runs the int64 algorithm and
maps the ids back; it must match exactly (GraphX PageRank, whose sums are
not ordered, to rounding). Also: a text column with ``ids="int64"`` and
an int column with ``ids="string"`` raise a ColumnarError naming the
column, string ids at a second time raise, and the wrapped functions keep
the signatures of the algorithms they wrap."""

from __future__ import annotations

import inspect
import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely import algorithms
from timely.algorithms import (
    bfs,
    bfs_paths,
    connected_components,
    degrees,
    label_propagation,
    local_clustering_coefficient,
    pagerank,
    personalized_pagerank,
    pregel,
    shortest_paths,
    sssp,
    strongly_connected_components,
    triangle_count,
    triangles,
)
from timely.container import StringColumn
from timely.errors import WorkerFailed

KINDS = ("strings", "unicode", "objects")


def column(values: list, kind: str):
    """``values`` as a column of ``kind``: a StringColumn, a numpy ``U``
    array, an object array of str, or (``"int64"``) int64."""
    if kind == "strings":
        return StringColumn.from_strings(values)
    if kind == "unicode":
        return np.array(values, dtype=str)
    if kind == "objects":
        return np.array(values, dtype=object)
    return np.array(values, dtype=np.int64)


def run(algorithms: dict, inputs: dict, workers: int, kinds=("int64",)) -> dict:
    """Per name of ``algorithms`` (``build(streams)`` making a stream from
    a dict of input streams), its rows over all workers, in the order of the
    workers and of arrival. ``inputs``: per input, ``(id columns, other
    columns)`` as lists; worker ``k`` sends every ``workers``-th row, its id
    columns of kind ``kinds[k % len(kinds)]``."""

    def work(worker):
        got: dict = defaultdict(list)
        with worker.dataflow() as scope:
            opened = {name: scope.new_input() for name in inputs}
            streams = {name: stream for name, (_, stream) in opened.items()}
            for name, build in algorithms.items():
                build(streams).inspect_batch(
                    lambda t, b, name=name: got[name].extend(b.to_records()))
        k, p = worker.index, worker.peers
        kind = kinds[k % len(kinds)]
        for name, (handle, _) in opened.items():
            ids, others = inputs[name]
            handle.send_batch(timely.Batch(
                {**{c: column(v[k::p], kind) for c, v in ids.items()},
                 **{c: np.array(v[k::p]) for c, v in others.items()}}))
            handle.close()
        worker.drain()
        return dict(got)

    merged: dict = {name: [] for name in algorithms}
    for part in timely.execute(work, workers=workers):
        for name, rows in part.items():
            merged[name].extend(rows)
    return merged


# -- random graphs of text ids ------------------------------------------------------

# No trailing NUL: a numpy U array cannot hold one.
TEXT = (st.sampled_from(["", "a", "A", "b", "B", "ab", "aB", "Ab", "é", "É", "e", "日本",
                         "😀", "a\x00b", "x" * 300, "x" * 299 + "y", " ", "Straße"])
        | st.text(max_size=6).filter(lambda s: not s.endswith("\x00")))
NOT_A_VERTEX = "\u2603 no vertex"


@st.composite
def graphs(draw):
    """``(edges, weights, nodes, marks, targets)`` over a few distinct
    strings: edges with duplicates and self-loops, often along a chain;
    nodes; two sets of named vertices, which may name no vertex."""
    ids = draw(st.lists(TEXT, min_size=1, max_size=8, unique=True))
    ids = [v for v in ids if v != NOT_A_VERTEX]
    pick = st.sampled_from(ids)
    edges = draw(st.lists(st.tuples(pick, pick), max_size=14))
    chain = draw(st.permutations(ids))[:draw(st.integers(0, 6))]
    edges += list(itertools.pairwise(chain))
    if edges and draw(st.booleans()):
        edges += draw(st.lists(st.sampled_from(edges), max_size=3))
    weights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=len(edges),
                            max_size=len(edges)))
    nodes = draw(st.lists(pick, max_size=3))
    named = pick | st.just(NOT_A_VERTEX)
    marks = draw(st.lists(named, max_size=3)) + chain[:1]
    targets = draw(st.lists(named, max_size=3)) + chain[-1:]
    return edges, weights, nodes, marks, targets


def _relax(b: timely.Batch) -> timely.Batch:
    return timely.Batch(dst=b["dst"], dist=b["src_dist"] + b["weight"])


def _keep_least(states: timely.Batch, got: timely.Batch) -> timely.Batch:
    return timely.Batch(dist=np.minimum(states["dist"], got["dist"]))


def every_algorithm(iterations: int, directed: bool, source, ids: str) -> dict:
    """Per name: ``build(streams)``, and the positions of the output's id
    columns (None: every column)."""
    return {
        "cc": (lambda s: connected_components(s["edges"], s["nodes"], ids=ids),
               (0, 1)),
        "cc_propagate": (lambda s: connected_components(s["edges"], s["nodes"],
                                                        method="propagate", ids=ids),
                         (0, 1)),
        "scc": (lambda s: strongly_connected_components(s["edges"], s["nodes"], ids=ids),
                (0, 1)),
        "cdlp": (lambda s: label_propagation(s["edges"], s["nodes"], iterations,
                                             directed=directed, ids=ids), (0, 1)),
        "pagerank": (lambda s: pagerank(s["edges"], iterations, nodes=s["nodes"], ids=ids),
                     (0,)),
        "pagerank_normalized": (lambda s: pagerank(s["edges"], iterations, nodes=s["nodes"],
                                                   definition="normalized", ids=ids),
                                (0,)),
        "ppr": (lambda s: personalized_pagerank(s["edges"], s["marks"], s["nodes"], iterations,
                                                ids=ids), (0,)),
        "bfs": (lambda s: bfs(s["edges"], s["marks"], ids=ids), (0,)),
        "bfs_paths": (lambda s: bfs_paths(s["edges"], s["marks"], s["targets"],
                                          directed=directed, ids=ids), None),
        "landmarks": (lambda s: shortest_paths(s["edges"], s["marks"], s["nodes"],
                                               directed=directed, ids=ids),
                      (0, 1)),
        "sssp": (lambda s: sssp(s["edges"], source, s["nodes"], directed=directed, ids=ids),
                 (0,)),
        "lcc": (lambda s: local_clustering_coefficient(s["edges"], s["nodes"],
                                                       directed=directed, ids=ids), (0,)),
        "triangles": (lambda s: triangles(s["edges"], s["nodes"], ids=ids), (0,)),
        "triangle_count": (lambda s: triangle_count(s["edges"], ids=ids), ()),
        "degrees": (lambda s: degrees(s["edges"], s["nodes"], ids=ids), (0,)),
        "pregel": (lambda s: pregel(s["edges"], s["vertices"], send=_relax, merge="min",
                                    update=_keep_least, key="node", ids=ids), (0,)),
    }


def graph_inputs(edges, weights, nodes, marks, targets, source, name=lambda v: v) -> dict:
    """The inputs of :func:`every_algorithm`, each id through ``name``."""
    vertices = sorted({v for e in edges for v in e} | set(nodes))
    ends = [[name(v) for v in values] for values in zip(*edges)] if edges else [[], []]
    return {
        "edges": ({"src": ends[0], "dst": ends[1]}, {"weight": weights}),
        "nodes": ({"node": [name(v) for v in nodes]}, {}),
        "marks": ({"node": [name(v) for v in marks]}, {}),
        "targets": ({"node": [name(v) for v in targets]}, {}),
        "vertices": ({"node": [name(v) for v in vertices]},
                     {"dist": [0.0 if v == source else math.inf for v in vertices]}),
    }


def expected_answers(graph, iterations: int, directed: bool, source) -> dict:
    """The int64 algorithms over the strings numbered in sorted order, at
    one worker, the ids mapped back."""
    edges, weights, nodes, marks, targets = graph
    order = sorted({v for e in edges for v in e} | set(nodes) | set(marks) | set(targets))
    number = {v: i for i, v in enumerate(order)}
    built = every_algorithm(iterations, directed, number.get(source, 10**9), "int64")
    got = run({n: build for n, (build, _) in built.items()},
              graph_inputs(edges, weights, nodes, marks, targets, source, number.get), 1)
    answers = {}
    for name, (_, positions) in built.items():
        rows = [tuple(order[x] if positions is None or i in positions else x
                      for i, x in enumerate(row)) for row in got[name]]
        answers[name] = rows if name == "bfs_paths" else sorted(rows)
    return answers


def assert_same(got: dict, expected: dict) -> None:
    for name, want in expected.items():
        rows = got[name] if name == "bfs_paths" else sorted(got[name])
        if name != "pagerank":
            assert rows == want, name
            continue
        assert [r[0] for r in rows] == [r[0] for r in want], name
        for (_, rank), (_, expected_rank) in zip(rows, want):
            assert math.isclose(rank, expected_rank, rel_tol=1e-9), name


@settings(max_examples=capped(16), deadline=None)
@given(graphs(), st.integers(0, 4), st.booleans(), st.integers(0, 2), st.data())
def test_string_ids_give_the_int64_answer_at_any_worker_count(graph, iterations, directed,
                                                             first_kind, data):
    edges, weights, nodes, marks, targets = graph
    candidates = sorted({v for e in edges for v in e} | set(nodes)) + [NOT_A_VERTEX]
    source = data.draw(st.sampled_from(candidates), label="source")
    expected = expected_answers(graph, iterations, directed, source)
    built = every_algorithm(iterations, directed, source, "string")
    kinds = KINDS[first_kind:] + KINDS[:first_kind]
    inputs = graph_inputs(edges, weights, nodes, marks, targets, source)
    for workers in (1, 2, 3):
        got = run({n: build for n, (build, _) in built.items()}, inputs, workers, kinds)
        assert_same(got, expected)


# -- small cases by hand ------------------------------------------------------------


def one(build, edges, nodes=(), workers: int = 1, kinds=("strings",)) -> list:
    """The sorted rows of ``build(edges, nodes)`` over text ids."""
    src, dst = ([list(c) for c in zip(*edges)] if edges else [[], []])
    got = run({"a": lambda s: build(s["edges"], s["nodes"])},
              {"edges": ({"src": src, "dst": dst}, {}), "nodes": ({"node": list(nodes)}, {})},
              workers, kinds)
    return sorted(got["a"])


def test_the_least_string_labels_a_component(workers):
    edges = [("b", "a"), ("c", "B"), ("é", "e"), ("", "zz")]
    rows = one(lambda e, n: connected_components(e, n, ids="string"), edges, ["solo"],
               workers)
    assert rows == [("", ""), ("B", "B"), ("a", "a"), ("b", "a"), ("c", "B"), ("e", "e"),
                    ("solo", "solo"), ("zz", ""), ("é", "e")]


def test_bfs_paths_are_sorted_by_the_strings(workers):
    edges = [("s", "b"), ("s", "a"), ("b", "t"), ("a", "t"), ("s", "B"), ("B", "t")]
    got = run({"p": lambda s: bfs_paths(s["edges"], s["from"], s["to"], ids="string")},
              {"edges": ({"src": [u for u, _ in edges], "dst": [v for _, v in edges]}, {}),
               "from": ({"node": ["s"]}, {}), "to": ({"node": ["t"]}, {})},
              workers, KINDS)
    assert got["p"] == [("s", "B", "t"), ("s", "a", "t"), ("s", "b", "t")]


def test_sssp_from_a_string_source(workers):
    got = run({"d": lambda s: sssp(s["edges"], "from", ids="string")},
              {"edges": ({"src": ["from", "from", "x"], "dst": ["x", "y", "y"]},
                         {"weight": [1.0, 5.0, 1.5]})}, workers, KINDS)
    assert sorted(got["d"]) == [("from", 0.0), ("x", 1.0), ("y", 2.5)]


# -- errors -------------------------------------------------------------------------

ALGORITHMS = {
    "connected_components": lambda e, n, ids: connected_components(e, n, ids=ids),
    "bfs": lambda e, n, ids: bfs(e, n, ids=ids),
    "pagerank": lambda e, n, ids: pagerank(e, 2, nodes=n, ids=ids),
    "label_propagation": lambda e, n, ids: label_propagation(e, n, 2, ids=ids),
    "local_clustering_coefficient": lambda e, n, ids: local_clustering_coefficient(e, n,
                                                                                   ids=ids),
    "triangles": lambda e, n, ids: triangles(e, n, ids=ids),
    "triangle_count": lambda e, n, ids: triangle_count(e, ids=ids),
    "degrees": lambda e, n, ids: degrees(e, n, ids=ids),
    "personalized_pagerank": lambda e, n, ids: personalized_pagerank(e, n, ids=ids),
    "shortest_paths": lambda e, n, ids: shortest_paths(e, n, ids=ids),
    "bfs_paths": lambda e, n, ids: bfs_paths(e, n, n, ids=ids),
    "strongly_connected_components": lambda e, n, ids: strongly_connected_components(
        e, n, ids=ids),
}


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_ids_of_the_wrong_kind_raise_naming_the_column(name):
    build = ALGORITHMS[name]
    # Text where int64 is expected: "12" must not be read as 12.
    with pytest.raises(timely.ColumnarError, match="column 'src' holds text"):
        one(lambda e, n: build(e, n, "int64"), [("1", "2")], kinds=("unicode",))
    with pytest.raises(timely.ColumnarError, match="column 'src' holds int64, not text"):
        one(lambda e, n: build(e, n, "string"), [(1, 2)], kinds=("int64",))
    if name != "triangle_count":
        def text_nodes(e, n):
            ints = e.map_batch(lambda b: timely.Batch(src=np.zeros(len(b), np.int64),
                                                      dst=np.ones(len(b), np.int64)))
            return build(ints, n, "int64")

        with pytest.raises(timely.ColumnarError, match="column 'node' holds text"):
            one(text_nodes, [("a", "b")], ["7"], kinds=("objects",))


def test_pregel_and_sssp_ids_of_the_wrong_kind():
    def program(e, n, ids):
        vertices = n.map_batch(lambda b: b.with_columns(x=np.zeros(len(b))))
        return pregel(e, vertices, send=lambda b: None, merge="min",
                      update=lambda s, m: s.select(["x"]), key="node", ids=ids)

    with pytest.raises(timely.ColumnarError, match="column 'src' holds text"):
        one(lambda e, n: program(e, n, "int64"), [("1", "2")], kinds=("strings",))
    with pytest.raises(timely.ColumnarError, match="column 'src' holds int64"):
        one(lambda e, n: program(e, n, "string"), [(1, 2)], kinds=("int64",))
    with pytest.raises(timely.ColumnarError, match="the source is a str"):
        one(lambda e, n: sssp(e, 1, n, ids="string"), [("a", "b")])
    with pytest.raises(timely.ColumnarError, match="source is an int"):
        one(lambda e, n: sssp(e, "a", n), [(1, 2)], kinds=("int64",))
    with pytest.raises(timely.ColumnarError, match="ids is 'int64' or 'string'"):
        one(lambda e, n: degrees(e, n, ids="text"), [("a", "b")])


@pytest.mark.parametrize("workers", [1, 2])
def test_string_ids_at_a_second_time_raise(workers):
    def work(worker):
        got = []
        with worker.dataflow() as scope:
            handle, edges = scope.new_input()
            probe = connected_components(edges, ids="string").inspect_batch(
                lambda t, b: got.extend(b.to_records())).probe()
        if worker.index == 0:
            handle.send_batch(timely.Batch(src=["a"], dst=["b"]))
        handle.advance_to(1)
        worker.step_while(lambda: probe.less_than(1))
        if worker.index == 0:
            handle.send_batch(timely.Batch(src=["c"], dst=["a"]))
        handle.close()
        worker.drain()
        return got

    # One worker raises the ColumnarError; at several, the others stop with WorkerFailed.
    with pytest.raises((timely.ColumnarError, WorkerFailed), match="arrive at one time"):
        timely.execute(work, workers=workers)


# -- signatures ---------------------------------------------------------------------

def test_every_algorithm_takes_ids_and_says_what_it_does():
    for name in set(algorithms.__all__) - {"rmat_edges"}:
        fn = getattr(algorithms, name)
        params = inspect.signature(fn).parameters
        assert params["ids"].default == "int64", name
        assert params["ids"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert "``ids``" in fn.__doc__ and '"string"' in fn.__doc__, name
