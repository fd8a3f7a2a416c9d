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
    CapabilityError,
    CaptureFormatError,
    CaptureTypeError,
    CycleError,
    DataflowError,
    ProgressError,
    GraphError,
    SummaryError,
    TimelyError,
    TimestampError,
    TimestampTypeError,
)

from timely.dataflow import (
    Batch,
    BatchError,
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
    "Batch",
    "BatchError",
    "Broadcast",
    "Capability",
    "CapabilityError",
    "CaptureFormatError",
    "CaptureTypeError",
    "CapabilitySet",
    "DataflowError",
    "Err",
    "Exchange",
    "InputCapability",
    "InputHandle",
    "Ok",
    "OperatorBuilder",
    "Pipeline",
    "ProbeHandle",
    "ProgressError",
    "Scope",
    "Stream",
    "Vertex",
    "Worker",
    "execute",
    "execute_directly",
    "execute_from_args",
    "CycleError",
    "GraphError",
    "SummaryError",
    "TimelyError",
    "TimestampError",
    "TimestampTypeError",
    "__version__",
]
