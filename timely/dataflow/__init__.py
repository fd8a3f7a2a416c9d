"""Scopes, streams, channels, capabilities and the operator library."""

from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.capability import Capability, CapabilitySet, InputCapability
from timely.dataflow.channels import Broadcast, Exchange, Pipeline
from timely.dataflow.notificator import FrontierNotificator, Notificator
from timely.dataflow.operators.core import Err, Ok
from timely.dataflow.operators.input import InputHandle
from timely.dataflow.operators.probe import ProbeHandle
from timely.dataflow.operators.vertex import Vertex
from timely.dataflow.scope import Scope
from timely.dataflow.stream import Stream
from timely.errors import BatchError

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
