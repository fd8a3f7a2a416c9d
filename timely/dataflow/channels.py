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
from typing import Any, Callable, Protocol, Union

import numpy as np

from timely.communication.allocator import Puller
from timely.container import ArrowColumn, Batch, StringColumn
from timely.container.batch import is_masked
from timely.container.routing import (partition_records, route, route_nullable, split_columns,
                                      split_records, stable_hash)
from timely.dataflow._channels import Counter, PipelinePusher, RoutedCounter
from timely.errors import RouteError

__all__ = ["Addressed", "Broadcast", "Counter", "Exchange", "Pact", "Pipeline",
           "PipelinePusher", "Tee", "stable_hash"]


class Pact(Protocol):
    """What an operator input reads through (a parallelization contract):
    :class:`Pipeline`, :class:`Exchange`, :class:`Broadcast`, or any object
    whose ``connect`` makes a channel's pusher and puller. A pact's ``kind``
    (``"pipeline"``, ``"exchange"``, ``"broadcast"``) is what logs and
    pictures call it; one without a ``kind`` is logged as ``"custom"``."""

    def connect(self, worker: Any, identifier: int,
                on_data: Callable[[], object]) -> tuple[Any, Any]:
        """Allocates channel ``identifier`` on ``worker``; returns ``(pusher, puller)``."""


PactLike = Union[Pact, "type[Pipeline]", "type[Broadcast]"]
"""A pact, or the class :class:`Pipeline` (or :class:`Broadcast`) itself:
``timely.Pipeline`` may be passed without parentheses."""


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


class ExchangePusher:
    """Routes each record to worker ``stable_hash(key) % peers``.

    Records are routed a whole batch at a time in compiled code
    (:func:`~timely.container.routing.partition_records`): the key is taken
    (a field, an attribute or the record itself), passed to the route
    function if there is one, hashed and the record placed, with no Python
    per record beyond that function. A batch route gives the hashes of a
    whole list at once.

    A columnar :class:`Batch` is routed whole, vectorized: the key column is
    named (``route`` or ``key`` a str) or computed (``route(batch)``), the
    rows' workers are computed in C exactly as :func:`stable_hash` would
    route each key (a string column by its UTF-8 bytes, without making a
    Python str), and each worker gets one batch of its rows, in order.
    """

    __slots__ = ("pushers", "route", "key", "batch_route", "peers", "name")

    def __init__(self, pushers, route, key=None, batch_route=None):
        self.pushers = pushers
        self.route = route
        self.key = key
        self.batch_route = batch_route
        self.peers = len(pushers)
        self.name = _describe(route, key, batch_route)

    def push(self, time, data) -> None:
        if type(data) is Batch:
            self._push_batch(time, data)
            return
        route = self.route
        if type(route) is str:
            raise RouteError(
                f"Exchange by column {route!r} routes columnar batches, "
                f"not a {type(data).__name__} of records: operators given a column name "
                f"(exchange, aggregate, join, distinct) work on streams of Batches; on "
                f"records give them a function or key= instead")
        peers = self.peers
        if type(data) is not list:
            data = list(data)
        if self.batch_route is not None:
            dest = self._batch_targets(data, len(data))
            if peers == 1:
                self.pushers[0].push((time, data))
                return
            parts = split_records(data, dest, peers)
        elif peers == 1:
            # Nothing to route, but the route is checked as at any worker
            # count, once per batch (its first record), so that a route that
            # cannot work fails at one worker too, at no cost per record.
            if data:
                try:
                    partition_records(data[:1], 1, self.key, self.route, self.name)
                except RouteError:
                    raise
                except Exception as error:
                    raise _raised(self.route, error) from error
            self.pushers[0].push((time, data))
            return
        else:
            parts = self._partition(data, peers)
        for pusher, part in zip(self.pushers, parts):
            if part:
                pusher.push((time, part))

    def _partition(self, data, peers):
        try:
            return partition_records(data, peers, self.key, self.route, self.name)
        except RouteError:
            raise
        except Exception as error:
            raise _raised(self.route, error) from error

    def _batch_targets(self, data, rows):
        """The workers of the records (or rows) of ``data`` from the batch
        route's hashes, checked: one integer per record."""
        fn = self.batch_route
        try:
            hashes = fn(data)
        except Exception as error:
            raise _raised(fn, error) from error
        if type(hashes) is not np.ndarray:
            raise RouteError(f"the batch route {self.name} returned a {type(hashes).__name__}, "
                             f"not a numpy array of one integer hash per record")
        if hashes.ndim != 1 or hashes.shape[0] != rows:
            raise RouteError(f"the batch route {self.name} gave an array of shape "
                             f"{hashes.shape} for {rows} records")
        if hashes.dtype.kind not in "iu":
            raise RouteError(f"the batch route {self.name} gave hashes of dtype "
                             f"{hashes.dtype}, not integers")
        return route(hashes, self.peers)

    def _push_batch(self, time, batch) -> None:
        peers = self.peers
        if self.batch_route is not None:
            dest = self._batch_targets(batch, len(batch))
            self._send_rows(time, batch, dest)
            return
        key = self.route if self.key is None else self.key
        if type(key) is str:
            if self.key is not None and self.route is not None:
                raise RouteError(f"Exchange routes a Batch by its column {key!r} or by the "
                                 f"route {_name(self.route)}, not by both")
            if key not in batch:
                raise RouteError(f"Exchange by column {key!r}: the batch has no such column; "
                                 f"it has {list(batch.names)}")
            keys = batch.column(key)
        elif key is None or type(key) is int:
            raise RouteError(f"Exchange {self.name} routes records; a Batch is routed by "
                             f"the name of a key column (or a route of the batch)")
        else:
            try:
                keys = key(batch)
            except Exception as error:
                raise _raised(key, error) from error
        if len(keys) != len(batch):
            raise RouteError(
                f"the exchange route {_name(key)} gave {len(keys)} keys for a batch of "
                f"{len(batch)} rows")
        if type(keys) is ArrowColumn or is_masked(keys):
            # Nulls go to one fixed worker; a nested type raises, at any
            # worker count.
            try:
                dest = route_nullable(keys[:1] if peers == 1 else keys, peers,
                                      key if type(key) is str else _name(key))
            except RouteError:
                raise
            except (TypeError, ValueError) as error:
                raise RouteError(f"the exchange route {_name(key)} gave keys that do not "
                                 f"route: {error}") from error
            self._send_rows(time, batch, dest)
            return
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
        self._send_rows(time, batch, dest)

    def _send_rows(self, time, batch, dest) -> None:
        peers = self.peers
        if peers == 1:
            self.pushers[0].push((time, batch))
            return
        counts, parts = split_columns(batch.columns, dest, peers)
        for pusher, count, part in zip(self.pushers, counts, parts):
            if count:
                pusher.push((time, batch if part is None else Batch.from_columns(part, count)))

    def done(self) -> None:
        for p in self.pushers:
            p.done()

    def count_by_destination(self, routed) -> None:
        """From now on, counts the records sent to each worker at each time
        into ``routed`` (a ChangeBatch of rows ``(worker, time...)``): what
        a scope reports for an exchange into an input read per worker copy."""
        self.pushers = [RoutedCounter(p, j, routed) for j, p in enumerate(self.pushers)]


_ROUTABLE_KINDS = frozenset("iubfmMSU")        # dtype kinds whose every row routes


def _name(route) -> str:
    return repr(route) if type(route) is str else getattr(route, "__qualname__", repr(route))


def _describe(route, key, batch_route) -> str:
    """How an exchange routes, for messages."""
    if batch_route is not None:
        return _name(batch_route)
    if key is None:
        return "(the record itself)" if route is None else _name(route)
    return f"key={key!r}" if route is None else f"{_name(route)} of key={key!r}"


def _raised(route, error: Exception) -> RouteError:
    return RouteError(f"the exchange route {_name(route)} raised "
                      f"{type(error).__name__}: {error}")


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

    kind = "pipeline"           # what logs and pictures call it

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that keeps every batch on
        this worker, and its puller. Called by the operator builder.
        """
        queue: deque = deque()
        return PipelinePusher(queue, on_data), Puller(queue)

    def __repr__(self):
        return "Pipeline"


class Exchange:
    """Routes each record to worker ``stable_hash(key) % peers``, where the key is:

    - ``Exchange(route)``: ``route(record)`` (an int is its own hash, so an
      int route is used as it is); for columnar batches ``route`` is the name
      of the key column, or a function of the batch returning it;
    - ``Exchange(key=i)`` (an int): the field ``record[i]`` of a tuple or list;
    - ``Exchange(key="name")``: ``record["name"]`` of a dict, the attribute
      ``record.name`` of anything else (for columnar batches: the column);
    - ``Exchange(route, key=k)``: ``route`` of that field;
    - ``Exchange()``: the record itself;
    - ``Exchange(batch=fn)``: ``fn(list of records)`` (``fn(batch)`` for a
      columnar batch) returns a 1-D numpy integer array of one *hash* per
      record, not a worker: record ``i`` goes to worker ``hashes[i] % peers``
      (any int64 or uint64 value is a hash), as if ``route`` had returned it.

    Every form routes a key exactly as the others do (the same key goes to
    the same worker whichever form names it), and does so in compiled code:
    the only Python per record is ``route``, if given. A route that raises,
    a key that does not hash, a missing field or a batch route whose array
    is not one integer per record raises :class:`~timely.errors.RouteError`.
    At one worker nothing is routed, but the route is still checked once per
    batch (on its first record or row, or the batch route's whole array), so
    that a route that cannot work fails at one worker as at several.
    """

    kind = "exchange"           # what logs and pictures call it

    def __init__(self, route=None, *, key=None, batch=None):
        if route is not None and not callable(route) and type(route) is not str:
            raise RouteError(f"Exchange route {route!r} is neither callable nor a column name")
        if key is not None and type(key) is not int and type(key) is not str:
            raise RouteError(f"an exchange key is a field index (int) or a field name (str), "
                             f"not {key!r} of type {type(key).__name__}")
        if type(route) is str and key is not None:
            raise RouteError(f"Exchange by column {route!r} takes no key (got key={key!r})")
        if batch is not None and (not callable(batch) or route is not None or key is not None):
            raise RouteError("Exchange(batch=fn) takes one callable and neither a route nor a key")
        self.route = route
        self.key = key
        self.batch = batch

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that routes each record (or
        row) by the route, and this worker's puller. Called by the operator builder.
        """
        pushers, puller = worker.allocator.allocate(identifier, on_data)
        return ExchangePusher(pushers, self.route, self.key, self.batch), puller

    def __repr__(self):
        if self.batch is not None:
            return f"Exchange(batch={_name(self.batch)})"
        if self.key is not None:
            return f"Exchange({_describe(self.route, self.key, None)})"
        return f"Exchange({getattr(self.route, '__name__', self.route)!r})"


class Broadcast:
    """Delivers addressed copies, one per worker (see ``stream.broadcast()``,
    which makes them: a copy counted once for every worker that consumes it)."""

    kind = "broadcast"          # what logs and pictures call it

    def connect(self, worker, identifier: int, on_data):
        """Allocates channel ``identifier`` on ``worker``: a pusher that sends one copy of each
        batch to every worker, and this worker's puller. Called by the operator builder.
        """
        pushers, puller = worker.allocator.allocate(identifier, on_data)
        return BroadcastPusher(pushers), puller

    def __repr__(self):
        return "Broadcast"
