"""Containers: what streams carry, how it is routed, and how it is serialized.

Below communication and dataflow (it imports only :mod:`timely.errors`):

- :class:`Batch` (:mod:`~timely.container.batch`): named columns of equal
  length, text as :class:`StringColumn` (:mod:`~timely.container.columns`),
  Arrow's layout of offsets and UTF-8 bytes, and nulls, decimals, binary
  and nested Arrow types as :class:`ArrowColumn`;
- routing (:mod:`~timely.container.routing`): :func:`stable_hash` of a key,
  :func:`route` of a key column, :func:`partition` of rows by worker, the
  same for records and columns on every worker and run, in compiled code;
- :class:`GroupBy` (:mod:`~timely.container.aggregate`): hash aggregation;
- :mod:`~timely.container.serialize`: the one serializer of columns, used by
  the wire frame between workers and by the capture file.
"""

from timely.container.aggregate import AGGREGATES, GroupBy
from timely.container.batch import ArrowColumn, Batch
from timely.container.columns import StringColumn
from timely.container.routing import crc32, partition, route, stable_hash

__all__ = [
    "AGGREGATES",
    "ArrowColumn",
    "Batch",
    "GroupBy",
    "StringColumn",
    "crc32",
    "partition",
    "route",
    "stable_hash",
]
