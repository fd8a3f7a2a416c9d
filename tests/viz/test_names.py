"""Pictures name what users named: every operator's whole name and every
channel's whole label are in the page and in the DOT text, however long,
and the layout makes room for them."""

from __future__ import annotations

import html
import re

import pytest

import timely
from timely.logging import capture_to
from timely.viz import Layout, Model, render_dot, render_html
from timely.viz.layout import LABEL_SIZE, MAX_LINE_W, text_width, wrap

LONG = ("parse the raw click events from every región of the 世界, keeping only "
        "those we can attribute ✓ — «ünïcödé» included")
NAMES = ["raw clicks", "seed numbers", "merge sources", LONG, "drop multiples of three",
         "by customer and region", "count per epoch", "done yet?"]
RECORDS = 12


def route_by_customer_and_region_of_the_click(x):
    return x


def named_work(worker, pattern):
    capture_to(worker, pattern)
    with worker.dataflow() as scope:
        handle, stream = scope.new_input(name="raw clicks")
        seeds = scope.to_stream(range(3), name="seed numbers")
        (stream.concat(seeds, name="merge sources")
               .map(lambda x: x + 1, name=LONG)
               .filter(lambda x: x % 3 != 0, name="drop multiples of three")
               .exchange(route_by_customer_and_region_of_the_click,
                         name="by customer and region")
               .count(name="count per epoch")
               .probe(name="done yet?"))
    if worker.index == 0:
        handle.send_batch(range(RECORDS))
    handle.close()
    worker.drain()


def named_model(tmp_path, workers) -> Model:
    pattern = str(tmp_path / "named-{worker}.tlog")
    timely.execute(lambda worker: named_work(worker, pattern), workers=workers)
    return Model.from_logs(*[tmp_path / f"named-{w}.tlog" for w in range(workers)])


def _op_lines(page: str, name_start: str) -> list[str]:
    """The lines of the name of the operator box whose name begins with
    ``name_start`` (escaped as the page escapes it)."""
    for m in re.finditer(r'<g class="op[a-z ]*" id="op-[0-9-]+"[^>]*>(.*?)</g>', page):
        lines = [html.unescape(t) for t in re.findall(r'<text class="name"[^>]*>([^<]*)</text>',
                                                       m.group(1))]
        if lines and lines[0].startswith(name_start):
            return lines
    return []


def _svg(page: str) -> str:
    return page[page.index("<svg"):page.index("</svg>")]


@pytest.mark.parametrize("workers", [1, 2, 3], ids=lambda n: f"{n}w")
def test_the_picture_names_what_users_named(tmp_path, workers):
    model = named_model(tmp_path, workers)
    assert {op.name for op in model.operators.values()} == {"Dataflow", *NAMES}
    page = render_html(model)
    svg = _svg(page)
    for name in NAMES:
        lines = _op_lines(svg, name.split(" ")[0])
        assert " ".join(lines) == name, (name, lines)
        # Whole in the table, the tooltips and the DOT text too.
        assert f"<td>{html.escape(name)}</td>" in page
    # A name fitting a line is one line; the long one wraps at its spaces only.
    assert _op_lines(svg, "raw") == ["raw clicks"]
    long_lines = _op_lines(svg, "parse")
    assert len(long_lines) > 1 and " ".join(long_lines) == LONG
    dot = render_dot(model)
    for addr, op in model.operators.items():
        if not model.is_scope(addr):
            assert f'"op_{"_".join(map(str, addr))}" [label="{op.name}\\n' in dot
    # Every channel's label is whole: its pact, as logged, and its records.
    exchange = [ch for ch in model.channels.values() if ch.kind == "exchange"]
    assert [ch.pact for ch in exchange] == [
        "Exchange('route_by_customer_and_region_of_the_click')"]
    for ch in model.channels.values():
        label = f"{ch.pact} · {ch.sent_records:,}"
        assert f'text-anchor="middle">{html.escape(label)}</text>' in svg, label
        assert f'[label="{ch.pact}\\n{ch.sent_records:,} rec"' in dot, ch.pact
    # 1..12 from the input and 1, 2, 3 from each worker's seeds, less multiples of 3.
    assert exchange[0].sent_records == 8 + 2 * workers
    assert "…" not in svg and "…" not in dot


def test_the_layout_makes_room_for_whole_text(tmp_path):
    model = named_model(tmp_path, 2)
    layout = Layout(model)
    boxes = layout.boxes
    by_name = {model.operators[a].name: b for a, b in boxes.items() if not b.scope}
    long_box = by_name[LONG]
    for kind, line, baseline in long_box.lines:
        assert text_width(line, 12.0, True) <= long_box.w
        assert baseline < long_box.h
        assert text_width(line, 12.0, True) <= MAX_LINE_W
    # Boxes of one scope do not overlap, and each lies within its scope.
    inside = [b for b in boxes.values() if not b.scope]
    for i, a in enumerate(inside):
        parent = boxes[a.addr[:-1]]
        assert parent.x <= a.x and a.x + a.w <= parent.x + parent.w
        for b in inside[i + 1:]:
            assert (a.x + a.w <= b.x or b.x + b.w <= a.x or
                    a.y + a.h <= b.y or b.y + b.h <= a.y), (a.addr, b.addr)
    # Each channel's label fits between the boxes it joins.
    for edge in layout.edges:
        (sx, _), (tx, _) = edge.points[0], edge.points[-1]
        assert edge.text == f"{edge.channel.pact} · {edge.channel.sent_records:,}"
        assert tx - sx >= text_width(edge.text, LABEL_SIZE), edge.text


def test_a_scope_is_as_wide_as_its_title_and_its_labels(tmp_path):
    title = "a region whose name is much longer than anything it holds, ünïcödé 世界"

    def work(worker):
        capture_to(worker, str(tmp_path / "scope-{worker}.tlog"))
        with worker.dataflow() as scope:
            with scope.region(title) as inner:
                (scope.to_stream([1]).enter(inner)
                      .exchange(route_by_customer_and_region_of_the_click, name="route")
                      .map(lambda x: x, name="m").leave().probe())
        worker.drain()

    timely.execute_directly(work)
    model = Model.from_logs(tmp_path / "scope-0.tlog")
    region = next(a for a, op in model.operators.items() if op.name == title)
    layout = Layout(model)
    assert layout.boxes[region].w >= text_width(f"{title} [0.2]", 12.0, True)
    # Labels fit also between a scope's border and what it holds.
    assert len(layout.edges) == len(model.channels) == 5
    for edge in layout.edges:
        (sx, _), (tx, _) = edge.points[0], edge.points[-1]
        assert tx - sx >= text_width(edge.text, LABEL_SIZE), edge.text
    page = render_html(model)
    assert re.search(rf'<text class="title"[^>]*>{re.escape(html.escape(title))} \[', page)
    assert f'label="{title} [' in render_dot(model)


def test_wrapping_never_drops_a_character():
    for text in [LONG, "  two  spaces  ", "x" * 200, "a " * 90, "世界" * 60, "single"]:
        for width in (40.0, 120.0, MAX_LINE_W):
            lines = wrap(text, width, 12.0)
            assert " ".join(lines) == text
            for line in lines:
                if " " in line.strip():
                    assert text_width(line, 12.0) <= width
