"""Scopes: where operators are built. The root scope of a dataflow has integer
timestamps; ``iterative()``/``scoped()`` open a child scope whose timestamps
add one coordinate; ``region()`` opens one with the same timestamps.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Iterator, TypeVar, overload

from timely.dataflow.time import summary_for
from timely.errors import SummaryError
from timely.dataflow.subgraph import Subgraph

if TYPE_CHECKING:
    from timely.dataflow.builder import Activator, OperatorInfo
    from timely.dataflow.capability import Capability
    from timely.dataflow.handles import OutputHandle
    from timely.dataflow.operators.feedback import LoopHandle
    from timely.dataflow.operators.flow_controlled import IteratorSourceInput
    from timely.dataflow.operators.input import InputHandle, UnorderedHandle
    from timely.dataflow.operators.probe import ProbeHandle
    from timely.dataflow.stream import Stream
    from timely.progress.timestamp import PathSummary

T = TypeVar("T")


class Scope:
    """A scope under construction: a handle for building operators in it."""

    # worker: the timely.Worker building this scope (a layer above: not imported)
    def __init__(self, worker: Any, subgraph: Subgraph, parent: Scope | None) -> None:
        self.worker = worker
        self._subgraph = subgraph
        self.parent = parent

    # -- facts ---------------------------------------------------------------

    @property
    def index(self) -> int:
        """This worker's index."""
        return self.worker.index

    @property
    def peers(self) -> int:
        """The number of workers in the computation."""
        return self.worker.peers

    @property
    def subgraph(self) -> Subgraph:
        """The scope's run-time graph (read-only): where operators built in
        this scope are added."""
        return self._subgraph

    @property
    def arity(self) -> int:
        """Coordinates in this scope's timestamps: 1 at the root."""
        return self._subgraph.arity

    @property
    def name(self) -> str:
        """The scope's name (given to ``scoped``, or the kind of scope)."""
        return self._subgraph.name

    @property
    def address(self) -> tuple[int, ...]:
        """The scope's address: the path of operator indices from the worker's root."""
        return self._subgraph.path

    def __repr__(self) -> str:
        return f"Scope({self._subgraph.name!r}, arity={self.arity})"

    # -- inputs --------------------------------------------------------------

    @overload
    def new_input(self, *, name: str | None = None) -> tuple[InputHandle[Any], Stream[Any]]: ...
    @overload
    def new_input(self, record_type: type[T], *,
                  name: str | None = None) -> tuple[InputHandle[T], Stream[T]]: ...

    def new_input(self, record_type: type[Any] | None = None, *, name: str | None = None,
                  ) -> tuple[InputHandle[Any], Stream[Any]]:
        """An input: returns ``(handle, stream)``; see :class:`~timely.InputHandle`.
        The input operator is called ``name`` in log events, pictures, stall
        reports and errors (``Input`` without it); a name that is not a
        non-empty str raises TypeError.

        ``record_type`` is for type checkers only (it is not checked at run
        time): ``scope.new_input(int)`` is an ``(InputHandle[int],
        Stream[int])``, so ``handle.send("x")`` or a ``map`` of a function of
        ``str`` is reported. Without it the pair is ``(InputHandle[Any],
        Stream[Any])``, unless the names are annotated
        (``handle: InputHandle[int]``).
        """
        from timely.dataflow.operators.input import InputHandle

        handle: InputHandle[Any] = InputHandle()
        return handle, self.input_from(handle, name=name)

    def input_from(self, handle: InputHandle[T], *, name: str | None = None) -> Stream[T]:
        """Attaches an unattached :class:`~timely.InputHandle`; returns its
        stream. The operator is called ``name`` (``Input`` without it)."""
        from timely.dataflow.operators.input import input_from

        return input_from(self, handle, name)

    def new_unordered_input(self, *, name: str | None = None,
                            ) -> tuple[tuple[UnorderedHandle[Any], Capability], Stream[Any]]:
        """An input whose records may be sent at any time the capability allows:
        returns ``((handle, capability), stream)`` as the crate does;
        ``handle.session(cap).give(x)`` or ``handle.activate().session(cap)``.
        The operator is called ``name`` (``UnorderedInput`` without it).

        >>> import timely
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         (handle, cap), stream = scope.new_unordered_input()
        ...         out = stream.capture()
        ...     handle.activate().session(cap.delayed(3)).give("late")
        ...     handle.session(cap).give("early")
        ...     cap.drop()
        ...     worker.drain()
        ...     return out.extract()
        >>> timely.execute_directly(work)
        [(0, ['early']), (3, ['late'])]
        """
        from timely.dataflow.operators.input import new_unordered_input

        return new_unordered_input(self, name)

    def to_stream(self, iterable: Iterable[T], *, name: str | None = None) -> Stream[T]:
        """A stream of this worker's records from ``iterable``, all at the
        minimum time. The operator is called ``name`` (``ToStream`` without it).

        >>> import timely
        >>> timely.example(lambda s: s.to_stream("ab", name="letters").capture()).extract()
        [(0, ['a', 'b'])]
        """
        from timely.dataflow.operators.input import to_stream

        return to_stream(self, iterable, name)

    def source(self, name: str,
               constructor: Callable[[Capability, OperatorInfo],
                                     Callable[[OutputHandle[T]], object]]) -> Stream[T]:
        """An operator with no inputs and one output.

        ``constructor(capability, info)`` returns ``logic(output)``; the logic is
        scheduled once at the start and then when ``info.activator`` is activated.
        """
        from timely.dataflow.operators.generic import source

        return source(self, name, constructor)

    def concatenate(self, streams: Iterable[Stream[T]], *,
                    name: str | None = None) -> Stream[T]:
        """One stream with the records of all ``streams``; the operator is
        called ``name`` (``Concatenate`` without it)."""
        from timely.dataflow.operators.core import concatenate

        return concatenate(self, list(streams), name)

    def empty(self, *, name: str | None = None) -> Stream[Any]:
        """A stream with no records, complete at once (the crate's ``empty``).

        >>> import timely
        >>> timely.example(lambda scope: scope.empty().capture()).extract()
        []
        """
        from timely.dataflow.operators.core import empty

        return empty(self, name)

    def iterator_source(self, name: str,
                        input_fn: Callable[[Any], IteratorSourceInput | None],
                        probe: ProbeHandle) -> Stream[Any]:
        """A flow-controlled source; see
        :func:`timely.dataflow.operators.flow_controlled.iterator_source`."""
        from timely.dataflow.operators.flow_controlled import iterator_source

        return iterator_source(self, name, input_fn, probe)

    def activator_for(self, address: Iterable[int]) -> Activator:
        """An activator for the operator at ``address`` (``info.address``) in
        this scope or an enclosing one, also while it is being built.

        >>> import timely
        >>> def constructor(cap, info):
        ...     activator = scope.activator_for(info.address)
        ...     left = [3]
        ...     def logic(output):
        ...         if not left[0]:
        ...             return                      # scheduled again after it finished
        ...         output.session(cap).give(left[0])
        ...         left[0] -= 1
        ...         if left[0]:
        ...             activator.activate()        # run again
        ...         else:
        ...             cap.drop()
        ...     return logic
        >>> def build(s):
        ...     global scope
        ...     scope = s
        ...     return s.source("Countdown", constructor).capture()
        >>> timely.example(build).extract()
        [(0, [1, 2, 3])]
        """
        from timely.dataflow.builder import Activator

        address = tuple(address)
        sub: Subgraph | None = self._subgraph
        while sub is not None:
            if sub.path == address[:-1]:
                return Activator(sub, address[-1])
            sub = sub.parent
        return self.worker.activator_for(address)

    def sync_activator_for(self, address: Iterable[int]) -> Any:
        """An activator for the operator at ``address`` that other threads may
        use; see :meth:`timely.Worker.sync_activator_for`."""
        return self.worker.sync_activator_for(address)

    # -- loops ---------------------------------------------------------------

    def feedback(self, summary: int | tuple[int, ...] | PathSummary, *,
                 name: str | None = None) -> tuple[LoopHandle[Any], Stream[Any]]:
        """A loop: returns ``(handle, stream)``. Records given to ``handle`` (by
        ``stream.connect_loop(handle)``) reappear on ``stream`` with their time
        advanced by ``summary`` (an int increments the innermost coordinate).

        Raises :class:`timely.SummaryError` if ``summary`` does not advance
        timestamps (a cycle must strictly advance them, or progress could
        never be made). The loop's operator is called ``name`` (``Feedback``
        without it).
        """
        from timely.dataflow.operators.feedback import feedback

        ps = summary_for(summary, self.arity)
        if ps.is_zero():
            raise SummaryError(
                f"feedback summary {summary!r} does not advance timestamps: every cycle must "
                f"strictly advance them (use 1, or a summary with a positive coordinate)")
        return feedback(self, ps, name)

    loop_variable = feedback

    # -- child scopes --------------------------------------------------------

    @contextlib.contextmanager
    def _child(self, name: str, nested: bool) -> Iterator[Scope]:
        parent = self._subgraph
        index = parent.allocate_index()
        arity = parent.arity + 1 if nested else parent.arity
        child_sub = Subgraph(self.worker, name, (*parent.path, index), arity, nested,
                             parent=parent, index_in_parent=index)
        child = Scope(self.worker, child_sub, parent=self)
        yield child
        child._finish()
        child_sub.build()
        parent.add_child(index, child_sub)

    def iterative(self, name: str = "Iterative") -> ContextManager[Scope]:
        """A child scope whose timestamps add a loop counter: ``(outer..., iteration)``."""
        return self._child(name, nested=True)

    def scoped(self, name: str = "Scope") -> ContextManager[Scope]:
        """A child scope whose timestamps add one coordinate."""
        return self._child(name, nested=True)

    def region(self, name: str = "Region") -> ContextManager[Scope]:
        """A child scope with the same timestamps: groups operators."""
        return self._child(name, nested=False)

    def _finish(self) -> None:
        """Called when the scope's block ends."""
