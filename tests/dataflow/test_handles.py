"""The compiled capability and output state (``timely.dataflow._handles``)
against the oracle in ``tests/reference/capabilities.py``: random sequences
of delays, retains, downgrades, drops, releases by the garbage collector
and sends, over times of arity 1 and 2, leave the output's change batch,
its holders by time and by the user's line, and the messages it pushed as
the oracle says; every misuse the oracle refuses is a CapabilityError and
changes nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.reference.capabilities import Output
from timely import CapabilityError
from timely.progress import ChangeBatch
from timely.dataflow.capability import Capability
from timely.dataflow.handles import OutputHandle


class Recorder:
    """Stands for an output's counter: keeps what is pushed."""

    def __init__(self) -> None:
        self.pushed: list = []

    def push(self, time, data) -> None:
        self.pushed.append((time, list(data)))


def flat(pushed: list) -> list:
    return [(time, record) for time, records in pushed for record in records]


INT_TIMES = st.integers(0, 5)
PAIR_TIMES = st.tuples(st.integers(0, 3), st.integers(0, 3))


def ops(times):
    handle = st.integers(0, 40)
    return st.lists(st.one_of(
        st.tuples(st.just("delayed"), handle, times),
        st.tuples(st.just("delay"), handle, times),
        st.tuples(st.just("retain"), handle),
        st.tuples(st.just("downgrade"), handle, times),
        st.tuples(st.just("drop"), handle),
        st.tuples(st.just("release"), handle),
        st.tuples(st.just("give"), handle, st.integers(0, 9)),
        st.tuples(st.just("give_many"), handle, st.integers(1, 1500)),
    ), max_size=40)


def check(out: OutputHandle, internal: ChangeBatch, recorder: Recorder, model: Output) -> None:
    assert dict(out._held) == model.held()
    assert dict(internal.iter()) == model.internal
    by_user: dict = {}
    for (time, (code, _line)), n in out._sites.items():
        assert code.co_filename == __file__
        by_user[time] = by_user.get(time, 0) + n
    assert by_user == model.sites()
    # What is pushed and what is still buffered, in order (where a message
    # ends differs: an output pushes its buffer once it reaches BUFFER).
    assert flat(recorder.pushed + [(out._time, out._buffer)]) == flat(
        model.pushed + [(model.buffer_time, model.buffer)])


def run(program: list, arity: int) -> None:
    low = 0 if arity == 1 else (0, 0)
    internal = ChangeBatch(arity=arity)
    recorder = Recorder()
    out = OutputHandle(0, internal, recorder)
    model = Output()
    caps: list[Capability | None] = [Capability._minted(low, out)]
    model.mint(low)
    for op in program:
        i = op[1] % len(caps)
        cap = caps[i]
        if cap is None:                 # released: its handle is gone
            continue
        kind = op[0]
        if kind in ("delayed", "delay", "retain"):
            time = model.caps.get(i) if kind == "retain" else op[2]
            expected = None if time is None else model.delayed(i, time, user=kind != "delay")
            try:
                if kind == "delayed":
                    made = cap.delayed(time)
                elif kind == "delay":
                    made = cap._delay(time)
                else:
                    made = cap.retain()
            except CapabilityError:
                assert expected is None
            else:
                assert expected == len(caps)
                caps.append(made)
                del made
        elif kind == "downgrade":
            expected = model.downgrade(i, op[2])
            try:
                cap.downgrade(op[2])
            except CapabilityError:
                assert not expected
            else:
                assert expected and not out._buffer     # sent before the old time is let go
        elif kind == "drop":
            expected = model.drop(i)
            try:
                cap.drop()
            except CapabilityError:
                assert not expected
            else:
                assert expected and not out._buffer
        elif kind == "release":
            model.drop(i)
            caps[i] = None
        else:
            count = 1 if kind == "give" else op[2]
            live = i in model.caps
            for r in range(count):
                assert model.give(i, r) == live
            try:
                session = out.session(cap)
                if kind == "give":
                    session.give(0)
                else:
                    session.give_iterator(range(count))
                del session
            except CapabilityError:
                assert not live
            else:
                assert live
        del cap
        check(out, internal, recorder, model)
    caps.clear()
    for h in list(model.caps):
        model.drop(h)
    check(out, internal, recorder, model)
    assert list(internal.iter()) == [(low, -1)] and not out._held


@given(ops(INT_TIMES))
def test_capabilities_of_integer_times_follow_the_oracle(program):
    run(program, 1)


@given(ops(PAIR_TIMES))
def test_capabilities_of_pair_times_follow_the_oracle(program):
    run(program, 2)
