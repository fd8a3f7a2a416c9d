"""Timely dataflow for Python.

Timestamped streams, capabilities and progress tracking with frontiers, over a
compiled progress core. The progress structures live in :mod:`timely.progress`
and load alone; everything else here loads on first use, so ``import
timely.progress`` (or ``timely.errors``) brings in nothing above it.
"""

from __future__ import annotations

import importlib as _importlib
import logging as _logging
from typing import TYPE_CHECKING, Any

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
    ConfigurationError,
    DataflowError,
    FrameError,
    GraphError,
    ProgressError,
    RendezvousError,
    RingError,
    RouteError,
    SequencerError,
    SparkConfigError,
    SparkSchemaError,
    SparkTaskError,
    SummaryError,
    TimelyError,
    TimestampError,
    TimestampTypeError,
    WorkerFailed,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    # What the lazy names below are, for type checkers (which do not run
    # ``__getattr__``); at run time each loads on first use.
    from timely.container import Batch, StringColumn
    from timely.dataflow import (
        Broadcast,
        Capability,
        CapabilitySet,
        Err,
        Exchange,
        FrontierNotificator,
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
    from timely.launch import example, execute, execute_directly, execute_from_args
    from timely.worker import Worker, WorkerConfig

# Public names defined above the errors: the module each comes from, imported
# the first time the name is used.
_LAZY = {
    "Batch": "timely.dataflow",
    "Broadcast": "timely.dataflow",
    "Capability": "timely.dataflow",
    "CapabilitySet": "timely.dataflow",
    "Err": "timely.dataflow",
    "Exchange": "timely.dataflow",
    "InputCapability": "timely.dataflow",
    "InputHandle": "timely.dataflow",
    "Ok": "timely.dataflow",
    "OperatorBuilder": "timely.dataflow",
    "Pipeline": "timely.dataflow",
    "ProbeHandle": "timely.dataflow",
    "Scope": "timely.dataflow",
    "Stream": "timely.dataflow",
    "Vertex": "timely.dataflow",
    "FrontierNotificator": "timely.dataflow",
    "StringColumn": "timely.container",
    "Worker": "timely.worker",
    "WorkerConfig": "timely.worker",
    "example": "timely.launch",
    "execute": "timely.launch",
    "execute_directly": "timely.launch",
    "execute_from_args": "timely.launch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'timely' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    "ConfigurationError",
    "FrameError",
    "FrontierNotificator",
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
    "RouteError",
    "Scope",
    "SequencerError",
    "SparkConfigError",
    "SparkSchemaError",
    "SparkTaskError",
    "Stream",
    "StringColumn",
    "SummaryError",
    "TimelyError",
    "TimestampError",
    "TimestampTypeError",
    "Vertex",
    "Worker",
    "WorkerConfig",
    "WorkerFailed",
    "__version__",
    "example",
    "execute",
    "execute_directly",
    "execute_from_args",
]
