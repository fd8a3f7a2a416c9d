"""``replay_into``: a captured stream, from its events, back into a dataflow.

Each worker replays the event sources it is given: as in the Rust crate, the
caller divides the sources among the workers, and every source must be
replayed by exactly one worker. :func:`share` gives worker ``i`` of ``peers``
the sources ``i, i + peers, i + 2 * peers, ...`` of a list, which is how the
examples divide the senders' streams; any division works, including one that
gives a worker nothing.

The protocol (as in the Rust crate's ``replay.rs``): each source's events
describe, starting from one capability at the minimum time, changes to the
capabilities it holds (``Progress``) and data sent at times it holds
(``Messages``). ``capture_into`` produces exactly this: its first progress
event retracts the one capability every captured stream is taken to start
with. The replay operator's output starts, like every operator output, with
one capability at the minimum time per worker (``peers`` in all, common
knowledge); on its first scheduling a worker with ``n`` sources turns its one
into ``n``, and from then on adds each source's progress to its own counts.
Any interleaving of valid sources is a valid stream, so the replaying workers
may be more or fewer than the capturing ones.

Guarantees:

- Non-blocking: a source's ``next()`` returning None means "nothing now"; the
  operator reschedules itself while any of its sources is unfinished.
- A source is finished when the capabilities its events hold reach zero; a
  source that ends (``ended`` true) while still holding capabilities is an
  incomplete capture and raises :class:`~timely.CaptureFormatError`.
- Each source is checked against the protocol: a progress event may not
  leave a count negative nor claim a capability in the future of none the
  source holds, a message must be at a time the source holds, and
  times must have the scope's arity. Violations raise CaptureFormatError
  (TimestampError for malformed times) rather than corrupt progress tracking.

Cost per event: one MutableAntichain update per progress update, one
frontier test and one push per message. A scheduling takes at most
:data:`EVENTS_PER_SCHEDULE` events from each source, and stops taking
columnar batches from it after :data:`BYTES_PER_SCHEDULE` bytes, so one busy
source cannot starve the worker and the batches read are consumed downstream
(and their memory reused) before more are read. While a worker has
unfinished sources it stays active (it polls).
"""

from __future__ import annotations

from timely.capture.event import Messages, Progress
from timely.errors import CaptureFormatError, CaptureTypeError
from timely.progress.frontier import MutableAntichain
from timely.progress.operate import Operate
from timely.progress.timestamp import minimum, validate

EVENTS_PER_SCHEDULE = 256
BYTES_PER_SCHEDULE = 1 << 22


def share(items, worker) -> list:
    """This worker's share of ``items``: those at ``worker.index``, ``worker.index
    + worker.peers``, ... (``worker`` may also be a scope).

    >>> class W: index, peers = 1, 3
    >>> share(list(range(8)), W())
    [1, 4, 7]
    """
    return list(items)[worker.index::worker.peers]


class _Source:
    """One event source and the capabilities its events hold."""

    __slots__ = ("finished", "held", "number", "source")

    def __init__(self, source, number: int, arity: int):
        self.source = source
        self.number = number
        self.held = MutableAntichain(arity=arity)
        self.held.update(minimum(arity), 1)
        self.finished = False


class ReplayOperator(Operate):
    """Replays event sources into its one output; see the module docstring."""

    name = "Replay"
    inputs = 0
    outputs = 1
    local = True
    notify = ()

    def __init__(self, sources, output, progress, activator, arity: int):
        self._sources = [_Source(s, i, arity) for i, s in enumerate(sources)]
        self._output = output
        self.progress = progress
        self._internal = progress.internals[0]
        self._activator = activator
        self._arity = arity
        self._started = False

    def summary(self):
        return []

    def push_frontier(self, port: int, changes) -> None:    # pragma: no cover - no inputs
        pass

    def _time(self, state: _Source, time):
        if type(time) is int and self._arity == 1:
            return time
        return validate(time, self._arity)

    def _fail(self, state: _Source, message: str):
        offset = getattr(state.source, "offset", None)
        where = f" (at byte offset {offset})" if isinstance(offset, int) else ""
        raise CaptureFormatError(f"replayed source {state.number}: {message}{where}",
                                 offset if isinstance(offset, int) else None)

    def _apply(self, state: _Source, updates) -> None:
        held = state.held
        internal = self._internal
        checked = [(self._time(state, t), d) for t, d in updates]
        for time, diff in checked:
            # A capability can only be made in the future of one held.
            if diff > 0 and not held.less_equal(time):
                self._fail(state, f"progress claims a capability at {time!r}, in the future "
                                  f"of none it holds")
        held.update_iter(checked)
        for time, diff in checked:
            if diff < 0 and held.count_for(time) < 0:
                self._fail(state, f"progress retracts a capability at {time!r} it does not hold")
            internal.update(time, diff)

    def schedule(self) -> bool:
        if not self._started:
            self._started = True
            n = len(self._sources)
            if n != 1:
                self._internal.update(minimum(self._arity), n - 1)
        output = self._output
        live = False
        for state in self._sources:
            if not state.finished and self._drain(state, output):
                live = True
        if live:
            self._activator.activate()
        return False

    def _drain(self, state: _Source, output) -> bool:
        """Takes what ``state``'s source has now, within the budgets; True
        while the source may have more."""
        source = state.source
        budget = BYTES_PER_SCHEDULE
        for _ in range(EVENTS_PER_SCHEDULE):
            if budget <= 0:
                return True
            event = source.next()
            if event is None:
                break
            if type(event) is Messages:
                time = self._time(state, event.time)
                if not state.held.less_equal(time):
                    self._fail(state, f"a message at {time!r}, a time it holds no "
                                      f"capability for (its frontier is "
                                      f"{state.held.frontier().elements()!r})")
                data = event.data
                if len(data):
                    budget -= getattr(data, "nbytes", 0)
                    output.give_unchecked(time, data)
            elif type(event) is Progress:
                self._apply(state, event.updates)
                if not len(state.held):
                    state.finished = True
                    return False
            else:
                self._fail(state, f"{type(event).__name__} is not an event")
        else:
            return True
        if getattr(source, "ended", False):
            self._fail(state, "the stream ended while it still held capabilities at "
                              f"{state.held.frontier().elements()!r}: the capture is "
                              "incomplete")
        return True

    def shut_down(self) -> None:
        self._sources = []


def replay_into(sources, scope):
    """Replays ``sources`` (objects with ``next()`` returning an event or None)
    in this worker; returns the stream in ``scope``.

    Every worker calls it (operators are built everywhere alike), each with
    its own, disjoint list of sources; the union over the workers is every
    captured stream exactly once (see :func:`share`). A worker may have none.

    >>> import timely
    >>> from timely.capture import EventLink
    >>> def work(worker):
    ...     link = EventLink()
    ...     with worker.dataflow() as scope:
    ...         scope.to_stream(range(3)).capture_into(link)
    ...     worker.drain()
    ...     with worker.dataflow() as scope:
    ...         replayed = replay_into([link], scope).capture()
    ...     worker.drain()
    ...     return replayed.extract()
    >>> timely.execute_directly(work)
    [(0, [0, 1, 2])]
    """
    from timely.dataflow.builder import OperatorBuilder

    sources = list(sources)
    for source in sources:
        if not callable(getattr(source, "next", None)):
            raise CaptureTypeError(
                f"an event source has a next() method; {source!r} has none")
    b = OperatorBuilder("Replay", scope)
    output, stream = b.new_output()
    b.build_raw(ReplayOperator(sources, output, b.shared_progress, b.activator, b.arity))
    return stream
