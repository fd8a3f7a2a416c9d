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


def test_map(workers):
    got = run_epochs(lambda s, st: st.map(lambda x: x * 10).capture(), EPOCHS, workers)
    assert got == expect(lambda x: [x * 10])


def test_flat_map(workers):
    got = run_epochs(lambda s, st: st.flat_map(lambda x: range(x % 3)).capture(), EPOCHS, workers)
    assert got == expect(lambda x: list(range(x % 3)))


def test_filter(workers):
    got = run_epochs(lambda s, st: st.filter(lambda x: x % 2 == 0).capture(), EPOCHS, workers)
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


def test_exchange_and_broadcast_keep_every_record_once_per_worker(workers):
    got = run_epochs(lambda s, st: st.exchange(lambda x: x).capture(), EPOCHS, workers)
    assert got == expect(lambda x: [x])
    got = run_epochs(lambda s, st: st.exchange(str).capture(), EPOCHS, workers)
    assert got == expect(lambda x: [x])
    got = run_epochs(lambda s, st: st.broadcast().capture(), EPOCHS, workers)
    assert got == expect(lambda x: [x] * workers)


def test_concat_and_concatenate(workers):
    def build(scope, stream):
        doubled = stream.map(lambda x: -x)
        return stream.concat(doubled).capture()

    assert run_epochs(build, EPOCHS, workers) == expect(lambda x: [x, -x])

    def build3(scope, stream):
        return scope.concatenate([stream, stream.map(lambda x: x + 100),
                                  stream.map(lambda x: x + 200)]).capture()

    assert run_epochs(build3, EPOCHS, workers) == expect(lambda x: [x, x + 100, x + 200])


def test_partition(workers):
    def build(scope, stream):
        parts = stream.partition(3, lambda x: (x % 3, x * 2))
        return scope.concatenate([p.map(lambda v, i=i: (i, v)) for i, p in enumerate(parts)]).capture()

    got = run_epochs(build, EPOCHS, workers)
    assert got == expect(lambda x: [(x % 3, x * 2)])


def test_branch_and_branch_when(workers):
    def build(scope, stream):
        no, yes = stream.branch(lambda t, x: x > 4)
        early, late = stream.branch_when(lambda t: t >= 2)
        tagged = [s.map(lambda v, tag=tag: (tag, v))
                  for tag, s in [("no", no), ("yes", yes), ("early", early), ("late", late)]]
        return scope.concatenate(tagged).capture()

    got = run_epochs(build, EPOCHS, workers)
    assert got == expect(lambda x: [("no" if x <= 4 else "yes", x)]
                         + [("late" if x >= 4 else "early", x)])


def test_ok_and_err(workers):
    def build(scope, stream):
        results = stream.map(lambda x: Ok(x) if x % 2 else Err(f"even {x}"))
        return results.ok().concat(results.err()).capture()

    assert run_epochs(build, EPOCHS, workers) == expect(lambda x: [x] if x % 2 else [f"even {x}"])


def test_delay_moves_records_forward_in_time(workers):
    got = run_epochs(lambda s, st: st.delay(lambda x, t: t + x).capture(), EPOCHS, workers)
    expected: dict = {}
    for t, records in enumerate(EPOCHS):
        for x in records:
            expected.setdefault(t + x, []).append(x)
    assert got == [(t, sorted(v)) for t, v in sorted(expected.items())]


def test_delay_batch(workers):
    got = run_epochs(lambda s, st: st.delay_batch(lambda t: 10 * (t + 1)).capture(), EPOCHS, workers)
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


def test_accumulate_and_count(workers):
    def build(scope, stream):
        gathered = stream.exchange(lambda x: 0)      # one worker sees each whole epoch
        sums = gathered.accumulate(0, lambda acc, batch: acc + sum(batch)).map(lambda v: ("sum", v))
        counts = gathered.count().map(lambda v: ("count", v))
        return sums.concat(counts).capture()

    got = run_epochs(build, EPOCHS, workers)
    assert got == [(t, [("count", len(r)), ("sum", sum(r))]) for t, r in enumerate(EPOCHS) if r]


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


def test_accumulate_starts_each_time_from_a_fresh_copy_of_init(workers):
    got = run_epochs(lambda s, st: st.accumulate([], lambda acc, b: acc + sorted(b)).capture(),
                     [[0], [1], [2]])
    assert got == [(0, [[0]]), (1, [[1]]), (2, [[2]])]

    def mutating(acc, batch):
        acc.extend(batch)
        return acc

    got = run_epochs(lambda s, st: st.accumulate([], mutating).capture(), [[0], [1], [2]], workers)
    assert got == [(0, [[0]]), (1, [[1]]), (2, [[2]])]
