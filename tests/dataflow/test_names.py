"""Inputs and operators take a keyword-only ``name``: it is what log events,
``worker.holds()``, stall reports and error messages call the operator;
without it the operator keeps its kind's name; a name that is not a
non-empty str is a TypeError naming the parameter."""

from __future__ import annotations

import inspect
import logging

import pytest

import timely
from timely import Ok, Stream
from timely.dataflow.scope import Scope
from timely.logging import OperatesEvent

LONG = ("parse the raw click events from every región of the 世界, keeping only "
        "those we can attribute ✓")

# The generic operators take their name positionally, as the crate's do.
POSITIONAL = {"sink", "unary", "unary_frontier", "unary_notify", "binary", "binary_frontier",
              "binary_notify"}
# Methods that build no operator: a channel across a scope's boundary, or
# the edge closing a loop made by ``scope.feedback``.
NO_OPERATOR = {"connect_to", "enter", "leave", "connect_loop"}
SCOPE_METHODS = {"new_input", "input_from", "new_unordered_input", "to_stream", "concatenate",
                 "empty", "feedback"}


def _public_methods(cls) -> dict:
    return {n: f for n, f in vars(cls).items()
            if not n.startswith("_") and inspect.isfunction(f)}


def test_every_operator_method_takes_a_keyword_only_name():
    stream_methods = _public_methods(Stream)
    makers = set(stream_methods) - POSITIONAL - NO_OPERATOR
    assert {"map", "filter", "flat_map", "inspect", "map_batch", "filter_batch",
            "inspect_batch", "exchange", "probe", "concatenate", "aggregate", "count",
            "accumulate", "capture", "capture_into", "join", "distinct"} <= makers
    for cls, names in ((Stream, makers), (Scope, SCOPE_METHODS)):
        for method in sorted(names):
            param = inspect.signature(getattr(cls, method)).parameters.get("name")
            assert param is not None, f"{cls.__name__}.{method} takes no name"
            assert param.kind is inspect.Parameter.KEYWORD_ONLY, method
            assert param.default is None, method
    for method in sorted(POSITIONAL):
        params = list(inspect.signature(stream_methods[method]).parameters.values())
        assert "name" in [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD], method


def _named_program(named: bool):
    """A work function building a dataflow that uses most operator-making
    methods, with a name for each when ``named``; it returns the names of
    the operators its worker logged, in order."""

    def n(given: str, default: str) -> dict:
        return {"name": given} if named else {}

    def work(worker):
        events: list = []
        worker.logging.register(lambda t, batch: events.extend(batch))
        with worker.dataflow() as scope:
            handle, stream = scope.new_input(**n("raw clicks", "Input"))
            seeds = scope.to_stream(range(3), **n("seed numbers", "ToStream"))
            (_uh, cap), unordered = scope.new_unordered_input(**n("late arrivals",
                                                                  "UnorderedInput"))
            cap.drop()
            merged = stream.concat(seeds, **n("merge sources", "Concatenate"))
            mapped = merged.map(lambda x: x * 2, **n(LONG, "Map"))
            flat = mapped.flat_map(lambda x: [x, x + 1], **n("explode", "FlatMap"))
            kept = flat.filter(lambda x: x % 3 != 0, **n("drop multiples of three", "Filter"))
            looked = kept.inspect(lambda x: None, **n("look", "Inspect"))
            routed = looked.exchange(lambda x: x, **n("by customer", "Exchange"))
            evens, odds = routed.branch(lambda t, x: x % 2, **n("even or odd", "Branch"))
            both = evens.concatenate([odds, unordered], **n("join halves", "Concatenate"))
            counted = both.count(**n("per epoch", "Accumulate"))
            summed = both.accumulate(0, lambda acc, data: acc + sum(data),
                                     **n("running sum", "Accumulate"))
            results = summed.map(Ok, **n("wrap", "Map")).ok(**n("unwrap", "Ok"))
            counted.capture(**n("collect counts", "Capture"))
            results.probe(**n("done yet?", "Probe"))
            scope.empty(**n("nothing", "Empty"))
        for epoch in range(2):
            if worker.index == 0:
                handle.send_batch(range(epoch * 5, epoch * 5 + 5))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        worker.drain()
        worker.logging.flush()
        return [e.name for _, _, e in events if type(e) is OperatesEvent]

    return work


def test_log_events_name_what_users_named(workers):
    logged = timely.execute(_named_program(named=True), workers=workers)
    expected = ["Dataflow", "raw clicks", "seed numbers", "late arrivals", "merge sources", LONG,
                "explode", "drop multiples of three", "look", "by customer", "even or odd",
                "join halves", "per epoch", "running sum", "wrap", "unwrap", "collect counts",
                "done yet?", "nothing"]
    assert len(logged) == workers
    for names in logged:
        assert names == expected


def test_without_names_the_kinds_names_are_kept(workers):
    logged = timely.execute(_named_program(named=False), workers=workers)
    expected = ["Dataflow", "Input", "ToStream", "UnorderedInput", "Concatenate", "Map",
                "FlatMap", "Filter", "Inspect", "Exchange", "Branch", "Concatenate",
                "Accumulate", "Accumulate", "Map", "Ok", "Capture", "Probe", "Empty"]
    for names in logged:
        assert names == expected


def test_columnar_and_relational_operators_take_names():
    import numpy as np

    def work(worker):
        events: list = []
        worker.logging.register(lambda t, batch: events.extend(batch))
        with worker.dataflow() as scope:
            handle, rows = scope.new_input(name="rows")
            kept = rows.filter_batch(lambda b: b["value"] > 5, name="big values")
            scaled = kept.map_batch(lambda b: b, name="scale")
            totals = scaled.aggregate("key", "value", "sum", name="total per key")
            seen = totals.inspect_batch(lambda t, b: None, name="peek")
            unique = seen.distinct("key", name="unique keys")
            joined = unique.join(totals, on="key", name="with totals")
            out = joined.capture(name="joined rows")
        handle.send_batch(timely.Batch(key=np.array([1, 2, 1]), value=np.array([5, 6, 7])))
        handle.close()
        worker.drain()
        worker.logging.flush()
        return [e.name for _, _, e in events if type(e) is OperatesEvent], out.extract()

    names, rows = timely.execute_directly(work)
    assert names == ["Dataflow", "rows", "big values", "scale", "total per key", "peek",
                     "unique keys", "with totals", "joined rows"]
    assert rows == [(0, [(1, 7), (2, 6)])]


@pytest.mark.parametrize("bad", [3, "", "   ", b"map", None.__class__, ["Map"]],
                         ids=["int", "empty", "blank", "bytes", "type", "list"])
@pytest.mark.parametrize("build", [
    lambda scope, s, bad: s.map(lambda x: x, name=bad),
    lambda scope, s, bad: s.exchange(name=bad),
    lambda scope, s, bad: s.probe(name=bad),
    lambda scope, s, bad: s.capture(name=bad),
    lambda scope, s, bad: s.count(name=bad),
    lambda scope, s, bad: scope.new_input(name=bad),
    lambda scope, s, bad: scope.to_stream([1], name=bad),
    lambda scope, s, bad: scope.new_unordered_input(name=bad),
], ids=["map", "exchange", "probe", "capture", "count", "new_input", "to_stream",
        "new_unordered_input"])
def test_a_name_that_is_not_a_non_empty_str_is_a_type_error(build, bad):
    def work(worker):
        with worker.dataflow() as scope:
            stream = scope.to_stream([1])
            before = scope.subgraph.next_index
            with pytest.raises(TypeError, match=r"^name must be a non-empty str, not ") as info:
                build(scope, stream, bad)
            allocated = scope.subgraph.next_index - before
            out = stream.capture()
        worker.drain()
        return str(info.value), allocated, out.extract()

    message, allocated, records = timely.execute_directly(work)
    assert repr(bad) in message
    assert allocated == 0          # the name is checked before any operator is begun
    assert records == [(0, [1])]   # and the dataflow is whole without it


def test_holds_and_stall_reports_name_the_named_input():
    class Collect(logging.Handler):
        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    collect = Collect()
    logger = logging.getLogger("timely")
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(collect)

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input(name="click feed")
            probe = stream.map(lambda x: x, name="parse events").probe(name="watch")
        handle.advance_to(3)
        worker.step_while(lambda: probe.less_than(3))
        held = [(h.kind, h.name, h.time) for h in worker.holds()]
        deadline = 50
        while not collect.messages and deadline:
            worker.step_or_park(0.05)
            deadline -= 1
        handle.close()
        worker.drain()
        return held

    try:
        held = timely.execute(work, workers=1, mode="threads", stall_warning=0.2)[0]
    finally:
        logger.removeHandler(collect)
        logger.setLevel(level)
    assert held == [("capability", "click feed [0, 1]", 3)]
    assert any("click feed" in m for m in collect.messages), collect.messages


def test_errors_name_the_named_operator():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.delay_batch(lambda t: t - 3, name="three steps back")
        handle.advance_to(5)
        handle.send(1)
        handle.close()
        worker.drain()

    with pytest.raises(timely.CapabilityError,
                       match="^three steps back: cannot move records from 5 back to 2"):
        timely.execute_directly(work)


def test_a_named_loop_is_named_when_left_unconnected():
    def work(worker):
        with worker.dataflow() as scope:
            with scope.iterative() as inner:
                inner.feedback(1, name="retry")

    with pytest.raises(Exception, match="'retry'"):
        timely.execute_directly(work)
