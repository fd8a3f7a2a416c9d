"""What holds a running dataflow's frontiers back, as one worker sees it.

:class:`LiveView` reads a worker's scopes (their graphs and the pointstamps
their trackers hold) for :func:`timely.progress.holds.holders`, the
reasoning ``timely.viz`` applies to logs; :func:`dataflow_holds` asks it, for
every operator input of a dataflow whose frontier is not empty, what holds
that frontier, and adds to each capability the ones this worker holds and
the lines that created them.

This worker's capabilities are read from its operators' output handles,
which count their live capabilities by time and, for those a user's code
made (``delayed``, ``retain``), by the line that made them: no registry of
capability objects is kept and none is searched for.
"""

from __future__ import annotations

from timely.dataflow.builder import OperatorCore, is_internal
from timely.progress.holds import GraphView, Holder, holders, time_key

__all__ = ["LiveView", "dataflow_holds", "local_capabilities"]


def local_capabilities(scopes) -> dict:
    """``{(scope, node, port, time): [site, ...]}``: one site per live
    :class:`~timely.dataflow.capability.Capability` of the operators of
    ``scopes`` (a worker's; other workers may share the process), read from
    their output handles. A capability made inside timely on the operator's
    behalf (an initial capability, a notification's) names where the
    operator was built."""
    found: dict = {}
    for path, sub in scopes.items():
        for node in range(1, len(sub.children)):
            child = sub.children[node]
            operator = child.operator if child is not None else None
            if not isinstance(operator, OperatorCore):
                continue
            for out in operator.output_handles:
                origin = out._origin[2]
                built = f"{origin} (built there)" if origin else "(inside timely)"
                by_time: dict = {}
                for (time, (code, line)), n in out._sites.items():
                    site = f"{code.co_filename}:{line}"
                    if is_internal(site):
                        site = built
                    by_time.setdefault(time, []).extend([site] * n)
                for time, n in out._held.items():
                    sites = by_time.get(time, [])
                    sites.extend([built] * (n - len(sites)))
                    found[(path, node, out._port, time)] = sites
    return found


class LiveView(GraphView):
    """The scopes of ``worker`` that are running, for :func:`holders`."""

    def __init__(self, worker, capabilities: dict | None = None):
        self.worker = worker.index
        self.scopes = {s.path: s for s in worker.scopes if not s.done and s.tracker is not None}
        self.capabilities = (local_capabilities(self.scopes) if capabilities is None
                             else capabilities)

    def edges(self, scope):
        sub = self.scopes.get(scope)
        return [] if sub is None else [((sn, sp), (tn, tp)) for sn, sp, tn, tp in sub.edges]

    def inputs_of(self, scope, node):
        sub = self.scopes.get(scope)
        child = sub.children[node] if sub is not None and node < len(sub.children) else None
        return child.inputs if child is not None else 0

    def pointstamps(self, scope):
        sub = self.scopes.get(scope)
        if sub is None:
            return {}
        tracker = sub.tracker
        stamps = {}
        for node in range(1, len(sub.children)):
            inputs, outputs = tracker.shape(node)
            for port in range(outputs):
                for t, n in tracker.source_pointstamps((node, port)):
                    stamps[(True, node, port, t)] = n
            for port in range(inputs):
                for t, n in tracker.target_pointstamps((node, port)):
                    stamps[(False, node, port, t)] = n
        return stamps

    def name_of(self, scope, node):
        sub = self.scopes.get(scope)
        if sub is None:
            return f"operator {node}"
        if node == 0:
            return f"{sub.name} boundary"
        child = sub.children[node]
        name = getattr(child.operator, "name", None) if child is not None else None
        return f"{name or 'operator'} {list((*scope, node))}"

    def is_scope(self, addr):
        return addr in self.scopes

    def scope_name(self, addr):
        sub = self.scopes.get(addr)
        return None if sub is None or sub.parent is None else f"{sub.name} {list(addr)}"

    def input_frontier(self, addr, port):
        sub = self.scopes[addr]
        return sub.parent.tracker.target_frontier((sub.index_in_parent, port)).elements()

    def capability(self, holder: Holder) -> Holder:
        sub = self.scopes.get(holder.scope)
        child = sub.children[holder.node] if sub is not None else None
        if child is None or not isinstance(child.operator, OperatorCore):
            return holder          # a hand-written operator counts its capabilities itself
        sites = self.capabilities.get((holder.scope, holder.node, holder.port, holder.time), [])
        holder.local = len(sites)
        holder.sites = tuple(sorted(set(sites)))
        return holder


def dataflow_holds(view: LiveView, root) -> list:
    """Every distinct :class:`~timely.progress.holds.Holder` of the frontiers
    of the dataflow whose root scope is ``root``, in time order."""
    seen: dict = {}
    dataflow = root.path[0]
    for path, sub in view.scopes.items():
        if path[0] != dataflow:
            continue
        tracker = sub.tracker
        for node in range(1, len(sub.children)):
            child = sub.children[node]
            if child is None or child.operator is None:
                continue
            for port in range(tracker.shape(node)[0]):
                frontier = tracker.target_frontier((node, port)).elements()
                if not frontier:
                    continue
                for h in holders(view, path, frontier, [(node, port)]):
                    seen.setdefault((h.kind, h.scope, h.node, h.port, h.time), h)
    return sorted(seen.values(), key=lambda h: (time_key(h.time), h.scope, h.node, h.port))
