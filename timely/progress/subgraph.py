"""A scope at run time: its children, its progress tracker, and the progress
it reports to its parent.

Operators report progress by adding to their scope's pointstamp batches, keyed
``(is_source, node, port, time)``: a consumed message is -n at its input, a
produced one +n at every input its output reaches, a capability ±1 at its
output. A local operator's changes go into ``local_pointstamp``, which the
scope broadcasts to every worker once per scheduling, whole; a child scope's
changes are already global and go straight into ``final_pointstamp``.

Each time a :class:`Subgraph` is scheduled it

1. counts the records that entered through its inputs,
2. receives the batches every worker broadcast for this scope,
3. applies them to its :class:`~timely.progress.Tracker`, propagates, and hands
   frontier changes to the children's inputs; records leaving node 0's
   outputs are what the scope consumed, records reaching node 0's inputs what
   it produced, and changes in the times that may reach its outputs are its
   own capability changes: all three go to the parent in one batch,
4. schedules the children that were activated, in index order,
5. broadcasts this worker's changes.
"""

from __future__ import annotations

import hashlib
import heapq

from timely.errors import DataflowError
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import Antichain, MutableAntichain
from timely.progress.reachability import Builder


class PortCounts:
    """One port's changes, added straight into a scope's pointstamp batch."""

    __slots__ = ("batch", "key")

    def __init__(self, batch: dict, is_source: bool, node: int, port: int):
        self.batch = batch
        self.key = (is_source, node, port)

    def update(self, time, diff: int) -> None:
        is_source, node, port = self.key
        key = (is_source, node, port, time)
        batch = self.batch
        batch[key] = batch.get(key, 0) + diff


class ProducedCounts:
    """An output's produced records: +n at every input the output reaches."""

    __slots__ = ("batch", "targets")

    def __init__(self, batch: dict):
        self.batch = batch
        self.targets: list = []       # (node, port), filled when the scope is built

    def update(self, time, diff: int) -> None:
        batch = self.batch
        for node, port in self.targets:
            key = (False, node, port, time)
            batch[key] = batch.get(key, 0) + diff


class Operate:
    """What a scope needs of each child."""

    name = "operator"
    inputs = 0
    outputs = 0
    local = True          # its progress is this worker's own and must be broadcast
    notify = ()           # per input: activate on frontier changes
    watches = None        # per input: wants frontier changes pushed (None: every input)

    def summary(self):
        """``[input][output]`` -> list of summaries (empty: not connected)."""
        raise NotImplementedError

    def push_frontier(self, port: int, changes) -> None:
        """Changes ``[(time, diff)]`` to input ``port``'s frontier."""
        raise NotImplementedError

    def set_produced_targets(self, port: int, targets) -> None:
        """The inputs that output ``port`` reaches, known once the scope is built."""

    def schedule(self) -> bool:
        """Runs the operator; True while it is incomplete for reasons the
        progress tracker cannot see."""
        raise NotImplementedError

    def shut_down(self) -> None:
        """Releases the operator's logic and state."""


class ChildState:
    """A scope's record of one child."""

    __slots__ = ("index", "operator", "local", "notify", "incomplete", "outputs", "watches", "id")

    def __init__(self, index: int, operator: Operate, identifier: int | None = None):
        self.index = index
        self.id = identifier              # worker-unique, for logs
        self.operator = operator
        self.local = operator.local
        self.notify = list(operator.notify) if operator.notify else [True] * operator.inputs
        self.watches = list(operator.watches) if operator.watches is not None else [True] * operator.inputs
        self.incomplete = False
        self.outputs = operator.outputs


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
        self.output_capabilities: list = []
        self.output_targets: list = []     # per scope output: parent inputs it reaches
        self.incomplete_count = 0
        self.deferred: set = set()
        self.heap: list = []
        self.scheduling = False
        self.current = -1
        self.progcaster = None
        self.notify = ()
        self.rng = worker.schedule_rng
        self._summary = None
        self.fingerprint = ""
        self.done = False
        self.eager = worker.progress_mode == "eager" or worker.peers == 1
        self.id = None                     # the root's operator identifier (a child's is its ChildState's)
        self.logged = parent.logged if parent is not None else True

    # -- building -----------------------------------------------------------

    def allocate_index(self) -> int:
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new operators")
        index = self.next_index
        self.next_index += 1
        self.children.append(None)
        return index

    def add_child(self, index: int, operator: Operate) -> None:
        child = self.children[index] = ChildState(index, operator, self.worker.next_operator_id())
        if self.worker.logger is not None:
            self.worker.logger.operates(self, child)

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

    def build(self):
        """Compiles the graph and records the initial capabilities; returns the
        scope's input-to-output summary for its parent."""
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
            op = child.operator
            builder.add_node(child.index, op.inputs, op.outputs, op.summary())
        reach: dict = {}
        for sn, sp, tn, tp in self.edges:
            builder.add_edge((sn, sp), (tn, tp))
            reach.setdefault((sn, sp), []).append((tn, tp))
        self.input_targets = [reach.get((0, port), []) for port in range(self.inputs)]
        for child in self.children[1:]:
            for port in range(child.outputs):
                child.operator.set_produced_targets(port, reach.get((child.index, port), []))
        self.tracker, inner_summary = builder.build()
        self.fingerprint = self.describe()
        self.output_capabilities = [MutableAntichain(arity=self.arity) for _ in range(self.outputs)]
        self.output_targets = [[] for _ in range(self.outputs)]
        self.progcaster = self.worker.progcaster(self)
        self.notify = [True] * self.inputs
        self.built = True
        self.worker.scopes.append(self)
        # Each operator output starts with `peers` copies of a capability at the
        # minimum time, one per worker. That is common knowledge, applied here
        # and never broadcast; each worker broadcasts only the drop of its own.
        # (A child scope reported its initial capabilities into final_pointstamp
        # already, from its own tracker, which counts every worker.)
        low = 0 if self.arity == 1 else (0,) * self.arity
        peers = self.worker.peers
        final = self.final_pointstamp
        for child in self.children[1:]:
            if child.local:
                for port in range(child.outputs):
                    key = (True, child.index, port, low)
                    final[key] = final.get(key, 0) + peers
        self.propagate_pointstamps()
        self.deferred.update(range(1, len(self.children)))
        self._summary = self.outer_summary(inner_summary)
        return self._summary

    def describe(self) -> str:
        """A digest of the scope's shape: operators, ports, summaries, edges."""
        parts = [self.name, self.arity, self.nested, self.inputs, self.outputs]
        for child in self.children[1:]:
            op = child.operator
            parts.append((op.name, op.inputs, op.outputs, repr(op.summary()),
                          getattr(op, "fingerprint", "")))
        parts.append(sorted(self.edges))
        return hashlib.sha1(repr(parts).encode()).hexdigest()

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

    # -- as a child of the parent scope ------------------------------------

    def summary(self):
        return self._summary

    def push_frontier(self, port: int, changes) -> None:
        update = self.tracker.update_source
        for time, diff in changes:
            update((0, port), self.to_inner(time), diff)

    def set_produced_targets(self, port: int, targets) -> None:
        self.output_targets[port] = targets

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
        self.harvest_inputs()
        self.progcaster.recv(self.final_pointstamp)
        self.propagate_pointstamps()

        heap = self.heap
        heap.extend(self.deferred)
        self.deferred.clear()
        self.scheduling = True
        children = self.children
        node_quiet = self.tracker.node_quiet
        logger = self.worker.logger if self.logged else None
        try:
            for index in self.activated():
                child = children[index]
                operator = child.operator
                if operator is None:
                    continue
                if logger is None:
                    incomplete = operator.schedule()
                else:
                    incomplete = logger.scheduled(child.id, operator)
                if incomplete != child.incomplete:
                    self.incomplete_count += 1 if incomplete else -1
                    child.incomplete = incomplete
                if not incomplete and node_quiet(index):
                    operator.shut_down()
                    child.operator = None
                    if logger is not None:
                        logger.shutdown(child.id)
        finally:
            self.scheduling = False
            self.current = -1
        if self.local_pointstamp:
            self.send_progress()
        if self.final_pointstamp:
            self.activate_self()
        return self.incomplete_count > 0 or self.tracker.tracking_anything()

    def send_progress(self) -> None:
        """Broadcasts this worker's accumulated changes as one batch.

        In the demand-driven mode (the default with several workers, as in the
        Rust crate) the batch waits until it holds a change that others must
        see: a decrement that may move some frontier, or records entering the
        scope. Everything accumulated travels together, so no increment ever
        arrives after the decrement it pairs with.
        """
        local = self.local_pointstamp
        if self.eager:
            self.progcaster.send(local)
            return
        is_global = self.tracker.is_global
        for (is_source, node, port, time), diff in local.items():
            if node == 0 or (diff < 0 and is_global(is_source, node, port, time)):
                self.progcaster.send(local)
                return

    def activated(self):
        """The children to run this round, each once, in index order; children
        activated meanwhile with a higher index join the round.

        With ``schedule_seed`` (adversarial testing) the round is the
        activated children in a random order instead, and whatever is
        activated meanwhile waits for the next round.
        """
        heap = self.heap
        if self.rng is not None:
            order = sorted(set(heap))
            heap.clear()
            self.rng.shuffle(order)
            self.current = len(self.children)
            yield from order
            if self.deferred:
                self.activate_self()
            return
        heapq.heapify(heap)
        heappop = heapq.heappop
        previous = -1
        while heap:
            index = heappop(heap)
            if index > previous:
                self.current = previous = index
                yield index

    def harvest_inputs(self) -> None:
        local = self.local_pointstamp
        get = local.get
        for port, batch in enumerate(self.input_messages):
            if batch:
                for time, diff in batch.drain():
                    for node, tport in self.input_targets[port]:
                        k = (False, node, tport, time)
                        local[k] = get(k, 0) + diff
                    k = (True, 0, port, time)
                    local[k] = get(k, 0) - diff

    def propagate_pointstamps(self) -> None:
        tracker = self.tracker
        final = self.final_pointstamp
        logger = self.worker.logger if self.logged else None
        if final:
            if logger is not None:
                logger.reachability(self, final)
            boundary = tracker.absorb(final)
            final.clear()
            if boundary:
                self.report_boundary(boundary)
        tracker.propagate_all()
        targets, quiet = tracker.drain_pushed()
        children = self.children
        for node, port, changes in targets:
            child = children[node]
            operator = child.operator
            if operator is not None:
                if logger is not None:
                    logger.push_progress(child.id, port, changes)
                if child.watches[port]:
                    operator.push_frontier(port, changes)
                if child.notify[port]:
                    self.activate_child(node)
        for node in quiet:
            if children[node].operator is not None:
                self.activate_child(node)
        if self.outputs:
            into = self.parent.final_pointstamp
            get = into.get
            for port, changes in enumerate(tracker.output_changes()):
                if changes:
                    for time, diff in self.output_capabilities[port].update_iter(changes):
                        key = (True, self.index_in_parent, port, self.to_outer(time))
                        into[key] = get(key, 0) + diff

    def report_boundary(self, boundary) -> None:
        """Records leaving node 0's outputs were consumed at the scope's inputs;
        records reaching node 0's inputs were produced at its outputs."""
        parent = self.parent
        into = parent.final_pointstamp
        get = into.get
        me = self.index_in_parent
        for (is_source, _node, port, time), diff in boundary:
            outer = self.to_outer(time)
            if is_source:
                key = (False, me, port, outer)
                into[key] = get(key, 0) + diff
            else:
                for node, tport in self.output_targets[port]:
                    key = (False, node, tport, outer)
                    into[key] = get(key, 0) + diff
        parent.activate_child(me)

    def shut_down(self) -> None:
        self.done = True
        logger = self.worker.logger if self.logged else None
        for child in self.children[1:]:
            if child is not None and child.operator is not None:
                child.operator.shut_down()
                child.operator = None
                if logger is not None:
                    logger.shutdown(child.id)
        if logger is not None and self.parent is None:
            logger.shutdown(self.id)
