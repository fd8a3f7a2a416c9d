"""Sessions keep their own capability's time; message capabilities end with
their message; ``give_at`` sends only at held times; lists given to an
output or an input are taken. At 1 to 3 workers, as processes and threads."""

from __future__ import annotations

import pytest

import timely
from timely import CapabilityError, OperatorBuilder, Pipeline

MODES = [(1, "processes"), (2, "processes"), (3, "processes"), (2, "threads")]


@pytest.fixture(params=MODES, ids=lambda m: f"{m[0]}w-{m[1]}")
def mode(request):
    return request.param


def run(mode, build, epochs=((1, 2), (3,))):
    """Builds ``build(scope, stream, errors)`` (returning a stream) on an input
    fed ``epochs`` by every worker, one message per record; returns the
    merged ``[(time, sorted records)]`` and every worker's ``errors``, in
    index order."""
    workers, how = mode

    def work(worker):
        errors: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            captured = build(scope, stream, errors).capture()
        for epoch, records in enumerate(epochs):
            for r in records:
                handle.send_batch([(worker.index, r)])
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        worker.drain()
        return captured.extract(), errors

    results = timely.execute(work, workers=workers, mode=how, check_progress=True)
    merged: dict = {}
    for captured, _ in results:
        for time, records in captured:
            merged.setdefault(time, []).extend(records)
    return sorted((t, sorted(r, key=repr)) for t, r in merged.items()), [e for _, e in results]


def expected(workers, epochs, shape):
    """``shape(time, record)`` -> ``[(time, record)]`` for every worker's records."""
    out: dict = {}
    for w in range(workers):
        for epoch, records in enumerate(epochs):
            for r in records:
                for t, x in shape(epoch, (w, r)):
                    out.setdefault(t, []).append(x)
    return sorted((t, sorted(xs, key=repr)) for t, xs in out.items())


# -- 1. a session keeps its own time ---------------------------------------------


def test_two_sessions_each_send_at_their_own_time(mode):
    def build(scope, stream, errors):
        def constructor(cap, info):
            cap.drop()

            def logic(inp, out):
                for cap, data in inp:
                    now, later = cap.retain(), cap.delayed(cap.time + 10)
                    s1 = out.session(now)
                    s2 = out.session(later)
                    for record in data:
                        s1.give(("a", record))
                        s2.give(("b", record))
                        s1.give(("c", record))
                    s2.give_iterator([("d", record) for record in data])
                    s1.give_container([("e", record) for record in data])

            return logic

        return stream.unary(Pipeline, "TwoSessions", constructor)

    got, errors = run(mode, build)
    assert got == expected(mode[0], ((1, 2), (3,)), lambda t, r: [
        (t, ("a", r)), (t + 10, ("b", r)), (t, ("c", r)), (t + 10, ("d", r)), (t, ("e", r))])


def test_a_session_on_a_dropped_capability_raises_and_sends_nothing(mode):
    def build(scope, stream, errors):
        def constructor(cap, info):
            cap.drop()
            kept = {}

            def logic(inp, out):
                for c, data in inp:
                    if "session" not in kept:
                        kept["cap"] = c.retain()
                        kept["session"] = out.session(kept["cap"])
                        kept["session"].give(("kept", c.time))
                        kept["cap"].drop()
                    else:
                        try:
                            kept["session"].give(("late", c.time))   # a later scheduling
                        except CapabilityError as error:
                            errors.append(str(error))
                        try:
                            kept["session"].give_container([("late", c.time)])
                        except CapabilityError as error:
                            errors.append(str(error))

            return logic

        return stream.unary(Pipeline, "KeepSession", constructor)

    got, errors = run(mode, build)
    assert got == [(0, [("kept", 0)] * mode[0])]
    for worker_errors in errors:
        assert len(worker_errors) == 4          # two late messages, two uses each
        assert all("the capability was dropped" in e for e in worker_errors)


def test_a_session_on_a_downgraded_capability_sends_at_its_new_time(mode):
    def build(scope, stream, errors):
        def constructor(cap, info):
            held = [cap]

            def logic(inp, out):
                for c, data in inp:
                    if held:
                        session = out.session(held[0])
                        session.give(("before", c.time))
                        held[0].downgrade(c.time + 5)
                        session.give(("after", c.time))
                        held[0].drop()
                        held.clear()

            return logic

        return stream.unary(Pipeline, "Downgrade", constructor)

    got, errors = run(mode, build)
    workers = mode[0]
    assert got == [(0, [("before", 0)] * workers), (5, [("after", 0)] * workers)]


# -- 2. a message capability ends with its message --------------------------------


def test_a_stashed_message_capability_raises_on_every_use(mode):
    def build(scope, stream, errors):
        def constructor(cap, info):
            cap.drop()
            stash = []

            def logic(inp, out):
                for c, data in inp:
                    stash.append(c)
                    out.session(c).give_container([("data", r) for r in data])   # current
                    kept = c.retain()                             # current: fine
                    out.session(kept).give_iterator(("retained", r) for r in data)
                    kept.drop()
                if not stash:
                    return
                old = stash[0]
                for use in (lambda: out.session(old),
                            lambda: old.retain(),
                            lambda: old.delayed(old.time + 1)):
                    try:
                        use()
                    except CapabilityError as error:
                        errors.append(str(error))
                assert isinstance(old.time, int)          # reading the time is harmless
                stash.clear()

            return logic

        return stream.unary(Pipeline, "Stash", constructor)

    epochs = ((1, 2), (3,))
    got, errors = run(mode, build, epochs)
    assert got == expected(mode[0], epochs, lambda t, r: [(t, ("data", r)), (t, ("retained", r))])
    for worker_errors in errors:
        assert worker_errors and len(worker_errors) % 3 == 0
        assert all("retain() or delayed() on it while the message is current" in e
                   for e in worker_errors)


def test_a_message_capability_used_in_a_later_scheduling_raises(mode):
    """The reported misuse: a capability kept from a message and used after
    the frontier moved on would send into the past; it raises instead, and
    nothing is sent."""

    def build(scope, stream, errors):
        def constructor(cap, info):
            cap.drop()
            kept = []

            def logic(inp, out):
                if kept:
                    try:
                        out.session(kept.pop()).give("past")
                    except CapabilityError as error:
                        errors.append(str(error))
                for c, data in inp:
                    kept[:] = [c]

            return logic

        return stream.unary(Pipeline, "Later", constructor)

    got, errors = run(mode, build)
    assert got == []
    assert all(worker_errors for worker_errors in errors)


def test_the_current_message_capability_stays_valid_inside_its_iteration(mode):
    """Breaking out of the loop ends it; input.next() ends the previous one."""

    def build(scope, stream, errors):
        b = OperatorBuilder("Next", scope)
        seen = []
        inp = b.new_input(stream, Pipeline)
        out, result = b.new_output()

        def constructor(caps, info):
            caps.clear()

            def logic(frontiers):
                first = inp.next()
                if first is None:
                    return
                cap, data = first
                out.session(cap).give_container(list(data))
                second = inp.next()
                if cap.valid():
                    errors.append("the first message is still current")
                if second is not None:
                    out.session(second[0]).give_container(list(second[1]))
                for c, d in inp:
                    out.session(c).give_container(list(d))
                    seen.append(c)
                    break
                if seen and seen.pop().valid():
                    errors.append("the loop was left, its message is still current")

            return logic

        b.build(constructor)
        return result

    epochs = ((1, 2), (3,), (4,), (5,))
    got, errors = run(mode, build, epochs)
    assert got == expected(mode[0], epochs, lambda t, r: [(t, r)])
    assert errors == [[] for _ in range(mode[0])]


# -- 3. give_at checks the time -------------------------------------------------


def test_give_at_refuses_times_the_operator_does_not_hold(mode):
    def build(scope, stream, errors):
        def constructor(cap, info):
            late = [cap.delayed(20)]
            cap.drop()

            def logic(inp, out):
                for c, data in inp:
                    out.give_at(c.time, [("own", c.time)])           # the message's time
                    out.give_at(c.time + 1, [("later", c.time)])     # reached from it
                    out.give_at(25, [("held", c.time)])              # >= a held capability
                try:
                    out.give_at(0, ["past"])       # neither held nor reached by a message
                except CapabilityError as error:
                    errors.append(str(error))
                if inp.frontier.frontier().elements() == [] and late:
                    late.pop().drop()

            return logic

        return stream.unary(Pipeline, "GiveAt", constructor)

    epochs = ((1,), (2,))
    got, errors = run(mode, build, epochs)
    assert got == expected(mode[0], epochs, lambda t, r: [
        (t, ("own", t)), (t + 1, ("later", t)), (25, ("held", t))])
    for worker_errors in errors:
        assert worker_errors
        assert all("cannot send at 0" in e for e in worker_errors)


# -- 4. lists are taken ------------------------------------------------------------


def test_lists_given_may_be_reused_at_once(mode):
    """The ``&mut Vec`` idiom: one buffer, given and cleared again and again,
    to an output (give_container, give_at) and to an input (send_batch)."""
    workers, how = mode

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                cap.drop()
                buffer = []

                def logic(inp, out):
                    for c, data in inp:
                        for record in data:
                            buffer.append(("container", record))
                            out.session(c).give_container(buffer)
                            buffer.clear()
                            buffer.append(("at", record))
                            out.give_at(c.time, buffer)
                            buffer.clear()

                return logic

            captured = (stream.exchange(lambda r: r)
                        .unary(Pipeline, "Reuse", constructor).capture())
        buffer = []
        for epoch in range(3):
            for r in range(4):
                buffer.append(worker.index * 100 + epoch * 10 + r)
                handle.send_batch(buffer)
                buffer.clear()
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return captured.extract()

    results = timely.execute(work, workers=workers, mode=how)
    merged = sorted((t, x) for result in results for t, xs in result for x in xs)
    sent = [(e, w * 100 + e * 10 + r) for w in range(workers) for e in range(3) for r in range(4)]
    assert merged == sorted([(t, (kind, r)) for t, r in sent for kind in ("container", "at")])
