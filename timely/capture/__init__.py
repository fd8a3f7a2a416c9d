"""Capture and replay: a stream's whole history as a sequence of events, and back.

``Messages(time, data)`` records a batch seen at a time; ``Progress(updates)``
records changes to the stream's frontier as ``(time, diff)`` pairs, with the
contract that a captured stream starts holding one capability at the minimum
time (the capture retracts it in its first progress event).

- ``stream.capture_into(pusher)`` pushes a stream's events to any object with
  ``push(event)``: an :class:`EventLink` (in process), an :class:`EventWriter`
  (the binary capture format, to a file or a socket).
- :func:`replay_into` ``(sources, scope)`` plays event sources (``next()``
  returning an event or None) back into a dataflow, in any number of workers:
  each worker passes its own share of the sources (:func:`share`).
- :class:`EventReader` reads the capture format back without blocking; see
  :mod:`timely.capture.format` for the layout and its guarantees.
"""

from timely.capture.event import Event, EventLink, Messages, Progress
from timely.capture.format import EventReader, EventWriter
from timely.capture.replay import replay_into, share

__all__ = [
    "Event",
    "EventLink",
    "EventReader",
    "EventWriter",
    "Messages",
    "Progress",
    "replay_into",
    "share",
]
