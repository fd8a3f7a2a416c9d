"""Connected components: columnar, and by record label propagation in a loop.

By default the example runs :func:`timely.algorithms.connected_components`
over numpy Batches of edges (``connected_components_columnar``): the edges
are spread evenly over the workers, each worker keeps a compiled union-find
over its share, and the workers' partial components are joined by min-label
propagation in an ``iterative()`` scope (``--method propagate``: each
worker's union-find covers one time's edges only). It prints its
time beside scipy's ``connected_components`` when scipy is installed.

``--records`` runs the record-API version below instead.

A random undirected graph (``--nodes``, ``--edges``, fixed ``--seed``) enters
an ``iterative()`` scope with timestamps ``(epoch, iteration)``. Every node
starts with its own id as its label; a node's label becomes the least label
among itself and its neighbours, until nothing changes. The component of a
node is then named by its least node id.

Inside the loop one stateful operator, ``Propagate``, is keyed by node: edges
and label proposals are exchanged by node, so each worker owns the adjacency
lists and labels of its nodes. When an iteration is complete (a notification),
it takes the least proposal per node; a proposal that improves the node's
label updates it, is sent to every neighbour through the loop's feedback (one
iteration later), and leaves the loop as ``(node, label)``. A proposal that
does not improve the label is dropped there: nothing circulates once the
labels stop improving, and the loop drains. Outside the loop, ``Labels``
keeps the least label that left per node and emits one ``(node, label)`` per
node when the epoch is complete. The example checks the labels against a
union-find over the same edges and prints the number of components and the
number of propagation rounds (iterations in which some label improved after
the initial one).

Cost per iteration: one dict lookup per proposal and, per improved node, one
proposal per neighbour; the number of iterations is the largest distance from
a node to the least node of its component.

Run: ``python -m timely.examples.connected_components [--nodes N] [--edges M] [--workers W]
[--method union-find|propagate] [--records]``

>>> labels, rounds = connected_components(6, [(0, 1), (1, 2), (4, 5), (3, 4)])
>>> labels
[0, 0, 0, 3, 3, 3]
>>> rounds
2
>>> connected_components_columnar(6, [(0, 1), (1, 2), (4, 5), (3, 4)])
[0, 0, 0, 3, 3, 3]
"""

from __future__ import annotations

import argparse
import functools
import random
import time

import numpy as np

import timely
from timely.algorithms import connected_components as columnar_components

SEED = 20240601
PROPOSE, IMPROVED = 0, 1


def random_graph(nodes: int, edges: int, seed: int = SEED) -> list[tuple[int, int]]:
    """``edges`` undirected edges between uniformly drawn nodes in ``range(nodes)``."""
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]


def union_find_labels(nodes: int, edges) -> list[int]:
    """The least node id of each node's component, by union-find (the plain-Python answer)."""
    parent = list(range(nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            # The smaller root wins, so every root is its component's least node.
            if ru < rv:
                parent[rv] = ru
            else:
                parent[ru] = rv
    return [find(x) for x in range(nodes)]


def fold_least(least: dict, proposals) -> None:
    """Keeps in ``least`` the smallest label proposed for each node."""
    for node, label in proposals:
        held = least.get(node)
        if held is None or label < held:
            least[node] = label


def propagate(edges, proposals, iterations: list):
    """The ``Propagate`` operator: ``(PROPOSE, (neighbour, label))`` records for the
    loop and ``(IMPROVED, (node, label))`` records for the output, per iteration."""
    adjacency: dict[int, list[int]] = {}
    labels: dict[int, int] = {}
    new_edges: dict = {}  # time -> edges that arrived at it
    best: dict = {}  # time -> {node: least proposal at that time}

    def logic(edge_input, proposal_input, output, notificator):
        for cap, data in edge_input:
            t = cap.time
            if t not in new_edges:
                new_edges[t] = []
                notificator.notify_at(cap)
            new_edges[t].extend(data)
        for cap, data in proposal_input:
            t = cap.time
            least = best.get(t)
            if least is None:
                least = best[t] = {}
                notificator.notify_at(cap)
            fold_least(least, data)
        for cap, _ in notificator:
            t = cap.time
            # Edges first: an edge at this time must see this time's labels.
            for u, v in new_edges.pop(t, ()):
                adjacency.setdefault(u, []).append(v)
            least = best.pop(t, None)
            if not least:
                continue
            session = output.session(cap)
            improved = False
            for node, label in least.items():
                held = labels.get(node)
                if held is None or label < held:
                    labels[node] = label
                    improved = True
                    session.give((IMPROVED, (node, label)))
                    session.give_iterator([(PROPOSE, (n, label)) for n in adjacency.get(node, ())])
            if improved and t[-1] > iterations[0]:
                iterations[0] = t[-1]

    by_source = timely.Exchange(lambda edge: edge[0])
    by_node = timely.Exchange(lambda proposal: proposal[0])
    return edges.binary_notify(proposals, by_source, by_node, "Propagate", [], logic)


def least_label(stream):
    """The ``Labels`` operator: one ``(node, least label)`` per node per complete epoch.

    Its input comes from ``Propagate``, which already runs on the worker that
    owns each node, so the records stay where they are (``Pipeline``).
    """
    pending: dict = {}

    def logic(input, output, notificator):
        for cap, data in input:
            least = pending.get(cap.time)
            if least is None:
                least = pending[cap.time] = {}
                notificator.notify_at(cap)
            fold_least(least, data)
        for cap, _ in notificator:
            output.session(cap).give_iterator(sorted(pending.pop(cap.time).items()))

    return stream.unary_notify(timely.Pipeline(), "Labels", [], logic)


def _work(worker, nodes: int, edges: list) -> tuple[dict[int, int], int]:
    labels: dict[int, int] = {}
    iterations = [0]
    with worker.dataflow() as scope:
        edge_input, edge_stream = scope.new_input()
        node_input, node_stream = scope.new_input()
        with scope.iterative() as inner:
            handle, loop = inner.feedback(1)
            proposals = node_stream.enter(inner).concat(loop)
            out = propagate(edge_stream.enter(inner), proposals, iterations)
            to_loop, improved = out.partition(2, lambda record: record)
            to_loop.connect_loop(handle)
            left = improved.leave()
        least_label(left).inspect(lambda pair: labels.__setitem__(*pair))

    index, peers = worker.index, worker.peers
    # Both directions of every edge; each worker introduces its share.
    mine = edges[index::peers]
    edge_input.send_batch([(u, v) for u, v in mine] + [(v, u) for u, v in mine])
    node_input.send_batch([(n, n) for n in range(index, nodes, peers)])
    edge_input.close()
    node_input.close()
    worker.drain()
    return labels, iterations[0]


def connected_components(nodes: int, edges, workers: int = 1, **options) -> tuple[list[int], int]:
    """Per node, the least node id of its component; and the propagation rounds.

    ``options`` go to :func:`timely.execute` (e.g. ``schedule_seed``, ``check_progress``).
    """
    parts = timely.execute(
        functools.partial(_work, nodes=nodes, edges=list(edges)), workers=workers, **options
    )
    labels: list = [None] * nodes
    for part, _ in parts:
        for node, label in part.items():
            if labels[node] is not None:
                raise AssertionError(f"node {node} labelled on two workers")
            labels[node] = label
    return labels, max(rounds for _, rounds in parts)


def _columnar_work(worker, nodes: int, src: np.ndarray, dst: np.ndarray, method: str):
    got = []
    with worker.dataflow() as scope:
        edge_input, edges = scope.new_input()
        node_input, node_stream = scope.new_input()
        columnar_components(edges, node_stream, method=method).inspect_batch(
            lambda t, b: got.append(b))
    k, p = worker.index, worker.peers
    edge_input.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p]))
    node_input.send_batch(timely.Batch(node=np.arange(k, nodes, p, dtype=np.int64)))
    edge_input.close()
    node_input.close()
    worker.drain()
    return got


def connected_components_columnar(nodes: int, edges, workers: int = 1, method: str = "union-find",
                                  **options) -> list[int]:
    """Per node, the least node id of its component, by
    :func:`timely.algorithms.connected_components` over Batches of edges.
    ``edges``: pairs, or a pair of int arrays ``(src, dst)``."""
    if isinstance(edges, tuple) and len(edges) == 2 and isinstance(edges[0], np.ndarray):
        src, dst = edges
    else:
        pairs = np.array(list(edges), dtype=np.int64).reshape(-1, 2)
        src, dst = pairs[:, 0].copy(), pairs[:, 1].copy()
    parts = timely.execute(
        functools.partial(_columnar_work, nodes=nodes, src=src, dst=dst, method=method),
        workers=workers, **options)
    labels = np.full(nodes, -1, dtype=np.int64)
    for part in parts:
        for batch in part:
            if (labels[batch["node"]] != -1).any():
                raise AssertionError("a node labelled twice")
            labels[batch["node"]] = batch["label"]
    return labels.tolist()


def main(argv=None) -> tuple[list[int], int | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10**5, help="nodes (default 10^5)")
    parser.add_argument("--edges", type=int, default=10**5, help="edges (default 10^5)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("-w", "--workers", type=int, default=1, help="worker count (default 1)")
    parser.add_argument("--method", choices=("union-find", "propagate"),
                        default="union-find", help="the columnar version's method")
    parser.add_argument("--records", action="store_true",
                        help="run the record-API label propagation instead")
    args = parser.parse_args(argv)

    edges = random_graph(args.nodes, args.edges, args.seed)
    start = time.perf_counter()
    expected = union_find_labels(args.nodes, edges)
    baseline = time.perf_counter() - start

    if not args.records:
        src = np.array([u for u, _ in edges], dtype=np.int64)
        dst = np.array([v for _, v in edges], dtype=np.int64)
        start = time.perf_counter()
        labels = connected_components_columnar(args.nodes, (src, dst), args.workers, args.method)
        elapsed = time.perf_counter() - start
        if labels != expected:
            raise SystemExit("wrong labels")
        print(f"{args.nodes:,} nodes, {args.edges:,} edges, {args.workers} worker(s), columnar "
              f"({args.method}): {len(set(labels)):,} components; labels match union-find")
        line = f"timely: {elapsed:.3f} s; union-find (Python): {baseline:.3f} s"
        try:
            from scipy.sparse import coo_matrix, csgraph
        except ImportError:
            print(line)
            return labels, None
        start = time.perf_counter()
        matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(args.nodes,) * 2).tocsr()
        csgraph.connected_components(matrix, directed=False)
        scipy_time = time.perf_counter() - start
        print(f"{line}; scipy: {scipy_time:.3f} s ({elapsed / scipy_time:.1f}x)")
        return labels, None

    start = time.perf_counter()
    labels, rounds = connected_components(args.nodes, edges, args.workers)
    elapsed = time.perf_counter() - start
    if labels != expected:
        wrong = [n for n in range(args.nodes) if labels[n] != expected[n]][:5]
        raise SystemExit(f"wrong labels, e.g. {[(n, labels[n], expected[n]) for n in wrong]}")
    components = len(set(labels))
    print(
        f"{args.nodes:,} nodes, {args.edges:,} edges, {args.workers} worker(s): "
        f"{components:,} components after {rounds} propagation rounds; labels match union-find"
    )
    print(f"timely: {elapsed:.3f} s; union-find: {baseline:.3f} s")
    return labels, rounds


if __name__ == "__main__":
    main()
