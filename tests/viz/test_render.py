"""The picture of a nested iterative dataflow contains every scope, operator
and channel, with what the logs measured; DOT text has the same graph."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from timely.viz import Layout, Model, render_dot, render_html, write_html

from tests.viz.helpers import RECORDS, captured_nested

ROOT = Path(__file__).resolve().parent.parent.parent
NAMES = {"Dataflow", "Input", "Collatz", "Feedback", "Concatenate", "Step", "Exchange",
         "Map", "Branch", "Accumulate", "Probe"}


def _dom_id(prefix, addr):
    return f'id="{prefix}-{"-".join(map(str, addr))}"'


def test_page_has_every_operator_and_channel(tmp_path, workers):
    paths = captured_nested(tmp_path, workers)
    model = Model.from_logs(*paths)
    assert {op.name for op in model.operators.values()} == NAMES
    assert model.workers == set(range(workers)) and model.peers == workers
    page = render_html(model)
    for addr, op in model.operators.items():
        prefix = "scope" if model.is_scope(addr) else "op"
        assert _dom_id(prefix, addr) in page, (addr, op.name)
        assert op.name in page
    for ch in model.channels.values():
        assert f'id="ch-{ch.id}"' in page
    # Nesting: the dataflow holds Collatz, which holds Step.
    scopes = {op.name: op.addr for op in model.operators.values() if op.scope}
    assert scopes["Collatz"][:-1] == scopes["Dataflow"]
    assert scopes["Step"][:-1] == scopes["Collatz"]
    # Records: each epoch's records enter the loop once and leave it once.
    entered = [c for c in model.channels.values() if c.pact == "Enter"
               and c.scope == scopes["Dataflow"]]
    assert [c.sent_records for c in entered] == [2 * RECORDS]
    loops = [c for c in model.channels.values() if c.loop]
    assert len(loops) == 1 and model.name_of(loops[0].scope, loops[0].source[0]) == "Feedback"
    assert 'class="ch loop"' in page
    for ch in model.channels.values():
        assert ch.sent_records == ch.received_records
    # Time per operator, and every operator finished.
    assert all(op.runs > 0 and op.total_ns > 0 for op in model.operators.values())
    assert all(op.shutdown == set(range(workers)) for op in model.operators.values())
    assert "stuck" not in re.findall(r'class="op ([a-z ]*)"', page)
    assert 'id="stuck"' not in page
    # Self-contained: nothing fetched from anywhere.
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<svg" in page and "</html>" in page


def test_dot_has_the_same_graph(tmp_path):
    model = Model.from_logs(*captured_nested(tmp_path, 2))
    dot = render_dot(model)
    assert dot.startswith("digraph timely {") and dot.rstrip().endswith("}")
    assert dot.count("->") == len(model.channels)
    for addr, op in model.operators.items():
        name = "_".join(map(str, addr))
        if model.is_scope(addr):
            assert f'subgraph "cluster_{name}"' in dot
        else:
            assert f'"op_{name}" [label="{op.name}' in dot
    assert dot.count("style=dashed") == 1
    if _which("dot"):
        run = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr


def _which(name):
    import shutil

    return shutil.which(name)


def test_layout_nests_scopes_and_separates_operators(tmp_path):
    model = Model.from_logs(*captured_nested(tmp_path, 1))
    layout = Layout(model)
    boxes = layout.boxes
    for addr, box in boxes.items():
        if len(addr) > 1:
            parent = boxes[addr[:-1]]
            assert parent.x <= box.x and box.x + box.w <= parent.x + parent.w
            assert parent.y <= box.y and box.y + box.h <= parent.y + parent.h
    for scope in model.scopes():
        inside = [boxes[op.addr] for op in model.children(scope)]
        for i, a in enumerate(inside):
            for b in inside[i + 1:]:
                apart = (a.x + a.w <= b.x or b.x + b.w <= a.x or
                         a.y + a.h <= b.y or b.y + b.h <= a.y)
                assert apart, (a.addr, b.addr)
    assert len(layout.edges) == len(model.channels)


def test_cli_writes_html_and_dot(tmp_path):
    paths = [str(p) for p in captured_nested(tmp_path, 2)]
    page = tmp_path / "page.html"
    run = subprocess.run([sys.executable, "-m", "timely.viz", *paths, "-o", str(page)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Collatz" in page.read_text() and "wrote" in run.stderr
    run = subprocess.run([sys.executable, "-m", "timely.viz", *paths, "--dot", "-o", "-"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.startswith("digraph timely {")


def test_sources_may_be_paths_or_events(tmp_path):
    paths = captured_nested(tmp_path, 1)
    from timely.logging import read_log

    a = render_html(paths, title="t")
    b = render_html(read_log(*paths), title="t")
    c = render_html(str(paths[0]), title="t")
    assert a == b == c
    out = write_html(tmp_path / "p.html", paths)
    assert Path(out).read_text() == a.replace("<title>t</title>", "<title>timely dataflow</title>",
                                              ).replace("<h1>t</h1>", "<h1>timely dataflow</h1>")


def test_unknown_event_kind_is_an_error():
    from timely.logging import from_record

    with pytest.raises(ValueError, match="unknown event kind"):
        from_record((0, 0, "NoSuchEvent", ()))
