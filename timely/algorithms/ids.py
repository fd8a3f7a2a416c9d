"""Vertex ids of the graph algorithms: int64 as they are, or text numbered
in sorted order.

The algorithms of :mod:`~timely.algorithms.graph`,
:mod:`~timely.algorithms.graphalytics`, :mod:`~timely.algorithms.graphframes`
and :mod:`~timely.algorithms.vertex_program` compute over int64 vertex ids.
The functions of the same names here, which :mod:`timely.algorithms`
exports, take one more keyword, ``ids``:

- ``ids="int64"`` (the default): the id columns (``src``, ``dst``, the
  ``node`` column of nodes, roots, sources, landmarks, path ends; pregel's
  ``key``) go to the algorithm as they are, with the same answer and
  signature as the algorithm's own. The only addition is a check of each
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
  and numbered, as ``(id, number)`` Batches on worker 0;
- :func:`encode_ids`: text id columns replaced by their numbers;
- :func:`decode_ids`: number columns replaced by their ids.

How and what it costs: each worker's ids go through
:meth:`~timely.Stream.distinct` (exchanged by id, each kept once), the
distinct ids to worker 0, which sorts them (``numpy.argsort`` of the str,
O(n log n) comparisons on one worker for ``n`` distinct ids, and the ``n``
ids in its memory) and numbers them; the ``(id, number)`` pairs travel back
through a join per id column, exchanged by id to rewrite the edges and
nodes, exchanged by number to rewrite the output (each a hash and an exact
compare of the id's bytes per row, in C). :func:`bfs_paths`' paths, already
gathered on one worker, are rewritten on worker 0.

>>> import numpy as np
>>> import timely
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
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from timely.algorithms import graph, graphalytics, graphframes, vertex_program
from timely.container import Batch, StringColumn
from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.channels import Exchange
from timely.dataflow.operators.core import per_time
from timely.dataflow.operators.relational import join
from timely.errors import ColumnarError

if TYPE_CHECKING:
    from timely.algorithms.vertex_program import Merge
    from timely.dataflow.stream import Stream

__all__ = [
    "Ids",
    "bfs",
    "bfs_paths",
    "connected_components",
    "decode_ids",
    "degrees",
    "encode_ids",
    "label_propagation",
    "local_clustering_coefficient",
    "number_ids",
    "pagerank",
    "personalized_pagerank",
    "pregel",
    "shortest_paths",
    "sssp",
    "strongly_connected_components",
    "triangle_count",
    "triangles",
]

Ids = Literal["int64", "string"]
"""The kinds of vertex ids: ``"int64"`` as they are, ``"string"`` numbered."""

OnRound = Callable[[int, int], object]
F = TypeVar("F", bound=Callable[..., Any])

# The numbering's columns inside encode_ids/decode_ids: names no caller's
# column is likely to have, since a join refuses a name on both sides.
_TEXT = "ids: text"
_NUMBER = "ids: number"


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


def _first_worker(batch: Batch) -> np.ndarray:
    """Routes every row to worker 0 (hash 0)."""
    return np.zeros(len(batch), dtype=np.int64)


def _gathered(held: list[Batch], data: Batch) -> list[Batch]:
    if len(data):
        held.append(data)
    return held


def _numbering(ids: Stream[Batch], column: str, pinned: str | None,
               once: str | None) -> Stream[Batch]:
    """:func:`number_ids`, with ``pinned`` (when given) numbered -1 rather
    than by its rank, and, when ``once`` names an algorithm, ids at a second
    time refused."""
    unique = ids.distinct(column, name="DistinctIds")
    b = OperatorBuilder("NumberIds", ids.scope)
    inp = b.new_input(unique, Exchange(batch=_first_worker))
    out, result = b.new_output()
    numbered: list[Any] = []            # the time numbered, when once

    def finish(time: Any, held: list[Batch]) -> Batch | None:
        if not held:
            return None
        if once is not None:
            if numbered:
                raise ColumnarError(
                    f"{once}: with ids='string' a graph's vertex ids arrive at one time; they "
                    f"came at {numbered[0]} and again at {time} (the ids are numbered in sorted "
                    f"order, which an id given later could not keep)")
            numbered.append(time)
        rows = held[0] if len(held) == 1 else Batch.concat(held)
        stored = rows.column(column)
        values = np.asarray(rows[column], dtype=object)
        order = np.argsort(values, kind="stable")
        number = np.arange(len(order), dtype=np.int64)
        if pinned is not None:
            number[values[order] == pinned] = -1
        return Batch.from_columns({"id": stored.take(order), "number": number}, len(order))

    def build(caps: Any, _info: Any) -> Any:
        caps.clear()
        return per_time(b, inp, out, lambda time: [], _gathered, finish)

    b.build(build)
    return result


def number_ids(ids: Stream[Batch], column: str = "id", *, once: bool = False) -> Stream[Batch]:
    """Per time, the distinct values of the text ``column`` of ``ids``,
    numbered in sorted order: one Batch per time with rows in that order,
    columns ``id`` (the text, as the input held it) and ``number`` (int64,
    ``0`` to ``n - 1``), on worker 0.

    Python's order of str (by code point); text is compared exactly (never
    by hash alone), so ids that differ in one byte get two numbers.
    ``once``: ids at a second time raise :class:`~timely.ColumnarError`
    (numbers that must stay fixed across times). Cost: a
    :meth:`~timely.Stream.distinct` (each id exchanged once and kept once
    per time), then ``O(n log n)`` comparisons of str on worker 0 for the
    ``n`` distinct ids of a time, and its memory for them.

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


def _decode_gathered(stream: Stream[Batch], numbering: Stream[Batch]) -> Stream[Batch]:
    """``stream`` with every column decoded, on worker 0, keeping the
    order of the rows: for outputs already gathered on one worker."""
    b = OperatorBuilder("DecodeGathered", stream.scope)
    inp = b.new_input(stream.concat(numbering), Exchange(batch=_first_worker))
    out, result = b.new_output()

    def finish(_time: Any, held: list[Batch]) -> Batch | None:
        tables = [h for h in held if h.names == ("id", "number")]
        rows = [h for h in held if h.names != ("id", "number")]
        if not rows or not tables:
            return None
        table = Batch.concat(tables)
        by_number = np.argsort(table["number"], kind="stable")
        numbers, text = table["number"][by_number], table.column("id").take(by_number)
        batch = Batch.concat(rows)
        return Batch.from_columns(
            {n: text.take(np.searchsorted(numbers, batch[n])) for n in batch.names}, len(batch))

    def build(caps: Any, _info: Any) -> Any:
        caps.clear()
        return per_time(b, inp, out, lambda time: [], _gathered, finish)

    b.build(build)
    return result


# -- one call's ids -----------------------------------------------------------------


class _Vertices:
    """The vertex ids of one call of an algorithm: its inputs checked
    (``"int64"``) or numbered (``"string"``), its output mapped back."""

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
        """The algorithm's output, one worker's, with every column mapped back."""
        if self.numbering is None:
            return stream
        return _decode_gathered(stream, self.numbering)


_NOTE = """

    Vertex ids: ``ids="int64"`` (default) as above (a text id column raises
    :class:`~timely.ColumnarError` naming it); ``ids="string"``: the id
    columns ({inputs}) hold text, numbered in sorted order by
    :mod:`timely.algorithms.ids` ({outputs}), given at one time (ids at a
    second time raise :class:`~timely.ColumnarError`). The numbering costs
    ``O(n log n)`` on one worker for ``n`` distinct ids, and a join per id
    column in and out.{extra}
    """


def _documented(core: Callable[..., Any], inputs: str, outputs: str,
                extra: str = "") -> Callable[[F], F]:
    """The algorithm's docstring, and what ``ids`` does."""

    def document(fn: F) -> F:
        fn.__doc__ = (core.__doc__ or "").rstrip() + _NOTE.format(
            inputs=inputs, outputs=outputs, extra=extra)
        return fn

    return document


# -- the algorithms -----------------------------------------------------------------


@_documented(graph.connected_components, "``src``, ``dst``, ``node``",
             "``node`` and ``label`` map back: the label is the least string")
def connected_components(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                         method: str = "union-find", src: str = "src", dst: str = "dst",
                         on_round: OnRound | None = None, ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "connected_components")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graph.connected_components(edges, nodes, method=method, src=src, dst=dst,
                                               on_round=on_round), ("node", "label"))


@_documented(graph.bfs, "``src``, ``dst``, the roots' ``node``", "``node`` maps back")
def bfs(edges: Stream[Batch], roots: Stream[Batch], *, src: str = "src", dst: str = "dst",
        on_round: OnRound | None = None, ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "bfs")
    edges, roots = v.inputs((edges, (src, dst)), (roots, ("node",)))
    return v.output(graph.bfs(edges, roots, src=src, dst=dst, on_round=on_round), ("node",))


@_documented(graph.pagerank, "``src``, ``dst``, ``node``", "``node`` maps back")
def pagerank(edges: Stream[Batch], iterations: int | None = 20, *, damping: float = 0.85,
             tolerance: float | None = None, nodes: Stream[Batch] | None = None,
             src: str = "src", dst: str = "dst", on_round: OnRound | None = None,
             definition: str = "graphx", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "pagerank")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graph.pagerank(edges, iterations, damping=damping, tolerance=tolerance,
                                   nodes=nodes, src=src, dst=dst, on_round=on_round,
                                   definition=definition), ("node",))


@_documented(graphalytics.label_propagation, "``src``, ``dst``, ``node``",
             "``node`` and ``label`` map back: a tie keeps the least string")
def label_propagation(edges: Stream[Batch], nodes: Stream[Batch] | None = None,
                      iterations: int = 10, *, directed: bool = True, src: str = "src",
                      dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "label_propagation")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graphalytics.label_propagation(edges, nodes, iterations, directed=directed,
                                                   src=src, dst=dst), ("node", "label"))


@_documented(graphalytics.local_clustering_coefficient, "``src``, ``dst``, ``node``",
             "``node`` maps back")
def local_clustering_coefficient(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                 directed: bool = True, src: str = "src", dst: str = "dst",
                                 ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "local_clustering_coefficient")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graphalytics.local_clustering_coefficient(
        edges, nodes, directed=directed, src=src, dst=dst), ("node",))


@_documented(graphalytics.triangles, "``src``, ``dst``, ``node``", "``node`` maps back")
def triangles(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
              dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "triangles")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graphalytics.triangles(edges, nodes, src=src, dst=dst), ("node",))


@_documented(graphalytics.triangle_count, "``src``, ``dst``", "the count holds no id")
def triangle_count(edges: Stream[Batch], *, src: str = "src", dst: str = "dst",
                   ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "triangle_count")
    (edges,) = v.inputs((edges, (src, dst)))
    return graphalytics.triangle_count(edges, src=src, dst=dst)


@_documented(graphalytics.degrees, "``src``, ``dst``, ``node``", "``node`` maps back")
def degrees(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *, src: str = "src",
            dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "degrees")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(graphalytics.degrees(edges, nodes, src=src, dst=dst), ("node",))


@_documented(graphalytics.sssp, "``src``, ``dst``, ``node``, and ``source`` is a str",
             "``node`` maps back; the source is numbered -1")
def sssp(edges: Stream[Batch], source: int | str, nodes: Stream[Batch] | None = None, *,
         directed: bool = True, weight: str = "weight", src: str = "src", dst: str = "dst",
         ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "sssp")
    if ids == "string" and type(source) is not str:
        raise ColumnarError(f"sssp: with ids='string' the source is a str, not {source!r}")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)),
                            pinned=source if isinstance(source, str) else None)
    origin = -1 if v.numbering is not None else source
    return v.output(graphalytics.sssp(edges, origin, nodes,  # type: ignore[arg-type]
                                      directed=directed, weight=weight, src=src, dst=dst),
                    ("node",))


@_documented(graphframes.personalized_pagerank,
             "``src``, ``dst``, the ``node`` of sources and nodes", "``node`` maps back")
def personalized_pagerank(edges: Stream[Batch], sources: Stream[Batch],
                          nodes: Stream[Batch] | None = None, iterations: int = 20, *,
                          damping: float = 0.85, src: str = "src", dst: str = "dst",
                          ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "personalized_pagerank")
    edges, sources, nodes = v.inputs((edges, (src, dst)), (sources, ("node",)),
                                     (nodes, ("node",)))
    return v.output(graphframes.personalized_pagerank(edges, sources, nodes, iterations,
                                                      damping=damping, src=src, dst=dst),
                    ("node",))


@_documented(graphframes.shortest_paths,
             "``src``, ``dst``, the ``node`` of landmarks and nodes",
             "``node`` and ``landmark`` map back")
def shortest_paths(edges: Stream[Batch], landmarks: Stream[Batch],
                   nodes: Stream[Batch] | None = None, *, directed: bool = True,
                   src: str = "src", dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "shortest_paths")
    edges, landmarks, nodes = v.inputs((edges, (src, dst)), (landmarks, ("node",)),
                                       (nodes, ("node",)))
    return v.output(graphframes.shortest_paths(edges, landmarks, nodes, directed=directed,
                                               src=src, dst=dst), ("node", "landmark"))


@_documented(graphframes.bfs_paths, "``src``, ``dst``, the ``node`` of both vertex sets",
             "every ``v<i>`` maps back, on worker 0; rows sorted by the strings")
def bfs_paths(edges: Stream[Batch], from_nodes: Stream[Batch], to_nodes: Stream[Batch], *,
              directed: bool = True, max_length: int | None = None, src: str = "src",
              dst: str = "dst", ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "bfs_paths")
    edges, from_nodes, to_nodes = v.inputs((edges, (src, dst)), (from_nodes, ("node",)),
                                           (to_nodes, ("node",)))
    return v.gathered(graphframes.bfs_paths(edges, from_nodes, to_nodes, directed=directed,
                                            max_length=max_length, src=src, dst=dst))


@_documented(vertex_program.pregel, "``src``, ``dst`` and the vertices' ``key``",
             "``key`` maps back", extra="""

    With ``ids="string"``, ``send`` and ``update`` see the numbers (int64,
    in the order of the strings), messages go to numbers, and errors name
    numbers; state columns that hold vertex ids stay numbers (map them with
    :func:`~timely.algorithms.ids.number_ids` and
    :func:`~timely.algorithms.ids.decode_ids`).""")
def pregel(edges: Stream[Batch], vertices: Stream[Batch], *,
           send: Callable[[Batch], Batch | None], merge: Merge,
           update: Callable[[Batch, Batch], Batch], max_rounds: int | None = None,
           src: str = "src", dst: str = "dst", key: str = "id", with_dst: bool = True,
           ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "pregel")
    edges, vertices = v.inputs((edges, (src, dst)), (vertices, (key,)))
    return v.output(vertex_program.pregel(edges, vertices, send=send, merge=merge, update=update,
                                          max_rounds=max_rounds, src=src, dst=dst, key=key,
                                          with_dst=with_dst), (key,))


@_documented(vertex_program.strongly_connected_components, "``src``, ``dst``, ``node``",
             "``node`` and ``component`` map back: a component is named by its least string")
def strongly_connected_components(edges: Stream[Batch], nodes: Stream[Batch] | None = None, *,
                                  src: str = "src", dst: str = "dst",
                                  ids: Ids = "int64") -> Stream[Batch]:
    v = _Vertices(ids, "strongly_connected_components")
    edges, nodes = v.inputs((edges, (src, dst)), (nodes, ("node",)))
    return v.output(vertex_program.strongly_connected_components(edges, nodes, src=src, dst=dst),
                    ("node", "component"))
