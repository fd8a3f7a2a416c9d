"""A layered layout of a dataflow's graph, computed here, in Python.

Each scope is laid out on its own, left to right: its operators (and child
scopes, as boxes sized by their own layout) go into columns by the longest
path from the scope's inputs, after the edges that close cycles (loops, found
by a depth-first search in operator order) are set aside; within a column
they are ordered by the mean position of their predecessors. The scope's
inputs sit on its left border and its outputs on its right border, so a
channel entering a scope continues inside it from the same point. Loop
edges are drawn below the operators, back to their target.

Text is never cut: an operator's box is as wide as its longest line and as
tall as its lines (a line wider than ``MAX_LINE_W`` wraps at its spaces, so
joining a box's lines with spaces gives the text back), a scope's box is at
least as wide as its title, and the gap after a column is wide enough for
the labels of the channels leaving it. Widths are estimated from the text
(:func:`text_width`): no font is measured.

Cost: linear in the operators and channels of each scope, plus the sorting
of each column, done twice.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Callable

OP_W, OP_H = 190, 70          # an operator's least box
GAP_X, GAP_Y = 90, 30         # least gaps between columns, between boxes of a column
PAD, TITLE = 20, 26           # inside a scope's border, its title's height
LOOP_GAP = 16                 # between the loop edges under a scope's operators
DATAFLOW_GAP = 30             # between dataflows

IN, OUT = -1, -2              # a scope's inputs and outputs, as nodes of its own graph

# Font sizes (px) of the picture's texts, as the page's style sets them.
NAME_SIZE, NOTE_SIZE, LABEL_SIZE, TITLE_SIZE = 12.0, 11.0, 10.5, 12.0
TEXT_PAD = 8                  # between an operator's box and its text
MAX_LINE_W = 320              # an operator's line wider than this wraps at its spaces
LABEL_PAD = 12                # around a channel's label, within its gap
# Baselines inside an operator's box: the first line, a further line of the
# same kind, the first line of another kind; and below the last baseline.
FIRST_LINE, NEXT_LINE, NEXT_KIND, BELOW_TEXT = 18, 14, 16, 10


def text_width(text: str, size: float, bold: bool = False) -> float:
    """An estimate, from above, of the width of ``text`` at font ``size``:
    wide (East Asian) characters one em, combining marks none, others 0.6
    em (0.65 bold), which no common sans-serif font's average exceeds."""
    em = 0.65 if bold else 0.6
    width = 0.0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else em
    return width * size


def wrap(text: str, width: float, size: float, bold: bool = False) -> list[str]:
    """``text`` in lines no wider than ``width`` where it has spaces to
    break at (a word wider than ``width`` keeps a line of its own). No
    character is dropped: ``" ".join(wrap(text, ...)) == text``.

    >>> wrap("parse the raw events", 80, 12.0)
    ['parse the', 'raw events']
    >>> wrap("short", 80, 12.0)
    ['short']
    """
    if text_width(text, size, bold) <= width:
        return [text]
    lines: list[str] = []
    line: str | None = None
    for word in text.split(" "):
        if line is None:
            line = word
        elif text_width(f"{line} {word}", size, bold) <= width:
            line = f"{line} {word}"
        else:
            lines.append(line)
            line = word
    lines.append(line or "")
    return lines


_SIZES = {"name": (NAME_SIZE, True), "note": (NOTE_SIZE, False), "warn": (NOTE_SIZE, True)}


def operator_lines(texts: list[tuple[str, str]]) -> tuple[list[tuple[str, str, float]], float,
                                                        float]:
    """An operator's box for ``texts``, ``[(kind, text)]`` with kind
    ``name``, ``note`` or ``warn``: its lines ``[(kind, line, baseline)]``
    (the baseline below the box's top), and its width and height."""
    lines: list[tuple[str, str, float]] = []
    widest = 0.0
    y = 0.0
    for kind, text in texts:
        size, bold = _SIZES.get(kind, (NOTE_SIZE, False))
        for line in wrap(text, MAX_LINE_W, size, bold):
            if not lines:
                y = FIRST_LINE
            else:
                y += NEXT_LINE if lines[-1][0] == kind else NEXT_KIND
            lines.append((kind, line, y))
            widest = max(widest, text_width(line, size, bold))
    w = max(float(OP_W), widest + 2 * TEXT_PAD)
    h = max(float(OP_H), y + BELOW_TEXT)
    return lines, w, h


def _default_texts(op) -> list[tuple[str, str]]:
    return [("name", op.name)]


def _default_title(addr: tuple, op) -> str:
    return f"{op.name if op else 'scope'} [{'.'.join(map(str, addr))}]"


def _default_label(ch) -> str:
    return f"{ch.pact} · {ch.sent_records:,}"


@dataclass
class Box:
    """An operator (``scope`` false) or a scope drawn at ``x, y`` (top left).
    An operator's ``lines`` are ``[(kind, line, baseline)]`` (see
    :func:`operator_lines`); a scope's, its title."""

    addr: tuple
    x: float
    y: float
    w: float
    h: float
    scope: bool
    inputs: int
    outputs: int
    lines: list = field(default_factory=list)

    def input_at(self, port: int) -> tuple:
        k = max(self.inputs, port + 1)
        return (self.x, self.y + self.h * (port + 1) / (k + 1))

    def output_at(self, port: int) -> tuple:
        k = max(self.outputs, port + 1)
        return (self.x + self.w, self.y + self.h * (port + 1) / (k + 1))


@dataclass
class Edge:
    """A channel's path: ``path`` is SVG path data; ``label`` where its text
    (``text``, centered there) goes."""

    channel: object
    path: str
    label: tuple
    loop: bool
    points: list = field(default_factory=list)
    text: str = ""


@dataclass
class _Measure:
    w: float
    h: float
    nodes: dict          # index -> (x, y) relative to the content origin
    sizes: dict          # index -> (w, h)
    loops: list          # channels that close cycles
    content_h: float


class Layout:
    """Positions for every scope and operator of ``model``, and a path for every channel.

    What the boxes and edges say decides their sizes: ``operator_texts(op)``
    gives an operator's ``[(kind, text)]`` (default: its name),
    ``scope_title(addr, op)`` a scope's title (default: name and address;
    ``op`` None for a scope no event named) and ``channel_label(channel)``
    a channel's label (default: its pact and records sent).
    """

    def __init__(self, model, *,
                 operator_texts: Callable[..., list[tuple[str, str]]] | None = None,
                 scope_title: Callable[..., str] | None = None,
                 channel_label: Callable[..., str] | None = None):
        self.model = model
        self.boxes: dict = {}       # addr -> Box
        self.edges: list = []
        self._measured: dict = {}
        self._texts = operator_texts or _default_texts
        self._title = scope_title or _default_title
        label = channel_label or _default_label
        self._labels = {ch.id: label(ch) for ch in model.channels.values()}
        self._label_w = {i: text_width(t, LABEL_SIZE) for i, t in self._labels.items()}
        self._ops: dict = {}        # addr -> (lines, w, h)
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
        child_ops = {op.addr[-1]: op for op in model.children(scope)}
        children = list(child_ops)
        sizes = {}
        for index in children:
            addr = (*scope, index)
            if model.is_scope(addr):
                m = self._measured.get(addr) or self._measure(addr)
                sizes[index] = (m.w, m.h)
            else:
                lines, w, h = operator_lines(self._texts(child_ops[index]))
                self._ops[addr] = lines
                sizes[index] = (w, h)
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
        # The gap after a column fits the labels of the channels leaving it
        # (a channel spanning columns is given its first gap); the scope's
        # inner margins, those of channels from its inputs and to its outputs.
        gaps: dict = {}
        in_w = out_w = loop_w = 0.0
        for s, t, ch in arcs:
            need = self._label_w[ch.id] + 2 * LABEL_PAD
            if ch.loop:
                loop_w = max(loop_w, need)
            elif s == IN:
                in_w = max(in_w, need)
            elif t == OUT:
                out_w = max(out_w, need)
            else:
                gaps[layer[s]] = max(gaps.get(layer[s], GAP_X), need)
        # Coordinates, relative to the content's top left.
        xs: dict = {}
        x = 0.0
        widths = {}
        first = 1 if has_in else 0
        last = max(columns) if columns else first
        gap = float(GAP_X)
        for col in range(first, last + 1):
            members = columns.get(col, [])
            widths[col] = max((sizes[n][0] for n in members), default=0.0)
            xs[col] = x
            if members:
                gap = gaps.get(col, GAP_X)
                x += widths[col] + gap
        content_w = max(x - gap, OP_W) if columns else OP_W
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
        inner_x = max(GAP_X / 2, in_w - PAD) if has_in else 0.0
        rel = {n: (px + inner_x, py) for n, (px, py) in rel.items()}
        content_w += inner_x + (max(GAP_X / 2, out_w - PAD) if has_out else 0.0)
        content_w = max(content_w, loop_w)
        loop_h = (LOOP_GAP * (len(loops) + 1)) if loops else 0.0
        title_w = text_width(self._title(scope, model.operators.get(scope)), TITLE_SIZE, True)
        w = max(content_w + 2 * PAD, title_w + 2 * TEXT_PAD + 4)
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
        box = Box(scope, x0, y0, m.w, m.h, True, inputs, outputs,
                  [self._title(scope, op)])
        self.boxes[scope] = box
        ox, oy = x0 + PAD, y0 + PAD + TITLE
        for index, (rx, ry) in m.nodes.items():
            addr = (*scope, index)
            w, h = m.sizes[index]
            if model.is_scope(addr):
                self._place(addr, ox + rx, oy + ry, self._measured[addr])
            else:
                i, o = self._ports(addr)
                self.boxes[addr] = Box(addr, ox + rx, oy + ry, w, h, False, i, o,
                                       self._ops.get(addr, []))
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
                # The label stays inside the scope's box.
                half = self._label_w[ch.id] / 2
                lx = min(max((a + b) / 2, box.x + PAD + half), box.x + box.w - PAD - half)
                self.edges.append(Edge(ch, path, (lx, y - 4), True, points,
                                       self._labels[ch.id]))
            else:
                sx, sy = start
                tx, ty = end
                dx = max(30.0, (tx - sx) / 2)
                path = (f"M{sx:.1f},{sy:.1f} C{sx + dx:.1f},{sy:.1f} "
                        f"{tx - dx:.1f},{ty:.1f} {tx:.1f},{ty:.1f}")
                self.edges.append(Edge(ch, path, ((sx + tx) / 2, (sy + ty) / 2 - 5), False,
                                       [start, end], self._labels[ch.id]))


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
