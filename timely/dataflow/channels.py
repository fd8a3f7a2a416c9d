"""Channels: how messages move from an operator output to operator inputs.

A message is a pair ``(time, data)`` where ``data`` is a batch of records (a
list) or a columnar :class:`~timely.container.Batch`. An output pushes
through a :class:`Counter`, which records produced counts per time, into a
:class:`Tee`, which hands each message to the pusher of every channel
connected to the output. A pact (:class:`Pipeline`, :class:`Exchange`) makes
the pusher/puller pair of a channel: Pipeline keeps data on this worker,
Exchange routes each record to worker ``stable_hash(key) % peers``
(:mod:`timely.container.routing`: the same hash for records and columns).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from timely.communication.allocator import Puller
from timely.container import Batch, StringColumn
from timely.container.routing import partition, route, stable_hash
from timely.errors import RouteError

__all__ = ["Addressed", "Broadcast", "Counter", "Exchange", "Pipeline", "Tee", "stable_hash"]


def _share(data):
    """A copy of ``data`` another consumer may own: a list is copied, a
    columnar batch (immutable) is shared."""
    return data if type(data) is Batch else list(data)


class Tee:
    """Hands each message to every connected channel.

    Every channel but the last gets a shallow copy, since consumers may mutate
    the batch they receive.
    """

    __slots__ = ("pushers",)

    def __init__(self):
        self.pushers = []

    def push(self, time, data) -> None:
        pushers = self.pushers
        n = len(pushers)
        if n == 1:
            pushers[0].push(time, data)
        elif n:
            for p in pushers[:-1]:
                p.push(time, _share(data))
            pushers[-1].push(time, data)

    def done(self) -> None:
        for p in self.pushers:
            p.done()


class Counter:
    """Counts the records pushed at each time into ``produced`` (the output's
    ChangeBatch in its operator's shared progress), then hands the message
    to the tee's channels."""

    __slots__ = ("tee", "produced", "_pushers")

    def __init__(self, tee: Tee, produced):
        self.tee = tee
        self.produced = produced
        self._pushers = tee.pushers

    def push(self, time, data) -> None:
        n = len(data)
        if n:
            self.produced.update(time, n)
            pushers = self._pushers
            if len(pushers) == 1:
                pushers[0].push(time, data)
            else:
                self.tee.push(time, data)


class PipelinePusher:
    """Delivers to a puller on this worker and activates its operator."""

    __slots__ = ("queue", "on_data")

    def __init__(self, queue: deque, on_data):
        self.queue = queue
        self.on_data = on_data

    def push(self, time, data) -> None:
        self.queue.append((time, data))
        self.on_data()

    def done(self) -> None:
        pass


class ExchangePusher:
    """Routes each record to worker ``key(record) % peers``.

    A columnar :class:`Batch` is routed whole, vectorized: ``route`` is a key
    column's name (or a function of the batch returning the key column), the
    rows' workers are computed in C exactly as :func:`stable_hash` would
    route each key (a string column by its UTF-8 bytes, without making a
    Python str), and each worker gets one batch of its rows, in order.
    """

    __slots__ = ("pushers", "route", "peers")

    def __init__(self, pushers, route):
        self.pushers = pushers
        self.route = route
        self.peers = len(pushers)

    def push(self, time, data) -> None:
        route = self.route
        peers = self.peers
        if type(data) is Batch:
            self._push_batch(time, data)
            return
        if type(route) is str:
            raise RouteError(
                f"Exchange by column {route!r} routes columnar batches, "
                f"not a {type(data).__name__} of records")
        if peers == 1:
            # Nothing to route, but the route is checked as at any worker
            # count, once per batch (its first record), so that a route that
            # cannot work fails at one worker too, at no cost per record.
            if data:
                try:
                    key = route(data[0])
                except Exception as error:
                    raise _raised(route, error) from error
                if type(key) not in _HASHABLE:
                    _hash(route, key)
            self.pushers[0].push((time, data))
            return
        buckets = [[] for _ in range(peers)]
        try:
            for record in data:
                key = route(record)
                if type(key) is not int:
                    key = _hash(route, key)
                buckets[key % peers].append(record)
        except RouteError:
            raise
        except Exception as error:
            raise _raised(route, error) from error
        for pusher, bucket in zip(self.pushers, buckets):
            if bucket:
                pusher.push((time, bucket))

    def _push_batch(self, time, batch) -> None:
        key = self.route
        peers = self.peers
        if type(key) is str:
            if key not in batch:
                raise RouteError(f"Exchange by column {key!r}: the batch has no such column; "
                                 f"it has {list(batch.names)}")
            keys = batch.column(key)
        else:
            try:
                keys = key(batch)
            except Exception as error:
                raise _raised(key, error) from error
        if len(keys) != len(batch):
            raise RouteError(
                f"the exchange route {_name(key)} gave {len(keys)} keys for a batch of "
                f"{len(batch)} rows")
        if peers == 1 and (type(keys) is StringColumn or type(keys) is np.ndarray
                           and keys.ndim == 1 and keys.dtype.kind in _ROUTABLE_KINDS):
            # Every row of such a column routes: nothing to compute at 1 worker.
            self.pushers[0].push((time, batch))
            return
        if peers == 1:
            # Other columns (objects) are checked once per batch, by their first row.
            try:
                route(keys[:1], 1)
            except (TypeError, ValueError) as error:
                raise RouteError(f"the exchange route {_name(key)} gave keys that do not "
                                 f"route: {error}") from error
            self.pushers[0].push((time, batch))
            return
        try:
            dest = route(keys, peers)
        except (TypeError, ValueError) as error:
            raise RouteError(f"the exchange route {_name(key)} gave keys that do not route: "
                             f"{error}") from error
        order, counts = partition(dest, peers)
        start = 0
        for pusher, count in zip(self.pushers, counts.tolist()):
            if count:
                rows = batch if count == len(batch) else batch.take(order[start:start + count])
                pusher.push((time, rows))
                start += count

    def done(self) -> None:
        for p in self.pushers:
            p.done()


_HASHABLE = frozenset((int, str, float, bytes, bool, type(None)))   # keys that always route
_ROUTABLE_KINDS = frozenset("iubfmMSU")        # dtype kinds whose every row routes


def _name(route) -> str:
    return repr(route) if type(route) is str else getattr(route, "__qualname__", repr(route))


def _raised(route, error: Exception) -> RouteError:
    return RouteError(f"the exchange route {_name(route)} raised "
                      f"{type(error).__name__}: {error}")


def _hash(route, key) -> int:
    """stable_hash(key), or RouteError naming the route and the key."""
    try:
        return stable_hash(key)
    except (TypeError, ValueError, RecursionError) as error:
        raise RouteError(
            f"the exchange route {_name(route)} gave the key {key!r:.80}, of type "
            f"{type(key).__name__}: keys are ints, floats, str, bytes, None or tuples of "
            f"them ({error})") from None


class Addressed:
    """A batch addressed to one worker: what the :class:`Broadcast` pact carries.
    Its length is the batch's, so each copy is counted where it is produced."""

    __slots__ = ("data", "worker")

    def __init__(self, worker: int, data):
        self.worker = worker
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


class BroadcastPusher:
    """Delivers each :class:`Addressed` batch to its worker, unwrapped."""

    __slots__ = ("pushers",)

    def __init__(self, pushers):
        self.pushers = pushers

    def push(self, time, data) -> None:
        if type(data) is not Addressed:
            raise TypeError("the Broadcast pact carries the output of stream.broadcast(); "
                            f"use that operator rather than the pact (got {type(data).__name__})")
        self.pushers[data.worker].push((time, data.data))

    def done(self) -> None:
        for p in self.pushers:
            p.done()


class Pipeline:
    """Keeps records on the worker that produced them."""

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that keeps every batch on
        this worker, and its puller. Called by the operator builder.
        """
        queue: deque = deque()
        return PipelinePusher(queue, on_data), Puller(queue)

    def __repr__(self):
        return "Pipeline"


class Exchange:
    """Routes each record to worker ``route(record) % peers``.

    At one worker nothing is routed, but the route is still checked once per
    batch (on its first record or row), so that a route that cannot work
    raises :class:`~timely.errors.RouteError` at one worker as at several.

    ``route`` returns an int (used as it is) or any value :func:`stable_hash`
    accepts (str, bytes, tuples, ...). For columnar batches ``route`` is the
    name of the key column.
    """

    def __init__(self, route):
        if not callable(route) and type(route) is not str:
            raise TypeError(f"Exchange route {route!r} is neither callable nor a column name")
        self.route = route

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that routes each record (or
        row) by the route, and this worker's puller. Called by the operator builder.
        """
        pushers, puller = worker.allocator.allocate(identifier, on_data)
        return ExchangePusher(pushers, self.route), puller

    def __repr__(self):
        return f"Exchange({getattr(self.route, '__name__', self.route)!r})"


class Broadcast:
    """Delivers addressed copies, one per worker (see ``stream.broadcast()``,
    which makes them: a copy counted once for every worker that consumes it)."""

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that sends one copy of each
        batch to every worker, and this worker's puller. Called by the operator builder.
        """
        pushers, puller = worker.allocator.allocate(identifier, on_data)
        return BroadcastPusher(pushers), puller

    def __repr__(self):
        return "Broadcast"
