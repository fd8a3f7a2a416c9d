"""The tagged encoding of Python records, compiled: one implementation for
the capture file (lists of records, object columns; untrusted on reading)
and the wire between workers (lists of records of the common shapes).

:func:`encode_records` appends records to a bytearray, :func:`decode_records`
reads them back, checking every length first and loading a pickle only when
allowed. See :mod:`timely.container._records` for the layout.

>>> out = bytearray()
>>> encode_records([("word", 3), -1.5], out, False)
>>> decode_records(out, 0, len(out), 2, False)[0]
[('word', 3), -1.5]
"""

from timely.container._records import MAX_DEPTH, decode_records, encode_records

__all__ = ["MAX_DEPTH", "decode_records", "encode_records"]
