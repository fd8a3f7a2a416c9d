"""The engine's own messages go to Python's ``logging`` under ``timely``,
silent unless the program configures logging."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import timely
from timely.communication.process import RingAllocator

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_timely_logger_has_a_null_handler():
    handlers = logging.getLogger("timely").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_silent_by_default():
    """A warning from the engine prints nothing unless logging is configured."""
    script = textwrap.dedent("""
        import logging
        import timely
        logging.getLogger("timely.communication.process").warning("not shown")
        timely.execute(lambda worker: None, workers=2)
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr == "" and run.stdout == ""


def test_start_up_and_failures_are_reported(caplog):
    caplog.set_level(logging.INFO, logger="timely")
    timely.execute(lambda worker: None, workers=2)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("timely")]
    assert "running 2 worker(s) as processes" in messages
    assert any(m.startswith("starting workers 0 to 1 of 2") for m in messages)

    caplog.clear()

    def fail(worker):
        if worker.index == 1:
            raise RuntimeError("boom")

    try:
        timely.execute(fail, workers=2)
    except timely.TimelyError:
        pass
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("worker 1 failed" in r.getMessage() for r in errors)


def test_connections_are_logged_and_replayed_to_later_loggers(caplog):
    """Links made before the worker exists reach loggers registered later."""

    class Link:
        def __init__(self, peer):
            self.peer = peer
            self.sock = None

        def close(self):
            pass

    caplog.set_level(logging.INFO, logger="timely")
    allocator = RingAllocator(0, 2, {}, {}, bell=_Bell(), peer_bells={})
    allocator.add_links({1: Link(1)})
    assert any("linked to worker 1" in r.getMessage() for r in caplog.records)
    worker = timely.Worker(allocator)
    events = []
    worker.logging.register(lambda t, batch: events.extend(batch), "communication")
    allocator.fail("worker 1 disconnected: test")
    worker.logging.flush()
    kinds = [(type(e).__name__, getattr(e, "state", None)) for _, _, e in events]
    assert kinds == [("ConnectionEvent", "connected"), ("ConnectionEvent", "failed")]
    assert any(r.levelno == logging.ERROR and "disconnected" in r.getMessage()
               for r in caplog.records)


class _Bell:
    def ring(self):
        pass

    def clear(self):
        pass

    def fileno(self):
        return -1
