"""What the logs say about a dataflow: its graph, and what was measured on it.

A :class:`Model` folds log events (``(time_ns, worker, event)``, see
:mod:`timely.logging.events`) into one picture of the dataflows, merged over
the workers that logged:

- the graph: scopes, operators (by address), channels (by identifier) with
  their pacts;
- per channel: messages and records sent and received, per pair of workers;
- per operator: how often and for how long it ran, whether it shut down;
- per operator input and worker: the current frontier and when it last
  moved (from ``PushProgressEvent``); per scope and worker: the pointstamps
  its progress tracker holds (from ``ReachabilityEvent``: capabilities at
  outputs, records waiting at inputs);
- per worker: the last time it logged, its parked time, frames between
  workers.

Folding is incremental (:meth:`Model.feed`) and its memory is bounded by the
graph's size and the pointstamps outstanding, not by the number of events,
so a running job can keep one model and draw it now and then.

"Stuck": an operator input whose frontier is not empty and has not moved for
``stuck_after`` seconds (by the worker's own clock, up to the last event it
logged, or ``now``). :meth:`Model.stuck` lists them with what holds each
frontier: the positive pointstamps upstream of the input (capabilities at
the outputs of operators with a path to it, records waiting at the inputs
on those paths) at times less than or equal to the frontier, followed into
child scopes that hold capabilities, and out through the scope's inputs to
what holds those in the parent scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from timely.logging import events as ev
from timely.progress import holds
from timely.progress.holds import Holder, format_time
from timely.progress.holds import time_key as _time_key

__all__ = ["Channel", "Holder", "Model", "Operator", "Stuck", "format_addr", "format_ns",
           "format_time"]


def format_ns(ns: float) -> str:
    """Nanoseconds in a readable unit."""
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


@dataclass
class Operator:
    """An operator (or a scope) at ``addr``, merged over the workers."""

    addr: tuple
    name: str
    inputs: int = 0
    outputs: int = 0
    scope: bool = False
    known: bool = True                     # an OperatesEvent was seen
    ids: dict = field(default_factory=dict)            # worker -> id
    runs: int = 0
    total_ns: int = 0
    max_ns: int = 0
    shutdown: set = field(default_factory=set)         # workers
    frontier: dict = field(default_factory=dict)       # worker -> port -> {time: count}
    changed: dict = field(default_factory=dict)        # worker -> port -> time_ns

    @property
    def index(self) -> int:
        return self.addr[-1]

    @property
    def parent(self) -> tuple:
        return self.addr[:-1]

    def input_frontier(self, worker: int, port: int) -> list:
        counts = self.frontier.get(worker, {}).get(port, {})
        return sorted((t for t, c in counts.items() if c > 0), key=_time_key)


@dataclass
class Channel:
    """A channel within the scope at ``scope``, from ``source`` to ``target``
    (``(operator index, port)``, index 0 being the scope's boundary)."""

    id: int
    scope: tuple
    source: tuple
    target: tuple
    pact: str
    kind: str = ""                                     # the pact's own word for it
    sent_messages: int = 0
    sent_records: int = 0
    received_messages: int = 0
    received_records: int = 0
    pairs: dict = field(default_factory=dict)          # (source, target worker) -> records sent
    loop: bool = False                                 # closes a cycle (set by the layout)


@dataclass
class Stuck:
    """Input ``port`` of ``operator`` on ``worker``: its frontier ``frontier``
    has not moved for ``for_ns``; ``holders`` say why."""

    operator: Operator
    port: int
    worker: int
    frontier: list
    for_ns: int
    holders: list

    def describe(self) -> str:
        """One line saying which operator input is stuck, at which frontier, and what holds it."""
        f = ", ".join(format_time(t) for t in self.frontier)
        held = "; ".join(h.describe() for h in self.holders) or "nothing visible in the logs"
        return (f"{self.operator.name} {format_addr(self.operator.addr)} input {self.port} "
                f"(worker {self.worker}): frontier {{{f}}} unchanged for "
                f"{format_ns(self.for_ns)}; held by {held}")


def format_addr(addr) -> str:
    return "[" + ".".join(str(a) for a in addr) + "]"


class Model:
    """The dataflows and their measurements, folded from log events.

    >>> from timely.logging import events as ev
    >>> m = Model.from_events([
    ...     (0, 0, ev.OperatesEvent(0, (0,), "Dataflow", 0, 0, True)),
    ...     (1, 0, ev.OperatesEvent(1, (0, 1), "Input", 0, 1)),
    ...     (2, 0, ev.OperatesEvent(2, (0, 2), "Map", 1, 1)),
    ...     (3, 0, ev.ChannelsEvent(0, (0,), (1, 0), (2, 0), "Pipeline", "pipeline")),
    ...     (4, 0, ev.MessagesEvent(True, 0, 0, 0, 0, 0, 5)),
    ...     (5, 0, ev.ScheduleEvent(2, "stop", 1500))])
    >>> m.channels[0].sent_records, m.operators[(0, 2)].total_ns
    (5, 1500)
    """

    def __init__(self):
        self.operators: dict = {}       # addr -> Operator
        self.channels: dict = {}        # id -> Channel
        self.by_id: dict = {}           # worker -> id -> addr
        self.pointstamps: dict = {}     # worker -> scope addr -> {(is_source, node, port, t): n}
        self.now: dict = {}             # worker -> last event time_ns
        self.workers: set = set()
        self.peers = 0
        self.origin_unix_ns: dict = {}  # worker -> wall clock of its time zero
        self.parked_ns: dict = {}       # worker -> time parked
        self._park_start: dict = {}
        self.progress_batches: dict = {}    # scope addr -> batches sent (all workers)
        self.frames: dict = {}          # (source, target) -> [frames, bytes]
        self.connections: list = []     # (time_ns, worker, ConnectionEvent)
        self.texts: list = []
        self.events = 0

    @classmethod
    def from_events(cls, events) -> Model:
        """A model fed with ``events`` (``(time_ns, worker, event)`` as logged)."""
        model = cls()
        model.feed(events)
        return model

    @classmethod
    def from_logs(cls, *paths) -> Model:
        """A model of the log files ``paths`` (see :func:`timely.logging.capture_to`)."""
        from timely.logging.stream import read_log

        return cls.from_events(read_log(*paths))

    # -- folding ------------------------------------------------------------

    def _operator(self, addr: tuple) -> Operator:
        op = self.operators.get(addr)
        if op is None:
            op = self.operators[addr] = Operator(addr, f"operator {addr[-1]}", known=False)
        return op

    def _op_of(self, worker: int, identifier: int):
        addr = self.by_id.get(worker, {}).get(identifier)
        return self.operators.get(addr) if addr is not None else None

    def feed(self, events) -> None:
        """Folds more events in (each worker's in the order it logged them)."""
        for time_ns, worker, event in events:
            self.events += 1
            self.workers.add(worker)
            if time_ns > self.now.get(worker, -1):
                self.now[worker] = time_ns
            kind = type(event)
            if kind is ev.ScheduleEvent:
                if event.start_stop == "stop":
                    op = self._op_of(worker, event.id)
                    if op is not None:
                        op.runs += 1
                        op.total_ns += event.elapsed_ns
                        op.max_ns = max(op.max_ns, event.elapsed_ns)
            elif kind is ev.MessagesEvent:
                ch = self.channels.get(event.channel)
                if ch is None:
                    continue
                if event.is_send:
                    ch.sent_messages += 1
                    ch.sent_records += event.record_count
                    pair = (event.source, event.target)
                    ch.pairs[pair] = ch.pairs.get(pair, 0) + event.record_count
                else:
                    ch.received_messages += 1
                    ch.received_records += event.record_count
            elif kind is ev.PushProgressEvent:
                op = self._op_of(worker, event.id)
                if op is not None:
                    counts = op.frontier.setdefault(worker, {}).setdefault(event.port, {})
                    for t, d in event.changes:
                        n = counts.get(t, 0) + d
                        if n:
                            counts[t] = n
                        else:
                            counts.pop(t, None)
                    op.changed.setdefault(worker, {})[event.port] = time_ns
            elif kind is ev.ReachabilityEvent:
                stamps = self.pointstamps.setdefault(worker, {}).setdefault(event.addr, {})
                for is_source, node, port, t, d in event.updates:
                    key = (is_source, node, port, t)
                    n = stamps.get(key, 0) + d
                    if n:
                        stamps[key] = n
                    else:
                        stamps.pop(key, None)
            elif kind is ev.OperatesEvent:
                op = self.operators.get(event.addr)
                if op is None or not op.known:
                    fresh = Operator(event.addr, event.name, event.inputs, event.outputs,
                                     event.scope)
                    if op is not None:
                        fresh.frontier, fresh.changed = op.frontier, op.changed
                    op = self.operators[event.addr] = fresh
                op.ids[worker] = event.id
                self.by_id.setdefault(worker, {})[event.id] = event.addr
            elif kind is ev.ChannelsEvent:
                if event.id not in self.channels:
                    self.channels[event.id] = Channel(event.id, event.scope_addr, event.source,
                                                      event.target, event.pact, event.kind)
            elif kind is ev.ShutdownEvent:
                op = self._op_of(worker, event.id)
                if op is not None:
                    op.shutdown.add(worker)
            elif kind is ev.ProgressEvent:
                if event.is_send:
                    self.progress_batches[event.addr] = self.progress_batches.get(event.addr, 0) + 1
            elif kind is ev.ParkEvent:
                if event.park:
                    self._park_start[worker] = time_ns
                else:
                    start = self._park_start.pop(worker, None)
                    if start is not None:
                        self.parked_ns[worker] = self.parked_ns.get(worker, 0) + time_ns - start
            elif kind is ev.FrameEvent:
                entry = self.frames.setdefault((event.source, event.target), [0, 0])
                entry[0] += 1
                if event.bytes > 0:
                    entry[1] += event.bytes
            elif kind is ev.SetupEvent:
                self.peers = max(self.peers, event.peers)
                self.origin_unix_ns[worker] = event.origin_unix_ns
            elif kind is ev.ConnectionEvent:
                self.connections.append((time_ns, worker, event))
            elif kind is ev.TextEvent:
                self.texts.append((time_ns, worker, event.text))

    # -- the graph ------------------------------------------------------------

    def scopes(self) -> list:
        """Addresses of every scope (dataflows first), outermost first."""
        addrs = {op.addr for op in self.operators.values() if op.scope}
        for ch in self.channels.values():
            addrs.add(ch.scope)
        for addr in list(addrs):
            for k in range(1, len(addr)):
                addrs.add(addr[:k])
        return sorted(addrs, key=lambda a: (len(a), a))

    def children(self, scope: tuple) -> list:
        """The operators directly inside ``scope``, by index."""
        n = len(scope) + 1
        out = [op for addr, op in self.operators.items()
               if len(addr) == n and addr[:-1] == scope]
        for ch in self.channels.values():
            if ch.scope == scope:
                for node, _port in (ch.source, ch.target):
                    if node and (*scope, node) not in self.operators:
                        out.append(self._operator((*scope, node)))
        return sorted({op.addr: op for op in out}.values(), key=lambda op: op.index)

    def scope_channels(self, scope: tuple) -> list:
        """The channels inside ``scope``, by identifier."""
        return sorted((ch for ch in self.channels.values() if ch.scope == scope),
                      key=lambda ch: ch.id)

    def name_of(self, scope: tuple, node: int) -> str:
        """The name of operator ``node`` of ``scope`` (node 0 is the scope's boundary)."""
        if node == 0:
            op = self.operators.get(scope)
            return f"{op.name if op else 'scope'} boundary"
        op = self.operators.get((*scope, node))
        return op.name if op else f"operator {node}"

    def is_scope(self, addr: tuple) -> bool:
        """True if ``addr`` is a scope: an operator that is one, or one with channels inside."""
        op = self.operators.get(addr)
        return (op is not None and op.scope) or any(
            ch.scope == addr for ch in self.channels.values())

    # -- frontiers and what holds them ---------------------------------------

    def held_capabilities(self, op: Operator, worker: int) -> list:
        """``(port, time, count)`` of the capabilities ``op``'s outputs hold,
        in the view of ``worker``'s tracker."""
        stamps = self.pointstamps.get(worker, {}).get(op.parent, {})
        node = op.index
        return sorted(((p, t, c) for (s, n, p, t), c in stamps.items()
                       if s and n == node and c > 0),
                      key=lambda x: (x[0], _time_key(x[1])))

    def upstream(self, scope: tuple, targets) -> tuple:
        """The operators of ``scope`` whose outputs can reach the inputs
        ``targets`` (``(node, port)``), the inputs on those paths, and the
        scope's own input ports on them (:func:`timely.progress.holds.upstream`)."""
        return holds.upstream(_LogView(self, 0), scope, targets)

    def holders(self, scope: tuple, worker: int, times, targets) -> list:
        """What holds the inputs ``targets`` (``(node, port)``) of ``scope``
        at ``times``, on ``worker``'s view (:func:`timely.progress.holds.holders`
        over what the logs recorded)."""
        return holds.holders(_LogView(self, worker), scope, times, targets)

    def stuck(self, stuck_after: float = 10.0, now_ns: dict | int | None = None) -> list:
        """The operator inputs whose frontier has not moved for more than
        ``stuck_after`` seconds while something holds it, as :class:`Stuck`.
        ``now_ns`` is each worker's present (a dict, or one value for all);
        by default the last time it logged."""
        out = []
        limit = stuck_after * 1e9
        for op in self.operators.values():
            for worker, ports in op.changed.items():
                if worker in op.shutdown:
                    continue
                now = (now_ns.get(worker) if isinstance(now_ns, dict) else now_ns)
                if now is None:
                    now = self.now.get(worker, 0)
                for port, changed in ports.items():
                    frontier = op.input_frontier(worker, port)
                    if not frontier or now - changed <= limit:
                        continue
                    holders = self.holders(op.parent, worker, frontier, [(op.index, port)])
                    if holders:
                        out.append(Stuck(op, port, worker, frontier, now - changed, holders))
        out.sort(key=lambda s: (s.operator.addr, s.port, s.worker))
        return out


class _LogView(holds.GraphView):
    """A dataflow as the logs of one worker recorded it."""

    def __init__(self, model: Model, worker: int):
        self.model = model
        self.worker = worker

    def edges(self, scope):
        return [(ch.source, ch.target) for ch in self.model.scope_channels(scope)]

    def inputs_of(self, scope, node):
        op = self.model.operators.get((*scope, node))
        n = op.inputs if op is not None else 0
        for ch in self.model.scope_channels(scope):
            if ch.target[0] == node:
                n = max(n, ch.target[1] + 1)
        return n

    def pointstamps(self, scope):
        return self.model.pointstamps.get(self.worker, {}).get(scope, {})

    def name_of(self, scope, node):
        return self.model.name_of(scope, node)

    def is_scope(self, addr):
        return self.model.is_scope(addr)

    def scope_name(self, addr):
        op = self.model.operators.get(addr)
        return op.name if op is not None else None

    def input_frontier(self, addr, port):
        return self.model.operators[addr].input_frontier(self.worker, port)
