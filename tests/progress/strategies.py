"""Hypothesis strategies shared by the progress tests: timestamps, summaries, graphs."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st

MAX = 2**64 - 1
HUGE = [MAX, MAX - 1, MAX - 2, 2**63, 2**63 - 1, 2**32]


def examples(fraction: float, minimum: int = 10) -> int:
    """``fraction`` of the active profile's max_examples, at least ``minimum``: for
    properties whose examples are expensive (stateful machines, graph simulations)."""
    return max(minimum, int(settings.default.max_examples * fraction))


def capped(count: int) -> int:
    """``count`` examples, or the active profile's max_examples if that is fewer; under
    a profile of fewer than 100 (``debug``) also proportionally fewer than ``count``
    (at least 4): a property that asks for its own count still runs lighter under a
    lighter profile."""
    most = settings.default.max_examples
    return min(count, most, max(4, count * most // 100))


def coordinates(small: int = 3, huge: bool = True) -> st.SearchStrategy[int]:
    """Mostly small coordinates (so times collide), occasionally ones near 2**64 - 1."""
    base = st.integers(0, small)
    if not huge:
        return base
    return st.one_of(base, base, base, base, base, base, base, st.sampled_from(HUGE))


def times(arity: int, small: int = 3, huge: bool = True) -> st.SearchStrategy[object]:
    c = coordinates(small, huge)
    if arity == 1:
        return c
    return st.tuples(*([c] * arity))


arities = st.sampled_from([1, 2, 3])
diffs = st.sampled_from([-2, -1, -1, 1, 1, 1, 2, 3])


def summary_increments(
    arity: int, nonzero: bool = False, huge: bool = True
) -> st.SearchStrategy[object]:
    """A path summary as an int / tuple; ``nonzero`` ones strictly advance a timestamp.
    ``huge`` increments (2**63, 2**64 - 1) make results_in and followed_by overflow."""
    small = st.integers(0, 2)
    inc = st.one_of(*([small] * 9), st.sampled_from([2**63, MAX])) if huge else small

    @st.composite
    def build(draw):
        values = [draw(inc) for _ in range(arity)]
        if nonzero and all(v == 0 for v in values):
            values[draw(st.integers(0, arity - 1))] = draw(st.integers(1, 2))
        return values[0] if arity == 1 else tuple(values)

    return build()


def summary_cells(
    arity: int, nonzero: bool = False, huge: bool = True
) -> st.SearchStrategy[list[object]]:
    """Summaries from one input to one output: often one, sometimes none (not connected),
    sometimes several (possibly incomparable, possibly redundant)."""
    one = summary_increments(arity, nonzero, huge)
    return st.one_of(
        st.just([]),
        st.lists(one, min_size=1, max_size=1),
        st.lists(one, min_size=1, max_size=1),
        st.lists(one, min_size=2, max_size=3),
    )


@dataclass
class Graph:
    arity: int
    shapes: list[tuple[int, int]]  # (inputs, outputs) per node; node 0 is the scope
    summaries: list[list[list[list[object]]]]  # [node][input][output] -> increments
    edges: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)

    def sources(self) -> list[tuple[int, int]]:
        return [(n, o) for n, (_, outs) in enumerate(self.shapes) for o in range(outs)]

    def targets(self) -> list[tuple[int, int]]:
        return [(n, i) for n, (ins, _) in enumerate(self.shapes) for i in range(ins)]

    def build(self, builder_cls):
        b = builder_cls(self.arity)
        for n, (ins, outs) in enumerate(self.shapes):
            b.add_node(n, ins, outs, self.summaries[n])
        for s, t in self.edges:
            b.add_edge(s, t)
        return b

    def targets_of(self, source: tuple[int, int]) -> list[tuple[int, int]]:
        return [t for s, t in self.edges if s == source]


@st.composite
def graphs(draw, arity: int | None = None, max_nodes: int = 8, huge: bool = True) -> Graph:
    """A scope (node 0) with operators 1..n-1 in topological order, forward edges, and
    feedback edges that always enter a feedback node whose summaries all strictly
    advance, so every cycle strictly advances."""
    a = draw(arities) if arity is None else arity
    n = draw(st.integers(1, max_nodes))

    def inc(nonzero):
        return summary_cells(a, nonzero, huge)

    scope_outputs = draw(st.integers(0, 2))
    scope_inputs = draw(st.integers(0, 2))
    feedback = {i for i in range(1, n) if draw(st.integers(0, 3)) == 0}
    node0_connected = draw(st.integers(0, 4)) == 0
    shapes = [(scope_outputs, scope_inputs)]
    summaries = [
        [
            [draw(inc(True)) if node0_connected else [] for _ in range(scope_inputs)]
            for _ in range(scope_outputs)
        ]
    ]
    for i in range(1, n):
        ins = draw(st.integers(1 if i in feedback else 0, 3))
        outs = draw(st.integers(1 if i in feedback else 0, 2))
        shapes.append((ins, outs))
        summaries.append([[draw(inc(i in feedback)) for _ in range(outs)] for _ in range(ins)])
    g = Graph(a, shapes, summaries)

    def sources_before(j):  # sources that come earlier in topological order than node j
        return [(0, o) for o in range(scope_inputs)] + [
            (m, o) for m in range(1, j) for o in range(shapes[m][1])
        ]

    all_sources = sources_before(n)
    for j in range(1, n):
        for port in range(shapes[j][0]):
            candidates = sources_before(j)
            if candidates:
                for _ in range(draw(st.sampled_from([0, 1, 1, 1, 1, 2]))):
                    g.edges.append((draw(st.sampled_from(candidates)), (j, port)))
            if j in feedback:
                later = [(m, o) for m in range(j, n) for o in range(shapes[m][1])]
                if later and draw(st.booleans()):
                    g.edges.append((draw(st.sampled_from(later)), (j, port)))
    for port in range(scope_outputs):
        if all_sources:
            for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
                g.edges.append((draw(st.sampled_from(all_sources)), (0, port)))
    # With node 0 connected, edges into the scope outputs close cycles through node 0,
    # whose summaries then all strictly advance.
    return g
