"""Drawing a :class:`~timely.viz.model.Model`: a self-contained HTML page with
an inline SVG, and Graphviz DOT text.

The page loads nothing from anywhere: its style and its small script (hover
tooltips) are inline. Once the script has run it marks
``<div id="viz-status" data-state="ready">``; an error in it is written to
the ``data-viz-error`` attribute of the ``<html>`` element, so a headless
browser's DOM dump tells whether the page came up cleanly.
"""

from __future__ import annotations

import html
import time as _time

from timely.viz.layout import TEXT_PAD, Layout
from timely.viz.model import Model, Stuck, format_addr, format_ns, format_time

_STYLE = """
body { font: 13px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 16px; color: #1d2329; background: #fafbfc; }
h1 { font-size: 18px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 20px 0 6px; }
.meta { color: #5a6570; margin-bottom: 10px; }
.stuck-list { border: 2px solid #c62828; background: #fdecea; padding: 8px 12px;
              border-radius: 6px; margin: 10px 0; }
.stuck-list li { margin: 3px 0; }
.canvas { overflow: auto; border: 1px solid #d6dbe0; background: #fff; border-radius: 6px; }
.canvas.fit svg { width: 100%; height: auto; }
#viz-fit { float: right; font-size: 12px; }
svg text { font: 12px Helvetica, Arial, sans-serif; fill: #1d2329; white-space: pre; }
svg .scope > rect { fill: #f2f6fb; stroke: #8aa4c0; stroke-width: 1.2; }
svg .scope.root > rect { fill: #f7f9fb; stroke: #6b7f94; }
svg .scope > text.title { font-weight: 600; fill: #33506e; }
svg .scope.stuck > rect { stroke: #c62828; stroke-width: 2.5; }
svg .op > rect { fill: #ffffff; stroke: #4a6a8a; stroke-width: 1.2; }
svg .op.done > rect { fill: #f1f3f5; stroke: #9aa5b0; }
svg .op.holding > rect { stroke: #e08e0b; stroke-width: 3; fill: #fff8e8; }
svg .op.stuck > rect { stroke: #c62828; stroke-width: 3.5; fill: #fdecea; }
svg .op text.name { font-weight: 600; }
svg .op text.note { fill: #4b5661; font-size: 11px; }
svg .op text.warn { fill: #c62828; font-weight: 600; font-size: 11px; }
svg .ch path { fill: none; stroke: #6d7f91; stroke-width: 1.6; }
svg .ch.exchange path { stroke: #2f6fb0; }
svg .ch.loop path { stroke: #3f8f3f; stroke-dasharray: 6 4; }
svg .ch.boundary path { stroke: #8a6db0; }
svg .ch text { font-size: 10.5px; fill: #394652; paint-order: stroke;
               stroke: #ffffff; stroke-width: 3px; }
svg .ch:hover path { stroke-width: 3; } svg .op:hover > rect { stroke-width: 2.5; }
table { border-collapse: collapse; background: #fff; margin-bottom: 8px; }
th, td { border: 1px solid #d6dbe0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.stuck td { background: #fdecea; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 22px; height: 0; vertical-align: middle;
            border-top: 2px solid #6d7f91; margin-right: 4px; }
#viz-tip { position: absolute; display: none; max-width: 560px; white-space: pre-wrap;
           background: #1d2329; color: #fff; padding: 6px 9px; border-radius: 5px;
           font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; pointer-events: none;
           z-index: 10; }
#viz-status { color: #9aa5b0; font-size: 11px; margin-top: 12px; }
"""

_GUARD = """
window.addEventListener('error', function (e) {
  document.documentElement.setAttribute('data-viz-error', String(e.message || e));
});
"""

_SCRIPT = """
(function () {
  var tip = document.getElementById('viz-tip');
  document.addEventListener('mousemove', function (e) {
    var t = e.target && e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!t) { tip.style.display = 'none'; return; }
    tip.textContent = t.getAttribute('data-tip');
    tip.style.display = 'block';
    tip.style.left = (e.pageX + 14) + 'px';
    tip.style.top = (e.pageY + 14) + 'px';
  });
  document.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  var canvas = document.querySelector('.canvas');
  var fit = document.getElementById('viz-fit');
  fit.addEventListener('click', function () {
    canvas.classList.toggle('fit');
    fit.textContent = canvas.classList.contains('fit') ? 'actual size' : 'fit to width';
  });
  var boxes = document.querySelectorAll('svg .op').length;
  var channels = document.querySelectorAll('svg .ch').length;
  var status = document.getElementById('viz-status');
  status.setAttribute('data-state', 'ready');
  status.textContent = 'drawn: ' + boxes + ' operators, ' + channels + ' channels';
})();
"""


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _pact_class(kind: str) -> str:
    """The picture's class of a channel, from its pact's kind."""
    if kind in ("exchange", "broadcast"):
        return "exchange"
    if kind in ("enter", "leave"):
        return "boundary"
    return "pipeline"


def _count(n: int) -> str:
    return f"{n:,}"


def as_model(source) -> Model:
    """A :class:`Model` from a model, log events, or log file paths."""
    if isinstance(source, Model):
        return source
    import os

    if isinstance(source, (str, os.PathLike)):
        return Model.from_logs(source)
    items = list(source)
    if items and all(isinstance(x, (str, os.PathLike)) for x in items):
        return Model.from_logs(*items)
    return Model.from_events(items)


class _View:
    """What the renderers share: the model, its layout, and the annotations."""

    def __init__(self, model: Model, stuck_after: float, now_ns):
        self.model = model
        self.stuck: list[Stuck] = model.stuck(stuck_after, now_ns)
        self.stuck_after = stuck_after
        self.stuck_ops: dict = {}
        self.holding: dict = {}
        for s in self.stuck:
            self.stuck_ops.setdefault(s.operator.addr, []).append(s)
            for h in s.holders:
                if h.kind in ("capability", "records"):
                    self.holding.setdefault((*h.scope, h.node), []).append(h)
                elif h.kind == "scope input":
                    self.holding.setdefault((*h.scope, h.node), []).append(h)
        self.layout = Layout(model, operator_texts=self.op_texts, scope_title=self.scope_title,
                             channel_label=self.channel_label)

    def status(self, op) -> str:
        workers = self.model.workers
        if op.ids and workers and op.shutdown >= set(op.ids):
            return "done"
        return "running" if op.ids else "unknown"

    def frontier_text(self, op, per_worker: bool = True) -> list:
        """Lines describing each input's frontier (and held capabilities)."""
        lines = []
        frontiers: dict = {}
        for worker in sorted(op.frontier):
            for port in sorted(op.frontier[worker]):
                f = tuple(op.input_frontier(worker, port))
                frontiers.setdefault(port, {}).setdefault(f, []).append(worker)
        for port in sorted(frontiers):
            for f, workers in frontiers[port].items():
                shown = "{" + ", ".join(format_time(t) for t in f) + "}"
                who = f" (worker {', '.join(map(str, workers))})" if (
                    per_worker and len(frontiers[port]) > 1) else ""
                lines.append(f"input {port} frontier {shown}{who}")
        for worker in sorted(self.model.pointstamps):
            held = self.model.held_capabilities(op, worker)
            if held:
                caps = ", ".join(f"{format_time(t)}" + (f"×{c}" if c != 1 else "") +
                                 (f" (output {p})" if op.outputs > 1 else "")
                                 for p, t, c in held)
                lines.append(f"holds capabilities at {caps} (view of worker {worker})")
                break
        return lines

    def op_texts(self, op) -> list:
        """What an operator's box says, ``[(kind, text)]``: its name, what
        was measured, and a warning when it is stuck or holds a stuck
        frontier. Whole: the layout sizes the box to fit."""
        notes = []
        if op.runs:
            notes.append(f"{op.runs:,}× · {format_ns(op.total_ns)}")
        else:
            notes.append("not scheduled" if op.known else "not in the log")
        warn = ""
        if op.addr in self.stuck_ops:
            s = self.stuck_ops[op.addr][0]
            warn = "⚠ stuck at {" + ", ".join(format_time(t) for t in s.frontier) + "}"
        elif op.addr in self.holding:
            warn = "⚠ holds back " + format_time(self.holding[op.addr][0].time)
        else:
            ftext = [line for line in self.frontier_text(op, per_worker=False)
                     if line.startswith("input")]
            if self.status(op) == "done":
                notes.append("done")
            elif ftext:
                notes.append(ftext[0].replace("input 0 frontier", "frontier"))
        texts = [("name", op.name)] + [("note", note) for note in notes[:2]]
        if warn:
            texts.append(("warn", warn))
        return texts

    def scope_title(self, addr, op) -> str:
        """A scope's title: its name, address, and time."""
        title = f"{op.name if op else 'scope'} {format_addr(addr)}"
        if op and op.runs:
            title += f" · {format_ns(op.total_ns)}"
        return title

    def channel_label(self, ch) -> str:
        """A channel's label in the picture: its whole pact and the records sent."""
        return f"{ch.pact} · {_count(ch.sent_records)}"

    def op_tip(self, op) -> str:
        m = self.model
        lines = [f"{op.name}  {format_addr(op.addr)}",
                 f"{'scope' if op.scope else 'operator'}, {op.inputs} input(s), "
                 f"{op.outputs} output(s); {self.status(op)}"]
        if op.runs:
            lines.append(f"scheduled {op.runs:,} times, {format_ns(op.total_ns)} in all, "
                         f"mean {format_ns(op.total_ns / op.runs)}, longest {format_ns(op.max_ns)}")
        if op.ids:
            ids = sorted(set(op.ids.values()))
            lines.append(f"operator id {', '.join(map(str, ids))}, logged by {len(op.ids)} "
                         f"of {max(m.peers, len(m.workers))} worker(s)")
        lines += self.frontier_text(op)
        for s in self.stuck_ops.get(op.addr, []):
            lines.append("STUCK: " + s.describe())
        for h in self.holding.get(op.addr, []):
            lines.append("holds back a stuck frontier: " + h.describe())
        return "\n".join(lines)

    def channel_tip(self, ch) -> str:
        m = self.model
        src = m.name_of(ch.scope, ch.source[0])
        dst = m.name_of(ch.scope, ch.target[0])
        lines = [f"channel {ch.id}: {ch.pact}{'  (closes a loop)' if ch.loop else ''}",
                 f"{src} output {ch.source[1]} → {dst} input {ch.target[1]} "
                 f"in scope {format_addr(ch.scope)}",
                 f"sent {ch.sent_records:,} records in {ch.sent_messages:,} messages; "
                 f"received {ch.received_records:,} in {ch.received_messages:,}"]
        if len(ch.pairs) > 1 or any(s != t for s, t in ch.pairs):
            for (s, t), n in sorted(ch.pairs.items()):
                lines.append(f"  worker {s} → worker {t}: {n:,} records")
        return "\n".join(lines)


def render_svg(view: _View) -> str:
    m, lay = view.model, view.layout
    margin = 10
    width = lay.width + 2 * margin
    height = lay.height + 2 * margin
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="{-margin} {-margin} {width:.0f} {height:.0f}" role="img" '
           f'aria-label="dataflow graph">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="#6d7f91"/></marker></defs>']
    boxes = sorted(lay.boxes.values(), key=lambda b: (len(b.addr), b.addr))
    for box in boxes:
        if not box.scope:
            continue
        op = m.operators.get(box.addr)
        name = op.name if op else "scope"
        root = " root" if len(box.addr) == 1 else ""
        if box.addr in view.stuck_ops:
            root += " stuck"
        tip = view.op_tip(op) if op else f"scope {format_addr(box.addr)}"
        title = box.lines[0] if box.lines else f"{name} {format_addr(box.addr)}"
        out.append(f'<g class="scope{root}" id="scope-{"-".join(map(str, box.addr))}" '
                   f'data-addr="{_esc(format_addr(box.addr))}" data-tip="{_esc(tip)}">'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                   f'height="{box.h:.1f}" rx="8"/>'
                   f'<text class="title" x="{box.x + 10:.1f}" y="{box.y + 18:.1f}">'
                   f'{_esc(title)}</text></g>')
    for edge in lay.edges:
        ch = edge.channel
        cls = "loop" if edge.loop else _pact_class(ch.kind)
        label = edge.text or view.channel_label(ch)
        lx, ly = edge.label
        out.append(f'<g class="ch {cls}" id="ch-{ch.id}" data-channel="{ch.id}" '
                   f'data-tip="{_esc(view.channel_tip(ch))}">'
                   f'<path d="{edge.path}" marker-end="url(#arrow)"/>'
                   f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle">{_esc(label)}</text>'
                   f'</g>')
    for box in boxes:
        if box.scope:
            continue
        op = m.operators.get(box.addr)
        if op is None:
            continue
        classes = ["op"]
        status = view.status(op)
        if status == "done":
            classes.append("done")
        if box.addr in view.holding:
            classes.append("holding")
        if box.addr in view.stuck_ops:
            classes.append("stuck")
        text = [f'<text class="{kind}" x="{box.x + TEXT_PAD:.1f}" y="{box.y + baseline:.1f}">'
                f'{_esc(line)}</text>' for kind, line, baseline in box.lines]
        out.append(f'<g class="{" ".join(classes)}" id="op-{"-".join(map(str, box.addr))}" '
                   f'data-addr="{_esc(format_addr(box.addr))}" data-tip="{_esc(view.op_tip(op))}">'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                   f'height="{box.h:.1f}" rx="6"/>{"".join(text)}</g>')
    out.append("</svg>")
    return "\n".join(out)


def _tables(view: _View) -> str:
    m = view.model
    rows = []
    for addr in sorted(m.operators, key=lambda a: (a[:1], len(a), a)):
        op = m.operators[addr]
        cls = ' class="stuck"' if addr in view.stuck_ops else ""
        mean = format_ns(op.total_ns / op.runs) if op.runs else "–"
        frontier = "; ".join(view.frontier_text(op, per_worker=True)) or "–"
        rows.append(
            f"<tr{cls}><td>{_esc(format_addr(addr))}</td><td>{_esc(op.name)}</td>"
            f"<td>{'scope' if op.scope else 'operator'}</td>"
            f'<td class="num">{op.inputs}/{op.outputs}</td><td class="num">{op.runs:,}</td>'
            f'<td class="num">{format_ns(op.total_ns) if op.runs else "–"}</td>'
            f'<td class="num">{mean}</td><td>{_esc(frontier)}</td>'
            f"<td>{_esc(view.status(op))}</td></tr>")
    ops = ("<table id=\"operators\"><tr><th>address</th><th>name</th><th>kind</th>"
           "<th>in/out</th><th>runs</th><th>time</th><th>mean</th><th>frontiers</th>"
           "<th>status</th></tr>" + "".join(rows) + "</table>")
    rows = []
    for ch in sorted(m.channels.values(), key=lambda c: c.id):
        pairs = ", ".join(f"{s}→{t}: {n:,}" for (s, t), n in sorted(ch.pairs.items()))
        rows.append(
            f"<tr><td class=\"num\">{ch.id}</td><td>{_esc(format_addr(ch.scope))}</td>"
            f"<td>{_esc(m.name_of(ch.scope, ch.source[0]))} [{ch.source[0]}.{ch.source[1]}]</td>"
            f"<td>{_esc(m.name_of(ch.scope, ch.target[0]))} [{ch.target[0]}.{ch.target[1]}]</td>"
            f"<td>{_esc(ch.pact)}{' (loop)' if ch.loop else ''}</td>"
            f'<td class="num">{ch.sent_messages:,}</td><td class="num">{ch.sent_records:,}</td>'
            f'<td class="num">{ch.received_records:,}</td><td>{_esc(pairs) or "–"}</td></tr>')
    chans = ("<table id=\"channels\"><tr><th>id</th><th>scope</th><th>from</th><th>to</th>"
             "<th>pact</th><th>messages</th><th>records sent</th><th>records received</th>"
             "<th>per worker pair</th></tr>" + "".join(rows) + "</table>")
    rows = []
    for w in sorted(m.workers):
        frames = sum(v[0] for (s, _t), v in m.frames.items() if s == w)
        nbytes = sum(v[1] for (s, _t), v in m.frames.items() if s == w)
        rows.append(f'<tr><td class="num">{w}</td><td class="num">{format_ns(m.now.get(w, 0))}'
                    f'</td><td class="num">{format_ns(m.parked_ns.get(w, 0))}</td>'
                    f'<td class="num">{frames:,}</td><td class="num">{nbytes:,}</td></tr>')
    workers = ("<table id=\"workers\"><tr><th>worker</th><th>logged for</th><th>parked</th>"
               "<th>frames sent</th><th>bytes sent</th></tr>" + "".join(rows) + "</table>")
    return (f"<h2>Operators</h2>{ops}<h2>Channels</h2>{chans}"
            f"<h2>Workers</h2>{workers}")


def render_html(source, *, title: str | None = None, stuck_after: float = 10.0,
                now_ns=None) -> str:
    """A self-contained HTML page (inline SVG, style and script, nothing
    fetched) showing the dataflows of ``source`` (a :class:`Model`, log
    events, or log file paths): scopes as nested boxes, operators, channels
    with their pacts and record counts, loops, time per operator, frontiers,
    and the operators whose frontier has been stuck for more than
    ``stuck_after`` seconds with what holds it."""
    model = as_model(source)
    view = _View(model, stuck_after, now_ns)
    title = title or "timely dataflow"
    ndf = len([a for a in model.scopes() if len(a) == 1])
    nops = len([op for op in model.operators.values() if not op.scope])
    span = max(model.now.values(), default=0)
    when = ""
    if model.origin_unix_ns:
        origin = min(model.origin_unix_ns.values())
        when = _time.strftime("%Y-%m-%d %H:%M:%S", _time.localtime((origin + span) / 1e9))
    meta = (f"{ndf} dataflow(s), {nops} operator(s), {len(model.channels)} channel(s); "
            f"{len(model.workers)} worker(s) logged"
            + (f" of {model.peers}" if model.peers else "")
            + f"; {model.events:,} events over {format_ns(span)}"
            + (f", up to {when}" if when else ""))
    if view.stuck:
        items = "".join(f"<li>{_esc(s.describe())}</li>" for s in view.stuck)
        stuck = (f'<div class="stuck-list" id="stuck"><b>Frontiers stuck for more than '
                 f"{view.stuck_after:g} s</b><ul>{items}</ul></div>")
    else:
        stuck = ""
    legend = ('<div class="legend"><span><i></i>Pipeline</span>'
              '<span><i style="border-color:#2f6fb0"></i>Exchange</span>'
              '<span><i style="border-color:#8a6db0"></i>Enter / Leave</span>'
              '<span><i style="border-color:#3f8f3f;border-top-style:dashed"></i>loop</span>'
              '<span style="color:#c62828">■ stuck</span>'
              '<span style="color:#e08e0b">■ holds a stuck frontier</span>'
              " — hover for details"
              '<button id="viz-fit" type="button">actual size</button></div>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style><script>{_GUARD}</script>"
        f"</head><body><h1>{_esc(title)}</h1><div class=\"meta\">{_esc(meta)}</div>"
        f"{stuck}{legend}<div class=\"canvas fit\">{render_svg(view)}</div>{_tables(view)}"
        f'<div id="viz-tip"></div><div id="viz-status" data-state="loading">loading</div>'
        f"<script>{_SCRIPT}</script></body></html>\n")


def _dot_id(prefix: str, addr, port=None) -> str:
    name = prefix + "_" + "_".join(map(str, addr))
    return f'"{name}_{port}"' if port is not None else f'"{name}"'


def _dot_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_dot(source, *, stuck_after: float = 10.0, now_ns=None) -> str:
    """Graphviz DOT text for ``source`` (as :func:`render_html`): scopes as
    clusters, operators as boxes annotated with their times and frontiers,
    channels labelled with their pact and records, loop edges dashed, stuck
    operators red."""
    model = as_model(source)
    view = _View(model, stuck_after, now_ns)
    lines = ["digraph timely {", "  rankdir=LR; compound=true; newrank=true;",
             '  node [shape=box, style="rounded,filled", fillcolor="white", '
             'fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, color="#6d7f91"];']
    boundary_ports: dict = {}
    for ch in model.channels.values():
        if ch.source[0] == 0:
            boundary_ports.setdefault(("in", ch.scope), set()).add(ch.source[1])
        if ch.target[0] == 0:
            boundary_ports.setdefault(("out", ch.scope), set()).add(ch.target[1])

    def emit(scope, depth):
        pad = "  " * depth
        op = model.operators.get(scope)
        label = f"{op.name if op else 'scope'} {format_addr(scope)}"
        if op and op.runs:
            label += f"\n{format_ns(op.total_ns)}"
        color = "#c62828" if scope in view.stuck_ops else "#8aa4c0"
        lines.append(f"{pad}subgraph {_dot_id('cluster', scope)} {{")
        lines.append(f'{pad}  label="{_dot_label(label)}"; style="rounded"; color="{color}";')
        for side in ("in", "out"):
            for port in sorted(boundary_ports.get((side, scope), ())):
                lines.append(f'{pad}  {_dot_id(side, scope, port)} [shape=point, '
                             f'xlabel="{side} {port}"];')
        for child in model.children(scope):
            if model.is_scope(child.addr):
                emit(child.addr, depth + 1)
                continue
            text = [child.name]
            if child.runs:
                text.append(f"{child.runs:,}x, {format_ns(child.total_ns)}")
            attrs = ""
            if child.addr in view.stuck_ops:
                s = view.stuck_ops[child.addr][0]
                text.append("stuck at {" + ", ".join(format_time(t) for t in s.frontier) + "}")
                attrs = ', color="#c62828", penwidth=3, fillcolor="#fdecea"'
            elif child.addr in view.holding:
                text.append("holds back " + format_time(view.holding[child.addr][0].time))
                attrs = ', color="#e08e0b", penwidth=3, fillcolor="#fff8e8"'
            elif view.status(child) == "done":
                text.append("done")
            else:
                f = [line for line in view.frontier_text(child, per_worker=False)
                     if line.startswith("input")]
                if f:
                    text.append(f[0].replace("input 0 frontier", "frontier"))
            lines.append(f'{pad}  {_dot_id("op", child.addr)} '
                         f'[label="{_dot_label(chr(10).join(text))}"{attrs}];')
        lines.append(f"{pad}}}")

    for root in [a for a in model.scopes() if len(a) == 1]:
        emit(root, 1)

    def end(scope, node, port, side):
        if node == 0:
            return _dot_id(side, scope, port)
        addr = (*scope, node)
        if model.is_scope(addr):
            return _dot_id("out" if side == "in" else "in", addr, port)
        return _dot_id("op", addr)

    for ch in sorted(model.channels.values(), key=lambda c: c.id):
        a = end(ch.scope, ch.source[0], ch.source[1], "in")
        b = end(ch.scope, ch.target[0], ch.target[1], "out")
        label = f"{ch.pact}\n{ch.sent_records:,} rec"
        style = ""
        if ch.loop:
            style = ', style=dashed, color="#3f8f3f", constraint=false'
        elif _pact_class(ch.kind) == "exchange":
            style = ', color="#2f6fb0"'
        lines.append(f'  {a} -> {b} [label="{_dot_label(label)}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"
