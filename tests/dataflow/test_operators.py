"""The operator library, each operator against a plain-Python answer."""

from __future__ import annotations

import pytest

import timely
from timely import Err, Ok

from .helpers import ordered, run_epochs

EPOCHS = [[1, 2, 3], [], [4, 5], [6, 7, 8, 9]]


def expect(fn):
    """Per-epoch answer of a per-record function returning a list."""
    out = []
    for t, records in enumerate(EPOCHS):
        produced = [y for x in records for y in fn(x)]
        if produced:
            out.append((t, ordered(produced)))
    return out


def test_map():
    got = run_epochs(lambda s, st: st.map(lambda x: x * 10).capture(), EPOCHS)
    assert got == expect(lambda x: [x * 10])


def test_flat_map():
    got = run_epochs(lambda s, st: st.flat_map(lambda x: range(x % 3)).capture(), EPOCHS)
    assert got == expect(lambda x: list(range(x % 3)))


def test_filter():
    got = run_epochs(lambda s, st: st.filter(lambda x: x % 2 == 0).capture(), EPOCHS)
    assert got == expect(lambda x: [x] if x % 2 == 0 else [])


def test_inspect_variants_see_every_record_and_time():
    seen, seen_time, seen_batch = [], [], []

    def build(scope, stream):
        return (stream.inspect(seen.append)
                .inspect_time(lambda t, x: seen_time.append((t, x)))
                .inspect_batch(lambda t, batch: seen_batch.append((t, list(batch))))
                .capture())

    got = run_epochs(build, EPOCHS)
    assert sorted(seen) == list(range(1, 10))
    assert sorted(seen_time) == sorted((t, x) for t, r in enumerate(EPOCHS) for x in r)
    assert sorted(x for _, b in seen_batch for x in b) == list(range(1, 10))
    assert got == expect(lambda x: [x])


def test_exchange_and_broadcast_keep_every_record_once_per_worker():
    got = run_epochs(lambda s, st: st.exchange(lambda x: x).capture(), EPOCHS)
    assert got == expect(lambda x: [x])
    got = run_epochs(lambda s, st: st.exchange(str).capture(), EPOCHS)
    assert got == expect(lambda x: [x])
    got = run_epochs(lambda s, st: st.broadcast().capture(), EPOCHS)
    assert got == expect(lambda x: [x])


def test_concat_and_concatenate():
    def build(scope, stream):
        doubled = stream.map(lambda x: -x)
        return stream.concat(doubled).capture()

    assert run_epochs(build, EPOCHS) == expect(lambda x: [x, -x])

    def build3(scope, stream):
        return scope.concatenate([stream, stream.map(lambda x: x + 100),
                                  stream.map(lambda x: x + 200)]).capture()

    assert run_epochs(build3, EPOCHS) == expect(lambda x: [x, x + 100, x + 200])


def test_partition():
    holders = {}

    def build(scope, stream):
        parts = stream.partition(3, lambda x: (x % 3, x * 2))
        holders["parts"] = [p.capture() for p in parts]
        return parts[0].capture()

    run_epochs(build, EPOCHS)
    for i, cap in enumerate(holders["parts"]):
        assert cap.extract() == expect(lambda x, i=i: [x * 2] if x % 3 == i else [])


def test_branch_and_branch_when():
    holders = {}

    def build(scope, stream):
        no, yes = stream.branch(lambda t, x: x > 4)
        holders["no"], holders["yes"] = no.capture(), yes.capture()
        early, late = stream.branch_when(lambda t: t >= 2)
        holders["early"], holders["late"] = early.capture(), late.capture()
        return yes.capture()

    run_epochs(build, EPOCHS)
    assert holders["no"].extract() == expect(lambda x: [x] if x <= 4 else [])
    assert holders["yes"].extract() == expect(lambda x: [x] if x > 4 else [])
    assert holders["early"].extract() == [(0, [1, 2, 3])]
    assert holders["late"].extract() == [(2, [4, 5]), (3, [6, 7, 8, 9])]


def test_ok_and_err():
    holders = {}

    def build(scope, stream):
        results = stream.map(lambda x: Ok(x) if x % 2 else Err(f"even {x}"))
        holders["err"] = results.err().capture()
        return results.ok().capture()

    assert run_epochs(build, EPOCHS) == expect(lambda x: [x] if x % 2 else [])
    assert holders["err"].extract() == expect(lambda x: [] if x % 2 else [f"even {x}"])


def test_delay_moves_records_forward_in_time():
    got = run_epochs(lambda s, st: st.delay(lambda x, t: t + x).capture(), EPOCHS)
    expected: dict = {}
    for t, records in enumerate(EPOCHS):
        for x in records:
            expected.setdefault(t + x, []).append(x)
    assert got == [(t, sorted(v)) for t, v in sorted(expected.items())]


def test_delay_batch():
    got = run_epochs(lambda s, st: st.delay_batch(lambda t: 10 * (t + 1)).capture(), EPOCHS)
    assert got == [(10 * (t + 1), sorted(r)) for t, r in enumerate(EPOCHS) if r]


def test_delay_to_an_earlier_time_is_a_capability_error():
    with pytest.raises(timely.CapabilityError):
        run_epochs(lambda s, st: st.delay(lambda x, t: t - 1 if t else 0).capture(), [[1], [2]])


def test_reclock_reports_records_at_clock_times():
    def work(worker):
        with worker.dataflow() as scope:
            data, data_stream = scope.new_input()
            clock, clock_stream = scope.new_input()
            out = data_stream.reclock(clock_stream).capture()
        for t in range(6):
            data.send(t)
            if t % 3 == 2:
                clock.send(None)
            data.advance_to(t + 1)
            clock.advance_to(t + 1)
            worker.step()
        data.close()
        clock.close()
        worker.drain()
        return out.extract()

    assert timely.execute_directly(work) == [(2, [0, 1, 2]), (5, [3, 4, 5])]


def test_accumulate_and_count():
    holders = {}

    def build(scope, stream):
        holders["sum"] = stream.accumulate(0, lambda acc, batch: acc + sum(batch)).capture()
        return stream.count().capture()

    got = run_epochs(build, EPOCHS)
    assert got == [(t, [len(r)]) for t, r in enumerate(EPOCHS) if r]
    assert holders["sum"].extract() == [(t, [sum(r)]) for t, r in enumerate(EPOCHS) if r]


def test_capture_records_progress_and_messages():
    def build(scope, stream):
        return stream.capture()

    holder = {}

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            holder["cap"] = stream.capture()
        handle.send(5)
        handle.advance_to(3)
        worker.step()
        worker.step()
        mid = holder["cap"].frontier().elements()
        handle.close()
        worker.drain()
        return mid

    mid = timely.execute_directly(work)
    cap = holder["cap"]
    assert mid == [3]
    assert cap.extract() == [(0, [5])]
    assert cap.frontier().elements() == []
    kinds = {type(e).__name__ for e in cap}
    assert kinds == {"Messages", "Progress"}


def test_probe_and_probe_with_track_the_frontier():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.map(lambda x: x).probe()
            shared = timely.ProbeHandle()
            passed = stream.probe_with(shared).capture()
        observed = []
        for t in range(4):
            handle.send(t)
            handle.advance_to(t + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
            observed.append((probe.frontier().elements(), shared.less_than(t + 1),
                             probe.less_equal(t + 1), probe.done()))
        handle.close()
        worker.drain()
        observed.append((probe.frontier().elements(), probe.done()))
        return observed, passed.extract()

    observed, passed = timely.execute_directly(work)
    assert observed[:4] == [([t + 1], False, True, False) for t in range(4)]
    assert observed[4] == ([], True)
    assert passed == [(t, [t]) for t in range(4)]


def test_accumulate_starts_each_time_from_a_fresh_copy_of_init():
    got = run_epochs(lambda s, st: st.accumulate([], lambda acc, b: acc + sorted(b)).capture(),
                     [[0], [1], [2]])
    assert got == [(0, [[0]]), (1, [[1]]), (2, [[2]])]

    def mutating(acc, batch):
        acc.extend(batch)
        return acc

    got = run_epochs(lambda s, st: st.accumulate([], mutating).capture(), [[0], [1], [2]])
    assert got == [(0, [[0]]), (1, [[1]]), (2, [[2]])]
