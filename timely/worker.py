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
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from timely.communication.allocator import Allocator, ThreadAllocator
from timely.dataflow.activate import Activator, SyncActivator, WorkerActivations
from timely.dataflow.builder import user_stacklevel
from timely.dataflow.progcaster import Progcaster
from timely.dataflow.subgraph import Subgraph
from timely.errors import ConfigurationError, DataflowError, StallWarning, TimelyError

if TYPE_CHECKING:
    from timely.dataflow.scope import Scope
    from timely.logging.registry import LoggingRegistry
    from timely.progress.holds import Holder

_INF = float("inf")

log = logging.getLogger(__name__)

# Seconds without progress, while stepping, before a dataflow is reported stalled.
STALL_WARNING = 5.0
# Steps without progress needed too (one long step is not a stall).
STALL_STEPS = 3


def _logging_configured() -> bool:
    """A handler that shows something would receive the ``timely`` logger's
    warnings: one other than a NullHandler on it or on an ancestor it
    propagates to (the root's included)."""
    logger: logging.Logger | None = log
    while logger is not None:
        if any(not isinstance(h, logging.NullHandler) for h in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def _report_stall(text: str) -> None:
    """A stall report: on the ``timely`` logger when logging is configured;
    else as a :class:`~timely.errors.StallWarning`, which Python prints on
    stderr, so that a program that configured nothing still hears of it."""
    if _logging_configured():
        log.warning("%s", text)
        return
    # Attributed to the user's line that was stepping the worker.
    warnings.warn(text, StallWarning, stacklevel=user_stacklevel())


def _fix_for(holder: Holder) -> str:
    """What to do about ``holder`` when the fix is known: an input's
    capability is released by ``advance_to`` or ``close`` on its handle."""
    if holder.kind == "capability" and holder.name.split(" ")[0] in ("Input", "UnorderedInput"):
        made = [site.removesuffix(" (built there)") for site in holder.sites or ()]
        where = f" made at {', '.join(made)}" if made else ""
        return (f" (call advance_to() past {holder.time!r} or close() on the input "
                f"handle{where})")
    return ""


class Timer:
    """When a worker started (``worker.timer()``, as the crate's): ``elapsed()``
    is the seconds since, on the monotonic performance counter."""

    __slots__ = ("started",)

    def __init__(self, started: float) -> None:
        self.started = started

    def elapsed(self) -> float:
        """Seconds since the worker started."""
        return _time.perf_counter() - self.started

    def __repr__(self) -> str:
        return f"Timer(elapsed={self.elapsed():.6f})"


class WorkerConfig:
    """Settings every worker can read (the crate's ``WorkerConfig``): a
    key-value store given to ``timely.execute(..., worker_config=...)``,
    read in each worker with ``worker.config().get(key)``. Each worker
    process has its own copy; worker threads share one, so treat the
    values as read-only.

    >>> import timely
    >>> config = timely.WorkerConfig().set("rounds", 3)
    >>> timely.execute(lambda worker: worker.config().get("rounds"), workers=2,
    ...                worker_config=config)
    [3, 3]
    """

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self.set(key, value)

    def set(self, key: str, value: Any) -> WorkerConfig:
        """Sets ``key`` to ``value`` (replacing it); returns the config."""
        if type(key) is not str:
            raise ConfigurationError(f"a worker config key is a str, not {key!r}")
        self._values[key] = value
        return self

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it was not set."""
        return self._values.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __repr__(self) -> str:
        return f"WorkerConfig({self._values!r})"


class Worker:
    """One timely worker.

    ``index`` and ``peers`` say which of how many workers this is. ``dataflow()``
    builds a dataflow; ``step()`` runs one round of scheduling and returns
    whether any dataflow remains.

    Stalls are made visible: when a dataflow applies no progress at all (no
    record consumed or produced, no capability changed, on any worker) for
    ``stall_warning`` seconds while this worker keeps stepping, the worker
    logs a warning (logger ``timely.worker``) naming what holds its
    frontiers back: each capability with its operator, time and the line
    that created it, records nobody reads. A peer on this host that was
    awake at every look meanwhile (its park flag down: busy within a long
    step, as a big graph's operators are) is computing, not stalled: the
    warning then waits another period. :meth:`holds` answers the same at
    any moment. ``stall_warning=None`` turns the watch off; it costs one
    clock read per step.

    The launchers build their workers with the ``worker`` settings of their
    :class:`timely.Config` (:class:`timely.config.WorkerSettings`).
    """

    # The dataflow census channel's (pushers, puller); None with one peer, and
    # then nothing reads it.
    _census: tuple[list[Any], Any]

    def __init__(self, allocator: Allocator | None = None, *, check_progress: bool = False,
                 schedule_seed: int | None = None, progress_mode: str = "demand",
                 stall_warning: float | None = STALL_WARNING,
                 worker_config: WorkerConfig | None = None) -> None:
        if progress_mode not in ("demand", "eager"):
            raise ConfigurationError(f"progress_mode must be 'demand' or 'eager', not "
                                     f"{progress_mode!r}")
        if stall_warning is not None and not stall_warning > 0:
            raise ConfigurationError(f"stall_warning must be a positive number of seconds or "
                                     f"None, not {stall_warning!r}")
        self.stall_warning = stall_warning
        if worker_config is not None and not isinstance(worker_config, WorkerConfig):
            raise ConfigurationError(f"worker_config is a timely.WorkerConfig, not "
                                     f"{type(worker_config).__name__}")
        self._config = worker_config if worker_config is not None else WorkerConfig()
        self._steps = 0
        self._parks = 0
        # dataflow -> [changes seen, since, steps then, warned, peers awake, parks then]
        self._watch: dict[int, list[Any]] = {}
        self._watch_at = (_time.monotonic() + min(1.0, stall_warning / 4)
                          if stall_warning is not None else float("inf"))
        self.progress_mode = progress_mode
        self.allocator = allocator if allocator is not None else ThreadAllocator()
        self.index = self.allocator.index
        # Whether receive() and release() move anything (a one-worker
        # allocator's are the interface's no-ops, not called on every step).
        kind = type(self.allocator)
        self._moves = kind.receive is not Allocator.receive or kind.release is not Allocator.release
        self.peers = self.allocator.peers
        self.check_progress = check_progress
        self.schedule_rng = random.Random(schedule_seed) if schedule_seed is not None else None
        self.dataflows: dict[int, Subgraph] = {}
        self.scopes: list[Subgraph] = []        # every built scope, for idle checks
        # The dataflows to schedule at the next step (``active``), and the
        # activations from other threads and after delays applied then.
        self.activations = WorkerActivations()
        self.active: set[int] = self.activations.active
        self._next_dataflow = 0
        self._next_channel = 0
        self._next_operator = 0
        self._stepping = False
        self._building_channels: list[int] | None = None    # channels of the dataflow being built
        self._dataflow_channels: dict[int, list[int]] = {}   # dataflow -> its channels (for drop_dataflow)
        self._building = False
        self.started_ns = _time.perf_counter_ns()
        self.logger: Any = None                 # timely.logging.Logger while something is registered
        self._logging: LoggingRegistry | None = None
        # How many dataflows each peer has built, and whether it has finished
        # (its work returned): a worker holding a dataflow that a finished peer
        # never built waits forever for that peer's share of it.
        self.peer_dataflows = [0] * self.peers
        self._finished_peers: dict[int, int] = {}
        self._fewest_finished: int | None = None
        self._census = None  # type: ignore[assignment]  # made below with more than one peer
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
        if self._building_channels is not None:
            self._building_channels.append(identifier)
        return identifier

    def next_operator_id(self) -> int:
        """The next operator identifier (for logs); every worker allocates them in the same order."""
        identifier = self._next_operator
        self._next_operator += 1
        return identifier

    def progcaster(self, subgraph: Subgraph) -> Progcaster:
        """The progress channel of ``subgraph``, named by its address so
        that it lines up between workers."""
        # Progress channels are named by the scope's address, not numbered
        # like data channels, so they line up even between workers that built
        # different graphs, which the fingerprint then reports.
        return Progcaster(self, ("progress", *subgraph.path), subgraph.activate_self,
                          subgraph.fingerprint, subgraph.name, owner=subgraph)

    # -- logging ---------------------------------------------------------------

    @property
    def logging(self) -> LoggingRegistry:
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
            self._announce_final()
        if self._logging is not None:
            self._logging.close()

    # -- the dataflow census ---------------------------------------------------

    def _announce(self, final: bool) -> None:
        message = (self.index, self._next_dataflow, final)
        for j, pusher in enumerate(self._census[0]):
            if j != self.index:
                pusher.push(message)
                pusher.done()

    def _announce_final(self) -> None:
        """Tells each peer, one at a time, how many dataflows this worker
        built. A launcher may have closed the links to other hosts already
        (it says goodbye on them before this): those peers are not told, the
        others still are."""
        message = (self.index, self._next_dataflow, True)
        for j, pusher in enumerate(self._census[0]):
            if j == self.index:
                continue
            pusher.push(message)
            pusher.done()
            try:
                self.allocator.release()
            except (KeyError, OSError, TimelyError) as error:
                log.debug("worker %d could not tell worker %d its dataflow count: %r",
                          self.index, j, error)

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
        if fewest is None:          # no peer has finished
            return
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
    def dataflow(self, name: str = "Dataflow", *, arity: int = 1) -> Iterator[Scope]:
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
        channels: list[int] = []
        self._building_channels = channels
        try:
            yield scope
            scope._finish()
            subgraph.build()
        finally:
            self._building = False
            self._building_channels = None
        self._dataflow_channels[identifier] = channels
        self.dataflows[identifier] = subgraph
        self.active.add(identifier)
        if self._census is not None:
            self._announce(final=False)

    def activate_dataflow(self, subgraph: Subgraph) -> None:
        """Marks the dataflow of ``subgraph`` as runnable in the next step."""
        self.active.add(subgraph.dataflow_id)

    # -- running -------------------------------------------------------------

    def step(self) -> bool:
        """One round: receive, schedule active dataflows, release. True while
        dataflows remain."""
        return self._step(True)

    def _step(self, receive: bool) -> bool:
        """:meth:`step`; without ``receive`` when the caller has just received."""
        if self._stepping:
            raise DataflowError("step() called from inside a step (from operator logic?)")
        self._stepping = True
        try:
            if receive and self._moves:
                self.allocator.receive()
            activations = self.activations
            if activations.sync or activations.timers:
                activations.apply(self.scopes)
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
            if self._moves:
                self.allocator.release()
            if self.logger is not None:
                self.logger.step_end()
        finally:
            self._stepping = False
        self._steps += 1
        if self._watch_at != _INF:
            now = _time.monotonic()
            if now >= self._watch_at:
                self._watch_stalls(now)
        return bool(self.dataflows)

    # -- stalls ------------------------------------------------------------------

    def _watch_stalls(self, now: float) -> None:
        """Warns once about each dataflow that has applied no progress for
        ``stall_warning`` seconds and ``STALL_STEPS`` steps."""
        limit = self.stall_warning
        if limit is None:           # the watch is off (it is not called then)
            return
        self._watch_at = now + min(1.0, limit / 4)
        watch = self._watch
        awake = self.allocator.awake_peers()
        for identifier, root in self.dataflows.items():
            state = watch.get(identifier)
            if state is None or state[0] != root.changes:
                watch[identifier] = [root.changes, now, self._steps, False, awake, self._parks]
                continue
            state[4] = state[4] & awake         # awake at every look since
            if (not state[3] and now - state[1] >= limit
                    and self._steps - state[2] >= STALL_STEPS):
                if state[4] and self._parks > state[5]:
                    # This worker waited while a peer never parked: the peer
                    # computes (a long step), no stall yet; watch another
                    # period. Were both awake throughout, it would be a loop
                    # that makes no progress: that is reported.
                    state[1], state[2], state[4], state[5] = now, self._steps, awake, self._parks
                    continue
                state[3] = True
                _report_stall(self._stall_text(root, now - state[1], self._steps - state[2]))
        for identifier in [i for i in watch if i not in self.dataflows]:
            del watch[identifier]

    def _stall_text(self, root: Subgraph, seconds: float, steps: int) -> str:
        if self._census_waiting:
            self._take_census()
        held = self.holds(root.dataflow_id)
        what = "; ".join(h.describe() + _fix_for(h) for h in held) or (
            "nothing this worker can see (it may wait for another worker)")
        missing = [j for j, built in enumerate(self.peer_dataflows)
                   if j != self.index and built <= root.dataflow_id]
        if missing:
            what += f"; worker(s) {missing} have not built this dataflow (yet)"
        return (f"worker {self.index}: dataflow {root.name!r} ({root.dataflow_id}) made no "
                f"progress for {seconds:.1f} s over {steps} steps; its frontiers are held "
                f"back by: {what}")

    def holds(self, dataflow: int | None = None) -> list[Holder]:
        """What holds back the frontiers of ``dataflow`` (default: every
        dataflow), on this worker's view, as
        :class:`~timely.progress.holds.Holder` s in time order: capabilities
        (``kind == "capability"``; ``name`` and ``address`` of the operator,
        ``time``, ``count`` over every worker, ``local`` of them held here
        and the ``sites`` (``file:line``) that created those), records
        waiting at inputs (``"records"``), and inputs of child scopes
        (``"scope input"``). This worker's capabilities are read from its
        operators' output handles, which count them by time and site.

        >>> import timely
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         handle, stream = scope.new_input()
        ...         probe = stream.map(lambda x: x).probe()
        ...     handle.advance_to(3)
        ...     worker.step_while(lambda: probe.less_than(3))
        ...     held = [(h.kind, h.name, h.time, h.local) for h in worker.holds()]
        ...     handle.close()
        ...     return held
        >>> timely.execute_directly(work)
        [('capability', 'Input [0, 1]', 3, 1)]
        """
        from timely.dataflow.stalls import LiveView, dataflow_holds

        view = LiveView(self)
        roots = (self.dataflows.values() if dataflow is None
                 else [self.dataflows[dataflow]] if dataflow in self.dataflows else [])
        out: list[Holder] = []
        for root in roots:
            out.extend(dataflow_holds(view, root))
        return out

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
                and not self.activations.timers_pending()
                and not any(s.extract_all() for s in self.scopes if not s.done))

    def describe_holds(self) -> str:
        """What holds the dataflows' frontiers back (see :meth:`holds`), as text."""
        return "; ".join(h.describe() for h in self.holds()) or "no capability is held"

    def step_while(self, condition: Callable[[], object]) -> None:
        """Steps while ``condition()`` holds, parking (as :meth:`step_or_park`
        with no timeout) whenever nothing is runnable: a worker waiting for
        its peers, a probe or a delayed activation sleeps on its doorbell and
        wakes when data, progress or an activation arrives.

        ``condition`` is checked after every step and every wake-up; state
        it reads must change through the worker (data, progress, an
        activator, a :class:`SyncActivator`), or the wait lasts until the
        next stall watch (at most a second; never, with ``stall_warning=None``).
        """
        step_or_park = self.step_or_park
        while condition():
            step_or_park(None)

    def await_window(self) -> None:
        """Steps, parking while nothing is active, for as long as a peer
        holds a full send window of this worker's data (see
        :mod:`timely.communication.allocator`); input handles call it after
        each batch they push. Inside a step it returns at once: an operator
        that sends waits for nothing. A wait longer than ``stall_warning``
        seconds is logged once, naming the peers."""
        congested = self.allocator.congested
        if self._stepping or not congested():
            return
        started = _time.monotonic()
        warn = self.stall_warning
        while congested():
            self.step_or_park(1.0 if warn is not None else None)
            if warn is not None and _time.monotonic() - started > warn:
                warn = None
                log.warning("worker %d: waited %.0f s for workers %s to take in what it sent "
                            "(their send windows are full)", self.index,
                            _time.monotonic() - started, self.allocator.full_windows())

    def step_or_park(self, timeout: float | None = None) -> bool:
        """Steps; if nothing is runnable, first waits up to ``timeout``
        seconds (None: as long as needed) for data or progress from other
        workers, an activation from another thread, or the next delayed
        activation (:meth:`Activator.activate_after`), whichever comes first.

        Nothing is lost between finding nothing to do and parking: senders
        put their data in place before they ring the worker's doorbell, and
        a ring that comes before the park ends it at once.
        """
        if not self.active and self.dataflows and timeout != 0:
            wait = self._park_time(timeout)
            if wait == 0:
                # _park_time has just received what there was.
                return self._step(False)
            if self.logger is not None:
                self.logger.park(wait)
            # What this worker sent goes before it sleeps.
            self.allocator.release()
            self._parks += 1
            self.allocator.park(wait)
            if self.logger is not None:
                self.logger.unpark()
        return self._step(True)

    def _park_time(self, timeout: float | None) -> float | None:
        """How long the worker may park now: 0 when something is runnable
        (data received, an activation from another thread, a delayed
        activation due, changes made outside any scheduling, a peer's
        dataflow census), else ``timeout`` bounded by the next delayed
        activation and the next stall watch."""
        self.allocator.receive()
        if self.active or self.activations.sync or self._census_waiting:
            return 0
        self._poke()
        if self.active:
            return 0
        wake = self._watch_at
        deadline = self.activations.deadline()
        if deadline is not None:
            wake = min(wake, deadline)
        if wake != _INF:
            until = wake - _time.monotonic()
            if until <= 0:
                return 0
            if timeout is None or until < timeout:
                return until
        return timeout

    def has_dataflows(self) -> bool:
        """Whether any dataflow is still installed (not yet complete or dropped)."""
        return bool(self.dataflows)

    def installed_dataflows(self) -> list[int]:
        """The identifiers of the installed dataflows, in order."""
        return sorted(self.dataflows)

    def drain(self, timeout: float | None = None) -> None:
        """Steps until every dataflow has completed, parking whenever nothing
        is runnable. Raises DataflowError when, with one worker, nothing can
        ever happen again (see :meth:`stalled`), or after ``timeout`` seconds."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        wait = None
        alive = self.step()
        while alive:
            if self._logging is not None:
                self._logging.end_lonely_feeds()
            if not self.active and self.stalled():
                raise DataflowError(
                    f"worker {self.index}: dataflows {self.installed_dataflows()} cannot complete: "
                    f"{self.describe_holds()}")
            if deadline is not None:
                wait = deadline - _time.monotonic()
                if wait < 0:
                    raise DataflowError(
                        f"worker {self.index}: dataflows {self.installed_dataflows()} did not "
                        f"complete within {timeout} s")
            alive = self.step_or_park(wait)

    # -- the rest of the crate's worker API ------------------------------------

    def step_or_park_while(self, duration: float | None, condition: Callable[[], object]) -> None:
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

    def config(self) -> WorkerConfig:
        """The settings given to every worker (``worker_config=`` of
        :func:`timely.execute`; empty when none were given)."""
        return self._config

    def timer(self) -> Timer:
        """A timer started when this worker was made.

        >>> import timely
        >>> timely.execute_directly(lambda worker: worker.timer().elapsed() >= 0)
        True
        """
        return Timer(self.started_ns / 1e9)

    def _subgraph_at(self, path: tuple[int, ...]) -> Subgraph:
        for scope in self.scopes:
            if scope.path == path and not scope.done:
                return scope
        raise DataflowError(f"worker {self.index}: no live scope at address {path!r}")

    def activator_for(self, address: Iterable[int]) -> Activator:
        """An activator for the operator at ``address`` (its ``info.address``);
        for this worker's thread."""
        address = tuple(address)
        return Activator(self._subgraph_at(address[:-1]), address[-1])

    def sync_activator_for(self, address: Iterable[int]) -> SyncActivator:
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
        # Not looked up now: the scope may still be under construction.
        return self.activations.sync_activator(tuple(address), self.allocator)

    def activate_after(self, scope: Subgraph, index: int, delay: float) -> None:
        """Schedules child ``index`` of ``scope`` (a :class:`Subgraph`) once
        ``delay`` seconds have passed (at once if ``delay <= 0``); a parked
        worker wakes for it. :meth:`Activator.activate_after` does the same."""
        self.activations.activate_after(scope, index, delay)

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
        # Data and progress still arriving for it are discarded, and credited
        # to their senders (a frame's bytes may ride on a progress batch).
        scopes = [scope for scope in self.scopes if scope.path[0] == identifier]
        self.allocator.drop_channels([*self._dataflow_channels.pop(identifier, ()),
                                      *(("progress", *scope.path) for scope in scopes)])
        for scope in scopes:
            scope.done = True
