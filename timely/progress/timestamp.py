"""Timestamps and path summaries.

A timestamp is an int at the root of a dataflow, and a flat tuple of ints
``(epoch, loop1, loop2, ...)`` inside nested scopes; the compiled structures hold
them as rows of uint64. ``less_equal`` is the product partial order; sorting is
lexicographic, a linear extension of it. A path summary is a row of
per-coordinate increments (see :class:`PathSummary`).
"""

from timely.progress._timestamp import (
    MAX_COORD,
    PathSummary,
    arity_of,
    less_equal,
    less_than,
    minimum,
    validate,
)

__all__ = [
    "MAX_COORD",
    "PathSummary",
    "arity_of",
    "less_equal",
    "less_than",
    "minimum",
    "validate",
]
