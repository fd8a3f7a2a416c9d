"""The compiled progress core of timely dataflow.

Timestamps and path summaries (:mod:`~timely.progress.timestamp`), change
batches, antichains and counted antichains (:mod:`~timely.progress.frontier`),
reachability tracking (:mod:`~timely.progress.reachability`), the core of
frontier notification (:mod:`~timely.progress.notificator`), the interface
between an operator and its scope (:mod:`~timely.progress.operate`), the
bookkeeping of a scope over it (:mod:`~timely.progress.subgraph`), and what
holds a frontier back (:mod:`~timely.progress.holds`, loaded on use).
"""

from timely.progress import (
    change_batch,
    frontier,
    notificator,
    operate,
    reachability,
    subgraph,
    timestamp,
)
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import Antichain, MutableAntichain
from timely.progress.notificator import NotificationQueue
from timely.progress.operate import Operate, SharedProgress
from timely.progress.reachability import Builder, Location, Source, Target, Tracker
from timely.progress.timestamp import PathSummary, less_equal, less_than

__all__ = [
    "Antichain",
    "Builder",
    "ChangeBatch",
    "Location",
    "MutableAntichain",
    "NotificationQueue",
    "Operate",
    "PathSummary",
    "SharedProgress",
    "Source",
    "Target",
    "Tracker",
    "change_batch",
    "frontier",
    "less_equal",
    "less_than",
    "notificator",
    "operate",
    "reachability",
    "subgraph",
    "timestamp",
]
