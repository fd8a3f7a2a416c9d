"""Hash aggregation of columnar rows: count, sum, min and max per key.

See :class:`GroupBy`.
"""

from timely.container._aggregate import AGGREGATES, GroupBy, aggregate_names, nested_type

__all__ = ["AGGREGATES", "GroupBy", "aggregate_names", "nested_type"]
