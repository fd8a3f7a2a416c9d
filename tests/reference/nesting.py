"""Oracle for nested scopes: what a program of stages computes, in plain Python.

A program is a list of stages applied in order to a stream of int records;
every record keeps its epoch (each scope's stream leaves it at the time it
entered with: a region keeps timestamps, an iterative scope drops its loop
counter on the way out). Stages:

- ``("add", k)``: each record ``x`` becomes ``x + k``;
- ``("exchange",)``: records move between workers (by value); nothing changes;
- ``("region", stages)``: the stages, inside a region. With no stages the
  stream enters and leaves at once: a pass-through edge;
- ``("iterate", stages, n)``: inside an iterative scope, a loop that runs the
  stages on each record ``n + 1`` times (iterations ``0..n``) before it leaves;
- ``("scoped", stages)``: the stages inside an iterative scope with no loop
  (the stream enters and leaves with its counter at 0);
- ``("fork", a, b)``: the stream goes through ``a`` and through ``b``; the
  two results are concatenated.

:func:`evaluate` is the reference; the engine builds the same program with
operators, scopes and loops (``tests/dataflow/test_nesting.py``).
"""

from __future__ import annotations


def evaluate(stages, records: list) -> list:
    """The records ``stages`` turn ``records`` into (a multiset, as a list)."""
    out = list(records)
    for stage in stages:
        out = _stage(stage, out)
    return out


def _stage(stage, records: list) -> list:
    kind = stage[0]
    if kind == "add":
        return [x + stage[1] for x in records]
    if kind == "exchange":
        return list(records)
    if kind in ("region", "scoped"):
        return evaluate(stage[1], records)
    if kind == "iterate":
        for _ in range(stage[2] + 1):
            records = evaluate(stage[1], records)
        return records
    if kind == "fork":
        return evaluate(stage[1], records) + evaluate(stage[2], records)
    raise ValueError(f"unknown stage {stage!r}")


def scopes(stages) -> int:
    """How many scopes the program opens (for sizing generated programs)."""
    n = 0
    for stage in stages:
        if stage[0] in ("region", "scoped", "iterate"):
            n += 1 + scopes(stage[1])
        elif stage[0] == "fork":
            n += scopes(stage[1]) + scopes(stage[2])
    return n
