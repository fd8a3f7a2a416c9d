"""Progress with mirrors: each worker's tracker keeps the other workers'
copies of the operators apart from its own, so that an input fed by
pipelines and exchanges has the frontier of this worker's copy alone.

The simulation below runs W workers (2 to 5) over a random graph whose
edges are pipelines, exchanges (records counted by destination) or other
channels (counted as produced). Each worker acts on its own copies only:
it sends from capabilities it holds (a message down every edge of the
output, to its own copy of the target along a pipeline and to any worker's
along an exchange or other channel), consumes messages held by its own
copies (acquiring capabilities through the summaries), clones, downgrades
and drops capabilities. What it does reaches every worker's tracker as
located batches made by the compiled code (``drain_shared`` with routed
counts), in order per sender, delivered in arbitrary prefixes, read from
the receiver's side (``localize``). After every step and for every worker,
the safety property is checked against the true state: no frontier has
passed a time at which a record may still arrive at that worker's copy of
the input (for a split input) or at any copy (for the others). At the end
every capability is dropped and every message consumed, and every tracker
must drain to empty frontiers.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import Graph, examples, graphs
from tests.progress.test_reachability import bumped, produced
from tests.reference.timestamp import coords, minimum, sort_key
from timely.errors import GraphError
from timely.progress import Builder, ChangeBatch, SharedProgress
from timely.progress.subgraph import plan_mirrors

KINDS = ("pipeline", "exchange", "other")


@st.composite
def scopes(draw):
    """A graph without a boundary (node 0 has no ports), every edge given a kind."""
    g = draw(graphs(max_nodes=6))
    shapes = [(0, 0)] + list(g.shapes[1:])
    summaries = [[]] + list(g.summaries[1:])
    # (An input reads a stream once: an edge is never doubled.)
    edges = list(dict.fromkeys((s, t) for s, t in g.edges if s[0] != 0 and t[0] != 0))
    plain = Graph(g.arity, shapes, summaries, edges)
    kinds = {(s[0], s[1], t[0], t[1]): draw(st.sampled_from(KINDS)) for s, t in edges}
    return plain, kinds


class Worker:
    """One worker's tracker, its copies' shared progress and its routed counts."""

    def __init__(self, g, kinds, index, peers, every):
        self.g, self.index, self.peers = g, index, peers
        nodes = list(range(1, len(g.shapes)))
        edges = [(s[0], s[1], t[0], t[1]) for s, t in g.edges]
        mirror, split, added = plan_mirrors(nodes, {n: g.shapes[n][0] for n in nodes}, edges,
                                            kinds, every, len(g.shapes))
        b = g.build(Builder)
        for n in nodes:
            b.add_mirror(n, mirror[n], [p for m, p in split if m == n])
        for source, target in added:
            b.add_edge(source, target)
        self.tracker, _ = b.build()
        self.tracker.set_worker(index, peers)
        self.split = set(split)
        self.shared = {n: SharedProgress(*g.shapes[n], arity=g.arity) for n in nodes}
        self.routed = {}
        for edge in edges:
            if (edge[2], edge[3]) in self.split and kinds[edge] == "exchange":
                routed = ChangeBatch(arity=g.arity + 1)
                self.tracker.route_counts(edge[:2], edge[2:], routed)
                self.routed[edge] = routed

    def located(self, node):
        """What copy ``node`` of this worker did, as the rows it broadcasts."""
        out = ChangeBatch(arity=self.g.arity + 1)
        self.tracker.drain_shared(self.shared[node], node, out)
        return list(out)

    def receive(self, rows, sender):
        batch = ChangeBatch(arity=self.g.arity + 1)
        for row, diff in rows:
            batch.update(row, diff)
        self.tracker.localize(batch, 0, sender)
        self.tracker.absorb_located(batch, ChangeBatch(arity=self.g.arity + 1))


class Simulation:
    def __init__(self, g, kinds, peers, data, every=frozenset()):
        self.g, self.kinds, self.peers, self.data = g, kinds, peers, data
        self.workers = [Worker(g, kinds, w, peers, every) for w in range(peers)]
        self.split = self.workers[0].split
        self.caps = [Counter() for _ in range(peers)]      # (source, time) per worker
        self.inflight = Counter()                           # (target, worker, time)
        self.queues = {(s, r): [] for s in range(peers) for r in range(peers)}
        zero = minimum(g.arity)
        for w, worker in enumerate(self.workers):
            start = ChangeBatch(arity=g.arity + 1)
            for source in g.sources():
                here = worker.tracker.source_location(*source)
                start.update((here, *coords(zero)), 1)
                start.update((worker.tracker.mirror(here), *coords(zero)), peers - 1)
                self.caps[w][(source, zero)] += 1
            worker.tracker.absorb_located(start, ChangeBatch(arity=g.arity + 1))
            worker.tracker.propagate_all()
        self.check()

    def draw(self, strategy):
        return self.data.draw(strategy)

    def broadcast(self, w, node):
        rows = self.workers[w].located(node)
        if rows:
            for r in range(self.peers):
                self.queues[(w, r)].append(rows)

    def edges_from(self, source):
        return [(source[0], source[1], t[0], t[1]) for s, t in self.g.edges if s == source]

    def send(self, w, source, when, count):
        node, port = source
        self.workers[w].shared[node].produceds[port].update(when, count)
        for edge in self.edges_from(source):
            target = edge[2:]
            kind = self.kinds[edge]
            if kind == "pipeline":
                parts = [(w, count)]
            else:
                first = self.draw(st.integers(0, self.peers - 1))
                moved = self.draw(st.integers(0, count))
                second = self.draw(st.integers(0, self.peers - 1))
                parts = [(first, count - moved), (second, moved)]
            for dest, n in parts:
                if n == 0:
                    continue
                self.inflight[(target, dest, when)] += n
                routed = self.workers[w].routed.get(edge)
                if routed is not None:
                    routed.update((dest, *coords(when)), n)

    def held(self, w):
        return sorted((k for k, c in self.caps[w].items() if c > 0),
                      key=lambda k: (k[0], sort_key(k[1])))

    def consume(self, w, produce=True):
        mine = sorted((k for k, c in self.inflight.items() if c > 0 and k[1] == w),
                      key=lambda k: (k[0], sort_key(k[2])))
        if not mine:
            return
        target, _, t = self.draw(st.sampled_from(mine))
        node, port = target
        self.inflight[(target, w, t)] -= 1
        shared = self.workers[w].shared[node]
        shared.consumeds[port].update(t, 1)
        for o, new in produced(self.data, self.g.summaries, node, port, t) if produce else ():
            self.caps[w][((node, o), new)] += 1
            shared.internals[o].update(new, 1)
        self.broadcast(w, node)

    def act(self, w):
        held = self.held(w)
        if not held:
            return
        (node, o), t = source, _ = self.draw(st.sampled_from(held))
        shared = self.workers[w].shared[node]
        action = self.draw(st.sampled_from(["send", "send", "send", "downgrade", "drop",
                                            "clone"]))
        if action == "send":
            self.send(w, source, bumped(self.data, t), self.draw(st.integers(1, 3)))
        elif action == "clone":
            new = bumped(self.data, t)
            self.caps[w][(source, new)] += 1
            shared.internals[o].update(new, 1)
        else:
            self.caps[w][(source, t)] -= 1
            shared.internals[o].update(t, -1)
            if action == "downgrade":
                new = bumped(self.data, t, strict=True)
                if new is not None:
                    self.caps[w][(source, new)] += 1
                    shared.internals[o].update(new, 1)
        self.broadcast(w, node)

    def deliver(self, sender, receiver, count):
        queue = self.queues[(sender, receiver)]
        batches, self.queues[(sender, receiver)] = queue[:count], queue[count:]
        for rows in batches:
            self.workers[receiver].receive(rows, sender)

    def check(self):
        """Every worker's frontiers cover every record that may still arrive
        at its copy of a split input, or at any copy of another input."""
        for r, worker in enumerate(self.workers):
            frontier = worker.tracker.target_frontier
            for w in range(self.peers):
                for (source, t), c in self.caps[w].items():
                    if c <= 0:
                        continue
                    for edge in self.edges_from(source):
                        target = edge[2:]
                        if self.kinds[edge] == "pipeline" and w != r and target in self.split:
                            continue
                        assert frontier(target).less_equal(t), (r, "cap", w, source, t, target)
            for (target, dest, t), c in self.inflight.items():
                if c > 0 and (dest == r or target not in self.split):
                    assert frontier(target).less_equal(t), (r, "message", dest, target, t)

    def step(self):
        w = self.draw(st.integers(0, self.peers - 1))
        kind = self.draw(st.sampled_from(["consume", "act", "act", "deliver", "deliver",
                                          "propagate"]))
        if kind == "consume":
            self.consume(w)
        elif kind == "act":
            self.act(w)
        elif kind == "deliver":
            sender = self.draw(st.integers(0, self.peers - 1))
            queue = self.queues[(sender, w)]
            if queue:
                self.deliver(sender, w, self.draw(st.integers(1, len(queue))))
        else:
            self.workers[w].tracker.propagate_all()
        self.check()

    def finish(self):
        for w in range(self.peers):
            for (source, t), c in list(self.caps[w].items()):
                if c > 0:
                    self.caps[w][(source, t)] = 0
                    self.workers[w].shared[source[0]].internals[source[1]].update(t, -c)
                    self.broadcast(w, source[0])
        while any(c > 0 for c in self.inflight.values()):
            for w in range(self.peers):
                self.consume(w, produce=False)
        for (s, r), queue in self.queues.items():
            self.deliver(s, r, len(queue))
        for worker in self.workers:
            worker.tracker.propagate_all()
            assert not worker.tracker.tracking_anything()
            for target in self.g.targets():
                assert worker.tracker.target_frontier(target).is_empty(), target
        self.check()


@settings(max_examples=examples(0.5), deadline=None)
@given(scopes(), st.integers(2, 5), st.integers(0, 40), st.data())
def test_mirrored_progress_is_safe_per_copy_and_drains(scope, peers, steps, data):
    g, kinds = scope
    sim = Simulation(g, kinds, peers, data)
    for _ in range(steps):
        sim.step()
    sim.finish()


@settings(max_examples=examples(0.2), deadline=None)
@given(scopes(), st.integers(2, 4), st.integers(0, 30), st.data())
def test_inputs_that_read_every_copy_are_not_split(scope, peers, steps, data):
    g, kinds = scope
    every = {n for n in range(1, len(g.shapes)) if data.draw(st.booleans())}
    sim = Simulation(g, kinds, peers, data, every)
    assert all(node not in every for node, _ in sim.split)
    for _ in range(steps):
        sim.step()
    sim.finish()


def test_a_copy_sees_its_own_records_done_before_the_others_consume_theirs():
    """Operator 1 exchanges records at time 0 to operator 2 on both
    workers; once worker 0 has heard worker 1's send and consumed its own
    records, its copy's frontier passes 0 although worker 1 has not consumed
    its records yet; an operator downstream by a pipeline (read by every
    copy, as a probe) still holds 0."""
    g = Graph(1, [(0, 0), (0, 1), (1, 1), (1, 0)], [[], [], [[[0]]], [[]]],
              [((1, 0), (2, 0)), ((2, 0), (3, 0))])
    kinds = {(1, 0, 2, 0): "exchange", (2, 0, 3, 0): "pipeline"}

    class Fixed:
        def draw(self, strategy):
            raise AssertionError("no choice is drawn here")

    sim = Simulation(g, kinds, 2, Fixed(), every={3})
    assert sim.split == {(2, 0)}
    for w in range(2):
        # each worker sends one record to each worker, then drops its capability
        shared = sim.workers[w].shared[1]
        shared.produceds[0].update(0, 2)
        for dest in range(2):
            sim.workers[w].routed[(1, 0, 2, 0)].update((dest, 0), 1)
            sim.inflight[((2, 0), dest, 0)] += 1
        shared.internals[0].update(0, -1)
        sim.caps[w][((1, 0), 0)] -= 1
        sim.broadcast(w, 1)
        # operator 2 drops its initial capability; operator 3 has none to drop
        sim.workers[w].shared[2].internals[0].update(0, -1)
        sim.caps[w][((2, 0), 0)] -= 1
        sim.broadcast(w, 2)
    w0 = sim.workers[0]
    sim.deliver(0, 0, 2)
    sim.deliver(1, 0, 2)
    w0.tracker.propagate_all()
    assert w0.tracker.target_frontier((2, 0)).elements() == [0]
    # worker 0 consumes its two records
    sim.inflight[((2, 0), 0, 0)] -= 2
    w0.shared[2].consumeds[0].update(0, 2)
    sim.broadcast(0, 2)
    sim.deliver(0, 0, 1)
    w0.tracker.propagate_all()
    assert w0.tracker.target_frontier((2, 0)).is_empty()
    # the probe-like reader still holds 0: worker 1's records are unconsumed
    assert w0.tracker.target_frontier((3, 0)).elements() == [0]
    sim.check()


def test_routed_counts_need_a_split_input_and_an_edge():
    g = Graph(1, [(0, 0), (0, 1), (1, 0)], [[], [], [[]]], [((1, 0), (2, 0))])
    b = g.build(Builder)
    b.add_mirror(1, 3)
    b.add_mirror(2, 4)
    tracker, _ = b.build()
    tracker.set_worker(0, 2)
    try:
        tracker.route_counts((1, 0), (2, 0), ChangeBatch(arity=2))
    except GraphError as error:
        assert "split" in str(error) or "no shadow" in str(error)
    else:
        raise AssertionError("routing to an input that is not split must fail")
    rows = ChangeBatch(arity=2)
    rows.update((10**6, 0), 1)
    try:
        tracker.localize(rows, 0, 1)
    except GraphError as error:
        assert "outside" in str(error)
    else:
        raise AssertionError("a code outside the scope must fail")
