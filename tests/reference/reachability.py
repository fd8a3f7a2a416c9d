"""Oracle for reachability: the Builder/Tracker algorithm of the Rust crate, in plain Python,
and an independent brute-force evaluation of the frontiers the safety property defines.

Locations are ``(node, kind, port)`` tuples with ``kind`` 0 for a target (operator
input) and 1 for a source (operator output); tuple order is the order the Rust
crate gives ``Location`` (node, then targets before sources, then port). Node 0
is the scope itself seen from inside: its sources are the scope inputs, its
targets the scope outputs.

Tracker (``propagate_all``):

1. pending source/target updates are consolidated and applied to each
   location's ``pointstamps`` counts; every change in a pointstamp frontier is
   added to the total count, pushed along the location's compiled summaries to
   the scope outputs (``output_changes``; node 0's own locations are left out,
   as in the crate), and pushed onto a worklist as ``(time, location, diff)``;
2. the worklist is processed in order of (lexicographic time, location), equal
   (time, location) entries coalesced; each entry updates the location's
   ``implications`` counts; a change in that frontier is recorded in
   ``pushed_changes`` and travels on: from a target through the node's
   summaries to its sources, from a source along edges (zero summary) to
   targets.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from tests.reference.change_batch import ChangeBatch
from tests.reference.frontier import Antichain, MutableAntichain, minimal
from tests.reference.timestamp import PathSummary, from_coords, sort_key, validate
from timely.errors import CycleError, GraphError, SummaryError

TARGET = 0
SOURCE = 1


class Source(NamedTuple):
    node: int
    port: int


class Target(NamedTuple):
    node: int
    port: int


def target_loc(node: int, port: int) -> tuple[int, int, int]:
    return (node, TARGET, port)


def source_loc(node: int, port: int) -> tuple[int, int, int]:
    return (node, SOURCE, port)


def insert_summary(antichain: list[PathSummary], summary: PathSummary) -> bool:
    """Adds ``summary`` unless some element is <= it, dropping elements >= it."""
    if any(s.less_equal(summary) for s in antichain):
        return False
    antichain[:] = [s for s in antichain if not summary.less_equal(s)]
    antichain.append(summary)
    return True


def summary_antichain(values: Iterable[object], arity: int) -> list[PathSummary]:
    out: list[PathSummary] = []
    for value in values:
        summary = value if isinstance(value, PathSummary) else PathSummary(value)
        if summary.arity != arity:
            raise SummaryError(f"summary {value!r} has arity {summary.arity}, expected {arity}")
        insert_summary(out, summary)
    return out


def sorted_summaries(antichain: Iterable[PathSummary]) -> list[object]:
    """The increments of a summary antichain, lexicographically sorted."""
    return sorted((s.increments for s in antichain), key=sort_key)


class Builder:
    def __init__(self, arity: int = 1):
        self.arity = arity
        self.shapes: list[tuple[int, int]] = []
        # nodes[n][i][o]: antichain of summaries from input i to output o of node n.
        self.nodes: list[list[list[list[PathSummary]]]] = []
        self.edges: list[tuple[tuple[int, int], tuple[int, int]]] = []

    def add_node(
        self, index: int, inputs: int, outputs: int, summary: Sequence[Sequence[Iterable[object]]]
    ) -> None:
        if index < 0 or inputs < 0 or outputs < 0:
            raise GraphError(f"bad node {index} with {inputs} inputs and {outputs} outputs")
        if len(summary) != inputs or any(len(row) != outputs for row in summary):
            raise GraphError(f"node {index}: summary shape does not match {inputs}x{outputs}")
        while len(self.shapes) <= index:
            self.shapes.append((0, 0))
            self.nodes.append([])
        self.shapes[index] = (inputs, outputs)
        self.nodes[index] = [
            [summary_antichain(cell, self.arity) for cell in row] for row in summary
        ]

    def add_edge(self, source: tuple[int, int], target: tuple[int, int]) -> None:
        self.edges.append((tuple(source), tuple(target)))  # type: ignore[arg-type]

    def _check(self) -> None:
        if not self.shapes:
            raise GraphError("no nodes")
        for (sn, sp), (tn, tp) in self.edges:
            if not (0 <= sn < len(self.shapes) and 0 <= sp < self.shapes[sn][1]):
                raise GraphError(f"edge from unknown source ({sn}, {sp})")
            if not (0 <= tn < len(self.shapes) and 0 <= tp < self.shapes[tn][0]):
                raise GraphError(f"edge to unknown target ({tn}, {tp})")

    def zero_graph(self) -> dict[tuple[int, int, int], list[tuple[int, int, int]]]:
        """Successors along edges and along node connections holding the zero summary."""
        succ: dict[tuple[int, int, int], list[tuple[int, int, int]]] = defaultdict(list)
        for (sn, sp), (tn, tp) in self.edges:
            succ[source_loc(sn, sp)].append(target_loc(tn, tp))
        for n, rows in enumerate(self.nodes):
            for i, row in enumerate(rows):
                for o, antichain in enumerate(row):
                    if any(s.is_zero() for s in antichain):
                        succ[target_loc(n, i)].append(source_loc(n, o))
        return succ

    def is_acyclic(self) -> bool:
        succ = self.zero_graph()
        state: dict[tuple[int, int, int], int] = {}  # 1: on the DFS stack, 2: finished

        def visit(start: tuple[int, int, int]) -> bool:
            stack = [(start, iter(succ.get(start, ())))]
            state[start] = 1
            while stack:
                loc, it = stack[-1]
                for nxt in it:
                    if state.get(nxt) == 1:
                        return False
                    if nxt not in state:
                        state[nxt] = 1
                        stack.append((nxt, iter(succ.get(nxt, ()))))
                        break
                else:
                    state[loc] = 2
                    stack.pop()
            return True

        return all(visit(loc) for loc in list(succ) if loc not in state)

    def build(self) -> tuple[Tracker, list[list[Antichain]]]:
        self._check()
        if not self.is_acyclic():
            raise CycleError("a cycle does not strictly advance timestamps")
        tracker = Tracker(self)
        return tracker, tracker.builder_summary

    def summarize_outputs(self) -> dict[tuple[int, int, int], dict[int, list[PathSummary]]]:
        """For every location, the antichain of path summaries to each scope output.

        A backwards worklist from each scope output target (node 0's targets), as
        the crate's ``summarize_outputs`` does, but following every edge into a
        target (the crate keeps one source per target).
        """
        reverse: dict[tuple[int, int, int], list[tuple[int, int, int]]] = defaultdict(list)
        for (sn, sp), (tn, tp) in self.edges:
            reverse[target_loc(tn, tp)].append(source_loc(sn, sp))
        reverse_internal: dict[tuple[int, int, int], list[tuple[int, list[PathSummary]]]] = (
            defaultdict(list)
        )
        for n, rows in enumerate(self.nodes):
            for i, row in enumerate(rows):
                for o, antichain in enumerate(row):
                    reverse_internal[source_loc(n, o)].append((i, antichain))

        results: dict[tuple[int, int, int], dict[int, list[PathSummary]]] = defaultdict(
            lambda: defaultdict(list)
        )
        worklist: deque[tuple[tuple[int, int, int], int, PathSummary]] = deque()
        for output in range(self.shapes[0][0]):
            worklist.append((target_loc(0, output), output, PathSummary.zero(self.arity)))
        while worklist:
            loc, output, summary = worklist.popleft()
            node, kind, _ = loc
            if kind == SOURCE:
                for input_port, antichain in reverse_internal.get(loc, ()):
                    new_loc = target_loc(node, input_port)
                    for op_summary in antichain:
                        combined = op_summary.followed_by(summary)
                        if combined is not None and insert_summary(
                            results[new_loc][output], combined
                        ):
                            worklist.append((new_loc, output, combined))
            else:
                for source in reverse.get(loc, ()):
                    if insert_summary(results[source][output], summary):
                        worklist.append((source, output, summary))
        return results


class Tracker:
    def __init__(self, builder: Builder):
        self.arity = builder.arity
        self.shapes = list(builder.shapes)
        self.node_summaries = builder.nodes
        self.edges_from: dict[tuple[int, int, int], list[tuple[int, int, int]]] = defaultdict(list)
        for (sn, sp), (tn, tp) in builder.edges:
            self.edges_from[source_loc(sn, sp)].append(target_loc(tn, tp))

        outputs = builder.summarize_outputs()
        scope_inputs, scope_outputs = self.shapes[0][1], self.shapes[0][0]
        # Summaries from each scope input to each scope output: returned by build().
        self.builder_summary = [
            [
                Antichain(
                    sorted_summaries(outputs.get(source_loc(0, i), {}).get(o, [])), arity=self.arity
                )
                for o in range(scope_outputs)
            ]
            for i in range(scope_inputs)
        ]
        # (output, summary) pairs per location, node 0 excluded as in the crate.
        self.to_outputs: dict[tuple[int, int, int], list[tuple[int, PathSummary]]] = {}
        for loc, per_output in outputs.items():
            if loc[0] != 0:
                self.to_outputs[loc] = [(o, s) for o, ac in sorted(per_output.items()) for s in ac]

        self.pointstamps: dict[tuple[int, int, int], MutableAntichain] = {}
        self.implications: dict[tuple[int, int, int], MutableAntichain] = {}
        for n, (inputs, outs) in enumerate(self.shapes):
            for loc in [target_loc(n, i) for i in range(inputs)] + [
                source_loc(n, o) for o in range(outs)
            ]:
                self.pointstamps[loc] = MutableAntichain(arity=self.arity)
                self.implications[loc] = MutableAntichain(arity=self.arity)

        self.pending_sums: dict[tuple[tuple[int, int, int], object], int] = defaultdict(int)
        self.pushed = defaultdict(int)  # (location, time) -> diff, until drained
        self.outputs = [ChangeBatch(arity=self.arity) for _ in range(scope_outputs)]
        self.total_counts = 0

    @property
    def nodes(self) -> int:
        return len(self.shapes)

    def shape(self, node: int) -> tuple[int, int]:
        return self.shapes[node]

    def _loc(self, kind: int, location: tuple[int, int]) -> tuple[int, int, int]:
        node, port = location
        loc = (node, kind, port)
        if loc not in self.pointstamps:
            raise GraphError(f"unknown location {location!r}")
        return loc

    def update_source(self, source: tuple[int, int], time: object, diff: int) -> None:
        loc = self._loc(SOURCE, source)
        self.pending_sums[(loc, validate(time, self.arity))] += diff

    def update_target(self, target: tuple[int, int], time: object, diff: int) -> None:
        loc = self._loc(TARGET, target)
        self.pending_sums[(loc, validate(time, self.arity))] += diff

    def tracking_anything(self) -> bool:
        return any(d != 0 for d in self.pending_sums.values()) or self.total_counts > 0

    def propagate_all(self) -> None:
        by_location: dict[tuple[int, int, int], list[tuple[object, int]]] = defaultdict(list)
        for (loc, time), diff in self.pending_sums.items():
            if diff != 0:
                by_location[loc].append((time, diff))
        self.pending_sums = defaultdict(int)

        worklist: list[tuple[tuple[int, ...], tuple[int, int, int], int]] = []
        # Targets first, then sources, as the crate drains them (order does not matter).
        for loc in sorted(by_location, key=lambda l: (l[1], l[0], l[2])):
            for time, diff in self.pointstamps[loc].update_iter(by_location[loc]):
                self.total_counts += diff
                for output, summary in self.to_outputs.get(loc, ()):
                    out_time = summary.results_in(time)
                    if out_time is not None:
                        self.outputs[output].update(out_time, diff)
                heapq.heappush(worklist, (sort_key(time), loc, diff))

        while worklist:
            key, loc, diff = heapq.heappop(worklist)
            while worklist and worklist[0][0] == key and worklist[0][1] == loc:
                diff += heapq.heappop(worklist)[2]
            if diff == 0:
                continue
            node, kind, port = loc
            time = from_coords(key)
            for changed, change in self.implications[loc].update_iter([(time, diff)]):
                if kind == TARGET:
                    for output, antichain in enumerate(self.node_summaries[node][port]):
                        for summary in antichain:
                            new_time = summary.results_in(changed)
                            if new_time is not None:
                                heapq.heappush(
                                    worklist, (sort_key(new_time), source_loc(node, output), change)
                                )
                else:
                    for target in self.edges_from.get(loc, ()):
                        heapq.heappush(worklist, (sort_key(changed), target, change))
                self.pushed[(loc, changed)] += change

    def pushed_changes(self) -> list[tuple[Source | Target, object, int]]:
        """Drained; ordered by (targets before sources, node, port, time)."""
        items = [(loc, t, d) for (loc, t), d in self.pushed.items() if d != 0]
        self.pushed = defaultdict(int)
        items.sort(key=lambda x: (x[0][1], x[0][0], x[0][2], sort_key(x[1])))
        return [
            ((Target if loc[1] == TARGET else Source)(loc[0], loc[2]), t, d) for loc, t, d in items
        ]

    def output_changes(self) -> list[list[tuple[object, int]]]:
        return [batch.drain() for batch in self.outputs]

    def source_frontier(self, source: tuple[int, int]) -> Antichain:
        return self.implications[self._loc(SOURCE, source)].frontier()

    def target_frontier(self, target: tuple[int, int]) -> Antichain:
        return self.implications[self._loc(TARGET, target)].frontier()

    def source_pointstamps(self, source: tuple[int, int]) -> list[tuple[object, int]]:
        return self.pointstamps[self._loc(SOURCE, source)].updates()

    def target_pointstamps(self, target: tuple[int, int]) -> list[tuple[object, int]]:
        return self.pointstamps[self._loc(TARGET, target)].updates()


# ---------------------------------------------------------------------------
# Brute force: the frontiers the safety property (seed 001) defines.
# ---------------------------------------------------------------------------


def locations(shapes: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    out = []
    for n, (inputs, outputs) in enumerate(shapes):
        out += [target_loc(n, i) for i in range(inputs)]
        out += [source_loc(n, o) for o in range(outputs)]
    return out


def all_path_summaries(
    arity: int,
    shapes: Sequence[tuple[int, int]],
    summaries: Sequence[Sequence[Sequence[Iterable[object]]]],
    edges: Iterable[tuple[tuple[int, int], tuple[int, int]]],
) -> dict[tuple[tuple[int, int, int], tuple[int, int, int]], list[PathSummary]]:
    """For every ordered pair of locations, the minimal summaries of the paths between them.

    A plain fixpoint: start from the identity summary at every location, extend
    every known path by one step (an edge, zero summary, or a node connection),
    keep the minimal summaries, repeat until nothing changes.
    """
    steps: dict[tuple[int, int, int], list[tuple[tuple[int, int, int], PathSummary]]] = defaultdict(
        list
    )
    for (sn, sp), (tn, tp) in edges:
        steps[source_loc(sn, sp)].append((target_loc(tn, tp), PathSummary.zero(arity)))
    for n, rows in enumerate(summaries):
        for i, row in enumerate(rows):
            for o, cell in enumerate(row):
                for s in summary_antichain(cell, arity):
                    steps[target_loc(n, i)].append((source_loc(n, o), s))

    paths: dict[tuple[tuple[int, int, int], tuple[int, int, int]], list[PathSummary]] = defaultdict(
        list
    )
    for loc in locations(shapes):
        paths[(loc, loc)].append(PathSummary.zero(arity))
    changed = True
    while changed:
        changed = False
        for (a, b), antichain in list(paths.items()):
            for c, step in steps.get(b, ()):
                for p in list(antichain):
                    q = p.followed_by(step)
                    if q is not None and insert_summary(paths[(a, c)], q):
                        changed = True
    return dict(paths)


def brute_force_frontiers(
    arity: int,
    shapes: Sequence[tuple[int, int]],
    summaries: Sequence[Sequence[Sequence[Iterable[object]]]],
    edges: Iterable[tuple[tuple[int, int], tuple[int, int]]],
    counts: dict[tuple[int, int, int], dict[object, int]],
    paths: dict | None = None,
) -> dict[tuple[int, int, int], list[object]]:
    """Per location l: the minimal elements of { p(t) : count(l2, t) > 0, p a path summary l2 -> l }."""
    if paths is None:
        paths = all_path_summaries(arity, shapes, summaries, edges)
    out = {}
    for loc in locations(shapes):
        reached = []
        for l2, per_time in counts.items():
            for time, count in per_time.items():
                if count > 0:
                    for p in paths.get((l2, loc), ()):
                        t = p.results_in(time)
                        if t is not None:
                            reached.append(t)
        out[loc] = minimal(reached)
    return out


def brute_force_outputs(
    arity: int,
    shapes: Sequence[tuple[int, int]],
    counts: dict[tuple[int, int, int], dict[object, int]],
    paths: dict,
) -> list[dict[object, int]]:
    """What the accumulated ``output_changes`` must be: per scope output, the multiset of
    p(t) over every location l2 outside node 0, every t in the frontier of l2's positive
    pointstamps and every minimal path summary p from l2 to that scope output."""
    outs: list[dict[object, int]] = [defaultdict(int) for _ in range(shapes[0][0])]
    for l2, per_time in counts.items():
        if l2[0] == 0:
            continue
        for time in minimal(t for t, c in per_time.items() if c > 0):
            for o in range(shapes[0][0]):
                for p in paths.get((l2, target_loc(0, o)), ()):
                    t = p.results_in(time)
                    if t is not None:
                        outs[o][t] += 1
    return [{t: c for t, c in out.items() if c != 0} for out in outs]


__all__ = [
    "Builder",
    "Source",
    "Target",
    "Tracker",
    "all_path_summaries",
    "brute_force_frontiers",
    "brute_force_outputs",
    "locations",
]
