"""The one exception hierarchy of timely.

Every error the project raises derives from :class:`TimelyError`; each subclass
also derives from the builtin exception that fits, so ``except ValueError``
keeps working for callers that do not know about timely.
"""

from __future__ import annotations

__all__ = [
    "TimelyError",
    "TimestampError",
    "TimestampTypeError",
    "SummaryError",
    "GraphError",
    "CycleError",
    "CapabilityError",
    "DataflowError",
    "ProgressError",
    "CaptureFormatError",
    "CaptureTypeError",
]


class TimelyError(Exception):
    """Base class of every error raised by timely."""


class TimestampError(TimelyError, ValueError):
    """A timestamp has the wrong arity, or a coordinate outside ``[0, 2**64)``."""


class TimestampTypeError(TimelyError, TypeError):
    """A timestamp is not an int or a tuple of ints."""


class SummaryError(TimelyError, ValueError):
    """A path summary is malformed (wrong arity, negative or oversized increment)."""


class GraphError(TimelyError, ValueError):
    """A dataflow graph description is inconsistent (unknown node or port, ...)."""


class CycleError(GraphError):
    """A cycle in the dataflow graph does not strictly advance timestamps."""


class CapabilityError(TimelyError, ValueError):
    """A capability was misused: downgraded backwards, used after it was
    dropped, used for an output it does not belong to, or asked for a time the
    operator cannot hold."""


class DataflowError(TimelyError, RuntimeError):
    """A dataflow was built or run inconsistently (an unconnected loop, a
    stream used in a scope it does not belong to, a step inside a step)."""


class ProgressError(TimelyError, RuntimeError):
    """An operator was handed data at a time its input frontier had already passed."""


class CaptureFormatError(TimelyError, ValueError):
    """A captured event stream cannot be read: truncated, corrupted, of another
    format or version, hostile, holding a pickle the reader was not allowed to
    load, or breaking the capture protocol. ``offset`` is the byte offset in the
    stream where the problem was found (None for in-memory event sources)."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message)
        self.offset = offset


class CaptureTypeError(TimelyError, TypeError):
    """An event cannot be written: a record, container or timestamp of a type
    the capture format does not encode (and pickling was not allowed)."""
