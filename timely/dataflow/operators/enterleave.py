"""Moving streams into and out of child scopes."""

from __future__ import annotations

from timely.dataflow.builder import operator_name
from timely.dataflow.channels import Tee
from timely.errors import DataflowError


class IngressNub:
    """Parent side of a scope input: converts times, counts what enters, and
    activates the scope.

    The scope reports entering records (consumed at its input, produced where
    they go inside) only when it runs. Records that pass through it without
    meeting an operator (``enter(inner).leave()``, at any depth) activate
    nothing else inside, so the nub must: otherwise they stay counted as
    waiting at the scope's input and hold its parent's frontier forever (the
    Rust crate's issue 377).
    """

    __slots__ = ("tee", "counts", "convert", "activate")

    def __init__(self, tee: Tee, counts, convert, activate):
        self.tee = tee
        self.counts = counts
        self.convert = convert
        self.activate = activate

    def push(self, time, data) -> None:
        inner = self.convert(time)
        n = len(data)
        if n:
            self.counts.update(inner, n)
            self.tee.push(inner, data)
            self.activate()

    def done(self) -> None:
        self.tee.done()


class EgressNub:
    """Child side of a scope output: converts times, hands data to the parent."""

    __slots__ = ("tee", "convert")

    def __init__(self, tee: Tee, convert):
        self.tee = tee
        self.convert = convert

    def push(self, time, data) -> None:
        if data:
            self.tee.push(self.convert(time), data)

    def done(self) -> None:
        self.tee.done()


def enter(stream, child_scope):
    from timely.dataflow.stream import Stream

    child = child_scope.subgraph
    if child.parent is not stream.scope.subgraph:
        raise DataflowError(
            f"enter: scope {child.name!r} is not a child of the stream's scope "
            f"{stream.scope.subgraph.name!r}")
    if child.built:
        raise DataflowError(f"enter: scope {child.name!r} is already built")
    port = child.new_input()
    inner_tee = Tee()
    nub = IngressNub(inner_tee, child.input_messages[port], child.to_inner, child.activate_self)
    worker = child.worker
    identifier = worker.next_channel_id()
    if worker.logger is not None:
        nub = worker.logger.boundary(identifier, child.parent, stream.source,
                                     (child.index_in_parent, port), "Enter", nub)
    stream.connect_to((child.index_in_parent, port), nub)
    return Stream(child_scope, (0, port), inner_tee)


def leave(stream):
    from timely.dataflow.stream import Stream

    child_scope = stream.scope
    child = child_scope.subgraph
    if child.parent is None:
        raise DataflowError("leave: the stream is in a dataflow's root scope")
    port = child.new_output()
    outer_tee = Tee()
    nub = EgressNub(outer_tee, child.to_outer)
    worker = child.worker
    identifier = worker.next_channel_id()
    if worker.logger is not None:
        nub = worker.logger.boundary(identifier, child, stream.source, (0, port), "Leave", nub)
    stream.connect_to((0, port), nub)
    return Stream(child_scope.parent, (child.index_in_parent, port), outer_tee)


def enter_at(stream, scope, initial, name=None):
    """``stream`` inside the nested ``scope``, each record at the inner
    coordinate ``initial(record)`` (the crate's ``enter_at``): entered at 0,
    then delayed to its coordinate (by a ``Delay`` operator, or ``name``)."""
    from timely.dataflow.operators.core import delay

    if scope.arity != stream.scope.arity + 1:
        raise DataflowError("enter_at needs a nested scope (iterative() or scoped()), "
                            f"not {scope.name!r}")
    name = operator_name(name, "Delay")
    entered = enter(stream, scope)
    return delay(entered, lambda record, time: (*time[:-1], initial(record)), name)
