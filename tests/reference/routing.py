"""Oracle for routing (``timely.container.routing``): ``stable_hash`` of one
key and the worker of every row of a key column, from their definitions.

A row routes as the value a record would carry for it: what iterating the
column gives (``tolist()`` for numpy's plain kinds, the numpy scalar for
datetime64/timedelta64, the object itself in an object column).
"""

from __future__ import annotations

import math
import operator
import struct
import zlib

import numpy as np

MASK = 2**64 - 1
CANONICAL_NAN = struct.pack("<Q", 0x7FF8000000000000)


def float_hash(x: float) -> int:
    """An integral float is the int it equals; any other float the CRC-32 of
    its IEEE-754 bits (little-endian), every NaN as the canonical one."""
    if math.isfinite(x) and x == math.floor(x):
        return int(x)
    return zlib.crc32(CANONICAL_NAN if math.isnan(x) else struct.pack("<d", x))


def stable_hash(key) -> int:
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return zlib.crc32(key)
    if isinstance(key, int):                     # bool too
        return int(key)
    if isinstance(key, tuple):
        h = 0x345678
        for part in key:
            h = (h * 1000003 ^ stable_hash(part)) & MASK
        return h
    if isinstance(key, float):
        return float_hash(key)
    if key is None:
        return 0
    if isinstance(key, np.generic):
        kind = key.dtype.kind
        if kind == "f":
            return float_hash(float(key))
        if kind == "b":
            return int(key)
        if kind in "mM":
            return int(key.view(np.int64))
    if hasattr(type(key), "__index__"):
        return operator.index(key)
    raise TypeError(f"cannot route by a key of type {type(key).__name__}: {key!r}")


def records(column) -> list:
    """The keys a column's rows carry as records."""
    if isinstance(column, np.ndarray):
        if column.dtype.kind in "OmM":
            return list(column)
        return column.tolist()
    return column.tolist()                        # a StringColumn: its str rows


def route(column, peers: int) -> list:
    return [stable_hash(key) % peers for key in records(column)]
