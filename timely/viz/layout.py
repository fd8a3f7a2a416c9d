"""A layered layout of a dataflow's graph, computed here, in Python.

Each scope is laid out on its own, left to right: its operators (and child
scopes, as boxes sized by their own layout) go into columns by the longest
path from the scope's inputs, after the edges that close cycles (loops, found
by a depth-first search in operator order) are set aside; within a column
they are ordered by the mean position of their predecessors. The scope's
inputs sit on its left border and its outputs on its right border, so a
channel entering a scope continues inside it from the same point. Loop
edges are drawn below the operators, back to their target.

Cost: linear in the operators and channels of each scope, plus the sorting
of each column, done twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OP_W, OP_H = 190, 70          # an operator's box
GAP_X, GAP_Y = 90, 30         # between columns, between boxes of a column
PAD, TITLE = 20, 26           # inside a scope's border, its title's height
LOOP_GAP = 16                 # between the loop edges under a scope's operators
DATAFLOW_GAP = 30             # between dataflows

IN, OUT = -1, -2              # a scope's inputs and outputs, as nodes of its own graph


@dataclass
class Box:
    """An operator (``scope`` false) or a scope drawn at ``x, y`` (top left)."""

    addr: tuple
    x: float
    y: float
    w: float
    h: float
    scope: bool
    inputs: int
    outputs: int

    def input_at(self, port: int) -> tuple:
        k = max(self.inputs, port + 1)
        return (self.x, self.y + self.h * (port + 1) / (k + 1))

    def output_at(self, port: int) -> tuple:
        k = max(self.outputs, port + 1)
        return (self.x + self.w, self.y + self.h * (port + 1) / (k + 1))


@dataclass
class Edge:
    """A channel's path: ``path`` is SVG path data; ``label`` where its text goes."""

    channel: object
    path: str
    label: tuple
    loop: bool
    points: list = field(default_factory=list)


@dataclass
class _Measure:
    w: float
    h: float
    nodes: dict          # index -> (x, y) relative to the content origin
    sizes: dict          # index -> (w, h)
    loops: list          # channels that close cycles
    content_h: float


class Layout:
    """Positions for every scope and operator of ``model``, and a path for every channel."""

    def __init__(self, model):
        self.model = model
        self.boxes: dict = {}       # addr -> Box
        self.edges: list = []
        self._measured: dict = {}
        self.width = 0.0
        self.height = 0.0
        roots = [a for a in model.scopes() if len(a) == 1]
        y = 0.0
        for root in roots:
            m = self._measure(root)
            self._place(root, 0.0, y, m)
            self.width = max(self.width, m.w)
            y += m.h + DATAFLOW_GAP
        self.height = max(0.0, y - DATAFLOW_GAP)

    # -- sizes ----------------------------------------------------------------

    def _ports(self, addr) -> tuple:
        op = self.model.operators.get(addr)
        inputs = op.inputs if op else 0
        outputs = op.outputs if op else 0
        scope, node = addr[:-1], addr[-1]
        for ch in self.model.channels.values():
            if ch.scope == scope:
                if ch.target[0] == node:
                    inputs = max(inputs, ch.target[1] + 1)
                if ch.source[0] == node:
                    outputs = max(outputs, ch.source[1] + 1)
            if ch.scope == addr:
                if ch.source[0] == 0:
                    inputs = max(inputs, ch.source[1] + 1)
                if ch.target[0] == 0:
                    outputs = max(outputs, ch.target[1] + 1)
        return inputs, outputs

    def _measure(self, scope: tuple) -> _Measure:
        model = self.model
        children = [op.addr[-1] for op in model.children(scope)]
        sizes = {}
        for index in children:
            addr = (*scope, index)
            if model.is_scope(addr):
                m = self._measured.get(addr) or self._measure(addr)
                sizes[index] = (m.w, m.h)
            else:
                sizes[index] = (OP_W, OP_H)
        channels = model.scope_channels(scope)
        nodes = list(children)
        succ: dict = {n: [] for n in nodes}
        has_in = any(ch.source[0] == 0 for ch in channels)
        has_out = any(ch.target[0] == 0 for ch in channels)
        if has_in:
            succ[IN] = []
        if has_out:
            succ[OUT] = []
        arcs = []
        for ch in channels:
            s = IN if ch.source[0] == 0 else ch.source[0]
            t = OUT if ch.target[0] == 0 else ch.target[0]
            succ.setdefault(s, [])
            succ.setdefault(t, [])
            arcs.append((s, t, ch))
            succ[s].append(t)
        order = ([IN] if has_in else []) + sorted(n for n in succ if n >= 0)
        back = _back_arcs(order, succ)
        loops = []
        forward: dict = {n: [] for n in succ}
        preds: dict = {n: [] for n in succ}
        for s, t, ch in arcs:
            if (s, t) in back or s == t:
                ch.loop = True
                loops.append(ch)
            else:
                ch.loop = False
                forward[s].append(t)
                preds[t].append(s)
        layer = _longest_paths(order, forward, preds)
        if has_in:
            layer[IN] = 0
            for n in layer:
                if n != IN:
                    layer[n] = max(layer[n], 1)
        if has_out:
            layer[OUT] = max([v for k, v in layer.items() if k != OUT] or [0]) + 1
        columns: dict = {}
        for n in sorted(layer, key=lambda n: (n < 0, n)):
            if n >= 0:
                columns.setdefault(layer[n], []).append(n)
        # Order each column by its predecessors' mean position, twice.
        position: dict = {}
        for col in sorted(columns):
            for i, n in enumerate(columns[col]):
                position[n] = i
        position[IN] = 0
        for _ in range(2):
            for col in sorted(columns):
                def bary(n):
                    ps = [position[p] for p in preds.get(n, ()) if p in position]
                    return (sum(ps) / len(ps) if ps else position[n], n)
                columns[col].sort(key=bary)
                for i, n in enumerate(columns[col]):
                    position[n] = i
        # Coordinates, relative to the content's top left.
        xs: dict = {}
        x = 0.0
        widths = {}
        first = 1 if has_in else 0
        last = max(columns) if columns else first
        for col in range(first, last + 1):
            members = columns.get(col, [])
            widths[col] = max((sizes[n][0] for n in members), default=0.0)
            xs[col] = x
            if members:
                x += widths[col] + GAP_X
        content_w = max(x - GAP_X, OP_W) if columns else OP_W
        heights = {col: sum(sizes[n][1] for n in members) + GAP_Y * (len(members) - 1)
                   for col, members in columns.items()}
        content_h = max(heights.values(), default=OP_H)
        rel = {}
        for col, members in columns.items():
            y = (content_h - heights[col]) / 2
            for n in members:
                w, h = sizes[n]
                rel[n] = (xs[col] + (widths[col] - w) / 2, y)
                y += h + GAP_Y
        inner_x = GAP_X / 2 if has_in else 0.0
        rel = {n: (px + inner_x, py) for n, (px, py) in rel.items()}
        content_w += inner_x + (GAP_X / 2 if has_out else 0.0)
        loop_h = (LOOP_GAP * (len(loops) + 1)) if loops else 0.0
        w = content_w + 2 * PAD
        h = content_h + loop_h + 2 * PAD + TITLE
        m = _Measure(w, h, rel, sizes, loops, content_h)
        self._measured[scope] = m
        return m

    # -- positions and paths --------------------------------------------------

    def _place(self, scope: tuple, x0: float, y0: float, m: _Measure) -> None:
        model = self.model
        inputs, outputs = self._ports(scope)
        op = model.operators.get(scope)
        if op is not None and len(scope) > 1:
            inputs, outputs = max(inputs, op.inputs), max(outputs, op.outputs)
        box = Box(scope, x0, y0, m.w, m.h, True, inputs, outputs)
        self.boxes[scope] = box
        ox, oy = x0 + PAD, y0 + PAD + TITLE
        for index, (rx, ry) in m.nodes.items():
            addr = (*scope, index)
            w, h = m.sizes[index]
            if model.is_scope(addr):
                self._place(addr, ox + rx, oy + ry, self._measured[addr])
            else:
                i, o = self._ports(addr)
                self.boxes[addr] = Box(addr, ox + rx, oy + ry, w, h, False, i, o)
        loop_y = oy + m.content_h + LOOP_GAP
        for ch in model.scope_channels(scope):
            if ch.source[0] == 0:
                start = box.input_at(ch.source[1])
            else:
                # a named key: mypy reads a starred tuple inside [] as 3.11 syntax
                source_key = (*scope, ch.source[0])
                start = self.boxes[source_key].output_at(ch.source[1])
            if ch.target[0] == 0:
                end = box.output_at(ch.target[1])
            else:
                target_key = (*scope, ch.target[0])
                end = self.boxes[target_key].input_at(ch.target[1])
            if ch.loop:
                y = loop_y
                loop_y += LOOP_GAP
                sx, sy = start
                tx, ty = end
                a, b = sx + 14, tx - 14
                points = [start, (a, sy), (a, y), (b, y), (b, ty), end]
                path = "M" + " L".join(f"{px:.1f},{py:.1f}" for px, py in points)
                self.edges.append(Edge(ch, path, ((a + b) / 2, y - 4), True, points))
            else:
                sx, sy = start
                tx, ty = end
                dx = max(30.0, (tx - sx) / 2)
                path = (f"M{sx:.1f},{sy:.1f} C{sx + dx:.1f},{sy:.1f} "
                        f"{tx - dx:.1f},{ty:.1f} {tx:.1f},{ty:.1f}")
                self.edges.append(Edge(ch, path, ((sx + tx) / 2, (sy + ty) / 2 - 5), False,
                                       [start, end]))


def _back_arcs(order, succ) -> set:
    """The arcs that close cycles in a depth-first search from ``order``."""
    white, grey, black = 0, 1, 2
    color = {n: white for n in succ}
    back = set()
    for root in order + sorted(n for n in succ if n not in order):
        if color[root] != white:
            continue
        color[root] = grey
        stack = [(root, iter(succ[root]))]
        while stack:
            node, it = stack[-1]
            for t in it:
                if color[t] == grey:
                    back.add((node, t))
                elif color[t] == white:
                    color[t] = grey
                    stack.append((t, iter(succ[t])))
                    break
            else:
                color[node] = black
                stack.pop()
    return back


def _longest_paths(order, forward, preds) -> dict:
    """Each node's column: the longest path to it over ``forward`` arcs (acyclic)."""
    indegree = {n: len(ps) for n, ps in preds.items()}
    ready = sorted((n for n, d in indegree.items() if d == 0), key=lambda n: (n < 0, n))
    layer = {n: 0 for n in forward}
    while ready:
        n = ready.pop(0)
        for t in forward[n]:
            layer[t] = max(layer[t], layer[n] + 1)
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return layer
