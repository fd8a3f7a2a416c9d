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
from timely.progress.timestamp import less_equal


def format_time(t) -> str:
    """A timestamp as the picture shows it."""
    if isinstance(t, tuple):
        return "(" + ", ".join(str(x) for x in t) + ")"
    return str(t)


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
    sent_messages: int = 0
    sent_records: int = 0
    received_messages: int = 0
    received_records: int = 0
    pairs: dict = field(default_factory=dict)          # (source, target worker) -> records sent
    loop: bool = False                                 # closes a cycle (set by the layout)


@dataclass
class Holder:
    """Something that holds a frontier back: a capability (``kind ==
    "capability"``) at an operator output, or records waiting at an input
    (``"records"``), or the frontier of a scope's input (``"scope input"``)."""

    kind: str
    scope: tuple
    node: int
    port: int
    time: object
    count: int
    worker: int
    name: str

    def describe(self) -> str:
        t = format_time(self.time)
        if self.kind == "capability":
            return f"a capability at {t} held by {self.name} (output {self.port})" + (
                f" ×{self.count}" if self.count != 1 else "")
        if self.kind == "records":
            return f"{self.count} record(s) at {t} waiting at {self.name} (input {self.port})"
        if self.kind == "leaving":
            return f"{self.count} record(s) at {t} leaving scope {self.name} (output {self.port})"
        return f"the input frontier {t} of scope {self.name} (input {self.port})"


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
        f = ", ".join(format_time(t) for t in self.frontier)
        held = "; ".join(h.describe() for h in self.holders) or "nothing visible in the logs"
        return (f"{self.operator.name} {format_addr(self.operator.addr)} input {self.port} "
                f"(worker {self.worker}): frontier {{{f}}} unchanged for "
                f"{format_ns(self.for_ns)}; held by {held}")


def format_addr(addr) -> str:
    return "[" + ".".join(str(a) for a in addr) + "]"


def _time_key(t):
    return (t,) if type(t) is int else tuple(t)


def _common(a, b):
    """``a`` and ``b`` as tuples of one length: a nested scope's time loses
    its inner coordinates in an outer scope, a region's keeps its shape."""
    a = (a,) if type(a) is int else tuple(a)
    b = (b,) if type(b) is int else tuple(b)
    n = min(len(a), len(b))
    return a[:n], b[:n]


class Model:
    """The dataflows and their measurements, folded from log events.

    >>> from timely.logging import events as ev
    >>> m = Model.from_events([
    ...     (0, 0, ev.OperatesEvent(0, (0,), "Dataflow", 0, 0, True)),
    ...     (1, 0, ev.OperatesEvent(1, (0, 1), "Input", 0, 1)),
    ...     (2, 0, ev.OperatesEvent(2, (0, 2), "Map", 1, 1)),
    ...     (3, 0, ev.ChannelsEvent(0, (0,), (1, 0), (2, 0), "Pipeline")),
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
                                                      event.target, event.pact)
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
        return sorted((ch for ch in self.channels.values() if ch.scope == scope),
                      key=lambda ch: ch.id)

    def name_of(self, scope: tuple, node: int) -> str:
        if node == 0:
            op = self.operators.get(scope)
            return f"{op.name if op else 'scope'} boundary"
        op = self.operators.get((*scope, node))
        return op.name if op else f"operator {node}"

    def is_scope(self, addr: tuple) -> bool:
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
        ``targets`` (``(node, port)``), the inputs on those paths (the
        targets included), and the scope's own input ports on them. Every
        input of an operator is taken to reach all its outputs."""
        into: dict = {}
        for ch in self.scope_channels(scope):
            into.setdefault(tuple(ch.target), []).append(tuple(ch.source))
        nodes: set = set()
        inputs: set = set()
        boundary: set = set()
        work = [tuple(t) for t in targets]
        while work:
            target = work.pop()
            if target in inputs:
                continue
            inputs.add(target)
            for node, port in into.get(target, ()):
                if node == 0:
                    boundary.add(port)
                elif node not in nodes:
                    nodes.add(node)
                    op = self.operators.get((*scope, node))
                    n_inputs = op.inputs if op is not None else 0
                    for ch in self.scope_channels(scope):
                        if ch.target[0] == node:
                            n_inputs = max(n_inputs, ch.target[1] + 1)
                    work.extend((node, p) for p in range(n_inputs))
        return nodes, inputs, boundary

    def holders(self, scope: tuple, worker: int, times, targets, depth: int = 0) -> list:
        """What holds the inputs ``targets`` (``(node, port)``) of ``scope``
        at ``times`` (on ``worker``'s view): capabilities upstream of them,
        records waiting on the way, and the scope's inputs on the way (then
        what holds those in the parent scope). Capabilities of a child scope
        are followed inside it."""
        stamps = self.pointstamps.get(worker, {}).get(scope, {})
        nodes, inputs, boundary = self.upstream(scope, targets)
        out = []
        expand = []
        for (is_source, node, port, t), count in stamps.items():
            if count <= 0 or not any(less_equal(*_common(t, f)) for f in times):
                continue
            if is_source and node in nodes:
                name = self.name_of(scope, node)
                out.append(Holder("capability", scope, node, port, t, count, worker, name))
                if depth < 8 and self.is_scope((*scope, node)):
                    expand.append(((*scope, node), port))
            elif not is_source and (node, port) in inputs:
                name = self.name_of(scope, node)
                out.append(Holder("records", scope, node, port, t, count, worker, name))
        out.sort(key=lambda h: (_time_key(h.time), h.node, h.port))
        for child, port in expand:
            out.extend(self.holders(child, worker, times, [(0, port)], depth + 1))
        me = self.operators.get(scope)
        if me is None or len(scope) < 2 or depth > 8:
            return out
        for port in sorted(boundary):
            frontier = me.input_frontier(worker, port)
            if frontier and any(less_equal(*_common(f, t)) for f in frontier for t in times):
                for f in frontier:
                    out.append(Holder("scope input", scope[:-1], scope[-1], port, f, 1, worker,
                                      me.name))
                out.extend(self.holders(scope[:-1], worker, frontier, [(scope[-1], port)],
                                        depth + 1))
        return out

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
