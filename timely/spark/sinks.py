"""Sinks for :func:`timely.spark.foreach_batch` that commit a micro-batch's
output and its batch id in one atomic step (exactly once).

:class:`DirectorySink` writes each batch with Spark's writer into a staging
directory of its own, then renames it to ``batch=<id>`` under ``path``: the
rename (atomic on one filesystem) is the commit of both the output and the
frontier. A crash before it leaves only staging, which the replay of that
batch id removes and writes again; a crash after it leaves the batch
committed, and its replay is skipped. ``path/_query`` holds the id of the
streaming query that owns the output; another query is refused.

Readers take ``path/batch=*`` (Spark reads it as a table partitioned by
``batch``); staging directories start with ``_`` and are ignored.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from timely.errors import SparkConfigError

__all__ = ["DirectorySink"]

_COMMITTED = re.compile(r"batch=(\d+)$")


class DirectorySink:
    """Output of every micro-batch under ``path`` in ``format`` (a format
    Spark writes: parquet, json, orc, csv), one directory per batch id."""

    def __init__(self, path: str, format: str = "parquet"):
        self.path = path
        self.format = format

    def _point(self, name: str) -> None:
        """Marks a point between the steps of a write (a seam for crash tests)."""

    def committed(self, query: str | None = None) -> int:
        """The highest committed batch id (-1 for none); raises
        SparkConfigError when ``path`` holds another query's output."""
        owner = os.path.join(self.path, "_query")
        if query is not None and os.path.exists(owner):
            with open(owner) as f:
                theirs = f.read().strip()
            if theirs and theirs != query:
                raise SparkConfigError(
                    f"{self.path!r} holds the output of streaming query {theirs}, not of this "
                    f"one ({query}): give each query its own sink path (a new checkpoint is a "
                    "new query)")
        if not os.path.isdir(self.path):
            return -1
        ids = [int(m.group(1)) for m in map(_COMMITTED.match, os.listdir(self.path)) if m]
        return max(ids, default=-1)

    def write(self, result: Any, batch_id: int, query: str | None = None) -> None:
        """Writes ``result`` (a DataFrame) as batch ``batch_id``, atomically."""
        os.makedirs(self.path, exist_ok=True)
        owner = os.path.join(self.path, "_query")
        if query is not None and not os.path.exists(owner):
            temporary = f"{owner}.{os.getpid()}.tmp"
            with open(temporary, "w") as f:
                f.write(query)
            os.replace(temporary, owner)
        staging = os.path.join(self.path, f"_staging-{batch_id}")
        shutil.rmtree(staging, ignore_errors=True)          # a crashed attempt's
        self._point("before write")
        result.write.format(self.format).save(staging)
        self._point("after write")
        os.rename(staging, os.path.join(self.path, f"batch={batch_id}"))
        self._point("after commit")
