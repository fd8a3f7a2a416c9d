"""Generic operators: unary, binary (plain, frontier-aware, notify), sink, source.

Shapes follow the Rust crate. ``unary(pact, name, constructor)``:
``constructor(capability, info)`` returns ``logic(input, output)``; the input's
``frontier`` tells which times may still arrive. ``unary_notify(pact, name,
init_times, logic)``: ``logic(input, output, notificator)``.
"""

from __future__ import annotations

from timely.dataflow.builder import OperatorBuilder
from timely.dataflow.notificator import FrontierNotificator, Notificator


def unary(stream, pact, name: str, constructor):
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, pact)
    out, result = b.new_output()

    def build(caps, info):
        logic = constructor(caps[0], info)

        def run(frontiers):
            logic(inp, out)

        return run

    b.build(build)
    return result


unary_frontier = unary


def binary(stream, other, pact1, pact2, name: str, constructor):
    b = OperatorBuilder(name, stream.scope)
    in1 = b.new_input(stream, pact1)
    in2 = b.new_input(other, pact2)
    out, result = b.new_output()

    def build(caps, info):
        logic = constructor(caps[0], info)

        def run(frontiers):
            logic(in1, in2, out)

        return run

    b.build(build)
    return result


binary_frontier = binary


def _with_notificator(streams, pacts, name: str, init_times, logic):
    """One output; ``logic(*inputs, output, notificator)``, with notifications
    requested at ``init_times`` from the initial capability."""
    b = OperatorBuilder(name, streams[0].scope)
    inputs = [b.new_input(s, p) for s, p in zip(streams, pacts)]
    out, result = b.new_output()

    def build(caps, info):
        inner = FrontierNotificator(b.arity)
        for time in init_times:
            inner.notify_at(caps[0]._delay(time))
        caps.clear()
        notificator = None

        def run(frontiers):
            nonlocal notificator
            if notificator is None:
                notificator = Notificator(frontiers, inner)
            logic(*inputs, out, notificator)

        return run

    b.build(build)
    return result


def unary_notify(stream, pact, name: str, init_times, logic):
    return _with_notificator([stream], [pact], name, init_times, logic)


def binary_notify(stream, other, pact1, pact2, name: str, init_times, logic):
    return _with_notificator([stream, other], [pact1, pact2], name, init_times, logic)


def sink(stream, pact, name: str, logic):
    """An operator with one input and no outputs: ``logic(input)``."""
    b = OperatorBuilder(name, stream.scope)
    inp = b.new_input(stream, pact)

    def build(caps, info):
        def run(frontiers):
            logic(inp)

        return run

    b.build(build)


def source(scope, name: str, constructor):
    b = OperatorBuilder(name, scope)
    out, result = b.new_output()

    def build(caps, info):
        logic = constructor(caps[0], info)

        def run(frontiers):
            logic(out)

        return run

    b.build(build)
    return result
