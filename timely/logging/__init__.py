"""Logging: what each worker does, as streams of events, and the engine's
own messages through Python's :mod:`logging`.

Event streams (the Rust crate's ``timely::logging``). Each worker logs
operator and channel creation, scheduling (start, stop and time taken),
messages sent and received per channel (counts, source and target worker),
progress batches, frontier changes, the pointstamps each progress tracker
takes in, shutdowns, parking, and the communication layer's frames and
connections; :mod:`timely.logging.events` defines each event. Three ways to
get them:

- a callback: ``worker.logging.register(callback, kinds=None)`` calls
  ``callback(time_ns, events)`` with batches of ``(time_ns, worker, event)``
  (:class:`LoggingRegistry`);
- a timely stream of the events inside one of the worker's dataflows:
  :func:`event_stream` (the Rust crate's ``BatchLogger`` fed into an input),
  or :class:`BatchLogger` into any capture event pusher (an
  :class:`~timely.capture.EventLink` read by another computation);
- a file in the capture format: :func:`capture_to`, read back with
  :func:`read_log` or replayed with :func:`timely.capture.replay_into`, and
  drawn with ``python -m timely.viz FILE`` (:mod:`timely.viz`).

Nothing is logged unless something is registered, and then only the kinds
registered; with nothing registered each hook in the engine costs one
``is not None`` test, never per record (see :mod:`timely.logging.registry`).

Python logging. The engine reports start-up, connections and failures on the
``timely`` logger (``logging.getLogger("timely")`` and its children), which
has a :class:`logging.NullHandler` and is silent until the program configures
logging, e.g. ``logging.basicConfig(level=logging.INFO)``.
"""

from __future__ import annotations

from timely.logging.events import (
    ALL,
    COMMUNICATION,
    PROGRESS,
    TIMELY,
    ChannelsEvent,
    ConnectionEvent,
    FrameEvent,
    MessagesEvent,
    OperatesEvent,
    ParkEvent,
    ProgressEvent,
    PushProgressEvent,
    ReachabilityEvent,
    ScheduleEvent,
    SetupEvent,
    ShutdownEvent,
    TextEvent,
    from_record,
    kinds_of,
    to_record,
)
from timely.logging.registry import Logger, LoggingRegistry, Registration
from timely.logging.stream import BatchLogger, capture_to, event_stream, read_log

__all__ = [
    "ALL",
    "COMMUNICATION",
    "PROGRESS",
    "TIMELY",
    "BatchLogger",
    "ChannelsEvent",
    "ConnectionEvent",
    "FrameEvent",
    "Logger",
    "LoggingRegistry",
    "MessagesEvent",
    "OperatesEvent",
    "ParkEvent",
    "ProgressEvent",
    "PushProgressEvent",
    "ReachabilityEvent",
    "Registration",
    "ScheduleEvent",
    "SetupEvent",
    "ShutdownEvent",
    "TextEvent",
    "capture_to",
    "event_stream",
    "from_record",
    "kinds_of",
    "read_log",
    "to_record",
]
