"""A scope at run time: its children, its progress tracker, and the progress
it reports to its parent.

A :class:`Subgraph` is an operator of its parent scope. Each time it is
scheduled it

1. accepts frontier changes its parent pushed at its inputs (they become
   pointstamps at node 0's outputs),
2. counts the records that entered through its inputs,
3. receives the progress batches every worker broadcast for this scope,
4. applies them to its :class:`~timely.progress.Tracker`, propagates, hands
   frontier changes to the children's inputs, and turns changes at its
   outputs into its own capability changes,
5. schedules the children that were activated, in index order, and collects
   their consumed, internal and produced changes,
6. broadcasts this worker's changes as one batch.

Pointstamp keys are ``(is_source, node, port, time)``. Changes at node 0's
ports are not tracked inside: records leaving node 0's outputs are what the
scope consumed at its inputs, records arriving at node 0's inputs are what it
produced at its outputs, and both are reported to the parent together with
the internal capability changes of the same scheduling.
"""

from __future__ import annotations

import heapq

from timely.errors import DataflowError
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import MutableAntichain
from timely.progress.reachability import Builder, Target


class SharedProgress:
    """The progress an operator exchanges with its scope.

    ``frontiers[i]``: changes to input ``i``'s frontier, pushed in by the scope;
    ``consumeds[i]``, ``internals[o]``, ``produceds[o]``: changes the operator
    reports, drained by the scope after each scheduling, together.
    """

    __slots__ = ("frontiers", "consumeds", "internals", "produceds")

    def __init__(self, inputs: int, outputs: int, arity: int):
        self.frontiers = [ChangeBatch(arity=arity) for _ in range(inputs)]
        self.consumeds = [ChangeBatch(arity=arity) for _ in range(inputs)]
        self.internals = [ChangeBatch(arity=arity) for _ in range(outputs)]
        self.produceds = [ChangeBatch(arity=arity) for _ in range(outputs)]


class Operate:
    """What a scope needs of each child."""

    name = "operator"
    inputs = 0
    outputs = 0
    local = True          # its progress is this worker's own and must be broadcast
    notify = ()           # per input: activate on frontier changes

    def summary(self):
        """``[input][output]`` -> list of PathSummary (empty: not connected)."""
        raise NotImplementedError

    def schedule(self) -> bool:
        """Runs the operator; True while it is incomplete for reasons the
        progress tracker cannot see."""
        raise NotImplementedError

    def shut_down(self) -> None:
        """Releases the operator's logic and state."""


class ChildState:
    """A scope's record of one child."""

    __slots__ = ("index", "name", "operator", "inputs", "outputs", "edges", "shared",
                 "local", "notify", "incomplete", "summary")

    def __init__(self, index, operator: Operate, shared: SharedProgress):
        self.index = index
        self.name = operator.name
        self.operator = operator
        self.inputs = operator.inputs
        self.outputs = operator.outputs
        self.edges = [[] for _ in range(operator.outputs)]
        self.shared = shared
        self.local = operator.local
        self.notify = list(operator.notify) or [True] * operator.inputs
        self.incomplete = False
        self.summary = None


class Subgraph(Operate):
    """A scope: a dataflow graph of children, tracked as one operator of its parent."""

    local = False

    def __init__(self, worker, name: str, path: tuple, arity: int, nested: bool,
                 parent: "Subgraph | None", index_in_parent: int | None):
        self.worker = worker
        self.name = name
        self.path = path
        self.arity = arity
        self.nested = nested               # adds a coordinate to the parent's times
        self.parent = parent
        self.index_in_parent = index_in_parent
        self.inputs = 0
        self.outputs = 0
        self.children: list = [None]       # slot 0: the scope boundary
        self.edges: list = []              # (source node, port, target node, port)
        self.built = False
        self.next_index = 1
        self.input_messages: list = []     # per scope input: records that entered
        self.input_targets: list = []      # per scope input: child targets it feeds
        self.unconnected_loops: list = []
        self.tracker = None
        self.local_pointstamp: dict = {}
        self.final_pointstamp: dict = {}
        self.shared = None
        self.output_capabilities: list = []
        self.incomplete_count = 0
        self.deferred: set = set()
        self.heap: list = []
        self.scheduling = False
        self.current = -1
        self.progcaster = None
        self.notify = ()
        self.check = worker.check_progress
        self.rng = worker.schedule_rng

    # -- building -----------------------------------------------------------

    def allocate_index(self) -> int:
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new operators")
        index = self.next_index
        self.next_index += 1
        self.children.append(None)
        return index

    def add_child(self, index: int, operator: Operate, shared: SharedProgress) -> None:
        self.children[index] = ChildState(index, operator, shared)

    def add_edge(self, source, target) -> None:
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new edges")
        self.edges.append((source[0], source[1], target[0], target[1]))

    def new_input(self) -> int:
        port = self.inputs
        self.inputs += 1
        self.input_messages.append(ChangeBatch(arity=self.arity))
        return port

    def new_output(self) -> int:
        port = self.outputs
        self.outputs += 1
        return port

    def build(self, peers: int):
        """Compiles the graph; returns the scope's summary for its parent and
        its shared progress (whose internals hold its initial capabilities)."""
        if self.unconnected_loops:
            names = ", ".join(self.unconnected_loops)
            raise DataflowError(f"scope {self.name!r}: loop variable(s) never connected: {names}")
        for index, child in enumerate(self.children):
            if index and child is None:
                raise DataflowError(f"scope {self.name!r}: operator {index} was never built")
        builder = Builder(arity=self.arity)
        builder.add_node(0, self.outputs, self.inputs,
                         [[[] for _ in range(self.inputs)] for _ in range(self.outputs)])
        for child in self.children[1:]:
            summary = child.operator.summary()
            child.summary = summary
            builder.add_node(child.index, child.inputs, child.outputs, summary)
        for sn, sp, tn, tp in self.edges:
            builder.add_edge((sn, sp), (tn, tp))
            if sn:
                self.children[sn].edges[sp].append((tn, tp))
        self.input_targets = [[] for _ in range(self.inputs)]
        for sn, sp, tn, tp in self.edges:
            if sn == 0:
                self.input_targets[sp].append((False, tn, tp))
        self.tracker, inner_summary = builder.build()
        self.shared = SharedProgress(self.inputs, self.outputs, self.outer_arity)
        self.output_capabilities = [MutableAntichain(arity=self.arity) for _ in range(self.outputs)]
        self.progcaster = self.worker.progcaster(self)
        self.built = True
        # Each operator output starts with `peers` copies of a capability at the
        # minimum time, one per worker. That is common knowledge, applied here
        # and never broadcast; each worker broadcasts only the drop of its own.
        # A child scope's initial capabilities derive from its own tracker,
        # which already counts every worker, so they are not broadcast either.
        low = 0 if self.arity == 1 else (0,) * self.arity
        for child in self.children[1:]:
            if child.local:
                for port in range(child.outputs):
                    self.final_pointstamp[(True, child.index, port, low)] = peers
            self.extract_progress(
                child, self.local_pointstamp if child.local else self.final_pointstamp)
        self.propagate_pointstamps()
        self.deferred.update(range(1, len(self.children)))
        self._summary = self.outer_summary(inner_summary)
        return self._summary

    @property
    def outer_arity(self) -> int:
        return self.arity - 1 if self.nested else self.arity

    def to_outer(self, time):
        if not self.nested:
            return time
        return time[0] if self.arity == 2 else time[:-1]

    def to_inner(self, time):
        if not self.nested:
            return time
        return (time, 0) if self.arity == 2 else (*time, 0)

    def outer_summary(self, inner):
        from timely.progress.frontier import Antichain

        out = []
        for i in range(self.inputs):
            row = []
            for o in range(self.outputs):
                if not self.nested:
                    row.append(list(inner[i][o]))
                    continue
                chain = Antichain(arity=self.outer_arity)
                for s in inner[i][o]:
                    chain.insert(s[0] if self.arity == 2 else tuple(s[:-1]))
                row.append(chain.elements())
            out.append(row)
        return out

    def summary(self):
        return self._summary

    # -- activation ---------------------------------------------------------

    def activate_child(self, index: int) -> None:
        """Asks for child ``index`` to be scheduled."""
        if self.scheduling and index > self.current:
            heapq.heappush(self.heap, index)
            return
        if index not in self.deferred:
            self.deferred.add(index)
            self.activate_self()

    def activate_self(self) -> None:
        if self.parent is None:
            self.worker.activate_dataflow(self)
        else:
            self.parent.activate_child(self.index_in_parent)

    # -- running ------------------------------------------------------------

    def schedule(self) -> bool:
        self.accept_frontier()
        self.harvest_inputs()
        self.progcaster.recv(self.final_pointstamp)
        self.propagate_pointstamps()

        heap = self.heap
        heap.extend(self.deferred)
        self.deferred.clear()
        heapq.heapify(heap)
        self.scheduling = True
        previous = -1
        try:
            if self.rng is not None and heap:
                self.schedule_shuffled()
            else:
                while heap:
                    index = heapq.heappop(heap)
                    if index > previous:
                        self.current = index
                        self.run_child(index)
                        previous = index
        finally:
            self.scheduling = False
            self.current = -1
        self.send_progress()
        if self.final_pointstamp:
            self.activate_self()
        return self.incomplete_count > 0 or self.tracker.tracking_anything()

    def schedule_shuffled(self) -> None:
        """Runs the activated children in a random order (adversarial testing)."""
        pending = set(self.heap)
        self.heap.clear()
        order = sorted(pending)
        self.rng.shuffle(order)
        for index in order:
            self.current = len(self.children)   # later activations wait for the next round
            self.run_child(index)
        for index in self.heap:
            self.deferred.add(index)
        self.heap.clear()
        if self.deferred:
            self.activate_self()

    def run_child(self, index: int) -> None:
        child = self.children[index]
        if child.operator is None:
            return
        incomplete = child.operator.schedule()
        if incomplete != child.incomplete:
            self.incomplete_count += 1 if incomplete else -1
            child.incomplete = incomplete
        if not incomplete and self.tracker.node_quiet(index):
            child.operator.shut_down()
            child.operator = None
        self.extract_progress(child, self.local_pointstamp if child.local else self.final_pointstamp)

    def extract_progress(self, child: ChildState, into: dict) -> None:
        """Moves a child's consumed, internal and produced changes into ``into``, together."""
        shared = child.shared
        index = child.index
        get = into.get
        for port, batch in enumerate(shared.consumeds):
            if batch:
                for time, diff in batch.drain():
                    key = (False, index, port, time)
                    into[key] = get(key, 0) - diff
        for port, batch in enumerate(shared.internals):
            if batch:
                for time, diff in batch.drain():
                    key = (True, index, port, time)
                    into[key] = get(key, 0) + diff
        for port, batch in enumerate(shared.produceds):
            if batch:
                targets = child.edges[port]
                for time, diff in batch.drain():
                    for node, tport in targets:
                        key = (False, node, tport, time)
                        into[key] = get(key, 0) + diff

    def accept_frontier(self) -> None:
        if self.shared is None:
            return
        update = self.tracker.update_source
        for port, batch in enumerate(self.shared.frontiers):
            if batch:
                for time, diff in batch.drain():
                    update((0, port), self.to_inner(time), diff)

    def harvest_inputs(self) -> None:
        local = self.local_pointstamp
        get = local.get
        for port, batch in enumerate(self.input_messages):
            if batch:
                for time, diff in batch.drain():
                    for key in self.input_targets[port]:
                        k = (False, key[1], key[2], time)
                        local[k] = get(k, 0) + diff
                    k = (True, 0, port, time)
                    local[k] = get(k, 0) - diff

    def propagate_pointstamps(self) -> None:
        final = self.final_pointstamp
        if final:
            tracker = self.tracker
            shared = self.shared
            for (is_source, node, port, time), diff in final.items():
                if not diff:
                    continue
                if node == 0:
                    if is_source:
                        shared.consumeds[port].update(self.to_outer(time), -diff)
                    else:
                        shared.produceds[port].update(self.to_outer(time), diff)
                elif is_source:
                    tracker.update_source((node, port), time, diff)
                else:
                    tracker.update_target((node, port), time, diff)
            final.clear()
        tracker = self.tracker
        tracker.propagate_all()
        children = self.children
        touched = set()
        for location, time, diff in tracker.pushed_changes():
            node = location[0]
            touched.add(node)
            if type(location) is Target and node:
                child = children[node]
                child.shared.frontiers[location[1]].update(time, diff)
                if child.notify[location[1]]:
                    self.activate_child(node)
        for node in touched:
            if node and children[node].operator is not None and tracker.node_quiet(node):
                self.activate_child(node)
        if self.outputs:
            for port, changes in enumerate(tracker.output_changes()):
                if changes:
                    internal = self.shared.internals[port]
                    for time, diff in self.output_capabilities[port].update_iter(changes):
                        internal.update(self.to_outer(time), diff)

    def send_progress(self) -> None:
        if self.local_pointstamp:
            self.progcaster.send(self.local_pointstamp)

    def shut_down(self) -> None:
        for child in self.children[1:]:
            if child is not None and child.operator is not None:
                child.operator.shut_down()
                child.operator = None
