"""What holds a frontier back.

A frontier at an operator input stays where it is while some pointstamp
upstream of the input is at a time less than or equal to it: a capability
at the output of an operator with a path to the input, records waiting at an
input on such a path, or, inside a child scope, the frontier of the scope's
own input (which something in the parent scope holds). :func:`holders` finds
them, following capabilities of child scopes inside, and scope inputs out to
the parent.

It reads a dataflow through a :class:`GraphView`, so the same reasoning
serves a running worker (``timely.Worker.holds``, the stall warning, over
its live trackers) and a picture drawn from logs (``timely.viz``, over what
the logs recorded).

Cost: one walk of a scope's edges per call, and one pass over the scope's
pointstamps; meant for diagnostics, not for the scheduling loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from timely.progress.timestamp import less_equal

__all__ = ["GraphView", "Holder", "format_time", "holders", "upstream"]

# How deep holders() follows scopes in and out.
DEPTH = 8


def format_time(t) -> str:
    """A timestamp as reports show it."""
    if isinstance(t, tuple):
        return "(" + ", ".join(str(x) for x in t) + ")"
    return str(t)


def time_key(t):
    """A sort key for timestamps of any arity."""
    return (t,) if type(t) is int else tuple(t)


def common(a, b):
    """``a`` and ``b`` as tuples of one length: a nested scope's time loses
    its inner coordinates in an outer scope, a region's keeps its shape."""
    a = (a,) if type(a) is int else tuple(a)
    b = (b,) if type(b) is int else tuple(b)
    n = min(len(a), len(b))
    return a[:n], b[:n]


@dataclass
class Holder:
    """Something that holds a frontier back: a capability (``kind ==
    "capability"``) at an operator output, records waiting at an input
    (``"records"``), or the frontier of a scope's input (``"scope input"``).

    ``count`` is the pointstamp's count over every worker; a view of a
    running worker also says how many of them are this worker's
    capabilities (``local``) and the lines that created those (``sites``).
    """

    kind: str
    scope: tuple
    node: int
    port: int
    time: object
    count: int
    worker: int
    name: str
    local: int | None = None
    sites: tuple = ()

    @property
    def address(self) -> tuple:
        """The address of the operator (or scope) it belongs to."""
        return (*self.scope, self.node)

    def describe(self) -> str:
        """One line saying what holds the frontier: the capability, records or scope input,
        with its operator and time.
        """
        t = format_time(self.time)
        if self.kind == "capability":
            text = f"a capability at {t} held by {self.name} (output {self.port})" + (
                f" ×{self.count}" if self.count != 1 else "")
            if self.local is not None and self.local < self.count:
                text += (f", {self.count - self.local} of them on other workers" if self.local
                         else ", on other workers")
            if self.sites:
                text += ", created at " + ", ".join(self.sites)
            return text
        if self.kind == "records":
            return f"{self.count} record(s) at {t} waiting at {self.name} (input {self.port})"
        if self.kind == "leaving":
            return f"{self.count} record(s) at {t} leaving scope {self.name} (output {self.port})"
        return f"the input frontier {t} of scope {self.name} (input {self.port})"


class GraphView:
    """What :func:`holders` reads of a dataflow, seen by one worker.

    Scopes are named by address (a dataflow's root scope by ``(id,)``, a
    child scope by its parent's address and its index there); nodes by
    index in their scope, 0 being the scope's boundary.
    """

    worker = 0

    def edges(self, scope: tuple) -> list:
        """``[((source node, port), (target node, port))]`` within ``scope``."""
        raise NotImplementedError

    def inputs_of(self, scope: tuple, node: int) -> int:
        """How many inputs node ``node`` of ``scope`` has."""
        raise NotImplementedError

    def pointstamps(self, scope: tuple) -> dict:
        """``{(is_source, node, port, time): count}``: what ``scope``'s tracker holds."""
        raise NotImplementedError

    def name_of(self, scope: tuple, node: int) -> str:
        raise NotImplementedError

    def is_scope(self, addr: tuple) -> bool:
        """The operator at ``addr`` is a child scope."""
        raise NotImplementedError

    def scope_name(self, addr: tuple) -> str | None:
        """The name of the child scope at ``addr`` (None: not known)."""
        raise NotImplementedError

    def input_frontier(self, addr: tuple, port: int) -> list:
        """The frontier of input ``port`` of the child scope at ``addr``, in
        its parent's times."""
        raise NotImplementedError

    def capability(self, holder: Holder) -> Holder:
        """``holder`` with what the view knows of the capabilities behind it
        (``local``, ``sites``); the view of logs knows nothing more."""
        return holder


def upstream(view: GraphView, scope: tuple, targets) -> tuple:
    """The nodes of ``scope`` whose outputs can reach the inputs ``targets``
    (``(node, port)``), the inputs on those paths (the targets included),
    and the scope's own input ports on them. Every input of an operator is
    taken to reach all its outputs."""
    into: dict = {}
    for source, target in view.edges(scope):
        into.setdefault(tuple(target), []).append(tuple(source))
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
                work.extend((node, p) for p in range(view.inputs_of(scope, node)))
    return nodes, inputs, boundary


def holders(view: GraphView, scope: tuple, times, targets, depth: int = 0) -> list:
    """What holds the inputs ``targets`` (``(node, port)``) of ``scope`` at
    ``times``: capabilities upstream of them at times less than or equal to
    one of ``times``, records waiting on the way, and the scope's inputs on
    the way (then what holds those in the parent scope). Capabilities of a
    child scope are followed inside it."""
    stamps = view.pointstamps(scope)
    nodes, inputs, boundary = upstream(view, scope, targets)
    worker = view.worker
    out = []
    expand = []
    for (is_source, node, port, t), count in stamps.items():
        if count <= 0 or not any(less_equal(*common(t, f)) for f in times):
            continue
        if is_source and node in nodes:
            holder = Holder("capability", scope, node, port, t, count, worker,
                            view.name_of(scope, node))
            if depth < DEPTH and view.is_scope((*scope, node)):
                expand.append(((*scope, node), port))
            else:
                holder = view.capability(holder)
            out.append(holder)
        elif not is_source and (node, port) in inputs:
            out.append(Holder("records", scope, node, port, t, count, worker,
                              view.name_of(scope, node)))
    out.sort(key=lambda h: (time_key(h.time), h.node, h.port))
    for child, port in expand:
        out.extend(holders(view, child, times, [(0, port)], depth + 1))
    name = view.scope_name(scope)
    if name is None or len(scope) < 2 or depth > DEPTH:
        return out
    for port in sorted(boundary):
        frontier = view.input_frontier(scope, port)
        if frontier and any(less_equal(*common(f, t)) for f in frontier for t in times):
            for f in frontier:
                out.append(Holder("scope input", scope[:-1], scope[-1], port, f, 1, worker, name))
            out.extend(holders(view, scope[:-1], frontier, [(scope[-1], port)], depth + 1))
    return out
