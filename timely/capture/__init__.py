"""Capture: a stream's whole history as a sequence of events.

``Messages(time, data)`` records a batch seen at a time; ``Progress(updates)``
records changes to the stream's frontier as ``(time, diff)`` pairs, with the
contract that a captured stream starts holding one capability at the minimum
time (the capture retracts it in its first progress event).
"""

from timely.capture.event import Event, EventLink, Messages, Progress

__all__ = ["Event", "EventLink", "Messages", "Progress"]
