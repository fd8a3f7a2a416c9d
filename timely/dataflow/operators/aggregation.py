"""Keyed aggregation of record streams of ``(key, value)`` pairs, as the
crate's ``aggregation::Aggregate`` and ``aggregation::StateMachine``.

Both exchange records by their key: ``route(key)`` (an int is used as it
is; the worker is ``stable_hash(route(key)) % peers``), or, with ``route``
None (the default), the key itself, hashed in compiled code with no Python
per record. Each key's state lives on one worker and the answer is the same
at any worker count. Python's integers and tuples cannot
be mutated in place, so the user's ``fold`` *returns* the new state (it may
also mutate and return a list or dict); a key's state starts as
``default()`` (``int`` gives ``0``, as the crate's ``Default``).

Columnar streams of :class:`~timely.Batch` have their own vectorized
aggregate: ``stream.aggregate("key", "value", how)`` (also spelled
``stream.aggregate_batch``); ``Stream.aggregate`` dispatches on its first
argument: a column name (``str``) means the columnar one, a function this one.
"""

from __future__ import annotations

from timely.dataflow.builder import OperatorBuilder, operator_name
from timely.dataflow.channels import Exchange
from timely.dataflow.operators.core import per_time
from timely.dataflow.operators.generic import unary_notify
from timely.errors import RouteError


def _exchange_by_key(route):
    if route is not None and not callable(route):
        raise RouteError(f"the route of a key is a function or None, not {route!r}")
    return Exchange(route, key=0)


def aggregate(stream, fold, emit, route=None, default=int, name=None):
    """Per time, folds the values of each key into a state and, once the time
    is complete, sends ``emit(key, state)`` for each key seen at that time.

    ``fold(key, value, state)`` returns the new state.

    >>> import timely
    >>> out = timely.example(lambda scope: scope.to_stream(range(10))
    ...     .map(lambda x: (x % 2, x))
    ...     .aggregate(lambda key, val, agg: agg + val, lambda key, agg: (key, agg), lambda key: key)
    ...     .capture())
    >>> out.extract()
    [(0, [(0, 20), (1, 25)])]
    """
    b = OperatorBuilder(operator_name(name, "Aggregate"), stream.scope)
    inp = b.new_input(stream, _exchange_by_key(route))
    out, result = b.new_output()

    def absorb(states, data):
        for key, value in data:
            state = states.get(key)
            states[key] = fold(key, value, default() if state is None else state)
        return states

    def finish(time, states):
        return [emit(key, state) for key, state in states.items()]

    def build(caps, info):
        caps.clear()
        # A dict of states per time, folded into as records arrive.
        return per_time(b, inp, out, lambda time: {}, absorb, finish)

    b.build(build)
    return result


def state_machine(stream, fold, route=None, default=int, name=None):
    """A state per key, changed by each ``(key, value)`` in time order (times
    that may still receive earlier data wait for them; within one time the
    order is arbitrary).

    ``fold(key, value, state)`` returns ``(new_state, remove, outputs)``:
    ``outputs`` (an iterable) are sent at the value's time; ``remove`` drops
    the key's state (it starts again from ``default()``).

    >>> import timely
    >>> def running_sum(key, val, agg):
    ...     return agg + val, False, [(key, agg + val)]
    >>> out = timely.example(lambda scope: scope.to_stream(range(10))
    ...     .map(lambda x: (x % 2, x))
    ...     .state_machine(running_sum, lambda key: key)
    ...     .capture())
    >>> out.extract()
    [(0, [(0, 0), (0, 2), (0, 6), (0, 12), (0, 20), (1, 1), (1, 4), (1, 9), (1, 16), (1, 25)])]
    """
    name = operator_name(name, "StateMachine")
    pending: dict = {}      # time -> [(key, value)] waiting for earlier times
    states: dict = {}       # key -> state

    def apply(session_of, records):
        session = None
        for key, value in records:
            state = states.get(key)
            state, remove, outputs = fold(key, value, default() if state is None else state)
            if remove:
                states.pop(key, None)
            else:
                states[key] = state
            for out in outputs:
                if session is None:
                    session = session_of()
                session.give(out)

    def logic(input, output, notificator):
        for cap, _ in notificator:
            records = pending.pop(cap.time, None)
            if records:
                apply(lambda: output.session(cap), records)
        frontier = notificator.frontier(0)
        for cap, data in input:
            if frontier.less_than(cap.time):
                # Earlier times may still arrive: wait for this one to complete.
                if cap.time not in pending:
                    pending[cap.time] = []
                    notificator.notify_at(cap.retain())
                pending[cap.time].extend(data)
            else:
                apply(lambda: output.session(cap), data)

    return unary_notify(stream, _exchange_by_key(route), name, [], logic)
