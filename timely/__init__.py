"""Timely dataflow for Python.

Timestamped streams, capabilities and progress tracking with frontiers, over a
compiled progress core. The progress structures live in :mod:`timely.progress`.
"""

from __future__ import annotations

import logging as _logging

# The engine reports start-up, connections and failures on the "timely"
# logger; silent unless the program configures logging.
_logging.getLogger("timely").addHandler(_logging.NullHandler())

from timely.errors import (
    AggregateError,
    AuthenticationError,
    BarrierError,
    BatchError,
    CapabilityError,
    CaptureFormatError,
    CaptureTypeError,
    ColumnarError,
    CycleError,
    DataflowError,
    FrameError,
    GraphError,
    ProgressError,
    RendezvousError,
    RingError,
    SequencerError,
    SparkConfigError,
    SparkTaskError,
    SummaryError,
    TimelyError,
    TimestampError,
    TimestampTypeError,
    WorkerFailed,
)

from timely.dataflow import (
    Batch,
    Broadcast,
    Capability,
    CapabilitySet,
    Err,
    Exchange,
    InputCapability,
    InputHandle,
    Ok,
    OperatorBuilder,
    Pipeline,
    ProbeHandle,
    Scope,
    Stream,
    Vertex,
)
from timely.execute import execute, execute_directly, execute_from_args
from timely.worker import Worker

__version__ = "0.1.0"

__all__ = [
    "AggregateError",
    "AuthenticationError",
    "BarrierError",
    "Batch",
    "BatchError",
    "Broadcast",
    "Capability",
    "CapabilityError",
    "CapabilitySet",
    "CaptureFormatError",
    "CaptureTypeError",
    "ColumnarError",
    "CycleError",
    "DataflowError",
    "Err",
    "Exchange",
    "FrameError",
    "GraphError",
    "InputCapability",
    "InputHandle",
    "Ok",
    "OperatorBuilder",
    "Pipeline",
    "ProbeHandle",
    "ProgressError",
    "RendezvousError",
    "RingError",
    "Scope",
    "SequencerError",
    "SparkConfigError",
    "SparkTaskError",
    "Stream",
    "SummaryError",
    "TimelyError",
    "TimestampError",
    "TimestampTypeError",
    "Vertex",
    "Worker",
    "WorkerFailed",
    "__version__",
    "execute",
    "execute_directly",
    "execute_from_args",
]
