"""Timely dataflow for Python.

Timestamped streams, capabilities and progress tracking with frontiers, over a
compiled progress core. The progress structures live in :mod:`timely.progress`.
"""

from __future__ import annotations

from timely.errors import (
    CycleError,
    GraphError,
    SummaryError,
    TimelyError,
    TimestampError,
    TimestampTypeError,
)

__version__ = "0.1.0"

__all__ = [
    "CycleError",
    "GraphError",
    "SummaryError",
    "TimelyError",
    "TimestampError",
    "TimestampTypeError",
    "__version__",
]
