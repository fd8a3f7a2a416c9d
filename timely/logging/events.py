"""The events a worker logs, as the Rust crate's ``logging.rs`` and
``communication/src/logging.rs`` define them, in Python spelling.

Every event is a small named tuple. A logger hands them out as triples
``(time_ns, worker, event)``: ``time_ns`` counts nanoseconds since the worker
started (``time.perf_counter_ns``, so the clocks of workers on one host agree
up to their start-up skew, which :class:`SetupEvent` records), ``worker`` is
the worker's index.

Identifiers: ``id`` of an operator is unique within its worker and the same
on every worker (every worker builds the same operators in the same order);
``addr`` is its address, the path of operator indices from the dataflow down
(``(dataflow, index, index, ...)``). A channel's ``id`` is the data channel's
identifier, also the same on every worker. Index 0 inside a scope is the
scope's own boundary: a channel from ``(0, p)`` starts at the scope's input
``p``, one to ``(0, p)`` ends at its output ``p``.

For files and for the capture format, :func:`to_record` turns an event triple
into plain tuples and :func:`from_record` turns it back.
"""

from __future__ import annotations

from typing import NamedTuple


class SetupEvent(NamedTuple):
    """The worker that writes the log: first in every log stream.
    ``origin_unix_ns`` is the wall-clock time of the worker's time zero."""

    # the crate's field name; as a NamedTuple field it hides tuple.index
    index: int  # type: ignore[assignment]
    peers: int
    origin_unix_ns: int


class OperatesEvent(NamedTuple):
    """An operator (or a scope, ``scope`` true) was created."""

    id: int
    addr: tuple
    name: str
    inputs: int = 0
    outputs: int = 0
    scope: bool = False


class ChannelsEvent(NamedTuple):
    """A channel within the scope at ``scope_addr`` from ``source`` (operator
    index, output port) to ``target`` (operator index, input port); ``pact``
    describes how it moves data (``Pipeline``, ``Exchange('key')``,
    ``Broadcast``, ``Enter``, ``Leave``), and ``kind`` says which of them it
    is, as the pact says of itself (``pipeline``, ``exchange``,
    ``broadcast``, ``enter``, ``leave``; ``custom`` for a pact that does not
    say; empty in logs written before kinds were logged)."""

    id: int
    scope_addr: tuple
    source: tuple
    target: tuple
    pact: str
    kind: str = ""


class ScheduleEvent(NamedTuple):
    """Operator ``id`` starts (``start_stop == "start"``) or stops running;
    a stop carries the nanoseconds since its start."""

    id: int
    start_stop: str
    elapsed_ns: int = 0


class MessagesEvent(NamedTuple):
    """A message of ``record_count`` records at ``time`` sent (``is_send``) or
    received on ``channel`` from worker ``source`` to worker ``target``.
    ``seq_no`` counts the messages of the channel per (source, target) pair,
    so a send and its receive have the same one. ``source`` is -1 where the
    transport does not tell (workers as threads of one process)."""

    is_send: bool
    channel: int
    source: int
    target: int
    seq_no: int
    time: object
    record_count: int


class ProgressEvent(NamedTuple):
    """A progress batch sent (``is_send``) or received for the scope at
    ``addr``, from worker ``source``. ``messages`` lists ``(node, port, time,
    diff)`` changes at operator inputs (records produced or consumed),
    ``internal`` the same at operator outputs (capabilities)."""

    is_send: bool
    source: int
    channel: object
    seq_no: int
    addr: tuple
    messages: list
    internal: list


class PushProgressEvent(NamedTuple):
    """Input ``port`` of operator ``id`` had its frontier changed by
    ``changes``: ``[(time, diff), ...]`` changes to the frontier's elements."""

    id: int
    port: int
    changes: list


class ReachabilityEvent(NamedTuple):
    """The progress tracker of the scope at ``addr`` took in pointstamp
    changes ``[(is_source, node, port, time, diff), ...]``: capabilities at
    operator outputs (``is_source``) and records waiting at operator inputs,
    counted over every worker. Their sum is what holds each frontier."""

    addr: tuple
    updates: list


class ShutdownEvent(NamedTuple):
    """Operator ``id`` completed and was shut down."""

    id: int


class ParkEvent(NamedTuple):
    """The worker parks (``park`` true, waiting up to ``timeout`` seconds,
    None for ever) or wakes."""

    park: bool
    timeout: object = None


class TextEvent(NamedTuple):
    """Free text from the program: ``worker.logging.text("...")``."""

    text: str


class FrameEvent(NamedTuple):
    """A frame of ``messages`` messages and ``bytes`` bytes sent (``is_send``)
    from worker ``source`` to worker ``target``, or received. ``bytes`` is -1
    where the transport does not measure it (frames read from a ring)."""

    is_send: bool
    source: int
    target: int
    messages: int
    bytes: int


class ConnectionEvent(NamedTuple):
    """A connection to worker ``peer`` changed ``state``: ``"connected"``,
    ``"closed"`` or ``"failed"``; ``detail`` says more (an address, an error)."""

    peer: int
    state: str
    detail: str = ""


#: Events about the dataflows: what exists, what runs, what moves.
TIMELY = (SetupEvent, OperatesEvent, ChannelsEvent, ScheduleEvent, MessagesEvent,
          PushProgressEvent, ShutdownEvent, ParkEvent, TextEvent)
#: Events about progress tracking: batches between workers, tracker inputs.
PROGRESS = (ProgressEvent, ReachabilityEvent)
#: Events of the communication layer.
COMMUNICATION = (FrameEvent, ConnectionEvent)
#: Every event.
ALL = TIMELY + PROGRESS + COMMUNICATION

EVENT_TYPES = {cls.__name__: cls for cls in ALL}
GROUPS = {"timely": TIMELY, "progress": PROGRESS, "communication": COMMUNICATION, "all": ALL}


def kinds_of(kinds) -> frozenset:
    """The event classes named by ``kinds``: None (all), a group name
    (``"timely"``, ``"progress"``, ``"communication"``, ``"all"``), an event
    class or its name, or an iterable of these."""
    if kinds is None:
        return frozenset(ALL)
    if isinstance(kinds, (str, type)):
        kinds = [kinds]
    out: set = set()
    for kind in kinds:
        if isinstance(kind, str):
            if kind in GROUPS:
                out.update(GROUPS[kind])
            elif kind in EVENT_TYPES:
                out.add(EVENT_TYPES[kind])
            else:
                raise ValueError(f"unknown log kind {kind!r}: use one of {sorted(GROUPS)} "
                                 f"or an event name ({', '.join(EVENT_TYPES)})")
        elif isinstance(kind, type) and kind in ALL:
            out.add(kind)
        else:
            raise ValueError(f"unknown log kind {kind!r}")
    return frozenset(out)


def to_record(entry) -> tuple:
    """``(time_ns, worker, event)`` as plain tuples, lists, ints and strs:
    ``(time_ns, worker, "KindName", (fields...))``, which the capture format
    (:class:`timely.capture.EventWriter`) and JSON can hold.

    >>> to_record((5, 0, ShutdownEvent(3)))
    (5, 0, 'ShutdownEvent', (3,))
    """
    time_ns, worker, event = entry
    # The fields hold only ints, strs, bools, None and plain tuples and lists.
    return (time_ns, worker, type(event).__name__, tuple(event))


def _tuples(value):
    """Lists of lists back to what the events hold: addresses and times are tuples."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def from_record(record) -> tuple:
    """The ``(time_ns, worker, event)`` triple of a :func:`to_record` record
    (also one that went through JSON, where tuples became lists).

    >>> from_record((5, 0, 'ShutdownEvent', (3,)))
    (5, 0, ShutdownEvent(id=3))
    """
    time_ns, worker, kind, fields = record
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r} in a log record")
    fields = list(fields)
    if cls in (ProgressEvent,):
        fields[2] = _tuples(fields[2])
        fields[4] = _tuples(fields[4])
        fields[5] = [tuple(_tuples(u)) for u in fields[5]]
        fields[6] = [tuple(_tuples(u)) for u in fields[6]]
    elif cls in (ReachabilityEvent,):
        fields[0] = _tuples(fields[0])
        fields[1] = [tuple(_tuples(u)) for u in fields[1]]
    elif cls in (PushProgressEvent,):
        fields[2] = [tuple(_tuples(u)) for u in fields[2]]
    elif cls in (OperatesEvent,):
        fields[1] = _tuples(fields[1])
    elif cls in (ChannelsEvent,):
        fields[1:4] = [_tuples(f) for f in fields[1:4]]
    elif cls in (MessagesEvent,):
        fields[5] = _tuples(fields[5])
    return (time_ns, worker, cls(*fields))
