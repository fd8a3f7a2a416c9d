"""Smoke tests of the dataflow examples in ``timely/examples/``: each example's
function at small sizes, its answer checked against a plain-Python one; its
``main`` once; its docstring examples.

"""

from __future__ import annotations

import collections
import doctest
import importlib
import random

import pytest

import timely
from timely.examples import connected_components, count_vertex, hello, wordcount

WORKERS = [1, 2, 3]

EXAMPLES = ["hello", "wordcount", "connected_components", "count_vertex"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_docstring_examples(name):
    module = importlib.import_module(f"timely.examples.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0


# -- hello -------------------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_hello(workers):
    seen = hello.hello(rounds=6, workers=workers, quiet=True)
    assert len(seen) == workers
    assert sorted(x for part in seen for x in part) == [2 * r for r in range(6)]
    for index, part in enumerate(seen):
        # exchange routed each value r to worker r % peers; every round completes in order.
        assert part == sorted(part)
        assert all((x // 2) % workers == index for x in part)


def test_hello_main(capsys):
    hello.main(["-w", "1", "--rounds", "3"])
    assert capsys.readouterr().out.splitlines() == ["worker 0: 0", "worker 0: 2", "worker 0: 4"]


# -- wordcount ---------------------------------------------------------------


def test_vocabulary():
    vocabulary = wordcount.make_vocabulary()
    assert len(vocabulary) == len(set(vocabulary)) == wordcount.VOCABULARY
    assert all(4 <= len(w) <= 10 and w.isalpha() and w.islower() for w in vocabulary)
    assert vocabulary == wordcount.make_vocabulary()  # fixed seed
    words = wordcount.make_words(2000)
    assert words == wordcount.make_words(2000)
    assert set(words) <= set(vocabulary)


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize(("n", "epochs", "batch"), [(5000, 4, 100), (3, 5, 2), (0, 2, 10)])
def test_wordcount(workers, n, epochs, batch):
    words = wordcount.make_words(n, seed=3, vocabulary_size=300)
    counts = wordcount.wordcount(words, workers=workers, epochs=epochs, batch=batch)
    assert counts == dict(collections.Counter(words))


def test_wordcount_emits_running_totals_per_epoch():
    epochs = [["a", "b", "a"], ["a"], [], ["c", "b"]]

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = wordcount.count_operator(stream).capture()
        for epoch, batch in enumerate(epochs):
            handle.send_batch(batch)
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [
        (0, [("a", 2), ("b", 1)]),
        (1, [("a", 3)]),
        (3, [("b", 2), ("c", 1)]),
    ]


def test_wordcount_main(capsys):
    counts = wordcount.main(["--words", "3000", "--epochs", "3"])
    assert sum(counts.values()) == 3000
    out = capsys.readouterr().out
    assert "counts match collections.Counter" in out
    assert "M words/s" in out


# -- connected components ----------------------------------------------------


def synchronous_propagation(nodes: int, edges) -> tuple[list[int], int]:
    """Labels and rounds of plain synchronous label propagation: in each round
    every node takes the least label among itself and its neighbours."""
    neighbours: list[list[int]] = [[] for _ in range(nodes)]
    for u, v in edges:
        neighbours[u].append(v)
        neighbours[v].append(u)
    labels = list(range(nodes))
    rounds = 0
    while True:
        new = [min([labels[x]] + [labels[y] for y in neighbours[x]]) for x in range(nodes)]
        if new == labels:
            return labels, rounds
        labels = new
        rounds += 1


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize(
    ("nodes", "edges", "seed"), [(200, 150, 1), (200, 400, 2), (50, 0, 3), (1, 1, 4)]
)
def test_connected_components_random(workers, nodes, edges, seed):
    graph = connected_components.random_graph(nodes, edges, seed)
    labels, rounds = connected_components.connected_components(nodes, graph, workers=workers)
    assert labels == connected_components.union_find_labels(nodes, graph)
    assert (labels, rounds) == synchronous_propagation(nodes, graph)


def test_connected_components_path():
    # A path with node 0 at position 3: its label needs 8 rounds to reach the far end.
    n = 12
    order = list(range(1, n))
    random.Random(5).shuffle(order)
    order.insert(3, 0)
    graph = [(order[i], order[i + 1]) for i in range(n - 1)] + [(order[5], order[5])]
    labels, rounds = connected_components.connected_components(n, graph)
    assert labels == [0] * n
    assert rounds == n - 1 - 3


def test_union_find_labels():
    assert connected_components.union_find_labels(5, [(4, 3), (3, 1), (2, 2)]) == [0, 1, 2, 1, 1]


def test_connected_components_main(capsys):
    labels, rounds = connected_components.main(["--nodes", "300", "--edges", "200", "--records"])
    assert len(labels) == 300 and rounds > 0
    assert "labels match union-find" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["union-find", "propagate"])
def test_connected_components_columnar_main(capsys, method):
    labels, _ = connected_components.main(
        ["--nodes", "300", "--edges", "200", "-w", "2", "--method", method])
    assert labels == connected_components.union_find_labels(
        300, connected_components.random_graph(300, 200))
    assert "labels match union-find" in capsys.readouterr().out


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize(("nodes", "edges", "seed"), [(200, 150, 1), (50, 0, 3), (1, 1, 4)])
def test_connected_components_columnar(workers, nodes, edges, seed):
    graph = connected_components.random_graph(nodes, edges, seed)
    expected = connected_components.union_find_labels(nodes, graph)
    for method in ("union-find", "propagate"):
        assert connected_components.connected_components_columnar(
            nodes, graph, workers=workers, method=method) == expected


# -- the Naiad Count vertex --------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_count_vertex(workers):
    epochs = count_vertex.make_epochs(8, 40, seed=2) + [[], ["x"]]
    counts = count_vertex.count_per_epoch(epochs, workers=workers)
    assert counts == [(e, len(batch)) for e, batch in enumerate(epochs) if batch]


def test_select_and_count_vertices():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            selected = stream.vertex(count_vertex.Select(str.upper)).capture()
            counted = stream.vertex(count_vertex.Count()).capture()
        for epoch, batch in enumerate([["a", "b"], ["c"], []]):
            handle.send_batch(batch)
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return selected.extract(), counted.extract()

    selected, counted = timely.execute_directly(work)
    assert selected == [(0, ["A", "B"]), (1, ["C"])]
    assert counted == [(0, [2]), (1, [1])]


def test_count_vertex_main(capsys):
    counts = count_vertex.main(["--epochs", "3", "--records", "20"])
    out = capsys.readouterr().out
    assert "counts match a plain count" in out
    assert len(out.splitlines()) == len(counts) + 1


# -- every example under adversarial schedules -------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_examples_under_shuffled_schedules(seed):
    # Operators run in a random order each step, and every message is checked
    # against its input's frontier.
    options = {"schedule_seed": seed, "check_progress": True}
    assert hello.hello(rounds=4, quiet=True, **options) == [[0, 2, 4, 6]]
    words = wordcount.make_words(3000, seed=seed, vocabulary_size=200)
    assert wordcount.wordcount(words, epochs=3, batch=64, **options) == dict(
        collections.Counter(words)
    )
    graph = connected_components.random_graph(150, 120, seed)
    labels, rounds = connected_components.connected_components(150, graph, **options)
    assert (labels, rounds) == synchronous_propagation(150, graph)
    epochs = count_vertex.make_epochs(5, 20, seed=seed)
    assert count_vertex.count_per_epoch(epochs, **options) == [
        (e, len(b)) for e, b in enumerate(epochs) if b
    ]
