"""Inputs: records introduced into a dataflow from outside it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, TypeVar

from timely.container import Batch
from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.capability import Capability
from timely.dataflow.handles import BUFFER, Session
from timely.dataflow.time import from_datetime, minimum
from timely.errors import CapabilityError, ColumnarError, DataflowError
from timely.progress.timestamp import less_equal, validate

if TYPE_CHECKING:
    from timely.dataflow.builder import OperatorInfo
    from timely.progress.frontier import MutableAntichain

    Frontiers = list[MutableAntichain]
    from timely.dataflow.builder import Activator
    from timely.dataflow.handles import OutputHandle
    from timely.dataflow.scope import Scope
    from timely.dataflow.stream import Stream
    from timely.dataflow.time import Time, TimeLike

T = TypeVar("T")


class InputHandle(Generic[T]):
    """Feeds one input operator (per worker): ``InputHandle[T]`` sends
    records of type ``T`` (``Batch`` for a columnar input).

    ``send(record)`` / ``send_batch(records)`` introduce records at the
    handle's current ``time``; ``advance_to(t)`` promises no more records
    before ``t``; ``close()`` promises no more records at all (also done when
    the handle is garbage collected).

    >>> import timely
    >>> def work(worker):
    ...     with worker.dataflow() as scope:
    ...         handle, stream = scope.new_input()
    ...         out = stream.map(lambda x: x + 1).capture()
    ...     for t in range(3):
    ...         handle.send(t)
    ...         handle.advance_to(t + 1)
    ...     handle.close()
    ...     worker.drain()
    ...     return out.extract()
    >>> timely.execute_directly(work)
    [(0, [1]), (1, [2]), (2, [3])]
    """

    # None until ``_attach``; ``_check()`` (or a test of ``_output``) guards
    # every use, so they are typed as attached, without a check per message.
    _output: OutputHandle[T]
    _cap: Capability
    _activator: Activator

    def __init__(self) -> None:
        self._output = None  # type: ignore[assignment]  # not attached yet (see above)
        self._cap = None  # type: ignore[assignment]
        self._activator = None  # type: ignore[assignment]
        self._buffer: list[T] = []
        self._time: Time = 0
        self._arity: int | None = None
        self._closed = False
        self._await_window: Callable[[], object] | None = None

    def _attach(self, output: OutputHandle[T], capability: Capability, activator: Activator,
                arity: int, await_window: Callable[[], object] | None = None) -> None:
        if self._output is not None:
            raise DataflowError("this InputHandle already feeds an input")
        self._await_window = await_window
        self._output = output
        self._cap = capability
        self._activator = activator
        self._arity = arity
        self._time = minimum(arity)

    def _check(self) -> None:
        if self._output is None:
            raise DataflowError("this InputHandle is not attached to a dataflow yet")
        if self._closed:
            raise CapabilityError("this InputHandle was closed")

    @property
    def time(self) -> Time:
        """The time at which sent records enter."""
        return self._time

    def send(self, record: T) -> None:
        """Sends ``record`` at the handle's current time. Records are buffered and sent in
        batches; amortized constant time.

        Raises :class:`timely.CapabilityError` if the handle is closed,
        :class:`timely.DataflowError` if it is not attached to a dataflow yet,
        and :class:`timely.ColumnarError` for a columnar Batch (a batch is
        sent whole with :meth:`send_batch`).
        """
        self._check()
        if type(record) is Batch:
            raise ColumnarError("send() sends one record, and this is a columnar Batch: send "
                                "it whole with send_batch(batch)")
        self._buffer.append(record)
        if len(self._buffer) >= BUFFER:
            self.flush()

    def send_batch(self, records: Iterable[T] | Batch) -> None:
        """Sends a whole batch as one message. A list is copied (one pointer
        per record), so the caller may clear or reuse it at once; a columnar
        :class:`~timely.Batch` is immutable and is handed over as it is."""
        self._check()
        if self._buffer:
            self.flush()
        if not isinstance(records, Batch):
            records = list(records)
        if len(records):
            self._give(records)

    def flush(self) -> None:
        """Pushes buffered records into the dataflow. While another worker
        holds a full window of this worker's data (backpressure, see
        :meth:`timely.Worker.await_window`), it first steps the worker until
        that worker has taken some in."""
        if self._buffer and self._output is not None:
            buffer = self._buffer
            self._buffer = []
            self._give(buffer)

    def _give(self, records: list[T] | Batch) -> None:
        # Waits for the send window first, so a sender is out at most a
        # window and this one message.
        if self._await_window is not None:
            self._await_window()
        self._output.session(self._cap).give_owned(records)
        self._activator.activate()

    def advance_to(self, time: TimeLike) -> None:
        """No more records before ``time``; ``time`` must not be earlier than ``self.time``.

        A ``datetime`` or ``numpy.datetime64`` (or a tuple holding them) is
        converted to nanoseconds since the Unix epoch (see
        :func:`timely.dataflow.time.from_datetime`; ``to_datetime64`` maps
        a time back).

        >>> import timely, numpy as np
        >>> from timely.dataflow.time import to_datetime64
        >>> def work(worker):
        ...     with worker.dataflow() as scope:
        ...         handle, stream = scope.new_input()
        ...         out = stream.capture()
        ...     handle.advance_to(np.datetime64("2024-05-01T12:00"))
        ...     handle.send("noon")
        ...     handle.close()
        ...     worker.drain()
        ...     return [(str(to_datetime64(t)), data) for t, data in out.extract()]
        >>> timely.execute_directly(work)
        [('2024-05-01T12:00:00.000000000', ['noon'])]
        """
        self._check()
        new = validate(from_datetime(time), self._arity)
        if not less_equal(self._time, new):
            raise CapabilityError(f"cannot advance input from {self._time!r} back to {new!r}")
        self.flush()
        if new != self._time:
            self._output.flush()
            self._cap.downgrade(new)
            self._time = new
            self._activator.activate()

    def close(self) -> None:
        """No more records from this handle."""
        if self._closed or self._output is None:
            self._closed = True
            return
        self.flush()
        self._output.flush()
        self._closed = True
        self._cap.drop()
        self._activator.activate()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def __del__(self) -> None:
        if not self._closed and self._output is not None:
            try:
                self.close()
            except Exception:  # the dataflow is already gone
                pass


def input_from(scope: Scope, handle: InputHandle[T], name: str | None = None) -> Stream[T]:
    """The stream of an ``Input`` operator (or one called ``name``) fed by ``handle``."""
    b = OperatorBuilder(operator_name(name, "Input"), scope)
    out, stream = b.new_output()

    def build(caps: list[Capability], info: OperatorInfo) -> Callable[[Frontiers], object]:
        handle._attach(out, caps[0], info.activator, b.arity, scope.worker.await_window)
        caps.clear()
        return lambda frontiers: False

    b.build(build)
    return stream


class UnorderedHandle(Generic[T]):
    """Sends records at any time a capability of its input allows.

    ``handle.session(cap).give(x)`` sends and schedules the input operator;
    ``handle.activate()`` (as the crate's) schedules it and returns the
    handle, so ``handle.activate().session(cap)`` reads as in Rust.
    """

    def __init__(self, output: OutputHandle[T], activator: Activator) -> None:
        self._output = output
        self._activator = activator

    def session(self, capability: Capability) -> Session[T]:
        """A session sending at ``capability``'s time; schedules the input operator."""
        session = self._output.session(capability)
        self._activator.activate()
        return session

    def activate(self) -> UnorderedHandle[T]:
        """Schedules the input operator; returns this handle."""
        self._activator.activate()
        return self

    def flush(self) -> None:
        """Pushes buffered records and schedules the input operator."""
        self._output.flush()
        self._activator.activate()


def new_unordered_input(scope: Scope, name: str | None = None,
                        ) -> tuple[tuple[UnorderedHandle[Any], Capability], Stream[Any]]:
    """``((handle, capability), stream)``, as the crate's ``new_unordered_input``;
    the operator is ``UnorderedInput``, or ``name``."""
    b = OperatorBuilder(operator_name(name, "UnorderedInput"), scope)
    out, stream = b.new_output()
    holder: dict[str, Any] = {}

    def build(caps: list[Capability], info: OperatorInfo) -> Callable[[Frontiers], object]:
        holder["handle"] = UnorderedHandle(out, info.activator)
        holder["cap"] = caps[0]
        caps.clear()
        return lambda frontiers: False

    b.build(build)
    return (holder.pop("handle"), holder.pop("cap")), stream


# Records ``to_stream`` gives per scheduling before it yields to other
# operators (the crate gives 256 buffers' worth).
TO_STREAM_CHUNK = 256 * BUFFER


def to_stream(scope: Scope, iterable: Iterable[T], name: str | None = None) -> Stream[T]:
    """The records of ``iterable``, at the minimum time, read a chunk per
    scheduling (so an unbounded or slow iterator does not starve the rest of
    the dataflow); the capability is dropped when it is exhausted. The
    operator is ``ToStream``, or ``name``."""
    import itertools

    b = OperatorBuilder(operator_name(name, "ToStream"), scope)
    out, stream = b.new_output()

    def build(caps: list[Capability], info: OperatorInfo) -> Callable[[Frontiers], object]:
        cap = [caps[0]]
        caps.clear()
        records = iter(iterable)
        activate = info.activator.activate

        def run(frontiers: Frontiers) -> None:
            if cap:
                chunk = list(itertools.islice(records, TO_STREAM_CHUNK))
                if chunk:
                    out.session(cap[0]).give_container(chunk)
                if len(chunk) < TO_STREAM_CHUNK:
                    cap.pop().drop()
                else:
                    activate()

        return run

    b.build(build)
    return stream
