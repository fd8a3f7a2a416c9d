"""Oracle for the keys of the relational operators (``join``, ``distinct``,
``improve`` and ``KeyIndex`` in ``timely.dataflow.operators``), from their
definition: which key values are equal, and what each operator gives.

A key value is made plain Python by :func:`canonical_column`, so that two
keys are equal for the operators exactly when their canonical values are
equal: integers and bools by value; floats by value with ``-0.0`` as ``0.0``
and every NaN as :data:`NAN` (tagged, so a float never equals an integer);
datetimes and timedeltas by their count, every NaT as :data:`NAT`; bytes and
text as numpy reads them (a fixed-width ``S``/``U`` element without its
trailing NUL padding), byte for byte.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

NAN = ("float", "nan")
NAT = ("nat",)


def canonical_column(column) -> list:
    """The canonical value of each row of a key column (a numpy array or a
    StringColumn)."""
    if not isinstance(column, np.ndarray):
        return list(column.tolist())                       # a StringColumn: its str
    kind = column.dtype.kind
    if kind == "b":
        return [int(x) for x in column.tolist()]
    if kind in "iu":
        return [int(x) for x in column.tolist()]
    if kind == "f":
        return [NAN if x != x else ("float", float(x) + 0.0) for x in column.tolist()]
    if kind in "mM":
        least = np.iinfo(np.int64).min
        return [NAT if x == least else (str(column.dtype), x)
                for x in column.view(np.int64).tolist()]
    return list(column.tolist())                           # S, U, object of str or bytes


def canonical_rows(batch, names) -> list[tuple]:
    """The rows of ``batch``'s columns ``names``, each value canonical for a
    key and as numpy gives it otherwise (plain Python)."""
    columns = [canonical_column(batch.column(n)) for n in names]
    return list(zip(*columns)) if columns else []


def join(left: dict, right: dict, nkeys: int, persist) -> Counter:
    """``(time, row)`` pairs of the join of ``left`` and ``right`` (each
    ``{time: [row, ...]}`` of canonical rows whose first ``nkeys`` values are
    the key): the left row, then the right row without its key, for every
    pair with equal keys at the same time (``persist="right"``: a right row
    joins left rows of its time and later; ``"left"`` the other way round),
    at the later of the two times."""
    out: Counter = Counter()
    for t, lrows in left.items():
        for s, rrows in right.items():
            if s == t or (persist == "right" and s <= t) or (persist == "left" and t <= s):
                for a in lrows:
                    for b in rrows:
                        if a[:nkeys] == b[:nkeys]:
                            out[(max(s, t), a + b[nkeys:])] += 1
    return out


def distinct(by_time: dict, persist: bool) -> Counter:
    """``(time, key)`` for each distinct key of each time (``persist``: only
    keys of no earlier time), times in order."""
    out: Counter = Counter()
    seen: set = set()
    for t in sorted(by_time):
        now = set(by_time[t])
        for key in now - seen if persist else now:
            out[(t, key)] += 1
        seen |= now
    return out


def improve(by_time: dict, how: str) -> Counter:
    """``(time, (key, value))`` for each key whose best ``value`` (least for
    ``"min"``, greatest for ``"max"``) at a time improves on every value sent
    at earlier times; ``by_time`` maps times to ``(key, value)`` pairs."""
    best: dict = {}
    out: Counter = Counter()
    for t in sorted(by_time):
        now: dict = {}
        for key, value in by_time[t]:
            held = now.get(key, best.get(key))
            if held is None or (value < held if how == "min" else value > held):
                now[key] = value
        for key, value in now.items():
            out[(t, (key, value))] += 1
        best.update(now)
    return out
