"""Routing keys to workers: one hash for records and columns, compiled.

:func:`stable_hash` is the hash of one key (a record's), :func:`route` the
workers of a whole key column, row for row what ``stable_hash(key) % peers``
gives for each key; :func:`partition` groups row positions by worker;
:func:`route_records` and :func:`partition_records` do for a list of
records (keyed by the record, a field or attribute, or a function of it)
what :func:`route` and :func:`partition` do for a column, and
:func:`split_records` places records by given workers;
:func:`crc32` is zlib's CRC-32, which text and bytes keys hash by. All are
the same on every worker, in every process and on every run (Rust's
``Exchange`` pact likewise hashes with a fixed hash).
"""

from timely.container._columns import (crc32, partition, partition_records, route,
                                       route_records, split_records, stable_hash)

__all__ = ["crc32", "partition", "partition_records", "route", "route_records",
           "split_records", "stable_hash"]
