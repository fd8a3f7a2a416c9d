"""Vertex ids of the graph algorithms: int64 as they are, or text numbered
in sorted order.

The graph algorithms of :mod:`timely.algorithms` compute over int64 vertex
ids, and each takes the keyword ``ids`` (through :class:`VertexIds`):

- ``ids="int64"`` (the default): the id columns (``src``, ``dst``, the
  ``node`` column of nodes, roots, sources, landmarks, path ends; pregel's
  ``key``) go to the algorithm as they are. The only addition is a check of each
  batch's id columns (O(1) a batch; an object column is scanned): a column
  of text (or bytes) raises :class:`~timely.ColumnarError` naming it, where
  the algorithm would read ``"12"`` as 12.
- ``ids="string"``: the id columns hold text (a
  :class:`~timely.StringColumn`, a numpy ``U`` array or an object array of
  str; a column of anything else raises :class:`~timely.ColumnarError`
  naming it). The distinct ids are numbered ``0, 1, ..., n - 1`` in sorted
  order (Python's order of str: by code point, so ``"B" < "a"``), the
  algorithm runs over the numbers, and its output columns that hold vertex
  ids are mapped back to the text. Numbers keep the order of the ids, so
  what an algorithm defines by the least id (a component's label, the
  label kept on a tie, the order of paths) is defined by the least string,
  and the answer is exactly the one over int64 ids numbered in that order,
  the same at any worker count.

With ``ids="string"`` a graph's ids arrive at one time. Numbers must stay
fixed while an algorithm keeps state across times and must keep the order
of the ids; an id first seen at a later time could not have both. So ids
(in the edges or any node stream) at a second time raise
:class:`~timely.ColumnarError` once that time is complete. For a graph
given at many times, number its ids once (any int64 ids) and use the
default.

The pieces, for other programs over text ids (such as a :func:`pregel`
whose states hold vertex ids):

- :func:`number_ids`: per time, the distinct ids of a text column, sorted
  and numbered, as ``(id, number)`` Batches, each worker holding one range
  of the order;
- :func:`encode_ids`: text id columns replaced by their numbers;
- :func:`decode_ids`: number columns replaced by their ids.

How and what it costs, for ``n`` distinct ids on ``W`` workers: each
worker's ids go through :meth:`~timely.Stream.distinct` (exchanged by id,
each kept once); the distinct ids are sorted by sampled ranges, with no
worker holding more than about ``n / W`` of them plus the samples
(:func:`number_ids`: ``O(n / W log n)`` comparisons of str a worker, every
id exchanged once more, a sample of up to ``max(64, 4 W)`` ids from each
worker to every worker, and ``W`` counts from each worker). The ``(id,
number)`` pairs travel through a join per id column, exchanged by id to
rewrite the edges and nodes, exchanged by number to rewrite the output
(each a hash and an exact compare of the id's bytes per row, in C).
:func:`bfs_paths`' paths, one sorted Batch by contract, are rewritten on
worker 0, with only the text of the numbers they hold.

>>> import timely
>>> from timely.algorithms import connected_components
>>> def work(worker):
...     got = []
...     with worker.dataflow() as scope:
...         handle, edges = scope.new_input()
...         connected_components(edges, ids="string").inspect_batch(
...             lambda t, b: got.extend(b.to_records()))
...     handle.send_batch(timely.Batch(src=["b", "c", "z"], dst=["c", "a", "y"]))
...     handle.close()
...     worker.drain()
...     return sorted(got)
>>> timely.execute_directly(work)
[('a', 'a'), ('b', 'a'), ('c', 'a'), ('y', 'y'), ('z', 'y')]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from timely.algorithms.propagation import each_time
from timely.container import Batch, StringColumn
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange, Pipeline
from timely.dataflow.operators.core import per_time
from timely.dataflow.operators.relational import join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream

__all__ = ["Ids", "VertexIds", "decode_ids", "encode_ids", "number_ids"]

Ids = Literal["int64", "string"]
"""The kinds of vertex ids: ``"int64"`` as they are, ``"string"`` numbered."""


# The numbering's columns inside encode_ids/decode_ids: names no caller's
# column is likely to have, since a join refuses a name on both sides.
_TEXT = "ids: text"
_NUMBER = "ids: number"
# The numbering's own: a row's worker, the ids before a worker's range, a
# sampled id and how many ids it stands for.
_TO = "ids: to"
_BEFORE = "ids: before"
_SAMPLED = "ids: sampled"
_WEIGHT = "ids: weight"


# -- checks -------------------------------------------------------------------------


def _holds_text(column: Any) -> bool:
    """Whether ``column`` (as a Batch stores it) holds text or bytes."""
    if type(column) is StringColumn:
        return True
    if type(column) is not np.ndarray:
        return False
    if column.dtype.kind in "US":
        return True
    return column.dtype == object and any(isinstance(v, (str, bytes)) for v in column)


def _is_text(column: Any) -> bool:
    """Whether ``column`` (as a Batch stores it) is a column of str."""
    if type(column) is StringColumn:
        return True
    if type(column) is not np.ndarray:
        return False
    if column.dtype.kind == "U":
        return True
    return column.dtype == object and all(isinstance(v, str) for v in column)


def _kind(column: Any) -> str:
    return str(column.dtype) if type(column) is np.ndarray else type(column).__name__


def _batch(data: Any, algorithm: str) -> Batch:
    if type(data) is not Batch:
        raise ColumnarError(f"{algorithm} takes Batches, not {type(data).__name__}")
    return data


def _column(batch: Batch, column: str, algorithm: str) -> Any:
    if column not in batch:
        raise ColumnarError(f"{algorithm}: the Batches have no column {column!r}; they have "
                            f"{list(batch.names)}")
    return batch.column(column)


def _checked_int64(columns: tuple[str, ...], algorithm: str) -> Callable[[Any, Any], None]:
    """A check of a batch's id ``columns`` for ``ids="int64"``: text raises."""

    def check(_time: Any, data: Any) -> None:
        if type(data) is not Batch or not len(data):
            return                      # the algorithm says what it takes
        for name in columns:
            if name in data and _holds_text(data.column(name)):
                raise ColumnarError(
                    f"{algorithm}: column {name!r} holds text, and the vertex ids are int64 "
                    f"(pass ids='string' to number text ids)")

    return check


def _text_ids(column: str, algorithm: str) -> Callable[[Any], Batch]:
    """The ids of a batch's text ``column`` as an ``id`` column, for ``ids="string"``."""

    def ids(data: Any) -> Batch:
        batch = _batch(data, algorithm)
        values = _column(batch, column, algorithm)
        if len(batch) and not _is_text(values):
            raise ColumnarError(
                f"{algorithm}: column {column!r} holds {_kind(values)}, not text, and ids="
                f"'string' (pass ids='int64' for int64 ids)")
        return Batch.from_columns({"id": values}, len(batch))

    return ids


# -- the pieces ---------------------------------------------------------------------

# The least number of ids each worker samples (more at many workers: see
# _sample_size).
_SAMPLE = 64


def _sample_size(peers: int) -> int:
    """How many ids each worker samples: enough that no range holds more
    than about ``n / peers + 2 n / size`` of ``n`` ids."""
    return max(_SAMPLE, 4 * peers)


def _gathered(held: list[Batch], data: Batch) -> list[Batch]:
    if len(data):
        held.append(data)
    return held


def _complete_times(stream: Stream[Batch], pact: Any, name: str,
                    finish: Callable[[Any, list[Batch]], Batch | None]) -> Stream[Batch]:
    """``finish(time, batches)`` per worker and complete time, in time
    order, over the non-empty Batches of that time that ``pact`` brings the
    worker (kept as they came, so that Batches of different columns may
    share the stream); what it returns is the output at that time."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, pact)
    out, result = b.new_output()

    def build(caps: Any, _info: Any) -> Any:
        caps.clear()
        return per_time(b, inp, out, lambda time: [], _gathered, finish)

    b.build(build)
    return result


def _first_worker(batch: Batch) -> np.ndarray:
    """Routes every row to worker 0 (hash 0)."""
    return np.zeros(len(batch), dtype=np.int64)


def _addressed(batch: Batch) -> np.ndarray:
    """Routes each row to the worker its ``_TO`` column names."""
    return np.asarray(batch[_TO], dtype=np.int64)


def _str(column: Any) -> np.ndarray:
    """The values of a text column as Python str (an object array), which
    numpy compares as Python does: exactly, by code point."""
    return np.asarray(column, dtype=object)


def _concat(held: list[Batch]) -> Batch:
    return held[0] if len(held) == 1 else Batch.concat(held)


def _locally_sorted(column: str) -> Callable[[Batch], Batch]:
    """A worker's distinct ids of a time, sorted, as a ``_TEXT`` column."""

    def sort(rows: Batch) -> Batch:
        stored = rows.column(column)
        order = np.argsort(_str(stored), kind="stable")
        return Batch.from_columns({_TEXT: stored.take(order)}, len(order))

    return sort


def _regular_sample(size: int) -> Callable[[Batch], Batch]:
    """At most ``size`` ids at regular positions of a worker's sorted ids,
    each with the number of ids from it to the next (its weight)."""

    def sample(rows: Batch) -> Batch:
        n = len(rows)
        k = min(n, size)
        at = np.arange(k, dtype=np.int64) * n // max(k, 1)
        weight = np.diff(np.append(at, n))
        return Batch.from_columns({_SAMPLED: rows.column(_TEXT).take(at), _WEIGHT: weight}, k)

    return sample


def _splitters(samples: Batch, peers: int) -> np.ndarray:
    """At most ``peers - 1`` sampled ids, ascending, cutting the weight of
    the samples into ``peers`` near-equal ranges. Every worker has the same
    samples, so every worker picks the same splitters."""
    values = _str(samples.column(_SAMPLED))
    order = np.argsort(values, kind="stable")
    values = values[order]
    weight = np.asarray(samples[_WEIGHT], dtype=np.int64)[order]
    before = np.cumsum(weight) - weight
    # Splitter k: the first sample with at least k / peers of the weight before it.
    cut = np.searchsorted(before * peers, np.arange(1, peers, dtype=np.int64) * int(weight.sum()))
    return values[cut[cut < len(values)]]


def _range_partition(peers: int, once: str | None) -> Callable[[Any, list[Batch]], Batch | None]:
    """A worker's distinct ids of a time with the index of their range (the
    worker that numbers them) in ``_TO``, by the splitters of every
    worker's samples. With ``once`` (an algorithm's name), samples at a
    second time raise: every worker has the samples of every time at which
    any worker has ids, so every worker sees the second time."""
    numbered: list[Any] = []            # the time numbered, when once

    def partition(time: Any, held: list[Batch]) -> Batch | None:
        samples = [h for h in held if _SAMPLED in h.names]
        if not samples:
            return None
        if once is not None:
            if numbered:
                raise ColumnarError(
                    f"{once}: with ids='string' a graph's vertex ids arrive at one time; they "
                    f"came at {numbered[0]} and again at {time} (the ids are numbered in sorted "
                    f"order, which an id given later could not keep)")
            numbered.append(time)
        ids = [h for h in held if _TEXT in h.names]
        if not ids:
            return None
        splitters = _splitters(_concat(samples), peers)
        rows = _concat(ids)
        to = np.searchsorted(splitters, _str(rows.column(_TEXT)), side="right")
        return Batch.from_columns({_TEXT: rows.column(_TEXT), _TO: to.astype(np.int64)},
                                  len(rows))

    return partition


def _counts_before(peers: int) -> Callable[[Batch], Batch]:
    """One row per worker ``v``: how many of these ids go to ranges before
    ``v``'s (the sum over every worker's rows is where ``v``'s numbers start)."""

    def counts(rows: Batch) -> Batch:
        per_range = np.bincount(np.asarray(rows[_TO], dtype=np.int64), minlength=peers)
        return Batch.from_columns({_TO: np.arange(peers, dtype=np.int64),
                                   _BEFORE: np.cumsum(per_range) - per_range}, peers)

    return counts


def _numbered(pinned: str | None) -> Callable[[Any, list[Batch]], Batch | None]:
    """A worker's range of ids, sorted and numbered from the count of the
    ids of the ranges before it."""

    def number(_time: Any, held: list[Batch]) -> Batch | None:
        ids = [h for h in held if _TEXT in h.names]
        if not ids:
            return None
        start = sum(int(np.sum(h[_BEFORE])) for h in held if _BEFORE in h.names)
        stored = _concat(ids).column(_TEXT)
        values = _str(stored)
        order = np.argsort(values, kind="stable")
        number = np.arange(start, start + len(order), dtype=np.int64)
        if pinned is not None:
            number[values[order] == pinned] = -1
        return Batch.from_columns({"id": stored.take(order), "number": number}, len(order))

    return number


def _numbering(ids: Stream[Batch], column: str, pinned: str | None,
               once: str | None) -> Stream[Batch]:
    """:func:`number_ids`, with ``pinned`` (when given) numbered -1 rather
    than by its rank, and, when ``once`` names an algorithm, ids at a second
    time refused.

    A sort by sampled ranges: each worker sorts its distinct ids and sends
    every worker a regular sample of them; every worker picks the same
    ``W - 1`` splitters from the samples, cutting the ids into ``W`` ranges
    of near-equal size, and sends each id to the worker of its range, with
    one count per worker of the ids it sends to the ranges before that
    worker's; each worker sorts its range and numbers it from the sum of
    those counts."""
    peers = ids.scope.peers
    unique = ids.distinct(column, name="DistinctIds")
    ordered = each_time(unique, Pipeline(), _locally_sorted(column), "SortIds")
    samples = ordered.map_batch(_regular_sample(_sample_size(peers)),
                                name="SampleIds").broadcast(name="SampledIds")
    ranged = _complete_times(ordered.concat(samples), Pipeline(), "RangeIds",
                             _range_partition(peers, once))
    counts = ranged.map_batch(_counts_before(peers), name="CountIds")
    return _complete_times(ranged.concat(counts), Exchange(batch=_addressed), "NumberIds",
                           _numbered(pinned))


def number_ids(ids: Stream[Batch], column: str = "id", *, once: bool = False) -> Stream[Batch]:
    """Per time, the distinct values of the text ``column`` of ``ids``,
    numbered in sorted order: columns ``id`` (the text, as the input held
    it) and ``number`` (int64, ``0`` to ``n - 1``). The rows are spread
    over the workers by range of the order: worker ``k`` sends, once the
    time is complete, one Batch holding the ``k``-th range of the ids,
    rows in order (the numbers of worker ``k`` all below those of worker
    ``k + 1``); a worker whose range is empty sends nothing. The numbers
    are the same at any worker count; which ids each worker holds is not.

    Python's order of str (by code point); text is compared exactly (never
    by hash alone), so ids that differ in one byte get two numbers.
    ``once``: ids at a second time raise :class:`~timely.ColumnarError`
    (numbers that must stay fixed across times), on every worker.

    Cost, for the ``n`` distinct ids of a time on ``W`` workers: a
    :meth:`~timely.Stream.distinct` (each id exchanged once and kept once
    per time); a local sort of each worker's distinct ids; a regular
    sample of up to ``max(64, 4 W)`` of them from each worker to every
    worker, from which every worker picks the same ``W - 1`` splitters;
    each id exchanged once more, to the worker of its range, with ``W``
    counts from each worker; a sort of each range. Each worker holds
    and compares (``O(n / W log n)`` comparisons of str) about ``n / W``
    ids: a range holds at most about ``n / W + 2 n / max(64, 4 W)``.

    >>> import timely
    >>> def work(worker):
    ...     got = []
    ...     with worker.dataflow() as scope:
    ...         handle, ids = scope.new_input()
    ...         number_ids(ids).inspect_batch(lambda t, b: got.extend(b.to_records()))
    ...     handle.send_batch(timely.Batch(id=["b", "", "b", "B"]))
    ...     handle.close()
    ...     worker.drain()
    ...     return got
    >>> timely.execute_directly(work)
    [('', 0), ('B', 1), ('b', 2)]
    """
    return _numbering(ids, column, None, "number_ids" if once else None)


def _replaced(column: str, by: str) -> Callable[[Batch], Batch]:
    """A batch with ``column`` holding the values of ``by``, and no ``by``."""

    def replace(b: Batch) -> Batch:
        return Batch.from_columns(
            {n: b.column(by) if n == column else b.column(n) for n in b.names if n != by},
            len(b))

    return replace


def _table(numbering: Stream[Batch]) -> Stream[Batch]:
    return numbering.map_batch(lambda b: Batch.from_columns(
        {_TEXT: b.column("id"), _NUMBER: b.column("number")}, len(b)))


def encode_ids(stream: Stream[Batch], numbering: Stream[Batch],
               columns: tuple[str, ...] | list[str]) -> Stream[Batch]:
    """``stream`` with each text column of ``columns`` replaced by the
    numbers of its ids (int64), by ``numbering`` (Batches with columns
    ``id`` and ``number``, as :func:`number_ids` makes) at the same time.
    Columns keep their order. A row with an id that is not numbered is
    dropped. Cost: one :func:`~timely.dataflow.operators.relational.join`
    per column (exchanging the rows by that column)."""
    table = _table(numbering)
    for column in columns:
        stream = join(stream, table, left_on=column, right_on=_TEXT, name="EncodeIds").map_batch(
            _replaced(column, _NUMBER))
    return stream


def decode_ids(stream: Stream[Batch], numbering: Stream[Batch],
               columns: tuple[str, ...] | list[str]) -> Stream[Batch]:
    """``stream`` with each number column of ``columns`` replaced by the
    ids numbered so in ``numbering`` at the same time, in turn: the output
    is exchanged by the last of ``columns``. Columns keep their order. A
    row with a number that numbers no id is dropped. Cost: one
    :func:`~timely.dataflow.operators.relational.join` per column."""
    table = _table(numbering)
    for column in columns:
        stream = join(stream, table, left_on=column, right_on=_NUMBER, name="DecodeIds").map_batch(
            _replaced(column, _TEXT))
    return stream


def _numbers_held(batch: Batch) -> Batch:
    """The numbers in every column of ``batch``, each once."""
    numbers = np.unique(np.concatenate([np.empty(0, dtype=np.int64)] + [
        np.asarray(batch[n], dtype=np.int64) for n in batch.names]))
    return Batch.from_columns({_NUMBER: numbers}, len(numbers))


def _looked_up(_time: Any, held: list[Batch]) -> Batch | None:
    """The rows of a time with every column decoded, in their order, by
    the ``(number, text)`` pairs of the numbers they hold."""
    pairs = [h for h in held if _TEXT in h.names]
    rows = [h for h in held if _TEXT not in h.names]
    if not rows or not pairs:
        return None
    table = _concat(pairs)
    by_number = np.argsort(table[_NUMBER], kind="stable")
    numbers, text = table[_NUMBER][by_number], table.column(_TEXT).take(by_number)
    batch = _concat(rows)
    return Batch.from_columns(
        {n: text.take(np.searchsorted(numbers, batch[n])) for n in batch.names}, len(batch))


def _decode_gathered(stream: Stream[Batch], numbering: Stream[Batch]) -> Stream[Batch]:
    """``stream`` with every column decoded, on worker 0, keeping the
    order of the rows: for outputs that are by contract one Batch on one
    worker, in an order that spans all their rows (the paths of
    :func:`bfs_paths`, sorted), which a decode exchanged by number would
    scatter. Only the rows and the text of the numbers they hold go to
    worker 0: the numbers are looked up where ``numbering`` is (a
    :func:`~timely.dataflow.operators.relational.join` exchanged by
    number), not the whole numbering gathered. Every number in the rows
    numbers an id (as in an algorithm's output over the numbered ids)."""
    wanted = stream.map_batch(_numbers_held, name="NumbersHeld").distinct(
        _NUMBER, name="DistinctNumbers")
    pairs = join(wanted, _table(numbering), on=_NUMBER, name="LookUpIds")
    return _complete_times(stream.concat(pairs), Exchange(batch=_first_worker),
                           "DecodeGathered", _looked_up)


# -- one call's ids -----------------------------------------------------------------


class VertexIds:
    """The vertex ids of one call of a graph algorithm: ``ids="int64"``
    checks its inputs' id columns (text raises), ``ids="string"`` numbers
    them (:func:`number_ids`, :func:`encode_ids`) and maps the output's id
    columns back (:func:`decode_ids`). Every algorithm of
    :mod:`timely.algorithms` takes ``ids`` through this one class."""

    def __init__(self, ids: str, algorithm: str):
        if ids not in ("int64", "string"):
            raise ColumnarError(f"{algorithm}: ids is 'int64' or 'string', not {ids!r}")
        self.ids = ids
        self.algorithm = algorithm
        self.numbering: Stream[Batch] | None = None

    def inputs(self, *given: tuple[Stream[Batch] | None, tuple[str, ...]],
               pinned: str | None = None) -> list[Any]:
        """Each stream of ``given`` (``(stream or None, its id columns)``)
        as the algorithm takes it."""
        present = [(s, columns) for s, columns in given if s is not None]
        if self.ids == "int64":
            checked = iter([s.inspect_batch(_checked_int64(columns, self.algorithm),
                                            name="Int64Ids") for s, columns in present])
        else:
            parts = [s.map_batch(_text_ids(c, self.algorithm), name="TextIds")
                     for s, columns in present for c in columns]
            self.numbering = _numbering(parts[0].concatenate(parts[1:]), "id", pinned,
                                        self.algorithm)
            checked = iter([encode_ids(s, self.numbering, columns) for s, columns in present])
        return [None if s is None else next(checked) for s, _ in given]

    def output(self, stream: Stream[Batch], columns: tuple[str, ...]) -> Stream[Batch]:
        """The algorithm's output with its id ``columns`` mapped back (the
        first column last, so that the rows end exchanged by it)."""
        if self.numbering is None or not columns:
            return stream
        return decode_ids(stream, self.numbering, columns[::-1])

    def gathered(self, stream: Stream[Batch]) -> Stream[Batch]:
        """The algorithm's output, one Batch on one worker by contract, with
        every column mapped back on worker 0, its rows in their order."""
        if self.numbering is None:
            return stream
        return _decode_gathered(stream, self.numbering)
