"""Reachability: compiled Builder/Tracker vs the oracle port of the Rust algorithm, and
both vs the brute-force frontiers that the safety property (seed 001) defines."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import (
    HUGE,
    MAX,
    Graph,
    arities,
    examples,
    graphs,
    summary_cells,
    times,
)
from tests.reference import reachability as ref
from tests.reference.timestamp import coords, from_coords, minimum, sort_key
from timely.errors import CycleError, GraphError, TimestampError
from timely.progress import Antichain, Builder, ChangeBatch, PathSummary, Source, Target

TARGET, SOURCE = ref.TARGET, ref.SOURCE


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def build_both(g: Graph):
    tracker, summary = g.build(Builder).build()
    oracle, oracle_summary = g.build(ref.Builder).build()
    return tracker, summary, oracle, oracle_summary


def normalize_pushed(changes):
    out = []
    for loc, t, d in changes:
        assert isinstance(loc, (Source, Target, ref.Source, ref.Target)), loc
        kind = "target" if isinstance(loc, (Target, ref.Target)) else "source"
        out.append((kind, loc.node, loc.port, t, d))
    return out


def compare(g: Graph, tracker, oracle):
    """Compares every observable after propagate_all; returns the drained output changes."""
    pushed, expected_pushed = tracker.pushed_changes(), oracle.pushed_changes()
    assert normalize_pushed(pushed) == normalize_pushed(expected_pushed)
    outputs, expected_outputs = tracker.output_changes(), oracle.output_changes()
    for source in g.sources():
        assert (
            tracker.source_frontier(source).elements() == oracle.source_frontier(source).elements()
        )
        assert tracker.source_pointstamps(source) == oracle.source_pointstamps(source)
    for target in g.targets():
        assert (
            tracker.target_frontier(target).elements() == oracle.target_frontier(target).elements()
        )
        assert tracker.target_pointstamps(target) == oracle.target_pointstamps(target)
    assert tracker.tracking_anything() == oracle.tracking_anything()
    assert outputs == expected_outputs
    return outputs


class Accumulated:
    """What the tracker has been told, accumulated independently of both trackers, and
    the accumulated output changes it reported."""

    def __init__(self, g: Graph):
        self.g = g
        self.counts: dict[tuple[int, int, int], Counter] = defaultdict(Counter)
        self.outputs = [Counter() for _ in range(g.shapes[0][0])]
        self.paths = ref.all_path_summaries(g.arity, g.shapes, g.summaries, g.edges)

    def update(self, kind, loc, t, d, *trackers):
        self.counts[(loc[0], kind, loc[1])][t] += d
        for tr in trackers:
            (tr.update_target if kind == TARGET else tr.update_source)(loc, t, d)

    def add_outputs(self, outputs):
        for acc, changes in zip(self.outputs, outputs):
            for t, d in changes:
                acc[t] += d

    def check_brute_force(self, tracker):
        """Every frontier is the seed-001 definition, and the output changes add up."""
        expected = ref.brute_force_frontiers(
            self.g.arity, self.g.shapes, self.g.summaries, self.g.edges, self.counts, self.paths
        )
        for (node, kind, port), frontier in expected.items():
            got = (tracker.target_frontier if kind == TARGET else tracker.source_frontier)(
                (node, port)
            )
            assert got.elements() == frontier, ((node, kind, port), got.elements(), frontier)
        expected_outputs = ref.brute_force_outputs(
            self.g.arity, self.g.shapes, self.counts, self.paths
        )
        for acc, exp in zip(self.outputs, expected_outputs):
            assert {t: c for t, c in acc.items() if c != 0} == exp


def propagate_and_check(g, acc, tracker, oracle):
    tracker.propagate_all()
    oracle.propagate_all()
    acc.add_outputs(compare(g, tracker, oracle))
    acc.check_brute_force(tracker)
    assert tracker.tracking_anything() == any(
        c > 0 for per_time in acc.counts.values() for c in per_time.values()
    )


def check_builder_summary(g, summary, oracle_summary, paths):
    scope_outputs, scope_inputs = g.shapes[0]
    assert len(summary) == len(oracle_summary) == scope_inputs
    for i in range(scope_inputs):
        assert len(summary[i]) == scope_outputs
        for o in range(scope_outputs):
            expected = ref.sorted_summaries(
                paths.get((ref.source_loc(0, i), ref.target_loc(0, o)), [])
            )
            assert summary[i][o].elements() == oracle_summary[i][o].elements() == expected


# ---------------------------------------------------------------------------
# hand-checked examples (they also pin the oracle down)
# ---------------------------------------------------------------------------


def loop_graph():
    """Scope input -> 1 (concat) -> 2 (feedback +1 in the loop coordinate) -> 1; 1 -> out."""
    return Graph(
        2,
        [(1, 1), (2, 1), (1, 1)],
        [[[[]]], [[[(0, 0)]], [[(0, 0)]]], [[[(0, 1)]]]],
        [((0, 0), (1, 0)), ((1, 0), (2, 0)), ((2, 0), (1, 1)), ((1, 0), (0, 0))],
    )


@pytest.mark.parametrize("Build", [Builder, ref.Builder], ids=["compiled", "oracle"])
def test_loop_example(Build):
    tracker, summary = loop_graph().build(Build).build()
    assert [[s.elements() for s in row] for row in summary] == [[[(0, 0)]]]
    assert tracker.nodes == 3 and tracker.shape(1) == (2, 1)
    tracker.update_source((0, 0), (0, 0), 1)
    tracker.propagate_all()
    assert normalize_pushed(tracker.pushed_changes()) == [
        ("target", 0, 0, (0, 0), 1),
        ("target", 1, 0, (0, 0), 1),
        ("target", 1, 1, (0, 1), 1),
        ("target", 2, 0, (0, 0), 1),
        ("source", 0, 0, (0, 0), 1),
        ("source", 1, 0, (0, 0), 1),
        ("source", 2, 0, (0, 1), 1),
    ]
    assert tracker.output_changes() == [[]]  # the scope's own input is not reported
    assert tracker.tracking_anything()
    # The message enters the loop; the scope input moves on to epoch 1.
    tracker.update_target((1, 0), (0, 0), 1)
    tracker.update_source((0, 0), (0, 0), -1)
    tracker.update_source((0, 0), (1, 0), 1)
    tracker.propagate_all()
    assert normalize_pushed(tracker.pushed_changes()) == [
        ("source", 0, 0, (0, 0), -1),
        ("source", 0, 0, (1, 0), 1),
    ]
    assert tracker.output_changes() == [[((0, 0), 1)]]
    assert tracker.target_frontier((1, 1)).elements() == [(0, 1)]
    assert tracker.target_pointstamps((1, 0)) == [((0, 0), 1)]
    # The message is consumed and produces a capability at (0, 3) on node 1's output.
    tracker.update_target((1, 0), (0, 0), -1)
    tracker.update_source((1, 0), (0, 3), 1)
    tracker.propagate_all()
    assert tracker.output_changes() == [[((0, 0), -1), ((0, 3), 1)]]
    assert tracker.target_frontier((1, 0)).elements() == [(1, 0)]
    assert tracker.target_frontier((1, 1)).elements() == [(0, 4), (1, 1)]
    assert tracker.target_frontier((0, 0)).elements() == [(0, 3), (1, 0)]
    tracker.update_source((1, 0), (0, 3), -1)
    tracker.update_source((0, 0), (1, 0), -1)
    tracker.propagate_all()
    assert not tracker.tracking_anything()
    for loc in [(0, 0), (1, 0), (1, 1), (2, 0)]:
        assert tracker.target_frontier(loc).is_empty()
    assert tracker.output_changes() == [[((0, 3), -1)]]


@pytest.mark.parametrize("Build", [Builder, ref.Builder], ids=["compiled", "oracle"])
def test_overflowing_summary_drops_the_time(Build):
    b = Build(1)
    b.add_node(0, 1, 1, [[[]]])
    b.add_node(1, 1, 1, [[[1]]])
    b.add_edge((0, 0), (1, 0))
    b.add_edge((1, 0), (0, 0))
    tracker, summary = b.build()
    assert summary[0][0].elements() == [1]
    tracker.update_target((1, 0), MAX, 1)
    tracker.propagate_all()
    assert tracker.target_frontier((1, 0)).elements() == [MAX]
    assert tracker.source_frontier((1, 0)).is_empty()
    assert tracker.target_frontier((0, 0)).is_empty()
    assert tracker.output_changes() == [[]]
    tracker.update_target((1, 0), MAX - 1, 1)
    tracker.propagate_all()
    assert tracker.target_frontier((0, 0)).elements() == [MAX]
    assert tracker.output_changes() == [[(MAX, 1)]]


def zero_cycle_graphs():
    yield "self-loop", 1, [(0, 0), (1, 1)], [[], [[[0]]]], [((1, 0), (1, 0))]
    yield (
        "two nodes",
        2,
        [(0, 0), (1, 1), (1, 1)],
        [[], [[[(0, 0)]]], [[[(0, 0), (1, 0)]]]],
        [((1, 0), (2, 0)), ((2, 0), (1, 0))],
    )
    yield (
        "through scope",
        1,
        [(1, 1), (1, 1)],
        [[[[0]]], [[[0]]]],
        [((0, 0), (1, 0)), ((1, 0), (0, 0))],
    )
    yield "zero among several", 2, [(0, 0), (1, 1)], [[], [[[(0, 1), (0, 0)]]]], [((1, 0), (1, 0))]


@pytest.mark.parametrize("name, arity, shapes, summaries, edges", list(zero_cycle_graphs()))
def test_zero_summary_cycle_is_rejected(name, arity, shapes, summaries, edges):
    for Build in (Builder, ref.Builder):
        b = Graph(arity, shapes, summaries, edges).build(Build)
        assert not b.is_acyclic()
        with pytest.raises(CycleError):
            b.build()


def test_advancing_cycle_is_accepted():
    g = Graph(1, [(0, 0), (1, 1)], [[], [[[1]]]], [((1, 0), (1, 0))])
    for Build in (Builder, ref.Builder):
        b = g.build(Build)
        assert b.is_acyclic()
        b.build()


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------


def summaries_as(style, cell):
    if style == "PathSummary":
        return [PathSummary(s) for s in cell]
    if style == "Antichain":
        return Antichain(cell)
    return iter(cell)


@settings(max_examples=examples(0.5))
@given(graphs(), st.sampled_from(["PathSummary", "Antichain", "iterator"]))
def test_build(g, style):
    tracker, summary, _, oracle_summary = build_both(g)
    assert g.build(Builder).is_acyclic()
    # Summaries given as PathSummary objects, an Antichain or an iterator build the same.
    other = Graph(
        g.arity,
        g.shapes,
        [[[summaries_as(style, cell) for cell in row] for row in node] for node in g.summaries],
        g.edges,
    )
    _, other_summary = other.build(Builder).build()
    assert [[a.elements() for a in row] for row in other_summary] == [
        [a.elements() for a in row] for row in summary
    ]
    assert tracker.arity == g.arity
    assert tracker.nodes == len(g.shapes)
    for n, shape in enumerate(g.shapes):
        assert tracker.shape(n) == shape
    paths = ref.all_path_summaries(g.arity, g.shapes, g.summaries, g.edges)
    check_builder_summary(g, summary, oracle_summary, paths)
    assert not tracker.tracking_anything()
    tracker.propagate_all()
    assert tracker.pushed_changes() == []
    assert tracker.output_changes() == [[] for _ in range(g.shapes[0][0])]


@st.composite
def graphs_with_updates(draw, max_updates=50):
    g = draw(graphs())
    locations = [(TARGET, t) for t in g.targets()] + [(SOURCE, s) for s in g.sources()]
    batches = []
    if locations:
        total = 0
        for _ in range(draw(st.integers(1, 8))):
            size = draw(st.integers(0, min(10, max_updates - total)))
            total += size
            batch = []
            for _ in range(size):
                kind, loc = draw(st.sampled_from(locations))
                batch.append(
                    (kind, loc, draw(times(g.arity)), draw(st.sampled_from([-2, -1, 1, 1, 2])))
                )
            batches.append(batch)
    return g, batches


@pytest.mark.slow
@settings(max_examples=examples(1.0))
@given(graphs_with_updates())
def test_random_updates(case):
    """Arbitrary batches, counts going negative at will: after every propagate_all the
    compiled tracker reports exactly what the oracle does, and every frontier is the
    brute-force one (built from the positive counts)."""
    g, batches = case
    tracker, _, oracle, _ = build_both(g)
    acc = Accumulated(g)
    for batch in batches:
        for kind, loc, t, d in batch:
            acc.update(kind, loc, t, d, tracker, oracle)
        # Unpropagated changes count as tracking, unless they cancel out.
        assert tracker.tracking_anything() == oracle.tracking_anything()
        propagate_and_check(g, acc, tracker, oracle)
    # Retract everything: nothing may remain.
    for (node, kind, port), per_time in list(acc.counts.items()):
        for t, c in list(per_time.items()):
            if c:
                acc.update(kind, (node, port), t, -c, tracker, oracle)
    propagate_and_check(g, acc, tracker, oracle)
    assert not tracker.tracking_anything()


@settings(max_examples=examples(0.25))
@given(graphs_with_updates(), st.data())
def test_updates_split_across_propagations(case, data):
    """Propagating after every batch or once at the end reaches the same frontiers, and
    the pushed changes of the first add up to those of the second."""
    g, batches = case
    step, _, _, _ = build_both(g)
    once, _, _, _ = build_both(g)
    pushed = Counter()
    outputs = [Counter() for _ in range(g.shapes[0][0])]
    for batch in batches:
        for kind, loc, t, d in batch:
            for tr in (step, once):
                (tr.update_target if kind == TARGET else tr.update_source)(loc, t, d)
        if data.draw(st.booleans()):
            step.propagate_all()
            for k, n, p, t, d in normalize_pushed(step.pushed_changes()):
                pushed[(k, n, p, t)] += d
            for o, changes in enumerate(step.output_changes()):
                for t, d in changes:
                    outputs[o][t] += d
    step.propagate_all()
    once.propagate_all()
    for k, n, p, t, d in normalize_pushed(step.pushed_changes()):
        pushed[(k, n, p, t)] += d
    for o, changes in enumerate(step.output_changes()):
        for t, d in changes:
            outputs[o][t] += d
    assert {k: v for k, v in pushed.items() if v} == {
        (k, n, p, t): d for k, n, p, t, d in normalize_pushed(once.pushed_changes())
    }
    assert [{t: d for t, d in o.items() if d} for o in outputs] == [
        dict(changes) for changes in once.output_changes()
    ]
    for s in g.sources():
        assert step.source_frontier(s) == once.source_frontier(s)
    for t in g.targets():
        assert step.target_frontier(t) == once.target_frontier(t)


def bumped(data, t, strict=False):
    """A time >= t (coordinate-wise), sometimes jumping to a huge coordinate."""
    values = list(coords(t))
    for k, v in enumerate(values):
        choice = data.draw(st.sampled_from([0, 0, 0, 1, 1, 2, "huge"]))
        if choice == "huge":
            bigger = [h for h in HUGE if h >= v]
            values[k] = data.draw(st.sampled_from(bigger))
        else:
            values[k] = min(MAX, v + choice)
    out = from_coords(values)
    if strict and out == t:
        k = data.draw(st.integers(0, len(values) - 1))
        if values[k] == MAX:
            return None
        values[k] += 1
        out = from_coords(values)
    return out


def produced(data, summaries, node, port, t):
    """Where consuming a record at input ``port`` of ``node`` at ``t``
    produces: ``(output, time)`` pairs, some of those the summaries allow
    (drawn), each time bumped."""
    out = []
    for o, cell in enumerate(summaries[node][port]):
        if cell and data.draw(st.booleans()):
            reached = ref.PathSummary(data.draw(st.sampled_from(cell))).results_in(t)
            if reached is not None:
                out.append((o, bumped(data, reached)))
    return out


class Simulation:
    """Workers that hold capabilities and exchange messages as timely operators do, and
    send their progress batches FIFO to a tracker that sees arbitrary prefixes.

    With ``located``, the compiled tracker takes each delivered batch as the
    engine does: one ChangeBatch of located rows (``absorb_located``), whose
    changes at node 0 come back as the scope's boundary; the oracle takes the
    same batch one update at a time."""

    def __init__(self, g, workers, data, located=False):
        self.g, self.data = g, data
        self.located = located
        self.workers = workers
        self.caps = [Counter() for _ in range(workers)]  # (source, time) held by each worker
        self.inflight = Counter()  # (target, time) messages sent and not yet consumed
        self.queues = [[] for _ in range(workers)]  # undelivered progress batches
        self.tracker, summary, self.oracle, oracle_summary = build_both(g)
        self.acc = Accumulated(g)
        check_builder_summary(g, summary, oracle_summary, self.acc.paths)
        zero = minimum(g.arity)
        for s in g.sources():
            for w in range(workers):
                self.caps[w][(s, zero)] += 1
            self.acc.update(SOURCE, s, zero, workers, self.tracker, self.oracle)
        self.propagate()
        # Each worker first moves its copy of each initial capability to a random time
        # (or drops it), so that frontiers hold incomparable times, not just the minimum.
        for s in g.sources():
            for w in range(workers):
                choice = self.draw(st.sampled_from(["keep", "move", "move", "drop"]))
                if choice != "keep":
                    self.caps[w][(s, zero)] -= 1
                    batch = [(SOURCE, s, zero, -1)]
                    if choice == "move":
                        new = self.draw(times(g.arity))
                        self.caps[w][(s, new)] += 1
                        batch.append((SOURCE, s, new, 1))
                    self.queues[w].append(batch)

    def draw(self, strategy):
        return self.data.draw(strategy)

    def held(self, w):
        return sorted(
            (k for k, c in self.caps[w].items() if c > 0), key=lambda k: (k[0], sort_key(k[1]))
        )

    def consume(self, w, produce=True):
        messages = sorted(
            (k for k, c in self.inflight.items() if c > 0), key=lambda k: (k[0], sort_key(k[1]))
        )
        if not messages:
            return
        (node, port), t = target, _ = self.draw(st.sampled_from(messages))
        self.inflight[(target, t)] -= 1
        batch = [(TARGET, target, t, -1)]
        for o, new in produced(self.data, self.g.summaries, node, port, t) if produce else ():
            self.caps[w][((node, o), new)] += 1
            batch.append((SOURCE, (node, o), new, 1))
        self.queues[w].append(batch)

    def act_on_capability(self, w):
        action = self.draw(
            st.sampled_from(["send", "send", "send", "downgrade", "downgrade", "drop", "clone"])
        )
        held = self.held(w)
        if action == "send":
            held = [(s, t) for s, t in held if self.g.targets_of(s)]
        if not held:
            return
        source, t = self.draw(st.sampled_from(held))
        if action == "send":
            target = self.draw(st.sampled_from(self.g.targets_of(source)))
            when, count = bumped(self.data, t), self.draw(st.integers(1, 2))
            self.inflight[(target, when)] += count
            self.queues[w].append([(TARGET, target, when, count)])
            return
        if action == "clone":
            new = bumped(self.data, t)
            self.caps[w][(source, new)] += 1
            self.queues[w].append([(SOURCE, source, new, 1)])
            return
        self.caps[w][(source, t)] -= 1
        batch = [(SOURCE, source, t, -1)]
        if action == "downgrade":
            new = bumped(self.data, t, strict=True)
            if new is not None:
                self.caps[w][(source, new)] += 1
                batch.append((SOURCE, source, new, 1))
        self.queues[w].append(batch)

    def deliver(self, w, count):
        batches, self.queues[w] = self.queues[w][:count], self.queues[w][count:]
        for batch in batches:
            if not self.located:
                for kind, loc, t, d in batch:
                    self.acc.update(kind, loc, t, d, self.tracker, self.oracle)
                continue
            located = ChangeBatch(arity=self.g.arity + 1)
            boundary = ChangeBatch(arity=self.g.arity + 1)
            expected_boundary = Counter()
            for kind, (node, port), t, d in batch:
                self.acc.update(kind, (node, port), t, d, self.oracle)
                where = (self.tracker.target_location if kind == TARGET
                         else self.tracker.source_location)(node, port)
                located.update((where, *coords(t)), d)
                if node == 0:
                    expected_boundary[(kind == SOURCE, node, port, t)] += d
            self.tracker.absorb_located(located, boundary)
            assert not located
            got = self.tracker.located_items(boundary)
            assert got == sorted(
                ((k, d) for k, d in expected_boundary.items() if d),
                key=lambda kd: (kd[0][0], kd[0][2], sort_key(kd[0][3])))
            # The scope's boundary is not tracked here; the oracle tracks it,
            # so the compiled tracker takes it one update at a time.
            for (is_source, node, port, t), d in got:
                (self.tracker.update_source if is_source
                 else self.tracker.update_target)((node, port), t, d)

    def propagate(self):
        propagate_and_check(self.g, self.acc, self.tracker, self.oracle)
        self.check_safety()

    def check_safety(self):
        """Whatever the tracker has (not) heard, every capability held and every message in
        flight is covered by the frontier of its location."""
        for w in range(self.workers):
            for (source, t), c in self.caps[w].items():
                if c > 0:
                    assert self.tracker.source_frontier(source).less_equal(t), (source, t)
        for (target, t), c in self.inflight.items():
            if c > 0:
                assert self.tracker.target_frontier(target).less_equal(t), (target, t)

    def step(self):
        w = self.draw(st.integers(0, self.workers - 1))
        kind = self.draw(
            st.sampled_from(
                [
                    "consume",
                    "consume",
                    "capability",
                    "capability",
                    "capability",
                    "deliver",
                    "deliver",
                    "propagate",
                ]
            )
        )
        if kind == "consume":
            self.consume(w)
        elif kind == "capability":
            self.act_on_capability(w)
        elif kind == "deliver" and self.queues[w]:
            # Worker 0's batches lag behind (half its deliveries are skipped), so others'
            # consumption of its messages often arrives first: counts go negative.
            if w > 0 or self.draw(st.booleans()):
                self.deliver(w, self.draw(st.integers(1, len(self.queues[w]))))
                if self.draw(st.booleans()):
                    self.propagate()
        elif kind == "propagate":
            self.propagate()

    def quiesce(self):
        for w in range(self.workers):
            self.deliver(w, len(self.queues[w]))
        self.propagate()
        for per_time in self.acc.counts.values():
            assert all(c >= 0 for c in per_time.values())

    def shut_down(self):
        """Drop every capability and consume every message: every frontier empties."""
        for w in range(self.workers):
            batch = [(SOURCE, s, t, -c) for (s, t), c in self.caps[w].items() if c > 0]
            self.caps[w].clear()
            if batch:
                self.queues[w].append(batch)
        while any(c > 0 for c in self.inflight.values()):
            self.consume(self.draw(st.integers(0, self.workers - 1)), produce=False)
        self.quiesce()
        assert not self.tracker.tracking_anything()
        for s in self.g.sources():
            assert self.tracker.source_frontier(s).is_empty()
        for t in self.g.targets():
            assert self.tracker.target_frontier(t).is_empty()
        assert all(not any(acc.values()) for acc in self.acc.outputs)


@pytest.mark.slow
@settings(max_examples=examples(1.0))
@given(graphs(), st.sampled_from([1, 2, 2, 3, 3]), st.integers(0, 40), st.data())
def test_capability_simulation(g, workers, steps, data):
    """Realistic progress traffic: initial capabilities at every output, operators consume
    messages and acquire capabilities through their summaries, send, downgrade, clone and
    drop; batches reach the tracker as FIFO prefixes per worker, so counts go transiently
    negative. Checked after every propagate_all: compiled == oracle == brute force, and the
    safety property; at quiescence all counts are non-negative."""
    sim = Simulation(g, workers, data, located=data.draw(st.booleans()))
    for _ in range(steps):
        sim.step()
    sim.quiesce()
    sim.shut_down()


@st.composite
def arbitrary_graphs(draw):
    """Any edges, zero summaries allowed: cycles may or may not strictly advance."""
    a = draw(arities)
    n = draw(st.integers(1, 6))
    shapes = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(n)]
    summaries = [
        [[draw(summary_cells(a, huge=False)) for _ in range(outs)] for _ in range(ins)]
        for ins, outs in shapes
    ]
    g = Graph(a, shapes, summaries)
    sources, targets = g.sources(), g.targets()
    if sources and targets:
        g.edges = draw(
            st.lists(st.tuples(st.sampled_from(sources), st.sampled_from(targets)), max_size=10)
        )
    return g


@settings(max_examples=examples(0.5))
@given(arbitrary_graphs(), st.data())
def test_cycles(g, data):
    """``is_acyclic`` and CycleError agree with the oracle; accepted graphs track like it."""
    builder = g.build(Builder)
    acyclic = g.build(ref.Builder).is_acyclic()
    assert builder.is_acyclic() == acyclic
    if not acyclic:
        with pytest.raises(CycleError):
            builder.build()
        return
    tracker, summary, oracle, oracle_summary = build_both(g)
    acc = Accumulated(g)
    check_builder_summary(g, summary, oracle_summary, acc.paths)
    locations = [(TARGET, t) for t in g.targets()] + [(SOURCE, s) for s in g.sources()]
    if not locations:
        return
    for _ in range(data.draw(st.integers(1, 4))):
        for _ in range(data.draw(st.integers(1, 8))):
            kind, loc = data.draw(st.sampled_from(locations))
            acc.update(
                kind,
                loc,
                data.draw(times(g.arity)),
                data.draw(st.sampled_from([-1, 1, 2])),
                tracker,
                oracle,
            )
        propagate_and_check(g, acc, tracker, oracle)


@given(graphs(max_nodes=4), st.data())
def test_bad_indices(g, data):
    """Edges naming unknown nodes or ports are a GraphError (at add_edge or build)."""
    n = len(g.shapes)
    node = data.draw(st.integers(0, n + 1))
    inputs, outputs = g.shapes[node] if node < n else (0, 0)
    good_sources, good_targets = g.sources() or [(0, 0)], g.targets() or [(0, 0)]
    if data.draw(st.booleans()):
        source = (node, data.draw(st.integers(outputs, outputs + 2)))
        target = data.draw(st.sampled_from(good_targets))
    else:
        source = data.draw(st.sampled_from(good_sources))
        target = (node, data.draw(st.integers(inputs, inputs + 2)))
    for Build in (Builder, ref.Builder):
        b = g.build(Build)
        with pytest.raises(GraphError):
            b.add_edge(source, target)
            b.build()


@pytest.mark.parametrize("Build", [Builder, ref.Builder], ids=["compiled", "oracle"])
def test_unknown_location_update(Build):
    b = Build(1)
    b.add_node(0, 1, 1, [[[]]])
    tracker, _ = b.build()
    with pytest.raises(GraphError):
        tracker.update_source((0, 1), 0, 1)
    with pytest.raises(GraphError):
        tracker.update_target((1, 0), 0, 1)


@st.composite
def graphs_with_shared_progress(draw):
    """A graph, and batches of operator reports: per operator node, records
    consumed, capability changes and records produced at random times."""
    g = draw(graphs())
    operators = [n for n in range(1, len(g.shapes)) if sum(g.shapes[n])]
    reports = []
    for _ in range(draw(st.integers(1, 6)) if operators else 0):
        node = draw(st.sampled_from(operators))
        ins, outs = g.shapes[node]

        def changes():
            return draw(st.lists(st.tuples(times(g.arity), st.sampled_from([-2, -1, 1, 1, 3])),
                                 max_size=4))

        reports.append((node, [changes() for _ in range(ins)], [changes() for _ in range(outs)],
                        [changes() for _ in range(outs)]))
    return g, reports


def shared_progress(arity, consumed, internal, produced):
    from timely.progress import SharedProgress

    shared = SharedProgress(len(consumed), len(internal), arity=arity)
    for batches, port_changes in ((shared.consumeds, consumed), (shared.internals, internal),
                                  (shared.produceds, produced)):
        for batch, changes in zip(batches, port_changes):
            batch.extend(changes)
    return shared


@settings(max_examples=examples(0.5))
@given(graphs_with_shared_progress(), st.data())
def test_drain_shared_then_absorb_located_is_the_oracle(case, data):
    """An operator's shared progress drained as located rows
    (``drain_shared``) and absorbed (``absorb_located``) changes every count
    and frontier as the oracle does when told each change at its port;
    records produced toward node 0 come back as the boundary; ``must_send``
    is the demand-driven rule (a boundary change, or a decrement no implied
    time precedes and at most one implies); ``drain_pushed`` restricted by
    ``set_interest`` reports exactly the interesting part of what it reports
    unrestricted, and the same quiet nodes."""
    g, reports = case
    tracker, _ = g.build(Builder).build()
    plain, _ = g.build(Builder).build()
    oracle, _ = g.build(ref.Builder).build()
    interesting = {t: data.draw(st.booleans()) for t in g.targets()}
    for (node, port), flag in interesting.items():
        tracker.set_interest(node, port, flag)
    width = g.arity + 1
    for node, consumed, internal, produced in reports:
        located = ChangeBatch(arity=width)
        keep = data.draw(st.booleans())
        tracker.drain_shared(shared_progress(g.arity, consumed, internal, produced), node,
                             located, keep)
        expected = Counter()
        for port, changes in enumerate(consumed):
            for t, d in changes:
                expected[(False, node, port, t)] -= d
        for port, changes in enumerate(internal):
            for t, d in changes:
                expected[(True, node, port, t)] += d
        for port, changes in enumerate(produced if keep else []):
            for target in g.targets_of((node, port)):
                for t, d in changes:
                    expected[(False, *target, t)] += d
        items = tracker.located_items(located)
        assert dict(items) == {k: d for k, d in expected.items() if d}
        rule = any(node == 0 or (d < 0 and tracker.is_global(is_source, node, port, t))
                   for (is_source, node, port, t), d in items)
        assert tracker.must_send(located) == rule
        boundary = ChangeBatch(arity=width)
        tracker.absorb_located(located, boundary)
        assert not located
        assert dict(tracker.located_items(boundary)) == {
            k: d for k, d in expected.items() if d and k[1] == 0}
        for (is_source, n, port, t), d in items:
            if n != 0:
                for tr in (plain, oracle):
                    (tr.update_source if is_source else tr.update_target)((n, port), t, d)
        tracker.propagate_all()
        plain.propagate_all()
        oracle.propagate_all()
        assert not tracker.pending()
        pushed, quiet = tracker.drain_pushed(True)
        all_pushed, all_quiet = plain.drain_pushed()
        assert quiet == all_quiet
        assert pushed == [p for p in all_pushed if interesting[(p[0], p[1])]]
        for source in g.sources():
            assert tracker.source_pointstamps(source) == oracle.source_pointstamps(source)
            assert (tracker.source_frontier(source).elements()
                    == oracle.source_frontier(source).elements())
        for target in g.targets():
            assert tracker.target_pointstamps(target) == oracle.target_pointstamps(target)
            assert (tracker.target_frontier(target).elements()
                    == oracle.target_frontier(target).elements())
        assert tracker.output_changes() == oracle.output_changes()


def test_located_progress_refuses_strangers():
    """A location, node or width outside the graph is a typed error, and a
    refused batch records nothing."""
    g = Graph(1, [(1, 0), (1, 1)], [[[]], [[[0]]]], [((1, 0), (0, 0))])
    tracker, _ = g.build(Builder).build()
    with pytest.raises(GraphError):
        tracker.drain_shared(shared_progress(1, [[(0, 1)]], [[]], [[]]), 2,
                             ChangeBatch(arity=2))
    with pytest.raises(TimestampError):
        tracker.drain_shared(shared_progress(1, [[]], [[]], [[(0, 1)]]), 1,
                             ChangeBatch(arity=3))
    outside = ChangeBatch([((tracker.locations_count, 0), 1), ((1, 0), 1)])
    with pytest.raises(GraphError):
        tracker.absorb_located(outside, ChangeBatch(arity=2))
    assert not tracker.pending()
    # A graph with a boundary needs somewhere to put it.
    at_boundary = ChangeBatch([((tracker.target_location(0, 0), 4), 1)])
    with pytest.raises(GraphError):
        tracker.absorb_located(at_boundary, None)
