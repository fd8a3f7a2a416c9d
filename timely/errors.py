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
    "BatchError",
    "ColumnarError",
    "AggregateError",
    "RingError",
    "FrameError",
    "AuthenticationError",
    "ConfigurationError",
    "WorkerFailed",
    "CaptureFormatError",
    "CaptureTypeError",
    "BarrierError",
    "RouteError",
    "SequencerError",
    "SparkConfigError",
    "SparkTaskError",
    "SparkSchemaError",
    "GraphSchemaError",
    "RendezvousError",
    "StallWarning",
]


class TimelyError(Exception):
    """Base class of every error raised by timely."""


class StallWarning(UserWarning):
    """A dataflow made no progress for ``stall_warning`` seconds while its
    worker kept stepping: the message names what holds its frontiers back
    and, for an input, what to call. Issued (printed on stderr by default)
    when logging is not configured; with a handler on the ``timely`` logger
    or the root logger, the same text goes there instead."""


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


class BatchError(TimelyError, ValueError):
    """A batch whose columns are not 1-D arrays of one length, or a missing column."""


class RouteError(TimelyError, TypeError):
    """An exchange route failed: it raised (chained), gave a key that does not
    route (not an int, float, str, bytes, None, or a tuple of them), gave a
    key column of the wrong length or dtype, or names a missing column. The
    same at every worker count: the route is called at 1 worker too."""


class ColumnarError(TimelyError, TypeError):
    """A columnar operator received a list of records where it needs a Batch."""


class AggregateError(TimelyError, ValueError):
    """An aggregation that cannot be done: an unknown aggregate, a missing or
    mismatched column, or a key or value dtype that is not supported."""


# -- communication -------------------------------------------------------------


class RingError(TimelyError, RuntimeError):
    """The ring's memory is too small, was not formatted, or holds a corrupt record."""


class FrameError(TimelyError, ValueError):
    """A frame between workers that does not decode: corrupt or of another version."""


class AuthenticationError(TimelyError, ConnectionError):
    """A peer did not prove knowledge of the shared secret."""


class ConfigurationError(TimelyError, ValueError):
    """A setting (an environment variable or a launcher option) that
    cannot be used, named with its value."""


class WorkerFailed(TimelyError, RuntimeError):
    """A worker raised, died or went silent; the others stop with this error,
    naming it."""


# -- capture, synchronization, Spark --------------------------------------------


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


class BarrierError(TimelyError, RuntimeError):
    """A :class:`~timely.synchronization.Barrier` was used after ``close()``."""


class SequencerError(TimelyError, RuntimeError):
    """A :class:`~timely.synchronization.Sequencer` was used after ``close()``."""


class SparkConfigError(TimelyError, RuntimeError):
    """The Spark session cannot run the requested barrier stage; the message
    says what to change."""


class SparkTaskError(TimelyError, RuntimeError):
    """A timely worker inside a Spark task could not start or was stopped."""


class SparkSchemaError(TimelyError, TypeError):
    """A DataFrame's columns do not fit what a :mod:`timely.spark` call
    declares (a column missing, renamed or of another type, a type Spark
    cannot carry): raised at the driver before any task starts where it can
    be seen there; the message names the column."""


class GraphSchemaError(SparkSchemaError, ValueError):
    """A graph's vertices DataFrame has no ``id`` column, or its edges
    DataFrame no ``src`` or ``dst`` (:class:`timely.spark.GraphFrame`): a
    :class:`SparkSchemaError`, and the ``ValueError`` GraphFrames raises."""


class RendezvousError(TimelyError, ConnectionError):
    """The tasks of a stage could not find each other."""
