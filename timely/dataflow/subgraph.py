"""A scope at run time: scheduling, activation, progress exchange and logs
over the bookkeeping of :class:`timely.progress.subgraph.SubgraphProgress`.

Each time a :class:`Subgraph` is scheduled it

1. counts the records that entered through its inputs,
2. receives the batches every worker broadcast for this scope,
3. applies them, propagates, and activates the children whose input
   frontiers changed (reporting the scope's own progress to its parent),
4. schedules the children that were activated, in index order, draining each
   one's shared progress right after it ran,
5. broadcasts this worker's changes when they must be seen.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from timely.dataflow._activate import Activations, ChildActivator, Schedulable
from timely.dataflow._subgraph import ScopeRound
from timely.dataflow.channels import Exchange, ExchangePusher, Pipeline
from timely.progress import ChangeBatch
from timely.progress.subgraph import SubgraphProgress

if TYPE_CHECKING:
    from timely.dataflow.progcaster import Progcaster

__all__ = ["Subgraph"]


class Subgraph(SubgraphProgress):
    """A scope of ``worker``: a dataflow graph of children, scheduled as one
    operator of its parent (or as a dataflow of the worker, at the root)."""

    progcaster: Progcaster     # made by build(); nothing reads it before
    round: ScopeRound          # made by build()
    dataflow_id: int           # at a dataflow's root: its identifier (set by the worker)

    def __init__(self, worker, name: str, path: tuple, arity: int, nested: bool,
                 parent: Subgraph | None, index_in_parent: int | None):
        super().__init__(name, path, arity, nested)
        self.worker = worker
        self.parent = parent
        self.index_in_parent = index_in_parent
        # Children asked to run; channels activate them through it directly.
        self.activations = Activations(self.activate_self)
        self.progcaster = None  # type: ignore[assignment]  # made by build()
        self.rng = worker.schedule_rng
        self.eager = worker.progress_mode == "eager" or worker.peers == 1
        self.solo = worker.peers == 1      # progress batches need not travel
        self.id: int | None = None                     # the root's operator identifier (a child's is its state's)
        self.logged: bool = parent.logged if parent is not None else True
        self.root: Subgraph = parent.root if parent is not None else self
        self.changes = 0                   # at the root: batches of pointstamp changes applied

    # -- building -----------------------------------------------------------

    def add_child(self, index: int, operator, identifier: int | None = None):
        if identifier is None:
            identifier = self.worker.next_operator_id()
        child = super().add_child(index, operator, identifier)
        if self.worker.logger is not None:
            self.worker.logger.operates(self, child)
        return child

    def build(self, peers: int | None = None):
        """Compiles the graph; returns the scope's summary for its parent."""
        worker = self.worker
        summary = super().build(worker.peers if peers is None else peers)
        # activate_self, without its Python frame: for every message that
        # activates a child of a scope not yet scheduled.
        if self.parent is None:
            self.activations.on_first = functools.partial(worker.active.add, self.dataflow_id)
        else:
            assert self.index_in_parent is not None     # a child scope has its place
            self.activations.on_first = ChildActivator(self.parent.activations,
                                                       self.index_in_parent)
        # Per child: its compiled logic, which the round runs in its place.
        self.compiled = [None] + [getattr(child.operator, "compiled_logic", None)
                                  for child in self.children[1:]]
        self.compiled = [c if isinstance(c, Schedulable) else None for c in self.compiled]
        self.round = ScopeRound(self)
        # Called by the worker and by the parent's round: the compiled round
        # itself, without a Python frame around it.
        self.schedule = self.round.run  # type: ignore[method-assign]
        self.extract_all = self.round.extract_all
        self.progcaster = self.round.progcaster = worker.progcaster(self)
        if self.mirrored():
            self._route_by_destination()
        worker.scopes.append(self)
        self.round.propagate()
        self.activations.deferred.update(range(1, len(self.children)))
        return summary

    def mirrored(self) -> bool:
        """With several workers, the other workers' copies of each operator
        are tracked apart from this worker's (mirror nodes), so that an
        operator's input frontier is its own copy's: Naiad's guarantee is
        per vertex (no more records at a time for this copy), and a round
        then waits for the producers' progress, not for every consumer's."""
        return self.worker.peers > 1

    def channel_kind(self, edge) -> str:
        pact, pusher = self.edge_channels.get(edge, (None, None))
        if type(pact) is Exchange:
            # Counted by destination where its pusher can (one per worker).
            return "exchange" if isinstance(pusher, ExchangePusher) and \
                pusher.peers == self.worker.peers else "other"
        if type(pact) is Pipeline:
            return "pipeline"
        return "other"

    def reads_every_copy(self, node: int) -> bool:
        return bool(getattr(self.children[node].operator, "reads_every_copy", False))

    def _route_by_destination(self) -> None:
        """Counts the records of each exchange into a split input by the
        worker they are bound for, and reads what other workers report
        from this worker's side."""
        worker = self.worker
        self.tracker.set_worker(worker.index, worker.peers)
        split = set(self.split)
        for edge in self.edges:
            pact, pusher = self.edge_channels.get(edge, (None, None))
            if (edge[2], edge[3]) not in split or type(pact) is not Exchange:
                continue
            routed = ChangeBatch(arity=self.arity + 1)
            pusher.count_by_destination(routed)
            self.tracker.route_counts((edge[0], edge[1]), (edge[2], edge[3]), routed)
        self.progcaster.tracker = self.tracker

    # -- activation ---------------------------------------------------------

    def activate_child(self, index: int) -> None:
        """Asks for child ``index`` to be scheduled."""
        self.activations.activate(index)

    def activate_self(self) -> None:
        if self.parent is None:
            self.worker.activate_dataflow(self)
        else:
            # a child scope (one with a parent) always has its index there
            self.parent.activate_child(self.index_in_parent)  # type: ignore[arg-type]

    # -- running ------------------------------------------------------------

    def schedule(self) -> bool:
        """Runs the scope once (:class:`~timely.dataflow._subgraph.ScopeRound`);
        True while it is incomplete."""
        return self.round.run()

    def shut_down(self) -> None:
        self.done = True
        # The compiled logics go with their operators (they may hold user state).
        self.compiled = [None] * len(self.children)
        logger = self.worker.logger if self.logged else None
        for child in self.children[1:]:
            if child is not None and child.operator is not None:
                child.operator.shut_down()
                child.operator = None
                if logger is not None:
                    logger.shutdown(child.id)
        if logger is not None and self.parent is None:
            logger.shutdown(self.id)
