"""Progress broadcast (the Rust crate's ``Progcaster``): each worker's
progress batches reach every worker.

A :class:`Progcaster` serves one scope. ``send`` hands the scope's located
pointstamp changes (a :class:`~timely.progress.ChangeBatch` of rows
``(location, time...)``) to every worker including this one as one raw
buffer, over one channel per scope, FIFO per sender, never split; ``recv``
appends the batches that arrived to the caller's accumulation, checking
each one's length, scope fingerprint and sequence number first. The
buffer's layout is in :mod:`timely.dataflow._progcaster`.
"""

from __future__ import annotations

from timely.dataflow._progcaster import Progcaster

__all__ = ["Progcaster"]
