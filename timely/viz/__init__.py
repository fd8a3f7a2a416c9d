"""Pictures of dataflows: their graph, annotated with what the logs measured.

:func:`render_html` draws the dataflows a log describes as a self-contained
HTML page (an inline SVG; no scripts, styles or fonts from anywhere else):
scopes as nested boxes, operators, channels labelled with their pact and the
records they carried, loops as dashed edges, each operator's scheduling
count and time, each input's current frontier, and, marked in red, every
operator whose frontier has not moved for ``stuck_after`` seconds, with the
capability or the waiting records that hold it (marked in orange) — the
question to ask of a dataflow that hangs. Hovering shows the details.
:func:`render_dot` gives the same graph as Graphviz DOT text.

The source is a :class:`Model` (:mod:`timely.viz.model`), a list of log
events ``(time_ns, worker, event)`` (:mod:`timely.logging`), or log files
written by :func:`timely.logging.capture_to`. From the command line::

    python -m timely.viz LOG [LOG ...] -o page.html     # or --dot

A running job draws itself with a :class:`Snapshotter`, which rewrites the
page every few seconds while the worker steps.

>>> import timely
>>> def work(worker):
...     events = []
...     worker.logging.register(lambda time, batch: events.extend(batch))
...     with worker.dataflow() as scope:
...         scope.to_stream(range(10)).exchange(lambda x: x).map(lambda x: x + 1).probe()
...     worker.drain()
...     worker.logging.flush()
...     return events
>>> page = render_html(timely.execute_directly(work))
>>> page.startswith("<!DOCTYPE html>") and "Exchange" in page and "<svg" in page
True
"""

from __future__ import annotations

import os
import time as _time

from timely.viz.layout import Layout
from timely.viz.model import Holder, Model, Stuck
from timely.viz.render import as_model, render_dot, render_html

__all__ = [
    "Holder",
    "Layout",
    "Model",
    "Snapshotter",
    "Stuck",
    "as_model",
    "render_dot",
    "render_html",
    "write_html",
]


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_html(path, source, **options) -> str:
    """Writes :func:`render_html` of ``source`` to ``path`` (replacing it
    whole, so a browser never reads half a page); returns the path."""
    path = os.fspath(path)
    _write_atomically(path, render_html(source, **options))
    return path


class Snapshotter:
    """Draws a running worker's dataflows to ``path`` every ``every`` seconds.

    It registers a logger on ``worker`` (all events but the communication
    layer's, unless ``kinds`` says otherwise), folds the events into a
    :class:`Model` as they come, and at the end of a worker step at least
    ``every`` seconds after the last page, writes the page again (atomically),
    judging "stuck" against the present. ``{worker}`` in ``path`` becomes
    the worker's index; without it only worker 0 draws (the others return a
    snapshotter that does nothing). The last page is written when the log
    stream ends (``close()``, or the end of ``timely.execute``).

    Create it before building the dataflows it should show. The page is
    written only while the worker steps: a worker blocked outside
    ``step()`` writes nothing.
    """

    def __init__(self, worker, path, every: float = 5.0, *, stuck_after: float = 10.0,
                 kinds=None, title: str | None = None):
        from timely.logging.events import PROGRESS, TIMELY

        path = os.fspath(path)
        self.worker = worker
        self.path = path.format(worker=worker.index) if "{worker}" in path else path
        self.every = every
        self.stuck_after = stuck_after
        self.title = title or f"timely dataflow, worker {worker.index}"
        self.model = Model()
        self.pages = 0
        self._last = float("-inf")
        self.registration = None
        if "{worker}" not in path and worker.index != 0:
            return
        self.registration = worker.logging.register(
            self, kinds if kinds is not None else TIMELY + PROGRESS, idle=True)

    def __call__(self, time_ns: int, events) -> None:
        if events:
            self.model.feed(events)
        now = _time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self.write(time_ns)

    def write(self, now_ns: int | None = None) -> str:
        """Writes the page now; returns its path."""
        if now_ns is None:
            now_ns = self.worker.logger.now() if self.worker.logger is not None else None
        write_html(self.path, self.model, stuck_after=self.stuck_after, now_ns=now_ns,
                   title=self.title)
        self.pages += 1
        return self.path

    def close(self) -> None:
        """Stops logging and writes the last page (also called when the log
        stream ends)."""
        registration, self.registration = self.registration, None
        if registration is None:
            return
        logger = self.worker.logger
        now = logger.now() if logger is not None else max(self.model.now.values(), default=0)
        if not registration.closed:
            registration.close()
        self.write(now)
