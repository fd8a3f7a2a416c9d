"""Operators whose frontier has not moved are marked, with what holds it:
a capability an operator keeps, records nobody reads, an input not advanced,
or, inside a scope, the scope's input and what holds that outside."""

from __future__ import annotations

import re

import timely
from timely.viz import Model, Snapshotter, render_dot, render_html


def _snapshot(build, feed, steps: int = 5):
    """Builds ``build(scope)`` (which returns an input handle) with logging
    on, calls ``feed(handle)``, steps, and returns the events logged so far
    (before the input closes), and the events at the end."""

    def work(worker):
        events = []
        worker.logging.register(lambda t, batch: events.extend(batch))
        with worker.dataflow() as scope:
            handle = build(scope)
        feed(handle)
        for _ in range(steps):
            worker.step()
        worker.logging.flush()
        hung = list(events)
        handle.close()
        worker.drain()
        worker.logging.flush()
        return hung, events

    return timely.execute_directly(work)


def _classes(page, name):
    """The classes of the operator boxes named ``name``."""
    out = []
    for m in re.finditer(r'<g class="(op[a-z ]*)" id="op-[0-9-]+"[^>]*>.*?</g>', page):
        if re.search(rf'class="name"[^>]*>{re.escape(name)}<', m.group(0)):
            out.append(set(m.group(1).split()))
    return out


def test_an_input_not_advanced_holds_everything_downstream():
    def build(scope):
        handle, stream = scope.new_input()
        stream.map(lambda x: x + 1).probe()
        return handle

    def feed(handle):
        handle.send(1)
        handle.advance_to(3)

    hung, done = _snapshot(build, feed)
    model = Model.from_events(hung)
    stuck = model.stuck(stuck_after=0)
    assert {s.operator.name for s in stuck} == {"Map", "Probe"}
    for s in stuck:
        assert s.frontier == [3]
        assert [(h.kind, h.name, h.time) for h in s.holders] == [("capability", "Input", 3)]
    page = render_html(model, stuck_after=0)
    assert _classes(page, "Map") == [{"op", "stuck"}]
    assert _classes(page, "Input") == [{"op", "holding"}]
    assert 'id="stuck"' in page and "a capability at 3 held by Input (output 0)" in page
    assert "stuck at {3}" in render_dot(model, stuck_after=0)
    # A long threshold, and the finished run: nothing is stuck.
    assert Model.from_events(hung).stuck(stuck_after=3600) == []
    assert Model.from_events(done).stuck(stuck_after=0) == []
    assert 'id="stuck"' not in render_html(done, stuck_after=0)


def test_a_kept_capability_and_unread_records():
    def build(scope):
        handle, stream = scope.new_input()

        def keep(cap, info):
            kept = []

            def logic(input, output):
                for c, data in input:
                    if not kept:
                        kept.append(c.retain())
                    output.session(c).give_container(data)

            return logic

        def ignore(cap, info):
            return lambda input, output: None

        kept = stream.unary(timely.Pipeline, "Keep", keep)
        kept.map(lambda x: x).probe()
        stream.unary(timely.Pipeline, "Ignore", ignore).probe()
        return handle

    def work(worker):
        events = []
        worker.logging.register(lambda t, batch: events.extend(batch))
        with worker.dataflow() as scope:
            handle = build(scope)
        handle.send_batch([1, 2, 3])
        handle.close()
        for _ in range(5):
            worker.step()
        worker.logging.flush()
        return events

    events = timely.execute_directly(lambda w: _run_without_drain(w, work))
    model = Model.from_events(events)
    stuck = {(s.operator.name, s.port): s for s in model.stuck(stuck_after=0)}
    holders = {name: [(h.kind, h.name, h.time, h.count) for h in s.holders]
               for (name, _), s in stuck.items()}
    assert holders["Map"] == [("capability", "Keep", 0, 1)]
    assert holders["Ignore"] == [("records", "Ignore", 0, 3)]
    page = render_html(model, stuck_after=0)
    assert _classes(page, "Keep") == [{"op", "holding"}]
    assert _classes(page, "Ignore") == [{"op", "stuck", "holding"}]
    assert "3 record(s) at 0 waiting at Ignore (input 0)" in page


def _run_without_drain(worker, work):
    """Runs ``work`` and then abandons its dataflow, which can never complete."""
    events = work(worker)
    worker.dataflows.clear()
    worker.active.clear()
    return events


def test_inside_a_scope_the_holder_is_outside():
    def build(scope):
        handle, stream = scope.new_input()
        with scope.iterative("Loop") as inner:
            loop, looped = inner.feedback(1)
            body = stream.enter(inner).concat(looped).map(lambda x: x - 1)
            body.filter(lambda x: x > 0).connect_loop(loop)
            out = body.leave()
        out.probe()
        return handle

    def feed(handle):
        handle.send(2)
        handle.advance_to(1)

    hung, _ = _snapshot(build, feed, steps=20)
    model = Model.from_events(hung)
    stuck = {s.operator.name: s for s in model.stuck(stuck_after=0)}
    inner = stuck["Map"]
    assert inner.operator.addr[:-1] == next(
        op.addr for op in model.operators.values() if op.name == "Loop")
    assert inner.frontier == [(1, 0)]
    kinds = [(h.kind, h.name, h.time) for h in inner.holders]
    assert kinds == [("scope input", "Loop", 1), ("capability", "Input", 1)]
    page = render_html(model, stuck_after=0)
    assert "the input frontier 1 of scope Loop (input 0)" in page


def test_snapshotter_draws_a_running_worker(tmp_path):
    def work(worker):
        snap = Snapshotter(worker, tmp_path / "live-{worker}.html", every=0)
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).map(lambda x: x).probe()
        for t in range(3):
            handle.send(t)
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        during = snap.pages
        page = (tmp_path / f"live-{worker.index}.html").read_text()
        handle.close()
        return during, page

    results = timely.execute(work, workers=2)
    for w, (during, page) in enumerate(results):
        assert during > 0 and "Exchange" in page and f"worker {w}" in page
        final = (tmp_path / f"live-{w}.html").read_text()
        assert "done" in final


def test_snapshotter_without_placeholder_draws_worker_zero_only(tmp_path):
    def work(worker):
        snap = Snapshotter(worker, tmp_path / "one.html", every=0)
        with worker.dataflow() as scope:
            scope.to_stream(range(5)).map(lambda x: x).probe()
        return snap.registration is not None

    assert timely.execute(work, workers=2) == [True, False]
    assert "Map" in (tmp_path / "one.html").read_text()
