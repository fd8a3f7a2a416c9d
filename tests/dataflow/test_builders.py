"""The generic operator builders and the general OperatorBuilder."""

from __future__ import annotations

import timely
from timely import Exchange, OperatorBuilder, Pipeline

from .helpers import run_epochs

EPOCHS = [[3, 1], [4], [], [1, 5, 9]]


def test_unary_passes_data_with_the_message_capability():
    def build(scope, stream):
        def constructor(cap, info):
            cap.drop()

            def logic(inp, out):
                for c, data in inp:
                    out.session(c).give_iterator(x + 1 for x in data)

            return logic

        return stream.unary(Pipeline, "Inc", constructor).capture()

    assert run_epochs(build, EPOCHS) == [(0, [2, 4]), (1, [5]), (3, [2, 6, 10])]


def test_unary_frontier_emits_sums_when_times_complete():
    def build(scope, stream):
        def constructor(cap, info):
            cap.drop()
            stash = {}

            def logic(inp, out):
                for c, data in inp:
                    if c.time not in stash:
                        stash[c.time] = [c.retain(), 0]
                    stash[c.time][1] += sum(data)
                for t in sorted(stash):
                    if not inp.frontier.less_equal(t):
                        held, total = stash.pop(t)
                        out.session(held).give(total)
                        held.drop()

            return logic

        return stream.unary_frontier(Exchange(lambda x: x), "Sum", constructor).capture()

    assert run_epochs(build, EPOCHS) == [(0, [4]), (1, [4]), (3, [15])]


def test_unary_notify_delivers_in_time_order_with_counts():
    delivered = []

    def build(scope, stream):
        def logic(inp, out, notificator):
            for cap, data in inp:
                # request twice: the counts coalesce
                notificator.notify_at(cap.retain())
                notificator.notify_at(cap.retain())
                # and a later time, requested first
                notificator.notify_at(cap.delayed(cap.time + 10))
            for cap, count in notificator:
                delivered.append((cap.time, count))
                out.session(cap).give((cap.time, count))

        return stream.unary_notify(Pipeline, "Notify", [7], logic).capture()

    got = run_epochs(build, EPOCHS)
    times = [t for t, _ in delivered]
    assert times == sorted(times)
    assert delivered == [(0, 2), (1, 2), (3, 2), (7, 1), (10, 1), (11, 1), (13, 1)]
    assert [t for t, _ in got] == [0, 1, 3, 7, 10, 11, 13]


def test_binary_and_binary_notify():
    def build(scope, stream):
        other = stream.map(lambda x: x * 100)

        def constructor(cap, info):
            cap.drop()

            def logic(in1, in2, out):
                for c, data in in1:
                    out.session(c).give_container(list(data))
                for c, data in in2:
                    out.session(c).give_container([-x for x in data])

            return logic

        return stream.binary(other, Pipeline, Pipeline, "Both", constructor).capture()

    assert run_epochs(build, EPOCHS) == [
        (0, [-300, -100, 1, 3]), (1, [-400, 4]), (3, [-900, -500, -100, 1, 5, 9])]

    def build_join(scope, stream):
        keyed = stream.map(lambda x: (x % 2, x))
        counts = stream.map(lambda x: (x % 2, 1))
        left, right = {}, {}

        def logic(in1, in2, out, notificator):
            for cap, data in in1:
                left.setdefault(cap.time, []).extend(data)
                notificator.notify_at(cap.retain())
            for cap, data in in2:
                right.setdefault(cap.time, []).extend(data)
                notificator.notify_at(cap.retain())
            for cap, _ in notificator:
                n = {}
                for k, one in right.pop(cap.time, []):
                    n[k] = n.get(k, 0) + one
                out.session(cap).give_iterator((x, n[k]) for k, x in left.pop(cap.time, []))

        return keyed.binary_notify(counts, Pipeline, Pipeline, "Join", [], logic).capture()

    got = run_epochs(build_join, EPOCHS)
    assert got == [(0, [(1, 2), (3, 2)]), (1, [(4, 1)]), (3, [(1, 3), (5, 3), (9, 3)])]


def test_sink_sees_every_batch_and_frontier():
    seen = []
    frontiers = []

    def build(scope, stream):
        def logic(inp):
            for cap, data in inp:
                seen.extend((cap.time, x) for x in data)
            frontiers.append(inp.frontier.frontier().elements())

        stream.sink(Pipeline, "Sink", logic)
        return stream.capture()

    run_epochs(build, EPOCHS)
    assert sorted(seen) == sorted((t, x) for t, r in enumerate(EPOCHS) for x in r)
    assert frontiers[-1] == []


def test_source_with_activator_and_capability():
    def work(worker):
        with worker.dataflow() as scope:
            def constructor(cap, info):
                state = {"cap": cap, "n": 0}

                def logic(out):
                    c = state["cap"]
                    if c is None:
                        return
                    out.session(c).give(state["n"])
                    state["n"] += 1
                    if state["n"] == 5:
                        state["cap"] = None
                        c.drop()
                    else:
                        c.downgrade(state["n"])
                        info.activator.activate()

                return logic

            out = scope.source("Counter", constructor).capture()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [(t, [t]) for t in range(5)]


def test_general_builder_with_a_disconnected_diagnostic_input():
    """Seed 001's diagnostic input: data pending on it must not block the data output."""

    def work(worker):
        with worker.dataflow() as scope:
            data_in, data = scope.new_input()
            diag_in, diag = scope.new_input()
            b = OperatorBuilder("WithDiagnostics", scope)
            d_in = b.new_input(data, Pipeline)
            q_in = b.new_input(diag, Pipeline, connection={0: []})       # not connected to output 0
            data_out, data_stream = b.new_output()
            diag_out, diag_stream = b.new_output(connection={1: [0]})   # the diagnostic input only
            held = []

            def constructor(caps, info):
                caps.clear()

                def logic(frontiers):
                    for cap, batch in d_in:
                        data_out.session(cap).give_container(list(batch))
                    for cap, batch in q_in:
                        # keep diagnostic queries unanswered: they hold back only output 1
                        held.append(cap.retain_for_output(1))
                return logic

            b.build(constructor)
            data_probe = data_stream.probe()
            diag_probe = diag_stream.probe()
            out = data_stream.capture()
        diag_in.send("status?")
        diag_in.advance_to(1)
        for t in range(3):
            data_in.send(t)
            data_in.advance_to(t + 1)
            worker.step_while(lambda: data_probe.less_than(data_in.time))
        # the data output advanced past time 0, the diagnostic output did not
        result = (data_probe.frontier().elements(), diag_probe.frontier().elements())
        for cap in held:
            cap.drop()
        held.clear()
        data_in.close()
        diag_in.close()
        worker.drain()
        return result, out.extract()

    (data_frontier, diag_frontier), out = timely.execute_directly(work)
    assert data_frontier == [3]
    assert diag_frontier == [0]
    assert out == [(0, [0]), (1, [1]), (2, [2])]


def test_connection_summary_advances_output_capabilities():
    """An input connected with summary +5 may make capabilities at t + 5 and later only."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            b = OperatorBuilder("Shift", scope)
            inp = b.new_input(stream, Pipeline, connection={0: [5]})
            out, shifted = b.new_output()
            errors = []

            def constructor(caps, info):
                caps.clear()

                def logic(frontiers):
                    for cap, data in inp:
                        try:
                            cap.delayed(cap.time + 4)
                        except timely.CapabilityError as e:
                            errors.append(str(e))
                        later = cap.delayed(cap.time + 5)
                        out.session(later).give_container(list(data))
                return logic

            b.build(constructor)
            probe = shifted.probe()
            captured = shifted.capture()
        handle.send("x")
        handle.advance_to(1)
        worker.step_while(lambda: probe.less_than(6))
        handle.close()
        worker.drain()
        return errors, captured.extract(), probe.done()

    errors, captured, done = timely.execute_directly(work)
    assert len(errors) == 1 and "cannot make a capability" in errors[0]
    assert captured == [(5, ["x"])]
    assert done


def test_a_connection_leaves_out_what_it_does_not_name_as_the_crate():
    """A connection names the ports it connects; every port of the other
    side it leaves out is not connected (the crate's new_input_connection
    and new_output_connection). Without one, a port reaches every port."""
    seen = {}

    def build(scope):
        b = OperatorBuilder("Shape", scope)
        first = scope.to_stream([1])
        b.new_output()
        b.new_output()
        inputs = [b.new_input(first, Pipeline),                       # both outputs
                  b.new_input(first, Pipeline, connection={1: [2]})]  # output 1 only, +2
        b.new_output_connection({0: [0]})                             # from input 0 only
        b.new_output()                                                # from both
        seen["summary"] = b.summary

        def constructor(caps, info):
            caps.clear()

            def logic(frontiers):
                for inp in inputs:
                    for _cap, _data in inp:
                        pass

            return logic

        b.build(constructor)
        return first.probe()

    timely.example(build)
    summary = seen["summary"]
    # Per (input, output) a list of summaries; [] is "not connected".
    assert [[len(cell) for cell in row] for row in summary] == [[1, 1, 1, 1], [0, 1, 0, 1]]
    assert summary[1][1] != summary[0][1]                # +2, not the identity
