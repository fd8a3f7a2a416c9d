"""``capture_into``: record everything a stream sees, data and progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Iterable, Iterator, NamedTuple, Protocol, TypeVar, Union, overload

from timely.container import Batch
from timely.dataflow.channels import Pipeline
from timely.dataflow.handles import InputHandleCore
from timely.dataflow.time import minimum
from timely.progress.change_batch import ChangeBatch
from timely.progress.frontier import MutableAntichain
from timely.progress.operate import Operate, SharedProgress

if TYPE_CHECKING:
    from timely.dataflow.stream import Stream
    from timely.dataflow.time import Time
    from timely.progress.frontier import Antichain

T = TypeVar("T")


class Progress(NamedTuple):
    """Changes ``[(time, diff), ...]`` to the captured stream's frontier."""

    updates: list[tuple[Time, int]]


class Messages(NamedTuple):
    """A batch of records seen at ``time``."""

    time: Time
    data: list[Any]       # or a columnar Batch


Event = Union[Progress, Messages]


class EventPusher(Protocol):
    """What ``capture_into`` pushes events to: anything with ``push(event)``
    (a :class:`CaptureHandle`, an :class:`~timely.capture.EventWriter`, a
    list's ``append`` wrapped in an object)."""

    def push(self, event: Event, /) -> Any:
        """Takes one event (``Messages`` or ``Progress``)."""


class CaptureOperator(Operate):
    """Pushes ``Progress`` for every frontier change and ``Messages`` for every batch.

    A pusher with a ``flush()`` method (an :class:`~timely.capture.EventWriter`)
    is flushed once per scheduling that pushed something, and when the
    operator shuts down, so a reader elsewhere sees each scheduling's events
    together and promptly.
    """

    name = "Capture"
    inputs = 1
    outputs = 0
    local = True
    notify = (True,)

    def __init__(self, pusher: EventPusher, handle: InputHandleCore[Any], arity: int,
                 progress: SharedProgress, name: str = "Capture") -> None:
        self.name = name
        self.progress = progress
        self.pusher = pusher
        self._flush = getattr(pusher, "flush", None)
        self.input = handle
        self.changes = ChangeBatch(arity=arity)
        # A captured stream is taken to start with one capability at the
        # minimum time; replayers rely on this and need not block.
        self.changes.update(minimum(arity), -1)

    def summary(self) -> list[list[Any]]:
        return [[]]

    def push_frontier(self, port: int, changes: Iterable[tuple[Time, int]]) -> None:
        self.changes.extend(changes)
        self.input.frontier.update_iter(changes)

    def schedule(self) -> bool:
        pushed = False
        if self.changes:
            updates = self.changes.drain()
            if updates:
                self.pusher.push(Progress(updates))
                pushed = True
        for cap, data in self.input:
            self.pusher.push(Messages(cap.time, data))
            pushed = True
        if pushed and self._flush is not None:
            self._flush()
        return False

    def shut_down(self) -> None:
        if self._flush is not None:
            self._flush()
        self.pusher = None  # type: ignore[assignment]  # shut down: never scheduled again
        self._flush = None


def capture_into(stream: Stream[Any], pusher: EventPusher, name: str | None = None) -> None:
    """Records every event ``stream`` sees into ``pusher.push``: ``Messages``
    for each batch as it arrives and ``Progress`` for each change of the
    stream's frontier, the first retracting the one capability at the minimum
    time every captured stream is taken to start with (see
    :func:`timely.capture.replay_into`). Costs one push per batch and per
    scheduling that saw the frontier move. The operator is ``Capture``, or
    ``name``."""
    from timely.dataflow.builder import OperatorBuilder, operator_name

    b = OperatorBuilder(operator_name(name, "Capture"), stream.scope)
    handle = b.new_input(stream, Pipeline())
    b.build_raw(CaptureOperator(pusher, handle, b.arity, b.shared_progress, b.name))


class CaptureHandle(Generic[T]):
    """The events a ``capture()`` recorded, in process (``CaptureHandle[T]``
    for a ``Stream[T]``)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def push(self, event: Event) -> None:
        """Records one event."""
        self.events.append(event)

    @overload
    def extract(self: CaptureHandle[Batch]) -> list[tuple[Time, list[tuple[Any, ...]]]]: ...
    @overload
    def extract(self) -> list[tuple[Time, list[T]]]: ...

    def extract(self) -> list[tuple[Time, list[Any]]]:
        """``[(time, sorted records), ...]`` in time order, merging batches of one
        time; the rows of a columnar batch become tuples."""
        by_time: dict[Time, list[Any]] = {}
        for event in self.events:
            if type(event) is Messages:
                data = event.data
                if isinstance(data, Batch):
                    data = data.to_records()
                by_time.setdefault(event.time, []).extend(data)
        return [(t, sorted(by_time[t], key=_sort_key)) for t in sorted(by_time, key=_time_key)]

    def frontier(self) -> Antichain:
        """The captured stream's frontier after the events seen so far."""
        m = None
        for event in self.events:
            if m is None:
                time = event.time if isinstance(event, Messages) else (
                    event.updates[0][0] if event.updates else None)
                if time is None:
                    continue
                m = MutableAntichain()
                m.update(0 if isinstance(time, int) else (0,) * len(time), 1)
            if type(event) is Progress:
                m.update_iter(event.updates)
        if m is None:
            from timely.progress.frontier import Antichain

            return Antichain([0])
        return m.frontier()

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)


def _time_key(t: Time) -> tuple[int, ...]:
    return (t,) if isinstance(t, int) else t


def _sort_key(x: Any) -> tuple[str, Any]:
    return (type(x).__name__, x) if not isinstance(x, (int, float)) else ("", x)
