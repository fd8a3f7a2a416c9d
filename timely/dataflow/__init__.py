"""Scopes, streams, channels, capabilities and the operator library.

``Vertex`` (the Naiad-style vertex) loads on first use.
"""

from typing import TYPE_CHECKING, Any

from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.capability import Capability, CapabilitySet, InputCapability
from timely.dataflow.channels import Broadcast, Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator, Notificator
from timely.dataflow.operators.core import Err, Ok
from timely.dataflow.operators.input import InputHandle
from timely.dataflow.operators.probe import ProbeHandle
from timely.dataflow.scope import Scope
from timely.dataflow.stream import Stream
from timely.errors import BatchError

if TYPE_CHECKING:
    from timely.dataflow.operators.vertex import Vertex


def __getattr__(name: str) -> Any:
    if name == "Vertex":
        from timely.dataflow.operators.vertex import Vertex

        globals()["Vertex"] = Vertex
        return Vertex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "Vertex"})

__all__ = [
    "Batch",
    "BatchError",
    "Broadcast",
    "Capability",
    "CapabilitySet",
    "Err",
    "Exchange",
    "FrontierNotificator",
    "InputCapability",
    "InputHandle",
    "Notificator",
    "Ok",
    "OperatorBuilder",
    "Pipeline",
    "ProbeHandle",
    "Scope",
    "Stream",
    "Vertex",
]
