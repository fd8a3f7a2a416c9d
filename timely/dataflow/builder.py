"""The general operator builder: any number of inputs and outputs, with
per input-to-output connection summaries (including "not connected").

>>> import timely
>>> from timely.dataflow.builder import OperatorBuilder
>>> def work(worker):
...     with worker.dataflow() as scope:
...         stream = scope.to_stream(range(3))
...         b = OperatorBuilder("Double", scope)
...         inp = b.new_input(stream, timely.Pipeline)
...         out, doubled = b.new_output()
...         def constructor(capabilities, info):
...             capabilities.clear()
...             def logic(frontiers):
...                 for cap, data in inp:
...                     out.session(cap).give_container([2 * x for x in data])
...             return logic
...         b.build(constructor)
...         result = doubled.capture()
...     worker.drain()
...     return result.extract()
>>> timely.execute_directly(work)
[(0, [0, 2, 4])]
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from timely.dataflow._activate import ChildActivator, Schedulable
from timely.dataflow.activate import Activator
from timely.dataflow.capability import Capability
from timely.dataflow.channels import Counter, Tee
from timely.dataflow.handles import InputHandleCore, OutputHandle, settle
from timely.dataflow.time import minimum, summary_for
from timely.errors import DataflowError
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import MutableAntichain
from timely.progress.operate import Operate, SharedProgress

if TYPE_CHECKING:
    from types import FrameType


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EXAMPLES = os.path.join(_PACKAGE, "examples") + os.sep


def _internal_file(filename: str) -> bool:
    return filename.startswith(_PACKAGE) and not filename.startswith(_EXAMPLES)


def is_internal(site: str) -> bool:
    """``site`` (``file:line``) is inside the timely package (its examples aside)."""
    return _internal_file(site.rsplit(":", 1)[0])


def _user_frame() -> tuple[FrameType | None, int]:
    """The innermost frame outside the timely package, starting at the
    caller of this function's caller, and its ``stacklevel`` for a
    ``warnings.warn`` in that caller (1: the caller itself)."""
    f: FrameType | None = sys._getframe(2)
    level = 1
    while f is not None and _internal_file(f.f_code.co_filename):
        f = f.f_back
        level += 1
    return f, level


def user_site() -> str | None:
    """``file:line`` of the innermost caller outside the timely package:
    where the user's program built what is being built (once per operator)."""
    f, _ = _user_frame()
    return None if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


def user_stacklevel() -> int:
    """The ``stacklevel`` at which a warning its caller issues names the
    innermost line outside the timely package (the user's)."""
    return _user_frame()[1]


def operator_name(name: object, default: str) -> str:
    """The name an operator is built with: ``name`` when given, else
    ``default``. The name is what log events, pictures, stall reports and
    error messages call the operator, so it must be a str with something
    to show; anything else raises TypeError naming the parameter ``name``.

    >>> operator_name(None, "Map"), operator_name("parse events", "Map")
    ('Map', 'parse events')
    """
    if name is None:
        return default
    if not isinstance(name, str):
        raise TypeError(f"name must be a non-empty str, not {name!r} of type "
                        f"{type(name).__name__}")
    if not name.strip():
        raise TypeError(f"name must be a non-empty str, not {name!r}")
    return name


class OperatorInfo:
    """What an operator knows about itself: name, index in its scope, address."""

    __slots__ = ("name", "index", "address", "activator", "worker_index", "peers")

    name: str
    index: int
    address: tuple[int, ...]
    activator: Activator
    worker_index: int
    peers: int

    def __init__(self, name: str, index: int, address: tuple[int, ...], activator: Activator,
                 worker_index: int, peers: int) -> None:
        self.name = name
        self.index = index
        self.address = address
        self.activator = activator
        self.worker_index = worker_index
        self.peers = peers

    def __repr__(self) -> str:
        return f"OperatorInfo({self.name!r}, address={self.address})"


class OperatorCore(Operate):
    """A built operator: runs its logic with its input frontiers, then ends
    the validity of its inputs' current messages and flushes its outputs."""

    __slots__ = ("name", "inputs", "outputs", "notify", "progress", "_summary", "_frontiers",
                 "_logic", "_outputs", "_inputs", "reads_every_copy")

    local = True

    def __init__(self, name, summary, frontiers, notify, logic, inputs, outputs, progress,
                 reads_every_copy=False):
        self.name = name
        # Its inputs' frontiers are every worker's copy's (a probe), not its own copy's.
        self.reads_every_copy = reads_every_copy
        self.inputs = len(frontiers)
        self.outputs = len(outputs)
        self.notify = notify
        self.progress = progress
        self._summary = summary
        self._frontiers = frontiers
        self._logic = logic
        self._inputs = inputs
        self._outputs = outputs

    def summary(self):
        return self._summary

    # A read-only view where Operate allows a plain attribute: the scope
    # only reads it.
    @property
    def watches(self) -> list[bool]:  # type: ignore[override]
        return [f is not None for f in self._frontiers]

    @property
    def input_frontiers(self) -> list:  # type: ignore[override]
        """The input frontiers the scope keeps up to date (``push_frontier``
        is then not called for them)."""
        return self._frontiers

    def push_frontier(self, port: int, changes) -> None:
        self._frontiers[port].update_iter(changes)

    @property
    def output_handles(self) -> list:
        """The operator's output handles, which count its live capabilities
        (what the stall report reads)."""
        return self._outputs

    @property
    def compiled_logic(self):
        """The logic, when it is a :class:`Schedulable` (a stateless record
        operator's, which takes no input capability and buffers no output):
        the scope runs it in place of :meth:`schedule`; else None."""
        return self._logic if isinstance(self._logic, Schedulable) else None

    def schedule(self) -> bool:
        result = self._logic(self._frontiers)
        settle(self._inputs, self._outputs)
        return bool(result)

    def shut_down(self) -> None:
        self._logic = None


class OperatorBuilder:
    """Builds an operator with any number of inputs and outputs.

    ``new_input(stream, pact, connection=None)`` and ``new_output(connection=None)``
    add ports. Without a connection, a new port reaches every port of the
    other side with the identity summary. With one (as the crate's
    ``new_input_connection``/``new_output_connection``), ``connection`` maps
    the other side's port to its list of summaries, and every port of the
    other side it leaves out is not connected (an empty list says the same
    explicitly). An input's connection may also name outputs made later:
    what it says of them stands. ``build(constructor)``
    calls ``constructor(capabilities, info)`` with one capability per output
    (at the minimum time) and installs the returned ``logic(frontiers)``.
    """

    def __init__(self, name: str, scope):
        self.name = name
        self.scope = scope
        self.worker = scope.worker
        subgraph = scope.subgraph
        self._subgraph = subgraph
        self.index = subgraph.allocate_index()
        self.arity = subgraph.arity
        self.activator = Activator(subgraph, self.index)
        self.site = user_site()
        self._inputs: list = []
        self._frontiers: list = []
        self._consumeds: list = []
        self._internals: list = []
        self._produceds: list = []
        self._outputs: list = []
        self._notify: list = []
        self._connection: dict = {}
        self._input_summaries: list = []   # per input: per output list of PathSummary (at build)
        self._built = False
        # Whether the operator's input frontiers are to be every worker's
        # copy's, as a probe's are, rather than its own copy's.
        self.reads_every_copy = False

    @property
    def address(self):
        """The operator's address: its scope's path and its own index."""
        return (*self._subgraph.path, self.index)

    def _summaries(self, items):
        return [summary_for(s, self.arity) for s in items]

    def input_frontier(self, port: int):
        """The frontier of input ``port`` that the scope keeps up to date (a
        :class:`~timely.progress.MutableAntichain`; None for an input built
        with ``notify=False``): what compiled logic reads in place of the
        ``frontiers`` argument."""
        return self._frontiers[port]

    def new_input(self, stream, pact, connection=None, notify: bool = True) -> InputHandleCore:
        """Adds an input reading ``stream`` through ``pact``; returns its handle.
        ``connection`` maps an output port to its list of path summaries (default: the
        identity to every output); an output it leaves out is not connected, as in the
        crate's ``new_input_connection``. With ``notify`` false the operator is not
        scheduled on frontier changes of this input.

        Raises :class:`timely.DataflowError` if the operator is already built or ``stream``
        belongs to another scope.
        """
        if self._built:
            raise DataflowError(f"operator {self.name!r} is already built")
        if stream.scope.subgraph is not self._subgraph:
            raise DataflowError(
                f"operator {self.name!r}: the stream belongs to scope {stream.scope.subgraph.name!r}, "
                f"not {self._subgraph.name!r}; use enter() or leave()")
        port = len(self._frontiers)
        if connection is not None:
            items = connection.items() if isinstance(connection, dict) else enumerate(connection)
            for output, summaries in items:
                self._connection[(port, output)] = self._summaries(summaries)
            for output in range(len(self._outputs)):
                self._connection.setdefault((port, output), [])     # left out: not connected
        if isinstance(pact, type):
            pact = pact()      # `timely.Pipeline` may be passed without parentheses
        identifier = self.worker.next_channel_id()
        # The scope's activations themselves, not the Activator's method that
        # calls them: compiled pushers activate the consumer with no Python frame.
        pusher, puller = pact.connect(self.worker, identifier,
                                      ChildActivator(self._subgraph.activations, self.index))
        if self.worker.logger is not None:
            pusher, puller = self.worker.logger.channel(
                identifier, self._subgraph, stream.source, (self.index, port), pact, pusher, puller)
        stream.connect_to((self.index, port), pusher, pact)
        # Operators that neither watch nor check frontiers (the stateless record
        # operators build their inputs with notify=False) keep none.
        keep = notify or self.worker.check_progress
        frontier = MutableAntichain(arity=self.arity) if keep else None
        consumed = ChangeBatch(arity=self.arity)
        self._consumeds.append(consumed)
        summaries_out: list = []           # per output, filled in at build
        self._input_summaries.append(summaries_out)
        self._frontiers.append(frontier)
        self._notify.append(notify)
        handle: InputHandleCore[Any] = InputHandleCore(puller, consumed, self._outputs, summaries_out,
                                               frontier, self.worker.check_progress,
                                               f"{self.name} input {port}")
        self._inputs.append(handle)
        return handle

    def new_output(self, connection=None):
        """Adds an output; returns ``(OutputHandle, Stream)``. ``connection``
        as in :meth:`new_output_connection` (default: the identity from every
        input)."""
        from timely.dataflow.stream import Stream

        if self._built:
            raise DataflowError(f"operator {self.name!r} is already built")
        port = len(self._outputs)
        if connection is not None:
            items = connection.items() if isinstance(connection, dict) else enumerate(connection)
            for input_port, summaries in items:
                self._connection[(input_port, port)] = self._summaries(summaries)
            for input_port in range(len(self._frontiers)):
                # Left out: not connected, unless the input said otherwise.
                self._connection.setdefault((input_port, port), [])
        internal = ChangeBatch(arity=self.arity)
        produced = ChangeBatch(arity=self.arity)
        tee = Tee()
        handle: OutputHandle[Any] = OutputHandle(port, internal, Counter(tee, produced),
                                                 self._inputs, (self.name, self.address, self.site))
        self._internals.append(internal)
        self._produceds.append(produced)
        self._outputs.append(handle)
        return handle, Stream(self.scope, (self.index, port), tee)

    def new_output_connection(self, connection):
        """Adds an output reached from each input only as ``connection`` says
        (the crate's ``new_output_connection``): ``connection`` maps an input
        port to its list of path summaries to the new output; an input it
        does not name (or names with an empty list) is not connected, unless
        that input's own connection named this output. Returns
        ``(OutputHandle, Stream)``.

        >>> import timely
        >>> from timely.dataflow.builder import OperatorBuilder
        >>> def build(scope):
        ...     b = OperatorBuilder("NextRound", scope)
        ...     inp = b.new_input(scope.to_stream([1, 2]), timely.Pipeline)
        ...     out, stream = b.new_output_connection({0: [1]})     # output times are input + 1
        ...     def constructor(caps, info):
        ...         caps.clear()
        ...         def logic(frontiers):
        ...             for cap, data in inp:
        ...                 out.session(cap.delayed(cap.time + 1, out.output_index)).give_container(data)
        ...         return logic
        ...     b.build(constructor)
        ...     return stream.capture()
        >>> timely.example(build).extract()
        [(1, [1, 2])]
        """
        return self.new_output(connection)

    def _summary_matrix(self):
        identity = [summary_for(0, self.arity)] if self.arity == 1 else [summary_for((0,) * self.arity, self.arity)]
        matrix = []
        for i in range(len(self._frontiers)):
            row = []
            for o in range(len(self._outputs)):
                row.append(self._connection.get((i, o), identity))
            matrix.append(row)
        return matrix

    @property
    def shared_progress(self) -> SharedProgress:
        """The progress this operator shares with its scope: what its input
        handles consume and its output handles produce is counted there
        already; an operator built with :meth:`build_raw` reports its
        capabilities in ``internals[port]`` (``+1`` made, ``-1`` dropped)."""
        return SharedProgress.of(self._consumeds, self._internals, self._produceds)

    @property
    def summary(self) -> list:
        """``[input][output]`` -> path summaries, as connected so far."""
        return [[list(s) for s in row] for row in self._summary_matrix()]

    def _seal(self) -> list:
        if self._built:
            raise DataflowError(f"operator {self.name!r} is already built")
        self._built = True
        matrix = self._summary_matrix()
        for i, summaries in enumerate(self._input_summaries):
            summaries.extend(matrix[i])
        return matrix

    def build_raw(self, operator: Operate) -> None:
        """Installs ``operator``, an :class:`~timely.progress.operate.Operate`
        written by hand, as this operator: the raw entry that capture and
        replay use. Its ports are the ones added to this builder; its
        ``progress`` must be :attr:`shared_progress`; it holds one initial
        capability per output at the minimum time (dropping it is ``-1`` in
        ``shared_progress.internals[port]``), as every worker's copy of the
        operator does.

        >>> import timely
        >>> from timely.progress.operate import Operate
        >>> class Once(Operate):
        ...     name, inputs, outputs = "Once", 0, 1
        ...     def __init__(self, output, progress):
        ...         self.output, self.progress, self.held = output, progress, True
        ...     def summary(self):
        ...         return []
        ...     def schedule(self):
        ...         if self.held:                  # it runs until the drop is seen
        ...             self.output.give_unchecked(0, ["hello"])
        ...             self.output.flush()
        ...             self.progress.internals[0].update(0, -1)  # drop the capability
        ...             self.held = False
        ...         return False
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         b = timely.OperatorBuilder("Once", scope)
        ...         output, stream = b.new_output()
        ...         b.build_raw(Once(output, b.shared_progress))
        ...         result = stream.capture()
        ...     worker.drain()
        ...     return result.extract()
        >>> timely.execute_directly(work)
        [(0, ['hello'])]
        """
        self._seal()
        progress = getattr(operator, "progress", None)
        if not isinstance(progress, SharedProgress) or (
                progress.consumeds is not self._consumeds
                or progress.internals is not self._internals
                or progress.produceds is not self._produceds):
            raise DataflowError(f"operator {self.name!r}: build_raw takes an operator whose "
                                "progress is the builder's shared_progress")
        if operator.inputs != len(self._frontiers) or operator.outputs != len(self._outputs):
            raise DataflowError(
                f"operator {self.name!r} has {operator.inputs} inputs and {operator.outputs} "
                f"outputs; the builder made {len(self._frontiers)} and {len(self._outputs)}")
        self._subgraph.add_child(self.index, operator)

    def build(self, constructor) -> None:
        """Mints the capabilities, calls ``constructor(capabilities, info)`` and
        installs the logic it returns: ``logic(frontiers)``."""
        matrix = self._seal()
        peers = self.worker.peers
        low = minimum(self.arity)
        # Every worker's scope starts with `peers` copies of each output's
        # initial capability (see Subgraph.build): their creation is common
        # knowledge and is not reported; dropping one is.
        capabilities = [Capability._minted(low, out) for out in self._outputs]
        info = OperatorInfo(self.name, self.index, self.address, self.activator,
                            self.worker.index, peers)
        logic = constructor(capabilities, info)
        del capabilities
        core = OperatorCore(self.name, [[list(s) for s in row] for row in matrix],
                            self._frontiers, self._notify, logic, self._inputs,
                            self._outputs, self.shared_progress, self.reads_every_copy)
        self._subgraph.add_child(self.index, core)
