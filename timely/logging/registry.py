"""The per-worker log registry, the logger the engine's hooks call, and the
channel wrappers that log messages.

Cost model. With nothing registered, ``worker.logger`` is None and every hook
in the engine is one ``is not None`` test: once per operator scheduling, per
progress batch, per frontier change pushed to an operator, per frame. Data
channels built while nothing is registered are not wrapped at all, so the
path of a message costs nothing extra; channels built while messages are
logged get a wrapper that logs one event per message (never per record).

With loggers registered, each event is one tuple appended to a buffer; the
buffer goes to the callbacks at the end of every ``worker.step()`` that
logged something, and whenever it holds :data:`CAPACITY` events.
"""

from __future__ import annotations

import time as _time
from typing import Any
from collections import deque

from timely.logging import events as ev

#: Events buffered before the callbacks get them, even in the middle of a step.
CAPACITY = 4096

_perf_ns = _time.perf_counter_ns


class Registration:
    """One registered callback; ``close()`` unregisters it."""

    __slots__ = ("callback", "types", "idle", "registry", "closed")

    def __init__(self, registry, callback, types: frozenset, idle: bool):
        self.registry = registry
        self.callback = callback
        self.types = types
        self.idle = idle
        self.closed = False

    def close(self) -> None:
        """Flushes what was logged, tells the callback the stream ended (its
        ``close()``, if it has one) and unregisters it."""
        self.registry.unregister(self)

    def __repr__(self):
        names = sorted(t.__name__ for t in self.types)
        return f"Registration({self.callback!r}, kinds={names})"


class LoggingRegistry:
    """A worker's log destinations: ``worker.logging``.

    ``register(callback, kinds=None)`` sends the events of ``kinds`` (all by
    default; see :func:`timely.logging.kinds_of`) to ``callback(time_ns,
    events)``: ``events`` is a list of ``(time_ns, worker, event)`` in the
    order they happened, ``time_ns`` a lower bound on the time of every event
    that may follow (as the Rust crate's ``Registry::insert`` actions get
    it). A callback with a ``close()`` method is told when its stream ends.
    Register before building the dataflows to be observed: operators and
    channels are reported when they are built, and only channels built while
    messages are logged report their messages.

    >>> import timely
    >>> def work(worker):
    ...     seen = []
    ...     worker.logging.register(lambda time, events: seen.extend(events), kinds="timely")
    ...     with worker.dataflow() as scope:
    ...         scope.to_stream(range(5)).map(lambda x: x + 1).probe()
    ...     worker.drain()
    ...     worker.logging.flush()
    ...     return sorted({e.name for _, _, e in seen if type(e) is timely.logging.OperatesEvent})
    >>> timely.execute_directly(work)
    ['Dataflow', 'Map', 'Probe', 'ToStream']
    """

    def __init__(self, worker):
        self.worker = worker
        self.origin_ns = getattr(worker, "started_ns", None) or _perf_ns()
        self.origin_unix_ns = _time.time_ns() - (_perf_ns() - self.origin_ns)
        self.registrations: list[Registration] = []
        self.logger = Logger(self)
        self.feeds: dict = {}            # Registration -> root Subgraph it feeds
        self.closed = False

    # -- registering --------------------------------------------------------

    def register(self, callback, kinds=None, *, idle: bool = False) -> Registration:
        """Sends the events of ``kinds`` to ``callback(time_ns, events)``; with
        ``idle``, also at the end of every step that logged nothing (with an
        empty list), for callbacks that act on time passing."""
        if not callable(callback):
            raise TypeError(f"a log callback is callable; {callback!r} is not")
        registration = Registration(self, callback, ev.kinds_of(kinds), idle)
        self.closed = False
        self.registrations.append(registration)
        self._configure()
        # The new stream starts with the worker's setup and the connections
        # made before the worker existed.
        now = self.logger.now()
        first: list[tuple[int, int, Any]] = [(now, self.worker.index,
                  ev.SetupEvent(self.worker.index, self.worker.peers, self.origin_unix_ns))]
        for peer, state, detail in getattr(self.worker.allocator, "connection_log", ()):
            first.append((now, self.worker.index, ev.ConnectionEvent(peer, state, detail)))
        first = [e for e in first if type(e[2]) in registration.types]
        if first:
            self.logger.flush()
            callback(now, first)
        return registration

    def unregister(self, registration: Registration) -> None:
        """Ends ``registration``: flushes what was logged, tells its callback's ``close()`` if
        it has one, and stops sending it events. Unregistering twice does nothing.
        """
        if registration.closed:
            return
        self.logger.flush()
        registration.closed = True
        self.registrations.remove(registration)
        self.feeds.pop(registration, None)
        self._configure()
        close = getattr(registration.callback, "close", None)
        if close is not None:
            close()

    def _configure(self) -> None:
        union: set = set()
        idle = False
        for r in self.registrations:
            union |= r.types
            idle = idle or r.idle
        self.logger.configure(frozenset(union), idle)
        on = bool(self.registrations)
        self.worker.logger = self.logger if on else None
        comm = on and bool(union & set(ev.COMMUNICATION))
        self.worker.allocator.logger = self.logger if comm else None

    # -- using --------------------------------------------------------------

    def flush(self) -> None:
        """Hands every buffered event to the callbacks now."""
        self.logger.flush()

    def text(self, text: str) -> None:
        """Logs a :class:`~timely.logging.TextEvent`."""
        logger = self.logger
        if logger.on_text:
            logger.log(ev.TextEvent(str(text)))

    def close(self) -> None:
        """Flushes, then ends every registered stream (each callback's
        ``close()``); nothing is logged afterwards until something registers
        again. ``timely.execute`` calls it when a worker's work is done."""
        for registration in list(self.registrations):
            self.unregister(registration)
        self.closed = True

    def end_lonely_feeds(self) -> None:
        """Ends the log streams that feed dataflows of this worker when only
        such dataflows remain: they would otherwise wait for ever."""
        if not self.feeds:
            return
        fed = {sub.dataflow_id for sub in self.feeds.values()}
        if self.worker.dataflows.keys() <= fed:
            for registration in list(self.feeds):
                self.unregister(registration)

    def _deliver(self, time_ns: int, events: list) -> None:
        union = self.logger.types
        for r in list(self.registrations):
            if r.closed:
                continue
            if r.types >= union:
                batch = events
            else:
                types = r.types
                batch = [e for e in events if type(e[2]) in types]
            if batch or r.idle:
                r.callback(time_ns, batch)


class Logger:
    """What the engine's hooks call while something is registered
    (``worker.logger``). Each ``on_*`` flag says whether that kind of event
    is wanted by some registration."""

    __slots__ = ("registry", "buffer", "origin", "index", "peers", "types", "idle",
                 "on_operates", "on_channels", "on_schedule", "on_messages", "on_push",
                 "on_reach", "on_progress", "on_shutdown", "on_park", "on_frames",
                 "on_connections", "on_text")

    def __init__(self, registry: LoggingRegistry):
        self.registry = registry
        self.buffer: list = []
        self.origin = registry.origin_ns
        self.index = registry.worker.index
        self.peers = registry.worker.peers
        self.configure(frozenset(), False)

    def configure(self, types: frozenset, idle: bool) -> None:
        """Sets the kinds of event wanted (``types``, event classes) and whether idle steps are
        logged; recomputes the ``on_*`` flags the hooks test.
        """
        self.types = types
        self.idle = idle
        self.on_operates = ev.OperatesEvent in types
        self.on_channels = ev.ChannelsEvent in types
        self.on_schedule = ev.ScheduleEvent in types
        self.on_messages = ev.MessagesEvent in types
        self.on_push = ev.PushProgressEvent in types
        self.on_reach = ev.ReachabilityEvent in types
        self.on_progress = ev.ProgressEvent in types
        self.on_shutdown = ev.ShutdownEvent in types
        self.on_park = ev.ParkEvent in types
        self.on_frames = ev.FrameEvent in types
        self.on_connections = ev.ConnectionEvent in types
        self.on_text = ev.TextEvent in types

    def now(self) -> int:
        """Nanoseconds since this worker's logging origin."""
        return _perf_ns() - self.origin

    def log(self, event) -> None:
        """Buffers ``event`` with the time since the worker started logging; flushes when the
        buffer is full. Amortized constant time.
        """
        buffer = self.buffer
        buffer.append((_perf_ns() - self.origin, self.index, event))
        if len(buffer) >= CAPACITY:
            self.flush()

    def flush(self) -> None:
        """Hands the buffered events to every registration that wants them, then empties the
        buffer.
        """
        if not self.buffer:
            return
        events = self.buffer
        self.buffer = []
        self.registry._deliver(_perf_ns() - self.origin, events)

    def step_end(self) -> None:
        """End of a worker step: the callbacks get what was logged."""
        if self.buffer:
            self.flush()
        elif self.idle:
            self.registry._deliver(_perf_ns() - self.origin, [])

    # -- hooks: operators ----------------------------------------------------

    def operates(self, subgraph, child) -> None:
        """Child ``child`` (a PerOperatorState) was added to ``subgraph``."""
        if self.on_operates and subgraph.logged:
            op = child.operator
            self.log(ev.OperatesEvent(child.id, (*subgraph.path, child.index), op.name,
                                      op.inputs, op.outputs, not op.local))

    def dataflow(self, subgraph) -> None:
        """A dataflow's root scope was created."""
        if self.on_operates and subgraph.logged:
            self.log(ev.OperatesEvent(subgraph.id, subgraph.path, subgraph.name, 0, 0, True))

    def scheduled(self, identifier: int, operator):
        """Runs ``operator.schedule()`` between a start and a stop event."""
        if not self.on_schedule:
            return operator.schedule()
        buffer = self.buffer
        start = _perf_ns()
        buffer.append((start - self.origin, self.index, ev.ScheduleEvent(identifier, "start")))
        result = operator.schedule()
        stop = _perf_ns()
        buffer.append((stop - self.origin, self.index,
                       ev.ScheduleEvent(identifier, "stop", stop - start)))
        if len(buffer) >= CAPACITY:
            self.flush()
        return result

    def shutdown(self, identifier) -> None:
        """Logs that operator ``identifier`` shut down (if wanted)."""
        if self.on_shutdown and identifier is not None:
            self.log(ev.ShutdownEvent(identifier))

    def push_progress(self, identifier: int, port: int, changes) -> None:
        """Logs the progress ``changes`` pushed at ``port`` of operator ``identifier`` (if
        wanted).
        """
        if self.on_push:
            self.log(ev.PushProgressEvent(identifier, port, list(changes)))

    def reachability(self, subgraph, updates: list) -> None:
        """The pointstamp changes ``[((is_source, node, port, time), diff)]``
        the scope's tracker is about to absorb."""
        if self.on_reach and subgraph.logged:
            batch = [(*key, diff) for key, diff in updates if diff]
            if batch:
                self.log(ev.ReachabilityEvent(subgraph.path, batch))

    def progress(self, is_send: bool, progcaster, message) -> None:
        """A progress batch ``(sender, seq, fingerprint, updates)``."""
        owner = progcaster.owner
        if not self.on_progress or (owner is not None and not owner.logged):
            return
        sender, seq, _fingerprint, updates = message
        messages: list = []
        internal: list = []
        for (is_source, node, port, time), diff in updates:
            (internal if is_source else messages).append((node, port, time, diff))
        addr = owner.path if owner is not None else ()
        self.log(ev.ProgressEvent(is_send, sender, progcaster.identifier, seq, addr,
                                  messages, internal))

    def park(self, timeout) -> None:
        """Logs that the worker parks for at most ``timeout`` seconds (if wanted)."""
        if self.on_park:
            self.log(ev.ParkEvent(True, timeout))

    def unpark(self) -> None:
        """Logs that the worker woke from parking (if wanted)."""
        if self.on_park:
            self.log(ev.ParkEvent(False))

    # -- hooks: communication ----------------------------------------------

    def frame(self, is_send: bool, peer: int, messages: int, nbytes: int) -> None:
        """Logs a frame of ``messages`` messages and ``nbytes`` bytes sent to or received from
        ``peer`` (if wanted).
        """
        if self.on_frames:
            me = self.index
            if is_send:
                self.log(ev.FrameEvent(True, me, peer, messages, nbytes))
            else:
                self.log(ev.FrameEvent(False, peer, me, messages, nbytes))

    def connection(self, peer: int, state: str, detail: str = "") -> None:
        """Logs a connection to or from ``peer`` changing ``state`` (if wanted)."""
        if self.on_connections:
            self.log(ev.ConnectionEvent(peer, state, detail))

    # -- hooks: channels -----------------------------------------------------

    def channel(self, identifier: int, subgraph, source, target, pact, pusher, puller):
        """A data channel was built: logs it, and returns its pusher and
        puller, wrapped to log their messages when messages are logged."""
        if not subgraph.logged:
            return pusher, puller
        if self.on_channels:
            self.log(ev.ChannelsEvent(identifier, subgraph.path, tuple(source), tuple(target),
                                      repr(pact), getattr(pact, "kind", "custom")))
        if not self.on_messages:
            return pusher, puller
        me = self.index
        inner = getattr(pusher, "pushers", None)
        allocator = self.registry.worker.allocator
        if type(inner) is list and len(inner) == self.peers:
            track = getattr(allocator, "track_sources", None)
            sources = track(identifier) if track is not None else None
            for j, p in enumerate(inner):
                inner[j] = LogMessagePusher(p, self, identifier, j,
                                            sources if j == me else None)
            default = me if self.peers == 1 else -1
            return pusher, LogPuller(puller, self, identifier, sources, default)
        if hasattr(pusher, "queue"):          # a pipeline: this worker only
            return (LogPusher(pusher, self, identifier, me),
                    LogPuller(puller, self, identifier, None, me))
        return LogPusher(pusher, self, identifier, -1), LogPuller(puller, self, identifier,
                                                                  None, -1)

    def boundary(self, identifier: int, subgraph, source, target, kind: str, pusher):
        """A channel across a scope boundary (``Enter`` or ``Leave``): logs it;
        the pusher comes back wrapped to log each message as sent and received."""
        if not subgraph.logged:
            return pusher
        if self.on_channels:
            self.log(ev.ChannelsEvent(identifier, subgraph.path, tuple(source), tuple(target),
                                      kind, kind.lower()))
        if not self.on_messages:
            return pusher
        return LogNub(pusher, self, identifier)

    def message(self, is_send, channel, source, target, seq, time, count) -> None:
        """Logs a message of ``count`` records at ``time`` sent or received on ``channel`` (if
        wanted).
        """
        if self.on_messages:
            self.log(ev.MessagesEvent(is_send, channel, source, target, seq, time, count))


class LogPusher:
    """A pipeline pusher (``push(time, data)``) that logs each message sent."""

    __slots__ = ("inner", "logger", "channel", "me", "seq")

    def __init__(self, inner, logger: Logger, channel: int, me: int):
        self.inner = inner
        self.logger = logger
        self.channel = channel
        self.me = me
        self.seq = 0

    def push(self, time, data) -> None:
        seq = self.seq
        self.seq = seq + 1
        self.logger.message(True, self.channel, self.me, self.me, seq, time, len(data))
        self.inner.push(time, data)

    def done(self) -> None:
        self.inner.done()


class LogMessagePusher:
    """One worker's end of an exchange channel (``push((time, data))``) that
    logs each message sent to it; to this worker itself it also notes the
    source of what it queues, for the puller."""

    __slots__ = ("inner", "logger", "channel", "target", "sources", "seq")

    def __init__(self, inner, logger: Logger, channel: int, target: int, sources):
        self.inner = inner
        self.logger = logger
        self.channel = channel
        self.target = target
        self.sources = sources
        self.seq = 0

    def push(self, message) -> None:
        seq = self.seq
        self.seq = seq + 1
        logger = self.logger
        logger.message(True, self.channel, logger.index, self.target, seq, message[0],
                       len(message[1]))
        if self.sources is not None:
            self.sources.append(logger.index)
        self.inner.push(message)

    def done(self) -> None:
        self.inner.done()


class LogPuller:
    """A channel's puller that logs each message taken. The source of each
    message comes from ``sources`` (a deque the transport fills in arrival
    order) or is ``default``; sequence numbers count per source, so they
    match the sender's (channels are FIFO per pair of workers)."""

    __slots__ = ("puller", "logger", "channel", "sources", "default", "seqs")

    def __init__(self, puller, logger: Logger, channel: int, sources, default: int):
        self.puller = puller
        self.logger = logger
        self.channel = channel
        self.sources = sources
        self.default = default
        self.seqs: dict = {}

    def pull(self):
        message = self.puller.pull()
        if message is not None:
            sources = self.sources
            source = sources.popleft() if sources else self.default
            seqs = self.seqs
            seq = seqs.get(source, 0)
            seqs[source] = seq + 1
            logger = self.logger
            logger.message(False, self.channel, source, logger.index, seq, message[0],
                           len(message[1]))
        return message

    def __bool__(self):
        return bool(self.puller)


class LogNub:
    """A scope-boundary pusher that logs each message as sent and received
    (it crosses no worker boundary)."""

    __slots__ = ("inner", "logger", "channel", "seq")

    def __init__(self, inner, logger: Logger, channel: int):
        self.inner = inner
        self.logger = logger
        self.channel = channel
        self.seq = 0

    def push(self, time, data) -> None:
        n = len(data)
        if n:
            seq = self.seq
            self.seq = seq + 1
            logger = self.logger
            me = logger.index
            logger.message(True, self.channel, me, me, seq, time, n)
            logger.message(False, self.channel, me, me, seq, time, n)
        self.inner.push(time, data)

    def done(self) -> None:
        self.inner.done()


def new_sources(queue) -> deque:
    """A deque of message sources for a channel whose queue already holds
    ``len(queue)`` messages of unknown source."""
    return deque([-1] * len(queue))
