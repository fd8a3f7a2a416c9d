"""Log events as timely streams: the Rust crate's ``BatchLogger`` pattern,
a stream of this worker's events inside one of its dataflows, and log files
in the capture format.
"""

from __future__ import annotations

import os
import time as _time

from timely.capture.event import Messages, Progress
from timely.logging import events as ev

#: What :func:`event_stream` logs by default: the communication layer's
#: events are left out, since moving the log stream's own progress between
#: workers would make frames to log for ever.
STREAM_KINDS = ev.TIMELY + ev.PROGRESS


class BatchLogger:
    """A log callback that pushes capture events (``Messages`` and
    ``Progress``) to ``pusher``, as the Rust crate's ``BatchLogger``.

    The captured stream's times are nanoseconds since the worker started:
    each batch of events goes out as ``Messages(t, events)`` at the lower
    bound ``t`` the previous batch announced (every event in it happened at
    or after ``t``), then the capability moves up to the new bound. Closing
    retracts it: the stream is complete. With ``records=True`` the events go
    as :func:`~timely.logging.to_record` tuples, which the capture format
    (:class:`~timely.capture.EventWriter`) can hold.

    >>> import timely
    >>> from timely.capture import EventLink
    >>> link = EventLink()
    >>> def work(worker):
    ...     worker.logging.register(BatchLogger(link), kinds="OperatesEvent")
    ...     with worker.dataflow() as scope:
    ...         scope.to_stream(range(3)).probe()
    >>> _ = timely.execute_directly(work)
    >>> def read(worker):
    ...     with worker.dataflow() as scope:
    ...         names = link.replay_into(scope).map(lambda e: e[2].name).capture()
    ...     worker.drain()
    ...     return names.extract()
    >>> [sorted(names) for _, names in timely.execute_directly(read)]
    [['Dataflow', 'Probe', 'ToStream']]
    """

    def __init__(self, pusher, *, records: bool = False):
        self.pusher = pusher
        self.records = records
        self.time = 0

    def __call__(self, time_ns: int, events) -> None:
        if events:
            data = [ev.to_record(e) for e in events] if self.records else list(events)
            self.pusher.push(Messages(self.time, data))
        if time_ns is not None and time_ns > self.time:
            self.pusher.push(Progress([(time_ns, 1), (self.time, -1)]))
            self.time = time_ns

    def close(self) -> None:
        """Ends the logged stream: releases its last capability, so a replay of it completes."""
        if self.time is not None:
            self.pusher.push(Progress([(self.time, -1)]))
            self.time = None  # type: ignore[assignment]  # closed: nothing is logged after


class _Feeder:
    """Feeds log batches into an unordered input, at the batch's lower bound."""

    def __init__(self, handle, capability):
        self.handle = handle
        self.capability = capability

    def __call__(self, time_ns: int, events) -> None:
        cap = self.capability
        if cap is None:
            return
        if events:
            self.handle.session(cap).give_iterator(events)
            self.handle.flush()
        if time_ns > cap.time:
            cap.downgrade(time_ns)

    def close(self) -> None:
        cap = self.capability
        if cap is not None:
            self.capability = None
            self.handle.flush()
            cap.drop()
            self.handle.flush()


def _mark_unlogged(scope) -> object:
    """Marks the dataflow of ``scope`` (all its scopes, now and later) as not
    logged; returns its root subgraph."""
    sub = scope.subgraph
    chain = []
    while sub is not None:
        chain.append(sub)
        sub = sub.parent
    root = chain[-1]
    stack = [root, *chain]
    while stack:
        sub = stack.pop()
        sub.logged = False
        for child in sub.children[1:]:
            op = getattr(child, "operator", None)
            if op is not None and hasattr(op, "children"):
                stack.append(op)
    return root


def event_stream(worker, scope, kinds=STREAM_KINDS):
    """This worker's log events as a stream in ``scope`` (a scope with
    integer times): records ``(time_ns, worker, event)`` at times in
    nanoseconds since the worker started, the Rust crate's ``BatchLogger``
    fed into a dataflow.

    The dataflow that holds the stream is not itself logged (it would log
    its own work for ever). The stream ends when ``worker.logging.close()``
    is called, or when ``worker.drain()`` finds that only dataflows fed by
    logs remain.

    >>> import timely
    >>> def work(worker):
    ...     with worker.dataflow() as scope:
    ...         names = (event_stream(worker, scope)
    ...                  .filter(lambda e: type(e[2]) is timely.logging.OperatesEvent)
    ...                  .map(lambda e: e[2].name).capture())
    ...     with worker.dataflow() as scope:
    ...         scope.to_stream(range(3)).map(lambda x: x).probe()
    ...     worker.drain()
    ...     return sorted(n for _, batch in names.extract() for n in batch)
    >>> timely.execute_directly(work)
    ['Dataflow', 'Map', 'Probe', 'ToStream']
    """
    if scope.arity != 1:
        raise ValueError("event_stream needs a scope with integer times (a dataflow's root "
                         "scope or a region of it)")
    (handle, capability), stream = scope.new_unordered_input()
    root = _mark_unlogged(scope)
    registration = worker.logging.register(_Feeder(handle, capability), kinds)
    worker.logging.feeds[registration] = root
    return stream


class _FileLog:
    """A BatchLogger into an EventWriter on a file; flushed now and then so
    that a reader (or ``python -m timely.viz``) sees a recent state."""

    def __init__(self, file, owns: bool, every: float):
        from timely.capture.format import EventWriter

        self.file = file
        self.owns = owns
        self.writer = EventWriter(file)
        self.batch = BatchLogger(self.writer, records=True)
        self.every = every
        self.last = _time.monotonic()

    def __call__(self, time_ns: int, events) -> None:
        self.batch(time_ns, events)
        now = _time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self.writer.flush()

    def close(self) -> None:
        self.batch.close()
        self.writer.finish()
        if self.owns:
            self.file.close()


def capture_to(worker, path, kinds=None, *, flush_every: float = 0.5):
    """Writes this worker's log events to ``path`` (or a binary file object)
    in the capture format (:mod:`timely.capture.format`), as a captured
    stream of :func:`~timely.logging.to_record` tuples at times in
    nanoseconds. ``{worker}`` in ``path`` becomes the worker's index. The
    file is flushed at least every ``flush_every`` seconds while the worker
    steps, and completed when the registration (returned) closes, which
    ``timely.execute`` does when the work is done.

    Read the file back with :func:`read_log`, replay it into a dataflow with
    :func:`timely.capture.replay_into` (``[EventReader(f)]``, then
    ``.map(from_record)``), or draw it: ``python -m timely.viz FILE``.
    """
    if isinstance(path, (str, os.PathLike)):
        file = open(os.fspath(path).format(worker=worker.index), "wb")  # noqa: SIM115
        owns = True
    else:
        file, owns = path, False
    return worker.logging.register(_FileLog(file, owns, flush_every), kinds)


def read_log(*paths) -> list:
    """The events ``(time_ns, worker, event)`` in the log files ``paths``
    (written by :func:`capture_to`; a file still being written is read as
    far as it goes), each file's in order, one file after the other."""
    from timely.capture.event import Messages as _Messages
    from timely.capture.format import EventReader

    out: list = []
    for path in paths:
        if isinstance(path, (list, tuple)):
            out.extend(read_log(*path))
            continue
        with open(path, "rb") as f:
            # Following: the end of the file is where the writer has got to.
            reader = EventReader(f, follow=True)
            for event in reader:
                if type(event) is _Messages:
                    out.extend(ev.from_record(r) for r in event.data)
    return out
