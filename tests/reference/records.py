"""Oracle for the tagged encoding of records (``timely.container.records``),
from its definition: the bytes one record is written as."""

from __future__ import annotations

import pickle
import struct

MAX_DEPTH = 100


def encode(x, depth: int = 1) -> bytes:
    """The tagged bytes of ``x`` (pickles allowed), nested at ``depth``."""
    t = type(x)
    if t is int:
        if -(1 << 63) <= x < (1 << 63):
            return b"i" + struct.pack("<q", x)
        n = (x.bit_length() + 8) // 8
        return b"I" + struct.pack("<I", n) + x.to_bytes(n, "little", signed=True)
    if t is str:
        body = x.encode("utf-8", "surrogatepass")
        return b"s" + struct.pack("<I", len(body)) + body
    if t is float:
        return b"f" + struct.pack("<d", x)
    if x is None:
        return b"N"
    if t is bool:
        return b"T" if x else b"F"
    if t is bytes:
        return b"b" + struct.pack("<I", len(x)) + x
    if t in (tuple, list, dict):
        if depth >= MAX_DEPTH:
            raise TypeError("too deep")
        tag = {tuple: b"t", list: b"l", dict: b"d"}[t]
        items = [part for pair in x.items() for part in pair] if t is dict else x
        return tag + struct.pack("<I", len(x)) + b"".join(encode(y, depth + 1) for y in items)
    body = pickle.dumps(x, protocol=5)
    return b"p" + struct.pack("<I", len(body)) + body
