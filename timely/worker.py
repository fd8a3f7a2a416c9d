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

from timely.communication.allocator import ThreadAllocator
from timely.dataflow.progcaster import Progcaster
from timely.dataflow.subgraph import Subgraph
from timely.errors import DataflowError

log = logging.getLogger(__name__)


class Timer:
    """When a worker started (``worker.timer()``, as the crate's): ``elapsed()``
    is the seconds since, on the monotonic performance counter."""

    __slots__ = ("started",)

    def __init__(self, started: float):
        self.started = started

    def elapsed(self) -> float:
        return _time.perf_counter() - self.started

    def __repr__(self):
        return f"Timer(elapsed={self.elapsed():.6f})"


class SyncActivator:
    """Schedules one operator from any thread (``worker.sync_activator_for``):
    the request is queued for the worker's next step, and a parked worker
    wakes."""

    __slots__ = ("_queue", "_allocator", "address")

    def __init__(self, queue, allocator, address: tuple):
        self._queue = queue
        self._allocator = allocator
        self.address = address

    def activate(self) -> None:
        self._queue.append(self.address)      # deque.append is atomic
        self._allocator.unpark()

    __call__ = activate


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
        """Ends this worker's log streams (flushing them); ``timely.execute``
        calls it once the work is done and every dataflow has completed."""
        if self._logging is not None:
            self._logging.close()

    # -- building ------------------------------------------------------------

    @contextlib.contextmanager
    def dataflow(self, name: str = "Dataflow", *, arity: int = 1):
        """Builds a dataflow: yields its root scope.

        The root scope's timestamps are ints (``arity=1``), or tuples of
        ``arity`` unsigned 64-bit coordinates in the product order: the
        crate's ``Product<u64, u32>`` root is ``arity=2``, its times
        ``(outer, inner)``. A nested scope adds one coordinate to its parent's.
        The dataflow is compiled and starts running when the block ends.

        >>> import timely
        >>> def work(worker):
        ...     with worker.dataflow(arity=2) as scope:
        ...         handle, stream = scope.new_input()
        ...         out = stream.capture()
        ...     handle.send("a")
        ...     handle.advance_to((0, 1))
        ...     handle.send("b")
        ...     handle.advance_to((1, 1))       # product order: every coordinate >=
        ...     handle.send("c")
        ...     handle.close()
        ...     worker.drain()
        ...     return out.extract()
        >>> timely.execute_directly(work)
        [((0, 0), ['a']), ((0, 1), ['b']), ((1, 1), ['c'])]
        """
        from timely.dataflow.scope import Scope

        if self._building:
            raise DataflowError("dataflow() blocks do not nest; use scope.region() or iterative()")
        identifier = self._next_dataflow
        self._next_dataflow += 1
        if isinstance(arity, bool) or not isinstance(arity, int) or arity < 1:
            raise DataflowError(f"a dataflow's timestamp arity is a positive int, not {arity!r}")
        subgraph = Subgraph(self, name, (identifier,), arity=arity, nested=False,
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
            if self._sync_activations:
                self._apply_sync_activations()
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
            if not self.active and self.dataflows and not self._sync_activations:
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

    # -- the rest of the crate's worker API ------------------------------------

    _sync_activations = None      # a deque of addresses, made by sync_activator_for

    def step_or_park_while(self, duration, condition) -> None:
        """Steps or parks (up to ``duration`` seconds; None: as long as
        needed) while ``condition()`` holds.

        >>> import timely
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         probe = scope.to_stream(range(10)).probe()
        ...     worker.step_or_park_while(None, lambda: probe.less_than(1))
        ...     return probe.done()
        >>> timely.execute_directly(work)
        True
        """
        while condition():
            self.step_or_park(duration)

    def timer(self) -> Timer:
        """A timer started when this worker was made.

        >>> import timely
        >>> timely.execute_directly(lambda worker: worker.timer().elapsed() >= 0)
        True
        """
        return Timer(self.started_ns / 1e9)

    def _subgraph_at(self, path: tuple):
        for scope in self.scopes:
            if scope.path == path and not scope.done:
                return scope
        raise DataflowError(f"worker {self.index}: no live scope at address {path!r}")

    def activator_for(self, address):
        """An activator for the operator at ``address`` (its ``info.address``);
        for this worker's thread."""
        from timely.dataflow.builder import Activator

        address = tuple(address)
        return Activator(self._subgraph_at(address[:-1]), address[-1])

    def sync_activator_for(self, address) -> SyncActivator:
        """A :class:`SyncActivator` for the operator at ``address``: other
        threads may call ``activate()``; a parked worker wakes.

        >>> import threading, timely
        >>> def work(worker):
        ...     addresses, runs = [], []
        ...     with worker.dataflow() as scope:
        ...         def constructor(cap, info):
        ...             addresses.append(info.address)
        ...             held = [cap]
        ...             def logic(output):
        ...                 runs.append(1)
        ...                 if len(runs) == 2:          # the activation from the other thread
        ...                     output.session(held[0]).give("woken")
        ...                     held.pop().drop()
        ...             return logic
        ...         out = scope.source("Remote", constructor).capture()
        ...     activator = worker.sync_activator_for(addresses[0])
        ...     threading.Timer(0.05, activator.activate).start()
        ...     while worker.step_or_park(10):          # parks until woken
        ...         pass
        ...     return out.extract()
        >>> timely.execute_directly(work)
        [(0, ['woken'])]
        """
        import collections

        if self._sync_activations is None:
            self._sync_activations = collections.deque()
        # Not looked up now: the scope may still be under construction.
        return SyncActivator(self._sync_activations, self.allocator, tuple(address))

    def _apply_sync_activations(self) -> None:
        queue = self._sync_activations
        while queue:
            address = queue.popleft()
            for scope in self.scopes:
                if scope.path == address[:-1] and not scope.done:
                    scope.activate_child(address[-1])
                    break

    def drop_dataflow(self, identifier: int) -> None:
        """Removes the dataflow ``identifier`` (``installed_dataflows()`` lists
        them): it is no longer scheduled, its operators shut down and its
        capabilities no longer hold anything back. As in the crate, every
        worker should drop the same dataflow.

        >>> import timely
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         handle, stream = scope.new_input()    # never closed
        ...     worker.drop_dataflow(worker.installed_dataflows()[0])
        ...     return worker.step(), worker.installed_dataflows()
        >>> timely.execute_directly(work)
        (False, [])
        """
        subgraph = self.dataflows.pop(identifier, None)
        if subgraph is None:
            return
        self.active.discard(identifier)
        subgraph.shut_down()
        for scope in self.scopes:
            if scope.path[0] == identifier:
                scope.done = True
