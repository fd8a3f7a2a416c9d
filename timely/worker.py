"""The worker: builds dataflows and steps them.

Every worker runs the same program: builds the same dataflows in the same
order (so operators and channels get the same identifiers everywhere) and
steps them until they complete. A step receives what other workers sent,
schedules the dataflows that have something to do, and flushes what this
worker sent. Operators run only when activated: data arrived, a frontier they
watch changed, or something called their activator.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time as _time

from timely.dataflow.subgraph import Subgraph  # noqa: I001 - before communication (cycle)
from timely.dataflow.progcaster import Progcaster
from timely.communication.allocator import ThreadAllocator
from timely.errors import DataflowError

log = logging.getLogger(__name__)


class Worker:
    """One timely worker.

    ``index`` and ``peers`` say which of how many workers this is. ``dataflow()``
    builds a dataflow; ``step()`` runs one round of scheduling and returns
    whether any dataflow remains.
    """

    def __init__(self, allocator=None, *, check_progress: bool = False, schedule_seed=None,
                 progress_mode: str = "demand"):
        if progress_mode not in ("demand", "eager"):
            raise DataflowError(f"progress_mode must be 'demand' or 'eager', not {progress_mode!r}")
        self.progress_mode = progress_mode
        self.allocator = allocator if allocator is not None else ThreadAllocator()
        self.index = self.allocator.index
        self.peers = self.allocator.peers
        self.check_progress = check_progress
        self.schedule_rng = random.Random(schedule_seed) if schedule_seed is not None else None
        self.dataflows: dict[int, Subgraph] = {}
        self.scopes: list[Subgraph] = []        # every built scope, for idle checks
        self.active: set[int] = set()
        self._next_dataflow = 0
        self._next_channel = 0
        self._next_operator = 0
        self._stepping = False
        self._building = False
        self.started_ns = _time.perf_counter_ns()
        self.logger = None                      # timely.logging.Logger while something is registered
        self._logging = None
        # How many dataflows each peer has built, and whether it has finished
        # (its work returned): a worker holding a dataflow that a finished peer
        # never built waits forever for that peer's share of it.
        self.peer_dataflows = [0] * self.peers
        self._finished_peers: dict[int, int] = {}
        self._fewest_finished: int | None = None
        self._census = None
        self._census_waiting = False
        if self.peers > 1:
            self._census = self.allocator.allocate(("dataflows",), self._census_arrived)
        log.debug("worker %d of %d started on a %s", self.index, self.peers,
                  type(self.allocator).__name__)

    # -- identifiers ---------------------------------------------------------

    def next_channel_id(self) -> int:
        """The next channel identifier; every worker allocates them in the same order."""
        identifier = self._next_channel
        self._next_channel += 1
        return identifier

    def next_operator_id(self) -> int:
        """The next operator identifier (for logs); every worker allocates them in the same order."""
        identifier = self._next_operator
        self._next_operator += 1
        return identifier

    def progcaster(self, subgraph: Subgraph) -> Progcaster:
        # Progress channels are named by the scope's address, not numbered
        # like data channels, so they line up even between workers that built
        # different graphs, which the fingerprint then reports.
        return Progcaster(self, ("progress", *subgraph.path), subgraph.activate_self,
                          subgraph.fingerprint, subgraph.name, owner=subgraph)

    # -- logging ---------------------------------------------------------------

    @property
    def logging(self):
        """This worker's log registry (:class:`timely.logging.LoggingRegistry`):
        ``worker.logging.register(callback, kinds=None)``."""
        if self._logging is None:
            from timely.logging.registry import LoggingRegistry

            self._logging = LoggingRegistry(self)
        return self._logging

    def close(self) -> None:
        """Ends this worker's log streams (flushing them) and tells the other
        workers how many dataflows this one built; ``timely.execute`` calls it
        once the work is done and every dataflow has completed."""
        if self._census is not None:
            self._announce(final=True)
            self.allocator.release()
        if self._logging is not None:
            self._logging.close()

    # -- the dataflow census ---------------------------------------------------

    def _announce(self, final: bool) -> None:
        message = (self.index, self._next_dataflow, final)
        for j, pusher in enumerate(self._census[0]):
            if j != self.index:
                pusher.push(message)
                pusher.done()

    def _census_arrived(self) -> None:
        self._census_waiting = True

    def _take_census(self) -> None:
        """Reads what peers said about their dataflows; raises DataflowError
        if a finished peer built fewer than this worker holds."""
        self._census_waiting = False
        pull = self._census[1].pull
        while True:
            message = pull()
            if message is None:
                break
            sender, built, final = message
            self.peer_dataflows[sender] = max(self.peer_dataflows[sender], built)
            if final:
                self._finished_peers[sender] = built
                if self._fewest_finished is None or built < self._fewest_finished:
                    self._fewest_finished = built
        if self._fewest_finished is not None:
            self._check_census()

    def _check_census(self) -> None:
        fewest = self._fewest_finished
        stuck = [i for i in self.dataflows if i >= fewest]
        if stuck:
            peers = sorted(j for j, n in self._finished_peers.items() if n <= max(stuck))
            raise DataflowError(
                f"worker {self.index} built {self._next_dataflow} dataflow(s), but worker(s) "
                f"{peers} finished after building "
                f"{sorted({self._finished_peers[j] for j in peers})}: dataflow(s) {stuck} can "
                "never complete. Every worker must build the same dataflows in the same order")

    # -- building ------------------------------------------------------------

    @contextlib.contextmanager
    def dataflow(self, name: str = "Dataflow"):
        """Builds a dataflow: yields its root scope (integer timestamps).

        The dataflow is compiled and starts running when the block ends.
        """
        from timely.dataflow.scope import Scope

        if self._building:
            raise DataflowError("dataflow() blocks do not nest; use scope.region() or iterative()")
        identifier = self._next_dataflow
        self._next_dataflow += 1
        subgraph = Subgraph(self, name, (identifier,), arity=1, nested=False,
                            parent=None, index_in_parent=None)
        subgraph.dataflow_id = identifier
        subgraph.id = self.next_operator_id()
        if self.logger is not None:
            self.logger.dataflow(subgraph)
        scope = Scope(self, subgraph, parent=None)
        self._building = True
        try:
            yield scope
            scope._finish()
            subgraph.build()
        finally:
            self._building = False
        self.dataflows[identifier] = subgraph
        self.active.add(identifier)
        if self._census is not None:
            self._announce(final=False)

    def activate_dataflow(self, subgraph: Subgraph) -> None:
        self.active.add(subgraph.dataflow_id)

    # -- running -------------------------------------------------------------

    def step(self) -> bool:
        """One round: receive, schedule active dataflows, release. True while
        dataflows remain."""
        if self._stepping:
            raise DataflowError("step() called from inside a step (from operator logic?)")
        self._stepping = True
        try:
            self.allocator.receive()
            if self._census_waiting:
                self._take_census()
            elif self._fewest_finished is not None and self._next_dataflow > self._fewest_finished:
                self._check_census()
            if not self.active:
                self._poke()
            if self.active:
                active = sorted(self.active)
                self.active.clear()
                logger = self.logger
                for identifier in active:
                    subgraph = self.dataflows.get(identifier)
                    if subgraph is None:
                        continue
                    if logger is None or not subgraph.logged:
                        alive = subgraph.schedule()
                    else:
                        alive = logger.scheduled(subgraph.id, subgraph)
                    if not alive:
                        subgraph.shut_down()
                        del self.dataflows[identifier]
            self.allocator.release()
            if self.logger is not None:
                self.logger.step_end()
        finally:
            self._stepping = False
        return bool(self.dataflows)

    def _poke(self) -> None:
        """Activates scopes holding changes made outside any scheduling (a
        capability dropped by user code), so that they are reported."""
        live = False
        for scope in self.scopes:
            if scope.done:
                continue
            live = True
            if scope.extract_all():
                scope.activate_self()
        if not live:
            self.scopes.clear()

    def stalled(self) -> bool:
        """Nothing is active, nothing is pending, and dataflows remain: with one
        worker, nothing can ever happen again."""
        return (self.peers == 1 and bool(self.dataflows) and not self.active
                and not any(s.extract_all() for s in self.scopes if not s.done))

    def describe_holds(self) -> str:
        """The operators that hold capabilities or have messages waiting."""
        lines = []
        for scope in self.scopes:
            if scope.done or scope.tracker is None:
                continue
            for index, child in enumerate(scope.children[1:], start=1):
                held = []
                for port in range(child.outputs if child else 0):
                    stamps = scope.tracker.source_pointstamps((index, port))
                    held += [f"capability at {t!r} x{c}" for t, c in stamps if c > 0]
                name = child.operator.name if child and child.operator else "(shut down)"
                if held:
                    lines.append(f"{scope.name}/{name} (operator {index}): " + ", ".join(held))
        return "; ".join(lines) or "no capability is held"

    def step_while(self, condition) -> None:
        """Steps while ``condition()`` holds."""
        while condition():
            self.step()

    def step_or_park(self, timeout: float | None = None) -> bool:
        """Steps; if nothing was active, first waits up to ``timeout`` seconds
        for data from other workers."""
        if not self.active:
            self.allocator.receive()
            if not self.active and self.dataflows:
                if self.logger is not None:
                    self.logger.park(timeout)
                self.allocator.park(timeout)
                if self.logger is not None:
                    self.logger.unpark()
        return self.step()

    def has_dataflows(self) -> bool:
        return bool(self.dataflows)

    def installed_dataflows(self) -> list[int]:
        return sorted(self.dataflows)

    def drain(self, timeout: float | None = None) -> None:
        """Steps until every dataflow has completed."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        while self.step_or_park(0.001 if self.peers > 1 else 0):
            if self._logging is not None:
                self._logging.end_lonely_feeds()
            if self.stalled():
                raise DataflowError(
                    f"worker {self.index}: dataflows {self.installed_dataflows()} cannot complete: "
                    f"{self.describe_holds()}")
            if deadline is not None and _time.monotonic() > deadline:
                raise DataflowError(
                    f"worker {self.index}: dataflows {self.installed_dataflows()} did not complete "
                    f"within {timeout} s")
