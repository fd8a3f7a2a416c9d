"""The cost of text keys in the relational operators: ``join`` and
``distinct`` over 10^6 rows with int64 keys and with string keys, at 1 and 2
worker processes.

The rows: ``ROWS`` keys drawn (seed 1) from ``DISTINCT`` distinct values; the
string keys are the same values written as decimal text with a prefix
(``"key-123456"``, 10 bytes), as a :class:`~timely.container.StringColumn`
(Arrow layout, what ``Batch.from_arrow`` gives) and as an object column of
str (what pandas gives). ``distinct`` takes the rows at one time; ``join``
joins them (the left side, with a payload) with one right row per distinct
key. Each worker introduces every ``peers``-th row as one Batch. Checked:
the distinct keys and the number of joined rows.

Figures (``extra_info``): the slower worker's seconds from its first send
until its dataflow is done (forking the workers not included), the best of
the rounds; ``ratio_to_int64``: against the same operator with int64 keys
measured in the same run. The machine is shared: read ratios, and the
``load`` (1-minute load average) recorded with each.

Run: ``pytest benchmarks/test_relational_keys.py --benchmark-only``
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import timely
from timely.container import StringColumn
from timely.dataflow.operators.relational import distinct, join

ROWS = 10**6
DISTINCT = 10**5
_int64_seconds: dict = {}


def keys(kind: str):
    rng = np.random.default_rng(1)
    values = rng.integers(0, DISTINCT, ROWS)
    if kind == "int64":
        return values, np.arange(DISTINCT)
    words = np.array([f"key-{v:06d}" for v in range(DISTINCT)], dtype=object)
    if kind == "object":
        return words[values], words
    return StringColumn.from_strings(words[values]), StringColumn.from_strings(words)


def part(column, k: int, p: int):
    rows = np.arange(k, len(column), p)
    return column.take(rows) if type(column) is StringColumn else column[rows]


def run(operator: str, left, right, workers: int):
    def work(worker):
        got = []
        with worker.dataflow() as scope:
            lh, lstream = scope.new_input()
            rh, rstream = scope.new_input()
            if operator == "distinct":
                out = distinct(lstream, "k")
            else:
                out = join(lstream, rstream, "k")
            out.inspect_batch(lambda t, b: got.append(len(b)))
        k, p = worker.index, worker.peers
        mine = timely.Batch({"k": part(left, k, p), "x": np.arange(k, len(left), p)})
        theirs = timely.Batch({"k": part(right, k, p), "y": np.arange(k, len(right), p)})
        start = time.perf_counter()
        lh.send_batch(mine)
        rh.send_batch(theirs)
        lh.close()
        rh.close()
        worker.drain()
        return time.perf_counter() - start, sum(got)

    parts = timely.execute(work, workers=workers)
    return max(s for s, _ in parts), sum(n for _, n in parts)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("kind", ["int64", "string", "object"])
@pytest.mark.parametrize("operator", ["distinct", "join"])
def test_keys(benchmark, operator, kind, workers):
    left, right = keys(kind)
    seconds = []

    def once():
        s, rows = run(operator, left, right, workers)
        seconds.append(s)
        return rows

    rows = benchmark.pedantic(once, rounds=3 if benchmark.enabled else 1, iterations=1)
    expected = len(np.unique(keys("int64")[0])) if operator == "distinct" else ROWS
    assert rows == expected
    best = min(seconds)
    if kind == "int64":
        _int64_seconds[(operator, workers)] = best
    baseline = _int64_seconds.get((operator, workers))
    benchmark.group = f"{operator}-{workers}w"
    benchmark.extra_info.update({
        "rows": ROWS, "distinct": DISTINCT, "workers": workers, "keys": kind,
        "seconds": round(best, 4),
        "ratio_to_int64": round(best / baseline, 2) if baseline else None,
        "load": round(os.getloadavg()[0], 2),
    })
