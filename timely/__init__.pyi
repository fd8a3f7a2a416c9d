"""Timely dataflow for Python: the public names, each listed once.

One ``from <module> import <name> as <name>`` per line: type checkers read
this file, and ``timely/__init__.py`` reads it to load each name from its
module on first use (``import timely`` stays light) and to make ``__all__``.
"""

from timely.config import Config as Config
from timely.container import StringColumn as StringColumn
from timely.dataflow import Batch as Batch
from timely.dataflow import Broadcast as Broadcast
from timely.dataflow import Capability as Capability
from timely.dataflow import CapabilitySet as CapabilitySet
from timely.dataflow import Err as Err
from timely.dataflow import Exchange as Exchange
from timely.dataflow import FrontierNotificator as FrontierNotificator
from timely.dataflow import InputCapability as InputCapability
from timely.dataflow import InputHandle as InputHandle
from timely.dataflow import Ok as Ok
from timely.dataflow import OperatorBuilder as OperatorBuilder
from timely.dataflow import Pipeline as Pipeline
from timely.dataflow import ProbeHandle as ProbeHandle
from timely.dataflow import Scope as Scope
from timely.dataflow import Stream as Stream
from timely.dataflow import Vertex as Vertex
from timely.errors import AggregateError as AggregateError
from timely.errors import AuthenticationError as AuthenticationError
from timely.errors import BarrierError as BarrierError
from timely.errors import BatchError as BatchError
from timely.errors import CapabilityError as CapabilityError
from timely.errors import CaptureFormatError as CaptureFormatError
from timely.errors import CaptureTypeError as CaptureTypeError
from timely.errors import ColumnarError as ColumnarError
from timely.errors import ConfigurationError as ConfigurationError
from timely.errors import CycleError as CycleError
from timely.errors import DataflowError as DataflowError
from timely.errors import FrameError as FrameError
from timely.errors import GraphError as GraphError
from timely.errors import GraphSchemaError as GraphSchemaError
from timely.errors import ProgressError as ProgressError
from timely.errors import RendezvousError as RendezvousError
from timely.errors import RingError as RingError
from timely.errors import RouteError as RouteError
from timely.errors import SequencerError as SequencerError
from timely.errors import SparkConfigError as SparkConfigError
from timely.errors import SparkSchemaError as SparkSchemaError
from timely.errors import SparkTaskError as SparkTaskError
from timely.errors import StallWarning as StallWarning
from timely.errors import SummaryError as SummaryError
from timely.errors import TimelyError as TimelyError
from timely.errors import TimestampError as TimestampError
from timely.errors import TimestampTypeError as TimestampTypeError
from timely.errors import WorkerFailed as WorkerFailed
from timely.launch import example as example
from timely.launch import execute as execute
from timely.launch import execute_directly as execute_directly
from timely.launch import execute_from_args as execute_from_args
from timely.worker import Worker as Worker
from timely.worker import WorkerConfig as WorkerConfig

__version__: str
__all__: list[str]
