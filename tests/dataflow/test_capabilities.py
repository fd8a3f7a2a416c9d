"""Capability misuse raises a typed error; correct use is counted exactly."""

from __future__ import annotations

import pytest

import timely
from timely import CapabilityError, CapabilitySet, OperatorBuilder, Pipeline


def run_with_operator(logic_factory, outputs: int = 1, records=(1,)):
    """Builds one operator with ``outputs`` outputs on an input holding
    ``records`` at time 2; returns what the factory's logic recorded."""
    log = []

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            b = OperatorBuilder("Op", scope)
            inp = b.new_input(stream, Pipeline)
            outs = [b.new_output()[0] for _ in range(outputs)]

            def constructor(caps, info):
                return logic_factory(caps, inp, outs, log)

            b.build(constructor)
        handle.advance_to(2)
        handle.send_batch(list(records))
        handle.close()
        worker.drain()
        return log

    return timely.execute_directly(work)


def test_downgrade_backwards():
    def factory(caps, inp, outs, log):
        cap = caps[0]
        cap.downgrade(5)
        with pytest.raises(CapabilityError, match="downgrade"):
            cap.downgrade(3)
        log.append(cap.time)
        caps.clear()
        return lambda frontiers: list(inp)

    assert run_with_operator(factory) == [5]


def test_delayed_backwards_and_from_an_input_message():
    def factory(caps, inp, outs, log):
        caps[0].downgrade(4)
        with pytest.raises(CapabilityError):
            caps[0].delayed(1)
        caps.clear()

        def logic(frontiers):
            for cap, data in inp:
                # the message is at time 2: time 1 cannot be held
                with pytest.raises(CapabilityError, match="cannot make a capability at 1"):
                    cap.delayed(1)
                log.append(cap.delayed(3).time)

        return logic

    assert run_with_operator(factory) == [3]


def test_sending_on_a_dropped_capability():
    def factory(caps, inp, outs, log):
        cap = caps[0]
        cap.drop()
        with pytest.raises(CapabilityError, match="dropped"):
            outs[0].session(cap)
        with pytest.raises(CapabilityError, match="dropped"):
            cap.downgrade(3)
        with pytest.raises(CapabilityError, match="dropped"):
            cap.time
        log.append("ok")
        caps.clear()
        return lambda frontiers: list(inp)

    assert run_with_operator(factory) == ["ok"]


def test_capability_of_another_output():
    def factory(caps, inp, outs, log):
        with pytest.raises(CapabilityError, match="belongs to output 1"):
            outs[0].session(caps[1])
        log.append("ok")
        caps.clear()
        return lambda frontiers: list(inp)

    assert run_with_operator(factory, outputs=2) == ["ok"]


def test_message_capability_only_for_identity_connected_outputs():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            b = OperatorBuilder("Op", scope)
            inp = b.new_input(stream, Pipeline, connection={1: [1]})
            out0, _ = b.new_output()
            out1, s1 = b.new_output()
            seen = []

            def constructor(caps, info):
                caps.clear()

                def logic(frontiers):
                    for cap, data in inp:
                        out0.session(cap).give_container(list(data))   # identity: fine
                        with pytest.raises(CapabilityError, match="not valid for output 1"):
                            out1.session(cap)
                        later = cap.delayed(cap.time + 1, 1)
                        out1.session(later).give_container(list(data))
                        seen.append(later.time)
                return logic

            b.build(constructor)
            captured = s1.capture()
        handle.send("x")
        handle.close()
        worker.drain()
        return seen, captured.extract()

    seen, captured = timely.execute_directly(work)
    assert seen == [1]
    assert captured == [(1, ["x"])]


def test_input_handle_misuse():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.probe()
        handle.advance_to(3)
        with pytest.raises(CapabilityError, match="back to 1"):
            handle.advance_to(1)
        with pytest.raises(timely.TimestampError):
            handle.advance_to((1, 2))
        with pytest.raises(timely.TimestampTypeError):
            handle.advance_to("soon")
        handle.close()
        with pytest.raises(CapabilityError, match="closed"):
            handle.send(1)
        return "ok"

    assert timely.execute_directly(work) == "ok"


def test_unattached_input_handle():
    handle = timely.InputHandle()
    with pytest.raises(timely.DataflowError, match="not attached"):
        handle.send(1)


def test_capability_set_keeps_an_antichain_and_counts_exactly():
    def factory(caps, inp, outs, log):
        cap = caps[0]
        cs = CapabilitySet([cap.delayed(3), cap.delayed(5)])
        log.append(cs.times())
        cs.insert(cap.delayed(1))
        log.append(cs.times())
        log.append(cs.delayed(7).time)
        cs.downgrade([4])
        log.append(cs.times())
        with pytest.raises(CapabilityError):
            cs.delayed(2)
        cs.clear()
        caps.clear()
        return lambda frontiers: list(inp)

    assert run_with_operator(factory) == [[3], [1], 7, [4]]


def test_released_when_the_last_reference_goes():
    """A capability kept in operator state holds its output's frontier back
    until the state lets go of it."""

    def work(worker):
        holder = {}
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                holder["cap"] = cap
                return lambda inp, out: [None for _ in inp]

            probe = stream.unary(Pipeline, "Hold", constructor).probe()
        handle.close()
        for _ in range(5):
            worker.step()
        before = probe.frontier().elements()
        del holder["cap"]
        worker.drain()
        return before, probe.done()

    assert timely.execute_directly(work) == ([0], True)
