"""replay_into: captured streams replayed at other worker counts give the same
records at the same times, complete each time once, and finish."""

from __future__ import annotations

import pytest

import timely
from tests.capture.helpers import (
    capture_to_files,
    capture_to_links,
    links_for,
    merge,
    replay_files,
    replay_links,
)
from timely.capture import EventLink, Messages, Progress, replay_into, share

EPOCHS = 5


def other_counts(workers):
    return [w for w in (1, 2, 3) if w != workers]


def test_round_trip_in_process(workers):
    events, original, (totals, _) = capture_to_links(workers, EPOCHS)
    assert len(events) == workers
    assert sum(len(r) for _, r in original) == workers * sum(e % 4 + 1 for e in range(EPOCHS))
    for replayers in [workers, *other_counts(workers)]:
        got, (got_totals, reports), empty = replay_links(events, replayers)
        assert got == original
        assert got_totals == totals
        # Each time completed once per worker that saw it: the replayed
        # frontier never passed a time before all its records were in.
        assert all(n <= replayers for n in reports.values())
        assert empty


def test_round_trip_through_files(tmp_path, workers):
    paths, original, (totals, _) = capture_to_files(tmp_path, workers, EPOCHS)
    for replayers in other_counts(workers):
        for follow in (True, False):
            got, (got_totals, reports), empty = replay_files(paths, replayers, follow=follow)
            assert got == original
            assert got_totals == totals
            assert all(n <= replayers for n in reports.values())
            assert empty


def test_progress_only(workers):
    events, original, _ = capture_to_links(workers, EPOCHS, send=False)
    assert original == []
    assert all(type(e) is Progress for evs in events for e in evs)
    assert any(evs for evs in events)
    for replayers in other_counts(workers):
        got, (totals, _), empty = replay_links(events, replayers)
        assert got == [] and totals == {} and empty


def test_empty_stream(workers):
    """An input closed at once: the capture only retracts its capability."""

    def work(worker):
        link = EventLink()
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.capture_into(link)
        handle.close()
        worker.drain()
        return list(link)

    events = timely.execute(work, workers=workers)
    for replayers in (1, 2, 3):
        got, _, empty = replay_links(events, replayers)
        assert got == [] and empty


def test_zero_sources_everywhere(workers):
    got, _, empty = replay_links([], workers)
    assert got == [] and empty


def test_more_replayers_than_sources():
    events, original, _ = capture_to_links(1, EPOCHS)
    got, _, empty = replay_links(events, 3)      # two workers replay nothing
    assert got == original and empty


def _loop_work(worker, pusher_outer, pusher_inner):
    """Each record x halves until it is at most 1, one loop iteration per step;
    the loop's output (root times) and its inside (times (epoch, iteration))
    are captured."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        with scope.iterative() as inner:
            loop_handle, loop = inner.feedback(1)
            inside = stream.enter(inner).concat(loop).exchange(lambda x: x)
            inside.capture_into(pusher_inner)
            original_inside = inside.capture()
            done, again = inside.branch(lambda t, x: x > 1)
            again.map(lambda x: x // 2).connect_loop(loop_handle)
            left = done.leave()
        left.capture_into(pusher_outer)
        original = left.capture()
    for epoch in range(3):
        handle.send_batch([epoch * 10 + worker.index * 3 + k for k in range(4)])
        handle.advance_to(epoch + 1)
        worker.step()
    handle.close()
    worker.drain()
    return original.extract(), original_inside.extract()


def test_loop_output_and_inside(workers):
    def capture(worker):
        outer, inner = EventLink(), EventLink()
        extract, extract_inside = _loop_work(worker, outer, inner)
        return list(outer), list(inner), extract, extract_inside

    results = timely.execute(capture, workers=workers)
    outer_events = [r[0] for r in results]
    inner_events = [r[1] for r in results]
    original = merge([r[2] for r in results])
    original_inside = merge([r[3] for r in results])
    assert any(isinstance(t, tuple) and t[1] > 0 for t, _ in original_inside)

    for replayers in other_counts(workers):
        def replay(worker):
            with worker.dataflow() as scope:
                outer = replay_into(links_for(outer_events, worker), scope).capture()
                with scope.iterative() as inner:
                    replayed_inside = replay_into(links_for(inner_events, worker), inner)
                    inside = replayed_inside.capture()
                    replayed_inside.leave()
            worker.drain()
            return outer.extract(), inside.extract()

        got = timely.execute(replay, workers=replayers, check_progress=True)
        assert merge([g[0] for g in got]) == original
        assert merge([g[1] for g in got]) == original_inside


def test_replay_downstream_sees_complete_times():
    """A notify operator downstream of the replay sees each time complete
    exactly once, after all of its records, in time order."""
    events, original, _ = capture_to_links(2, EPOCHS)

    def work(worker):
        def sources():
            return links_for(events, worker)

        seen = {}
        completed = []

        def logic(input, output, notificator):
            for cap, data in input:
                seen.setdefault(cap.time, []).extend(data)
                notificator.notify_at(cap.retain())
            for cap, _ in notificator:
                completed.append((cap.time, sorted(seen[cap.time])))

        with worker.dataflow() as scope:
            stream = replay_into(sources(), scope)
            stream.unary_notify(timely.Exchange(lambda x: 0), "Check", [], logic)
        worker.drain()
        return completed

    results = timely.execute(work, workers=2)
    assert results[1] == []
    assert results[0] == original


def test_method_on_sources():
    events, original, _ = capture_to_links(1, 3)

    def work(worker):
        link = EventLink()
        for e in events[0]:
            link.push(e)
        with worker.dataflow() as scope:
            got = link.replay_into(scope).capture()
        worker.drain()
        return got.extract()

    assert timely.execute_directly(work) == original


def test_share():
    class W:
        def __init__(self, index, peers):
            self.index, self.peers = index, peers

    items = list(range(7))
    shares = [share(items, W(i, 3)) for i in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(x for s in shares for x in s) == items


def test_source_that_keeps_growing():
    """A source whose events arrive while the replay runs (a link filled by
    another dataflow of the same worker) is polled until it finishes."""

    def work(worker):
        link = EventLink()
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.capture_into(link)
        with worker.dataflow() as scope:
            got = replay_into([link], scope).capture()
        for epoch in range(4):
            handle.send_batch([epoch, epoch + 10])
            handle.advance_to(epoch + 1)
            for _ in range(3):
                worker.step()
        handle.close()
        worker.drain()
        return got.extract()

    assert timely.execute_directly(work) == [(e, [e, e + 10]) for e in range(4)]


# -- protocol violations -----------------------------------------------------


def _replay_events(events):
    def work(worker):
        link = EventLink()
        for e in events:
            link.push(e)
        with worker.dataflow() as scope:
            replay_into([link], scope).capture()
        worker.drain()

    timely.execute_directly(work)


def test_message_at_a_time_not_held():
    with pytest.raises(timely.CaptureFormatError, match="holds no capability"):
        _replay_events([Progress([(0, -1), (5, 1)]), Messages(3, [1])])


def test_retracting_what_is_not_held():
    with pytest.raises(timely.CaptureFormatError, match="does not hold"):
        _replay_events([Progress([(0, -1), (2, -1)])])


def test_claiming_a_capability_not_held():
    with pytest.raises(timely.CaptureFormatError, match="in the future of none"):
        _replay_events([Progress([(0, -1), (3, 1)]), Progress([(1, 1)])])


def test_time_of_the_wrong_arity():
    with pytest.raises(timely.TimestampError):
        _replay_events([Messages((0, 1), [1])])


def test_source_that_ends_while_holding_capabilities(tmp_path):
    """A capture whose writer stopped early: a definite end with capabilities
    held is an error, not a hang."""
    import io

    from timely.capture import EventReader, EventWriter

    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    writer.push(Messages(0, [1, 2]))
    writer.push(Progress([(0, -1), (1, 1)]))
    writer.finish()

    def work(worker):
        with worker.dataflow() as scope:
            replay_into([EventReader(io.BytesIO(buffer.getvalue()))], scope).capture()
        worker.drain()

    with pytest.raises(timely.CaptureFormatError, match="capture is incomplete"):
        timely.execute_directly(work)


def test_not_a_source():
    def work(worker):
        with worker.dataflow() as scope:
            replay_into([object()], scope)

    with pytest.raises(timely.CaptureTypeError):
        timely.execute_directly(work)
