"""A dataflow that makes no progress while its worker steps is reported: a
warning names each capability holding a frontier back (operator, time, the
line that created it), and ``worker.holds()`` answers the same."""

from __future__ import annotations

import logging
import time

import pytest

import timely
from timely import Pipeline
from timely.synchronization import Barrier

MODES = [(1, "processes"), (2, "processes"), (3, "processes"), (2, "threads")]


@pytest.fixture(params=MODES, ids=lambda m: f"{m[0]}w-{m[1]}")
def mode(request):
    return request.param


class Collect(logging.Handler):
    """The warnings logged under ``timely`` while it is installed."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __enter__(self):
        logger = logging.getLogger("timely")
        self._level = logger.level
        logger.setLevel(logging.WARNING)
        logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        logger = logging.getLogger("timely")
        logger.removeHandler(self)
        logger.setLevel(self._level)


def site_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``marker``."""
    with open(__file__) as f:
        for number, line in enumerate(f, start=1):
            if line.rstrip().endswith(marker) and "site_of" not in line:
                return f"{__file__}:{number}"
    raise AssertionError(marker)


def keep(cap):
    kept = cap.delayed(2)          # the kept capability
    raise RuntimeError(f"failed while holding {kept!r}")


def held_by_a_traceback(worker):
    """A capability at 2 kept alive only by the traceback of an exception
    the operator caught and kept: nothing drops it until the exception goes."""
    errors = []
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()

        def constructor(cap, info):
            def logic(inp, out):
                for c, data in inp:
                    pass
                if cap.valid():
                    try:
                        keep(cap)
                    except RuntimeError as error:
                        errors.append(error)
                    cap.drop()

            return logic

        probe = stream.unary(Pipeline, "Hold", constructor).probe()
    return handle, probe, errors.clear


def test_a_capability_kept_by_a_traceback_is_named_with_its_site(mode):
    workers, how = mode

    def work(worker):
        with Collect() as collect:
            handle, probe, release = held_by_a_traceback(worker)
            handle.advance_to(5)
            deadline = time.monotonic() + 3.0
            while probe.less_than(5) and time.monotonic() < deadline:
                worker.step_or_park(0.01)
                if any(m.startswith(f"worker {worker.index}:") for m in collect.messages):
                    break
            held = [(h.kind, h.name, h.time, h.count, h.local, h.sites)
                    for h in worker.holds()]
            stuck = probe.less_than(5)
            # Every worker has reported before any lets its capability go.
            Barrier(worker).wait()
        release()               # the exception goes, and the capability with it
        handle.close()
        worker.drain()
        mine = [m for m in collect.messages if m.startswith(f"worker {worker.index}:")]
        return mine, held, stuck

    line = site_of("# the kept capability")
    results = timely.execute(work, workers=workers, mode=how, stall_warning=0.3)
    for messages, held, stuck in results:
        assert stuck
        assert len(messages) == 1
        text = messages[0]
        assert "made no progress for" in text
        assert "a capability at 2 held by Hold [0, 2] (output 0)" in text
        assert f"created at {line}" in text
        assert ("capability", "Hold [0, 2]", 2, workers, 1, (line,)) in held
        if workers > 1:
            assert f"{workers - 1} of them on other workers" in text


def test_records_nobody_reads_are_named(mode):
    workers, how = mode

    def work(worker):
        deaf = [True]

        def constructor(cap, info):
            activator.append(info.activator)

            def logic(inp, out):
                if not deaf[0]:
                    for c, data in inp:
                        pass

            return logic

        activator = []
        with Collect() as collect:
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                probe = stream.unary(Pipeline, "Deaf", constructor).probe()
            handle.send(7)
            handle.close()
            deadline = time.monotonic() + 3.0
            # Threads share the logger: wait for this worker's own report.
            while (not any(m.startswith(f"worker {worker.index}:") for m in collect.messages)
                   and time.monotonic() < deadline):
                worker.step_or_park(0.01)
            held = [(h.kind, h.name, h.time, h.count) for h in worker.holds()]
            # Every worker has reported before any reads its records.
            Barrier(worker).wait()
        deaf[0] = False
        activator[0].activate()
        worker.drain()
        mine = [m for m in collect.messages if m.startswith(f"worker {worker.index}:")]
        return mine, held, probe.done()

    results = timely.execute(work, workers=workers, mode=how, stall_warning=0.3)
    for messages, held, done in results:
        assert done
        assert len(messages) == 1
        # the count is every worker's (each sent one record to its own Deaf)
        assert f"{workers} record(s) at 0 waiting at Deaf [0, 2] (input 0)" in messages[0]
        assert held == [("records", "Deaf [0, 2]", 0, workers)]


def test_a_dataflow_that_progresses_is_not_reported(mode):
    """A loop that keeps going for longer than the warning's delay."""
    workers, how = mode

    def work(worker):
        stop_at = time.monotonic() + 2.5
        with Collect() as collect:
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                loop_handle, loop = scope.feedback(1)
                body = stream.concat(loop).exchange(lambda x: x).map(lambda x: x + 1)
                body.filter(lambda x: time.monotonic() < stop_at).connect_loop(loop_handle)
                probe = body.probe()
            if worker.index == 0:
                handle.send(0)
            handle.close()
            while not probe.done():
                worker.step_or_park(0.001)
        return collect.messages

    # A second without progress on a machine running other work is rare; a
    # loop that progresses is never reported.
    for messages in timely.execute(work, workers=workers, mode=how, stall_warning=1.0):
        assert messages == []


@pytest.mark.parametrize("workers", [2, 3])
def test_a_peer_busy_in_a_long_step_is_not_a_stall(workers):
    """Worker 1 computes for several warning periods within one operator
    call (as an operator over a big graph does); the others wait for it,
    parked. Nobody is stalled, so nobody warns."""

    def work(worker):
        with Collect() as collect:
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()

                def compute(x):
                    if worker.index == 1:
                        until = time.monotonic() + 1.5
                        while time.monotonic() < until:     # busy, never parked
                            pass
                    return x

                probe = stream.exchange(lambda x: 1).map(compute).exchange(lambda x: 0).probe()
            if worker.index == 0:
                handle.send(7)
            handle.close()
            worker.step_while(lambda: not probe.done())
        return collect.messages

    assert timely.execute(work, workers=workers, stall_warning=0.3) == [[]] * workers


def test_workers_looping_without_progress_are_reported():
    """Every worker stays awake (an operator that activates itself each
    time it runs and does nothing else) while an input holds its frontier:
    nobody parks, and that is a stall, reported by every worker."""
    from timely.dataflow.builder import OperatorBuilder

    def work(worker):
        with Collect() as collect:
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                b = OperatorBuilder("Restless", scope)
                b.new_input(stream, Pipeline())

                def build(caps, info):
                    caps.clear()

                    def run(frontiers):
                        info.activator.activate()
                    return run

                b.build(build)
                probe = stream.probe()
            until = time.monotonic() + 1.5
            while time.monotonic() < until:
                worker.step_or_park(0.01)
            handle.close()
            worker.step_while(lambda: not probe.done())
        return collect.messages

    for messages in timely.execute(work, workers=2, stall_warning=0.3):
        assert any("made no progress" in m for m in messages), messages


def test_the_watch_can_be_turned_off_and_rejects_nonsense():
    def work(worker):
        with Collect() as collect:
            handle, probe, release = held_by_a_traceback(worker)
            handle.advance_to(5)
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                worker.step()
            release()
            handle.close()
        worker.drain()
        return collect.messages

    assert timely.execute_directly(work, stall_warning=None) == []
    with pytest.raises(timely.ConfigurationError, match="stall_warning"):
        timely.execute_directly(lambda worker: None, stall_warning=0)


def test_a_dataflow_a_peer_has_not_built_is_named(caplog):
    """A peer that never finishes its work and never builds the dataflow:
    the stall warning says which worker is missing."""
    import threading

    release = threading.Event()

    def work(worker):
        if worker.index == 0:
            with worker.dataflow() as scope:
                handle, stream = scope.new_input()
                probe = stream.exchange(lambda x: x).probe()
            handle.close()
            deadline = time.monotonic() + 3.0
            while not probe.done() and time.monotonic() < deadline:
                worker.step_or_park(0.01)
                if any("have not built" in r.getMessage() for r in caplog.records):
                    break
            release.set()
            raise RuntimeError("stop")
        while not release.is_set():
            worker.step_or_park(0.01)
        return None

    caplog.set_level(logging.WARNING, logger="timely")
    with pytest.raises(timely.WorkerFailed):
        timely.execute(work, workers=2, mode="threads", stall_warning=0.3)
    warnings = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
    assert any("worker(s) [1] have not built this dataflow (yet)" in w for w in warnings)


def test_holds_are_read_from_the_output_handles(monkeypatch):
    """Each live capability is counted at its time with the line that made
    it (a downgrade moves it, a drop removes it), without a search of the
    heap: the report works with the garbage collector's walk refused."""
    import gc

    from timely.dataflow.stalls import LiveView

    def refused():
        raise AssertionError("the stall report walked the heap")

    monkeypatch.setattr(gc, "get_objects", refused)

    def work(worker):
        kept: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                def logic(inp, out):
                    for c, data in inp:
                        pass
                    if cap.valid():
                        kept.append(cap.delayed(3))          # the first line
                        kept.append(cap.delayed(3))          # the second line
                        kept.append(cap.delayed(4))          # the moved one
                        kept[2].downgrade(6)
                        cap.drop()

                return logic

            probe = stream.unary(Pipeline, "Keep", constructor).probe()
        handle.advance_to(10)
        worker.step_while(lambda: not kept)
        worker.step_while(lambda: probe.less_than(3))
        held = [(h.name, h.time, h.local, h.sites) for h in worker.holds()
                if h.kind == "capability" and h.name.startswith("Keep")]
        views = []
        for _ in range(3):
            views.append({time: sorted(sites) for (_, node, port, time), sites
                          in LiveView(worker).capabilities.items() if node == 2})
            if kept:
                kept.pop(0).drop()
        handle.close()
        worker.step_while(lambda: not probe.done())
        return held, views

    one, two, moved = (site_of("# the first line"), site_of("# the second line"),
                       site_of("# the moved one"))
    for workers in (1, 2, 3):
        for held, views in timely.execute(work, workers=workers):
            assert held == [("Keep [0, 2]", 3, 2, tuple(sorted((one, two))))]
            assert views == [{3: sorted((one, two)), 6: [moved]}, {3: [two], 6: [moved]},
                             {6: [moved]}]


FORGOTTEN = """\
import logging, sys, time
import timely
if sys.argv[2] == "logging":
    logging.basicConfig()
def work(worker):
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()          # the forgotten input
        probe = stream.probe()
    handle.send(1)                                  # and no advance_to
    deadline = time.monotonic() + 3.0
    worker.step_while(lambda: probe.less_than(1) and time.monotonic() < deadline)
    stuck = probe.less_than(1)
    handle.close()
    worker.step_while(lambda: not probe.done())
    return stuck
print(timely.execute(work, workers=int(sys.argv[1]), stall_warning=0.5))
"""


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_forgotten_advance_to_is_told_on_stderr_without_logging(tmp_path, workers):
    """A program that configured no logging still hears of a stall: a
    StallWarning on stderr naming the input, the line that made it and
    what to call. With logging configured the same text goes to the log,
    not as a warning."""
    import subprocess
    import sys

    program = tmp_path / "forgotten.py"
    program.write_text(FORGOTTEN)
    line = FORGOTTEN.splitlines().index(
        "        handle, stream = scope.new_input()          # the forgotten input") + 1
    stepping = [n for n, row in enumerate(FORGOTTEN.splitlines(), 1)
                if row.lstrip().startswith("worker.step_while(lambda: probe.less_than(1)")][0]
    for mode in ("plain", "logging"):
        done = subprocess.run([sys.executable, str(program), str(workers), mode],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str([True] * workers)
        reports = [row for row in done.stderr.splitlines() if "made no progress" in row]
        assert len(reports) == workers, done.stderr
        assert sorted(int(row.split("worker ")[1].split(":")[0]) for row in reports) == \
            list(range(workers))
        for row in reports:
            assert f"call advance_to() past 0 or close() on the input handle made at " \
                   f"{program}:{line}" in row
        assert ("StallWarning" in done.stderr) == (mode == "plain"), done.stderr
        if mode == "plain":
            # Attributed to the line that was stepping the worker.
            assert f"{program}:{stepping}: StallWarning" in done.stderr
