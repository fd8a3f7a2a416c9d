"""Streams: the output of an operator, and the operators that consume it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, TypeVar, overload

from timely.dataflow.operators import core as _core
from timely.dataflow.operators import probe as _probe

if TYPE_CHECKING:
    import numpy as np

    from timely.container import Batch
    from timely.dataflow.capability import Capability
    from timely.dataflow.channels import PactLike, Tee
    from timely.dataflow.builder import OperatorInfo
    from timely.dataflow.handles import InputHandleCore, OutputHandle
    from timely.dataflow.notificator import Notificator
    from timely.dataflow.operators.capture import CaptureHandle, EventPusher
    from timely.dataflow.operators.core import Err, Ok
    from timely.dataflow.operators.feedback import LoopHandle
    from timely.dataflow.operators.probe import ProbeHandle
    from timely.dataflow.operators.vertex import Vertex
    from timely.dataflow.scope import Scope
    from timely.dataflow.time import Time

T = TypeVar("T")
"""The record type of a :class:`Stream` (``Batch`` for a columnar stream)."""
U = TypeVar("U")
V = TypeVar("V")
A = TypeVar("A")


class Stream(Generic[T]):
    """A timestamped stream of batches, produced by one operator output.

    Every method builds an operator in the stream's scope and returns its
    output stream (or a handle). ``Stream[T]`` is generic in the type ``T`` of
    its records, for type checkers only (a columnar stream is a
    ``Stream[Batch]``): ``stream.map(fn)`` with ``fn: Callable[[T], U]`` is a
    ``Stream[U]``; operators that pass records on keep ``T``.

    Every method that builds an operator takes a keyword-only ``name``: the
    operator's name in log events, pictures (:mod:`timely.viz`), stall
    reports and error messages. Without it (``None``) the operator has its
    kind's name (``Map``, ``Exchange``, ...); a name that is not a non-empty
    str raises TypeError. The generic operators (``unary``, ``sink``, ...)
    take their name as a positional argument, as the crate's do.

    >>> import timely
    >>> timely.example(lambda s: s.to_stream([1, 2], name="numbers")
    ...     .map(lambda x: x * 10, name="times ten").capture()).extract()
    [(0, [10, 20])]
    """

    __slots__ = ("scope", "source", "_tee")

    scope: Scope
    source: tuple[int, int]

    def __init__(self, scope: Scope, source: tuple[int, int], tee: Tee) -> None:
        self.scope = scope
        self.source = source
        self._tee = tee

    def connect_to(self, target: tuple[int, int], pusher: Any, pact: Any = None) -> None:
        """Adds the edge from this stream to ``target`` with the channel's
        pusher (made by ``pact``, when an operator's input reads it)."""
        self.scope.subgraph.add_edge(self.source, target, pusher, pact)
        self._tee.pushers.append(pusher)

    def __repr__(self) -> str:
        return f"Stream(scope={self.scope.name!r}, source={self.source})"

    # -- record operators ----------------------------------------------------

    def map(self, fn: Callable[[T], U], *, name: str | None = None) -> Stream[U]:
        """``fn(record)`` for every record."""
        return _core.map_(self, fn, name=name)

    def flat_map(self, fn: Callable[[T], Iterable[U]], *, name: str | None = None) -> Stream[U]:
        """Every element of ``fn(record)`` for every record."""
        return _core.flat_map(self, fn, name=name)

    def filter(self, pred: Callable[[T], object], *, name: str | None = None) -> Stream[T]:
        """The records for which ``pred(record)`` is true."""
        return _core.filter_(self, pred, name=name)

    def inspect(self, fn: Callable[[T], object], *, name: str | None = None) -> Stream[T]:
        """Calls ``fn(record)`` for every record, passing records on."""
        return _core.inspect(self, fn, name=name)

    def inspect_time(self, fn: Callable[[Time, T], object], *,
                     name: str | None = None) -> Stream[T]:
        """Calls ``fn(time, record)`` for every record."""
        return _core.inspect_time(self, fn, name=name)

    def inspect_batch(self, fn: Callable[[Time, Any], object], *,
                      name: str | None = None) -> Stream[T]:
        """Calls ``fn(time, batch)`` for every batch."""
        return _core.inspect_batch(self, fn, name=name)

    def exchange(self, route: Callable[[T], object] | str | None = None, *,
                 key: int | str | None = None, name: str | None = None) -> Stream[T]:
        """Sends each record to worker ``stable_hash(k) % peers`` of its key ``k``:
        ``route(record)`` (an int route is used as it is), the field
        ``record[key]`` (``key`` an int), ``record[key]`` of a dict or the
        attribute ``key`` of another record (``key`` a str), ``route`` of that
        field when both are given, or the record itself when neither is. A
        columnar stream is routed by the column ``route`` (or ``key``) names.
        Routing is compiled: no Python per record but ``route``. See
        :class:`~timely.Exchange`.

        >>> import timely
        >>> timely.example(lambda s: s.to_stream([("b", 2), ("a", 1)]).exchange(key=0)
        ...     .capture()).extract()
        [(0, [('a', 1), ('b', 2)])]
        """
        return _core.exchange(self, route, key=key, name=name)

    def exchange_batch(self, fn: Callable[[Any], np.ndarray], *,
                       name: str | None = None) -> Stream[T]:
        """Routes each message's records together: ``fn(records)`` (a list; a
        :class:`~timely.Batch` for a columnar stream) returns a 1-D numpy
        integer array with one *hash* per record, not a worker: record ``i``
        goes to worker ``hashes[i] % peers``. RouteError when the array is not
        one integer per record.

        >>> import numpy as np, timely
        >>> timely.example(lambda s: s.to_stream([3, 1, 2])
        ...     .exchange_batch(lambda xs: np.array(xs) // 2).capture()).extract()
        [(0, [1, 2, 3])]
        """
        return _core.exchange(self, batch=fn, name=name)

    def broadcast(self, *, name: str | None = None) -> Stream[T]:
        """Sends every record to every worker."""
        return _core.broadcast(self, name=name)

    def concat(self, other: Stream[T], *, name: str | None = None) -> Stream[T]:
        """The records of both streams."""
        return _core.concatenate(self.scope, [self, other], name=name)

    def partition(self, parts: int, route: Callable[[T], tuple[int, U]], *,
                  name: str | None = None) -> list[Stream[U]]:
        """``parts`` streams; ``route(record)`` gives ``(part, value)``."""
        return _core.partition(self, parts, route, name=name)

    def branch(self, condition: Callable[[Time, T], object], *,
               name: str | None = None) -> tuple[Stream[T], Stream[T]]:
        """``(false_stream, true_stream)`` by ``condition(time, record)``."""
        return _core.branch(self, condition, name=name)

    def branch_when(self, condition: Callable[[Time], object], *,
                    name: str | None = None) -> tuple[Stream[T], Stream[T]]:
        """``(false_stream, true_stream)`` by ``condition(time)`` per batch."""
        return _core.branch_when(self, condition, name=name)

    def ok(self, *, name: str | None = None) -> Stream[Any]:
        """The values of the ``Ok`` records."""
        return _core.ok(self, name=name)

    def err(self, *, name: str | None = None) -> Stream[Any]:
        """The errors of the ``Err`` records."""
        return _core.err(self, name=name)

    def delay(self, fn: Callable[[T, Time], Time], *, name: str | None = None) -> Stream[T]:
        """Each record moves to time ``fn(record, time)``, released when that time completes."""
        return _core.delay(self, fn, name=name)

    def delay_batch(self, fn: Callable[[Time], Time], *, name: str | None = None) -> Stream[T]:
        """Each batch moves to time ``fn(time)``."""
        return _core.delay_batch(self, fn, name=name)

    def reclock(self, clock: Stream[Any], *, name: str | None = None) -> Stream[T]:
        """Records reported at the times of ``clock``."""
        return _core.reclock(self, clock, name=name)

    def accumulate(self, init: A, logic: Callable[[A, Any], A], *,
                   name: str | None = None) -> Stream[A]:
        """One value per complete time: ``logic(acc, batch)`` folded from ``init``."""
        return _core.accumulate(self, init, logic, name=name)

    def count(self, *, name: str | None = None) -> Stream[int]:
        """The number of records per complete time."""
        return _core.count(self, name=name)

    # -- columnar operators (streams of Batches) -----------------------------

    @overload
    def map_batch(self, fn: Callable[[Batch], Batch], *,
                  name: str | None = None) -> Stream[Batch]: ...
    @overload
    def map_batch(self, fn: Callable[[Any], Any], *, name: str | None = None) -> Stream[Any]: ...

    def map_batch(self, fn: Callable[[Any], Any], *, name: str | None = None) -> Stream[Any]:
        """``fn(batch)`` for every batch, sent at its time (empty results are not sent)."""
        from timely.dataflow.operators import columnar as _columnar

        return _columnar.map_batch(self, fn, name=name)

    def filter_batch(self, fn: Callable[[Batch], Any], *, name: str | None = None) -> Stream[Batch]:
        """The rows of each Batch where the boolean mask ``fn(batch)`` is true."""
        from timely.dataflow.operators import columnar as _columnar

        return _columnar.filter_batch(self, fn, name=name)

    def aggregate(self, key: str | list[str] | tuple[str, ...] | Callable[..., Any],
                  value: Any = None, how: Any = None, *,
                  combine: bool = True, default: Callable[[], Any] = int,
                  name: str | None = None) -> Stream[Any]:
        """Two aggregates, told apart by the first argument.

        ``aggregate("key", "value", how)`` (a column name first, or a list of
        them to group by several columns): columnar, for streams of
        :class:`~timely.Batch` (also :meth:`aggregate_batch`).

        ``aggregate(fold, emit, route=None)`` (a function first): the crate's
        record aggregate over ``(key, value)`` records, routed by
        ``route(key)`` or, without a route, by the key itself; see
        :func:`timely.dataflow.operators.aggregation.aggregate`.
        """
        if callable(key):
            from timely.dataflow.operators.aggregation import aggregate

            return aggregate(self, key, value, how, default, name=name)
        from timely.dataflow.operators import columnar as _columnar

        return _columnar.aggregate(self, key, value, "sum" if how is None else how,
                                   combine=combine, name=name)

    def aggregate_batch(self, key: str | list[str] | tuple[str, ...], value: str | None = None,
                        how: str | Iterable[str] = "sum", *,
                        combine: bool = True, name: str | None = None) -> Stream[Batch]:
        """Per complete time, one Batch per worker: column ``key`` (or the
        columns of a list of keys, grouped by their distinct rows) and one
        column per aggregate in ``how`` (``count``, ``sum``, ``min``,
        ``max``) of ``value``; exchanged by ``key`` (the first key), so exact
        at any worker count. See :func:`timely.dataflow.operators.columnar.aggregate`."""
        from timely.dataflow.operators import columnar as _columnar

        return _columnar.aggregate(self, key, value, how, combine=combine, name=name)

    def join(self, other: Stream[Any], on: str | Iterable[str] | None = None, *,
             left_on: str | Iterable[str] | None = None,
             right_on: str | Iterable[str] | None = None,
             persist: str | None = None, name: str | None = None) -> Stream[Batch]:
        """The equi-join of two Batch streams by key columns (integers,
        floats, datetimes, bytes or text, mixed freely), per complete time;
        ``persist="right"`` keeps ``other``'s rows for every later time. See
        :func:`timely.dataflow.operators.relational.join`."""
        from timely.dataflow.operators.relational import join

        return join(self, other, on, left_on=left_on, right_on=right_on, persist=persist,
                    name=name)

    def distinct(self, columns: str | Iterable[str], *, persist: bool = False,
                 name: str | None = None) -> Stream[Batch]:
        """The distinct rows by key ``columns`` (integers, floats,
        datetimes, bytes or text), per complete time. See
        :func:`timely.dataflow.operators.relational.distinct`."""
        from timely.dataflow.operators.relational import distinct

        return distinct(self, columns, persist=persist, name=name)

    def improve(self, key: str | Iterable[str], value: str, how: str = "min", *,
                name: str | None = None) -> Stream[Batch]:
        """Per key, the least (greatest) ``value`` where it improves on every
        value sent before: the state of a fixpoint loop. See
        :func:`timely.dataflow.operators.relational.improve`."""
        from timely.dataflow.operators.relational import improve

        return improve(self, key, value, how, name=name)

    # -- scopes and loops ----------------------------------------------------

    def enter(self, scope: Scope) -> Stream[T]:
        """This stream inside the child ``scope`` (times gain a zero coordinate)."""
        from timely.dataflow.operators import enterleave as _el

        return _el.enter(self, scope)

    def leave(self) -> Stream[T]:
        """This stream in the parent scope (times lose their last coordinate)."""
        from timely.dataflow.operators import enterleave as _el

        return _el.leave(self)

    def connect_loop(self, handle: LoopHandle[T]) -> None:
        """Feeds a loop made by ``scope.feedback(summary)``."""
        handle.connect(self)

    # -- observing -----------------------------------------------------------

    def probe(self, *, name: str | None = None) -> ProbeHandle:
        """A :class:`ProbeHandle` on this stream's frontier."""
        handle = _probe.ProbeHandle()
        _probe.probe_with(self, handle, passthrough=False, name=name)
        return handle

    def probe_with(self, handle: ProbeHandle, *, name: str | None = None) -> Stream[T]:
        """Adds this stream to ``handle``'s frontier; returns the stream unchanged."""
        return _probe.probe_with(self, handle, passthrough=True, name=name)

    def capture(self, *, name: str | None = None) -> CaptureHandle[T]:
        """Records the stream's events in this process; ``.extract()`` gives
        ``[(time, sorted records)]``."""
        from timely.dataflow.operators import capture as _capture

        handle: CaptureHandle[T] = _capture.CaptureHandle()
        _capture.capture_into(self, handle, name=name)
        return handle

    def capture_into(self, pusher: EventPusher, *, name: str | None = None) -> None:
        """Pushes every event (``Messages``, ``Progress``) to ``pusher.push``."""
        from timely.dataflow.operators import capture as _capture

        _capture.capture_into(self, pusher, name=name)

    # -- generic operators ---------------------------------------------------

    def vertex(self, v: Vertex, *others: Stream[Any], name: str | None = None) -> Any:
        """Hosts a Naiad-style :class:`~timely.Vertex` on this stream (and ``others``,
        one per further vertex input). Returns its output stream, or a list when
        it has other than one output. The operator is called ``name``, else
        ``v.name``, else the vertex's class name."""
        from timely.dataflow.operators.vertex import vertex

        outs = vertex([self, *others], v, name=name)
        return outs[0] if len(outs) == 1 else outs

    def sink(self, pact: PactLike, name: str,
             logic: Callable[[InputHandleCore[T]], object]) -> None:
        """An operator with no outputs: ``logic(input)`` is called whenever the
        input has messages or its frontier changes, and reads them with
        ``for cap, data in input`` and ``input.frontier``.

        ``pact`` (``Pipeline``, ``Exchange(route)``, ``Broadcast``) says which
        worker each record goes to; ``name`` names the operator in logs and
        errors.
        """
        from timely.dataflow.operators import generic as _generic

        _generic.sink(self, pact, name, logic)

    def unary(self, pact: PactLike, name: str,
              constructor: Callable[[Capability, OperatorInfo],
                                    Callable[[InputHandleCore[T], OutputHandle[U]], object]],
              ) -> Stream[U]:
        """A new operator with one input and one output.

        ``constructor(capability, info)`` is called once, with a capability at
        the minimum time for the output (drop it if the operator makes no
        records of its own) and the operator's ``info`` (its address and
        activator); it returns ``logic(input, output)``, called each time the
        input has messages. ``for cap, data in input`` takes each message with
        a capability for its time; ``output.session(cap).give(x)`` sends.
        Misused capabilities raise :class:`timely.CapabilityError` before
        anything is sent; exceptions from ``logic`` fail the worker.
        """
        from timely.dataflow.operators import generic as _generic

        return _generic.unary(self, pact, name, constructor)

    def unary_frontier(self, pact: PactLike, name: str,
                       constructor: Callable[[Capability, OperatorInfo],
                                             Callable[[InputHandleCore[T], OutputHandle[U]], object]],
                       ) -> Stream[U]:
        """As :meth:`unary`, and ``logic(input, output)`` is also called when
        the input's frontier changes, so it can act on complete times: a time
        ``t`` is complete once ``not input.frontier.less_equal(t)``. Keep
        ``cap.retain()`` of a message to send at its time later; a capability
        kept holds back every downstream frontier until it is dropped.
        """
        from timely.dataflow.operators import generic as _generic

        return _generic.unary_frontier(self, pact, name, constructor)

    def unary_notify(self, pact: PactLike, name: str, init_times: Iterable[Time],
                     logic: Callable[[InputHandleCore[T], OutputHandle[U], Notificator], object],
                     ) -> Stream[U]:
        """An operator driven by notifications: ``logic(input, output,
        notificator)``.

        ``notificator.notify_at(cap)`` asks to be told when ``cap``'s time is
        complete at the input; iterating the notificator (``for cap, count in
        notificator``) yields those capabilities in time order once their time
        is complete, and the logic sends with them. ``init_times`` are times
        to be notified at from the start: the operator holds a capability at
        each until it is delivered (for operators that must act at given
        times even when no record arrives). Each notification costs a
        logarithmic-time update of the pending times.
        """
        from timely.dataflow.operators import generic as _generic

        return _generic.unary_notify(self, pact, name, init_times, logic)

    def binary(self, other: Stream[V], pact1: PactLike, pact2: PactLike, name: str,
               constructor: Callable[[Capability, OperatorInfo],
                                     Callable[[InputHandleCore[T], InputHandleCore[V], OutputHandle[U]],
                                              object]],
               ) -> Stream[U]:
        """``constructor(capability, info)`` returns ``logic(input1, input2, output)``."""
        from timely.dataflow.operators import generic as _generic

        return _generic.binary(self, other, pact1, pact2, name, constructor)

    def binary_frontier(self, other: Stream[V], pact1: PactLike, pact2: PactLike, name: str,
                        constructor: Callable[[Capability, OperatorInfo],
                                              Callable[[InputHandleCore[T], InputHandleCore[V],
                                                        OutputHandle[U]], object]],
                        ) -> Stream[U]:
        """As :meth:`binary`, and the logic is also called when either input's frontier
        changes; it reads ``input1.frontier`` and ``input2.frontier`` to act on complete
        times.
        """
        from timely.dataflow.operators import generic as _generic

        return _generic.binary_frontier(self, other, pact1, pact2, name, constructor)

    def binary_notify(self, other: Stream[V], pact1: PactLike, pact2: PactLike, name: str,
                      init_times: Iterable[Time],
                      logic: Callable[[InputHandleCore[T], InputHandleCore[V], OutputHandle[U],
                                       Notificator], object],
                      ) -> Stream[U]:
        """As :meth:`unary_notify`, with two inputs:
        ``logic(input1, input2, output, notificator)``; a time is delivered
        once it is complete at both inputs."""
        from timely.dataflow.operators import generic as _generic

        return _generic.binary_notify(self, other, pact1, pact2, name, init_times, logic)

    # -- the rest of the crate's operators -------------------------------------

    def ok_err(self, logic: Callable[[T], Ok | Err], *,
               name: str | None = None) -> tuple[Stream[Any], Stream[Any]]:
        """``(ok_stream, err_stream)`` by ``logic(record)``, which returns
        ``Ok(x)`` (``x`` to the first) or ``Err(e)`` (``e`` to the second)."""
        from timely.dataflow.operators.result import ok_err

        return ok_err(self, logic, name=name)

    def map_ok(self, logic: Callable[[Any], Any], *, name: str | None = None) -> Stream[Any]:
        """``Ok(logic(x))`` for each ``Ok(x)``; ``Err`` records unchanged.

        >>> import timely
        >>> from timely import Err, Ok
        >>> timely.example(lambda s: s.to_stream([Ok(0), Err(())]).map_ok(lambda x: x + 1).capture()).extract()
        [(0, [Err(()), Ok(1)])]
        """
        from timely.dataflow.operators.result import map_ok

        return map_ok(self, logic, name=name)

    def map_err(self, logic: Callable[[Any], Any], *, name: str | None = None) -> Stream[Any]:
        """``Err(logic(e))`` for each ``Err(e)``; ``Ok`` records unchanged.

        >>> import timely
        >>> from timely import Err, Ok
        >>> timely.example(lambda s: s.to_stream([Ok(0), Err(())]).map_err(lambda e: 1).capture()).extract()
        [(0, [Err(1), Ok(0)])]
        """
        from timely.dataflow.operators.result import map_err

        return map_err(self, logic, name=name)

    def and_then(self, logic: Callable[[Any], Ok | Err], *, name: str | None = None) -> Stream[Any]:
        """``logic(x)`` (an ``Ok`` or ``Err``) for each ``Ok(x)``; ``Err`` unchanged.

        >>> import timely
        >>> from timely import Err, Ok
        >>> timely.example(lambda s: s.to_stream([Ok(0), Err(())]).and_then(lambda x: Ok(x + 2)).capture()).extract()
        [(0, [Err(()), Ok(2)])]
        """
        from timely.dataflow.operators.result import and_then

        return and_then(self, logic, name=name)

    def unwrap_or_else(self, logic: Callable[[Any], Any], *,
                       name: str | None = None) -> Stream[Any]:
        """``x`` for each ``Ok(x)``, ``logic(e)`` for each ``Err(e)``.

        >>> import timely
        >>> from timely import Err, Ok
        >>> timely.example(lambda s: s.to_stream([Ok(1), Err(())]).unwrap_or_else(lambda e: 0).capture()).extract()
        [(0, [0, 1])]
        """
        from timely.dataflow.operators.result import unwrap_or_else

        return unwrap_or_else(self, logic, name=name)

    def delay_total(self, fn: Callable[[T, Time], Time], *, name: str | None = None) -> Stream[T]:
        """For totally ordered times: each record moves to ``fn(record, time)``,
        sent when that time completes.

        >>> import timely
        >>> timely.example(lambda s: s.to_stream(range(4)).delay_total(lambda x, t: x * 2).capture()).extract()
        [(0, [0]), (2, [1]), (4, [2]), (6, [3])]
        """
        return _core.delay_total(self, fn, name=name)

    def enter_at(self, scope: Scope, initial: Callable[[T], int], *,
                 name: str | None = None) -> Stream[T]:
        """This stream inside the nested ``scope``, each record entering at
        the inner coordinate ``initial(record)`` instead of 0 (released once
        that inner time is complete).

        >>> import timely
        >>> def build(scope):
        ...     with scope.iterative() as inner:
        ...         entered = scope.to_stream(range(3)).enter_at(inner, lambda x: x)
        ...         out = entered.capture()
        ...         entered.leave()
        ...     return out
        >>> timely.example(build).extract()
        [((0, 0), [0]), ((0, 1), [1]), ((0, 2), [2])]
        """
        from timely.dataflow.operators import enterleave as _el

        return _el.enter_at(self, scope, initial, name=name)

    def inspect_core(self, fn: Callable[[Ok | Err], object], *,
                     name: str | None = None) -> Stream[T]:
        """Calls ``fn(Ok((time, batch)))`` per batch and ``fn(Err(frontier))``
        (the input frontier's elements) whenever the frontier changes.

        >>> import timely
        >>> events = []
        >>> _ = timely.example(lambda s: s.to_stream(range(3)).inspect_core(events.append))
        >>> events
        [Ok((0, [0, 1, 2])), Err([])]
        """
        return _core.inspect_core(self, fn, name=name)

    def concatenate(self, others: Iterable[Stream[T]], *, name: str | None = None) -> Stream[T]:
        """The records of this stream and of every stream in ``others``.

        >>> import timely
        >>> def build(scope):
        ...     a, b, c = (scope.to_stream([i]) for i in range(3))
        ...     return a.concatenate([b, c]).capture()
        >>> timely.example(build).extract()
        [(0, [0, 1, 2])]
        """
        return _core.concatenate(self.scope, [self, *others], name=name)

    def state_machine(self, fold: Callable[..., Any], route: Callable[[Any], object] | None = None,
                      default: Callable[[], Any] = int, *,
                      name: str | None = None) -> Stream[Any]:
        """A state per key of ``(key, value)`` records; see
        :func:`timely.dataflow.operators.aggregation.state_machine`."""
        from timely.dataflow.operators.aggregation import state_machine

        return state_machine(self, fold, route, default, name=name)
