"""Progress bookkeeping of one scope: its children, its reachability
tracker, and the progress it reports to its parent.

A :class:`SubgraphProgress` knows a scope's graph (children as
:class:`~timely.progress.operate.Operate`, edges between their ports, the
scope's own inputs and outputs as node 0) and accounts for it:

- after each scheduling of a child, its
  :class:`~timely.progress.operate.SharedProgress` is drained
  (:meth:`~timely.progress.Tracker.drain_shared`) into the scope's pointstamp
  accumulation: a :class:`~timely.progress.ChangeBatch` of rows
  ``(location, time...)``, the location being the tracker's id of a port: a
  consumed record is ``-n`` at its input, a produced one ``+n`` at every
  input its output reaches, a capability ``±1`` at its output. A local
  child's changes go to ``local_pointstamp``, which every worker must see
  (:meth:`~timely.progress.Tracker.must_send` says when); a child scope's
  are already every worker's and go straight to ``final_pointstamp``. No
  Python object is made per change, here or on the way to other workers;
- records that entered through the scope's inputs are counted
  (:meth:`~timely.progress.Tracker.harvest`);
- propagating applies ``final_pointstamp`` (this worker's and the batches
  every worker broadcast) to the :class:`~timely.progress.Tracker`
  (``absorb_located``, ``propagate_all``), hands frontier changes to the
  children (``drain_frontiers``: into the input frontiers they show, in
  compiled code, or through ``push_frontier``), and reports to the parent,
  in the scope's own :class:`~timely.progress.operate.SharedProgress`:
  records leaving node 0's outputs were consumed at the scope's inputs,
  records reaching node 0's inputs were produced at its outputs
  (``report_boundary``), and changes in the times that may reach its
  outputs are its capability changes (:meth:`~SubgraphProgress.report_outputs`).

What runs when, how batches reach other workers, and what is logged belong
to the dataflow layer (:mod:`timely.dataflow.subgraph`), which builds on this.
"""

from __future__ import annotations

from timely.errors import DataflowError
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import Antichain, MutableAntichain
from timely.progress.operate import Operate, PerOperatorState, SharedProgress
from timely.progress.reachability import Builder, Tracker

__all__ = ["SubgraphProgress", "plan_mirrors"]


class SubgraphProgress(Operate):
    """The progress state of one scope, tracked as one operator of its parent.

    ``arity`` is the number of coordinates of the scope's timestamps; a
    ``nested`` scope adds one to its parent's (``iterative()``), a region
    keeps them.
    """

    local = False

    # Made by build(): None before it, and nothing reads them before it.
    tracker: Tracker
    progress: SharedProgress

    def __init__(self, name: str, path: tuple, arity: int, nested: bool):
        self.name = name
        self.path = path
        self.arity = arity
        self.nested = nested               # adds a coordinate to the parent's times
        self.inputs = 0
        self.outputs = 0
        self.children: list = [None]       # slot 0: the scope boundary
        self.edges: list = []              # (source node, port, target node, port)
        self.edge_channels: dict = {}      # edge -> (pact, pusher), where given
        self.split: list = []              # the inputs read per worker copy, made by build()
        self.built = False
        self.next_index = 1
        self.input_messages: list = []     # per scope input: records that entered
        self.unconnected_loops: list = []
        self.tracker = None  # type: ignore[assignment]  # made by build()
        # Located changes (rows of location and time), see the module's docstring.
        self.local_pointstamp = ChangeBatch(arity=arity + 1)
        self.final_pointstamp = ChangeBatch(arity=arity + 1)
        self.boundary = ChangeBatch(arity=arity + 1)
        self.output_capabilities: list = []
        self.progress = None  # type: ignore[assignment]  # toward the parent, made by build()
        self.incomplete_count = 0
        self.notify = ()
        self._summary = None
        self.fingerprint = ""
        self.done = False

    # -- building -----------------------------------------------------------

    def allocate_index(self) -> int:
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new operators")
        index = self.next_index
        self.next_index += 1
        self.children.append(None)
        return index

    def add_child(self, index: int, operator: Operate,
                  identifier: int | None = None) -> PerOperatorState:
        """Installs ``operator`` as child ``index``. Changes it made while it
        was being built (capabilities dropped by its constructor, a child
        scope's initial report) are taken when the scope is built."""
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new operators")
        if not isinstance(getattr(operator, "progress", None), SharedProgress):
            raise DataflowError(f"operator {operator.name!r} has no SharedProgress in .progress")
        child = self.children[index] = PerOperatorState(index, operator, identifier)
        return child

    def add_edge(self, source, target, pusher=None, pact=None) -> None:
        """Connects ``source`` to ``target``; ``pusher`` and ``pact`` are the
        channel's, where an operator's input reads it (a scope at run time
        may count the records of an exchange by destination)."""
        if self.built:
            raise DataflowError(f"scope {self.name!r} is already built; it takes no new edges")
        edge = (source[0], source[1], target[0], target[1])
        self.edges.append(edge)
        if pact is not None:
            self.edge_channels[edge] = (pact, pusher)

    def mirrored(self) -> bool:
        """Whether the other workers' copies of the operators are tracked apart
        from this worker's (by mirror nodes): not here; a scope at run time
        with several workers does."""
        return False

    def channel_kind(self, edge) -> str:
        """How an edge's records travel: ``"pipeline"`` (to this worker's
        copy of the target), ``"exchange"`` (to any worker's, counted by
        destination) or ``"other"`` (counted as produced, wherever they go).
        Every edge is ``"other"`` here; a scope at run time tells them apart."""
        return "other"

    def reads_every_copy(self, node: int) -> bool:
        """Whether operator ``node`` is to see the frontier of every worker's
        copy of its inputs (a probe), not its own copy's."""
        return False

    def _add_mirrors(self, builder) -> None:
        """Adds a mirror of every operator (not scopes) and their edges
        (:func:`plan_mirrors`)."""
        plain = [child.index for child in self.children[1:] if child.local]
        mirror, split, edges = plan_mirrors(
            plain, {node: self.children[node].inputs for node in plain}, self.edges,
            {edge: self.channel_kind(edge) for edge in self.edges},
            {node for node in plain if self.reads_every_copy(node)}, len(self.children))
        for node in plain:
            builder.add_mirror(node, mirror[node], [p for n, p in split if n == node])
        for source, target in edges:
            builder.add_edge(source, target)
        self.split = split

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
        """Compiles the graph and records the initial capabilities of ``peers``
        workers; returns the scope's input-to-output summary for its parent."""
        if self.unconnected_loops:
            names = ", ".join(self.unconnected_loops)
            raise DataflowError(f"scope {self.name!r}: loop variable(s) never connected: {names}")
        for index, child in enumerate(self.children):
            if index and child is None:
                raise DataflowError(f"scope {self.name!r}: operator {index} was never built")
        outer = self.arity - 1 if self.nested else self.arity
        self.progress = SharedProgress(self.inputs, self.outputs, arity=outer)
        builder = Builder(arity=self.arity)
        builder.add_node(0, self.outputs, self.inputs,
                         [[[] for _ in range(self.inputs)] for _ in range(self.outputs)])
        for child in self.children[1:]:
            op = child.operator
            builder.add_node(child.index, op.inputs, op.outputs, op.summary())
        for sn, sp, tn, tp in self.edges:
            builder.add_edge((sn, sp), (tn, tp))
        if self.mirrored():
            self._add_mirrors(builder)
        self.tracker, inner_summary = builder.build()
        for child in self.children[1:]:
            # An input's frontier reaches its operator through the sink the
            # operator shows (kept in compiled code), or through push_frontier.
            frontiers = child.operator.input_frontiers
            for port in range(child.inputs):
                watched = bool(child.watches[port])
                sink = frontiers[port] if frontiers is not None and watched else None
                self.tracker.set_interest(child.index, port,
                                          watched and sink is None or bool(child.notify[port]))
                self.tracker.set_sink(child.index, port, sink, bool(child.notify[port]))
        self.fingerprint = self.describe()
        self.output_capabilities = [MutableAntichain(arity=self.arity) for _ in range(self.outputs)]
        self.notify = [True] * self.inputs
        # Records sent before the scope knew where its outputs lead reached
        # only the channels connected so far, none of them counted yet: they
        # count nowhere.
        for child in self.children[1:]:
            self.tracker.drain_shared(child.shared, child.index,
                                      self.local_pointstamp if child.local
                                      else self.final_pointstamp, False)
        self.built = True
        # Each operator output starts with `peers` copies of a capability at the
        # minimum time, one per worker. That is common knowledge, applied here
        # and never broadcast; each worker broadcasts only the drop of its own.
        # (A child scope reported its initial capabilities already, from its
        # own tracker, which counts every worker.)
        low = (0,) * self.arity
        final = self.final_pointstamp
        for child in self.children[1:]:
            if child.local:
                for port in range(child.outputs):
                    here = self.tracker.source_location(child.index, port)
                    there = self.tracker.mirror(here)
                    if there < 0:
                        final.update((here, *low), peers)
                    else:
                        # This worker's copy, and the others' at the mirror.
                        final.update((here, *low), 1)
                        if peers > 1:
                            final.update((there, *low), peers - 1)
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
        import hashlib          # once per scope built; not on every import

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

    # -- accounting -----------------------------------------------------------

    def report_outputs(self) -> None:
        """Reports to the parent (in ``self.progress``) the changes in the
        times that may still reach the scope's outputs, as its capability
        changes (after the tracker propagated)."""
        self.tracker.report_outputs(self.output_capabilities, self.progress.internals,
                                    self.nested)

    def tracking_anything(self) -> bool:
        """Some child is incomplete, or some pointstamp is outstanding."""
        return self.incomplete_count > 0 or self.tracker.tracking_anything()


def plan_mirrors(plain: list, inputs: dict, edges: list, kinds: dict, every: set,
                 first: int) -> tuple[dict, list, list]:
    """Where the other workers' copies of a scope's operators go in its
    graph: ``(mirror, split, added)``.

    ``plain`` lists the operators (not scopes) of the scope, ``inputs``
    their input counts, ``edges`` the scope's edges ``(source node, port,
    target node, port)``, ``kinds[edge]`` how its records travel
    (``"pipeline"``, ``"exchange"`` counted by destination, or ``"other"``),
    ``every`` the operators whose inputs read every worker's copy (probes),
    and ``first`` the first free node index.

    ``mirror[node]`` is the node standing for the other workers' copies of
    ``node``. ``split`` lists the inputs whose frontier is this worker's
    copy's alone: those of a plain operator not in ``every``, fed only by
    pipelines and exchanges from plain operators. ``added`` are the edges to
    add beside the scope's own: a pipeline joins the mirrors as it joins
    the operators; an exchange into a split input joins each copy to both;
    any other edge from an operator joins its mirror to the input itself,
    which then counts every worker's records.
    """
    mirror = {node: first + i for i, node in enumerate(plain)}
    feeding: dict = {}
    for edge in edges:
        feeding.setdefault((edge[2], edge[3]), []).append(edge)
    split = []
    for node in plain:
        if node in every:
            continue
        for port in range(inputs[node]):
            into = feeding.get((node, port), ())
            if into and all(e[0] in mirror and kinds[e] != "other" for e in into):
                split.append((node, port))
    chosen = set(split)
    added = []
    for edge in edges:
        sn, sp, tn, tp = edge
        if (tn, tp) in chosen:
            added.append(((mirror[sn], sp), (mirror[tn], tp)))
            if kinds[edge] == "exchange":
                added.append(((mirror[sn], sp), (tn, tp)))
                added.append(((sn, sp), (mirror[tn], tp)))
        elif sn in mirror:
            added.append(((mirror[sn], sp), (tn, tp)))
    return mirror, sorted(split), added

