"""Log events as streams: captured to files and replayed into another
computation, fed into a dataflow of the same worker, pushed to an EventLink."""

from __future__ import annotations

import collections
import json

import timely
from timely.capture import EventLink, EventReader, replay_into
from timely.logging import (
    ALL,
    BatchLogger,
    ChannelsEvent,
    MessagesEvent,
    OperatesEvent,
    capture_to,
    event_stream,
    from_record,
    read_log,
    to_record,
)

from tests.logging.helpers import known_dataflow, sent_total


def _capture(tmp_path, workers):
    pattern = str(tmp_path / "log-{worker}.tlog")

    def work(worker):
        capture_to(worker, pattern)
        known_dataflow(worker)
        return worker.index

    assert timely.execute(work, workers=workers) == list(range(workers))
    return [tmp_path / f"log-{w}.tlog" for w in range(workers)]


def _sent_per_channel(events) -> collections.Counter:
    counts = collections.Counter()
    for _, _, e in events:
        if type(e) is MessagesEvent and e.is_send:
            counts[e.channel] += e.record_count
    return counts


def test_captured_logs_read_back(tmp_path, workers):
    paths = _capture(tmp_path, workers)
    events = read_log(*paths)
    assert {w for _, w, _ in events} == set(range(workers))
    counts = _sent_per_channel(events)
    assert len(counts) == 3 and set(counts.values()) == {sent_total(workers)}
    names = {e.name for _, _, e in events if type(e) is OperatesEvent}
    assert names == {"Dataflow", "Input", "Exchange", "Map", "Probe"}


def test_captured_logs_replay_into_another_computation(tmp_path, workers):
    """Logs captured at ``workers`` workers, replayed and analysed by a
    dataflow at the other worker count."""
    paths = _capture(tmp_path, workers)
    readers = 3 - workers

    def analyse(worker):
        files = [open(p, "rb") for p in paths[worker.index::worker.peers]]
        with worker.dataflow() as scope:
            events = replay_into([EventReader(f) for f in files], scope).map(from_record)
            counts = (events
                      .filter(lambda e: type(e[2]) is MessagesEvent and e[2].is_send)
                      .map(lambda e: (e[2].channel, e[2].record_count))
                      .exchange(lambda pair: pair[0])
                      .accumulate({}, _add_counts)
                      .capture())
            channels = (events.filter(lambda e: type(e[2]) is ChannelsEvent)
                        .map(lambda e: e[2].id).capture())
        worker.drain()
        for f in files:
            f.close()
        return counts.extract(), channels.extract()

    results = timely.execute(analyse, workers=readers)
    totals = collections.Counter()
    for counts, _ in results:
        for _time, batches in counts:
            for batch in batches:
                totals.update(batch)
    assert len(totals) == 3 and set(totals.values()) == {sent_total(workers)}
    channel_ids = collections.Counter(c for _, chans in results for _, ids in chans for c in ids)
    assert channel_ids == {c: workers for c in totals}


def _add_counts(acc, batch):
    for channel, n in batch:
        acc[channel] = acc.get(channel, 0) + n
    return acc


def test_event_stream_inside_the_same_worker(workers):
    """A dataflow of the worker counts the records its other dataflow moved."""

    def work(worker):
        with worker.dataflow() as scope:
            counts = (event_stream(worker, scope)
                      .filter(lambda e: type(e[2]) is MessagesEvent and not e[2].is_send)
                      .map(lambda e: (e[2].channel, e[2].record_count))
                      .accumulate({}, _add_counts)
                      .capture())
            ops = (event_stream(worker, scope, kinds="OperatesEvent")
                   .map(lambda e: e[2].name).capture())
        known_dataflow(worker)
        worker.drain()    # ends the log streams once only they remain
        totals = collections.Counter()
        for _, batches in counts.extract():
            for batch in batches:
                totals.update(batch)
        return totals, sorted(n for _, names in ops.extract() for n in names)

    results = timely.execute(work, workers=workers)
    totals = sum((t for t, _ in results), collections.Counter())
    assert len(totals) == 3 and set(totals.values()) == {sent_total(workers)}
    # The logs' own dataflow is not logged.
    for _, names in results:
        assert names == ["Dataflow", "Exchange", "Input", "Map", "Probe"]


def test_batch_logger_protocol():
    link = EventLink()
    logger = BatchLogger(link)
    logger(10, [(3, 0, OperatesEvent(1, (0, 1), "A"))])
    logger(20, [])
    logger.close()
    events = list(link)
    assert events[0].time == 0 and events[0].data[0][2].name == "A"
    assert [e.updates for e in events[1:]] == [[(10, 1), (0, -1)], [(20, 1), (10, -1)],
                                               [(20, -1)]]


def test_records_round_trip_through_json_and_the_capture_format(tmp_path):
    def work(worker):
        events = []
        worker.logging.register(lambda t, batch: events.extend(batch), ALL)
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            with scope.iterative() as inner:
                loop, looped = inner.feedback(1)
                body = stream.enter(inner).concat(looped).map(lambda x: x - 1)
                body.filter(lambda x: x > 0).connect_loop(loop)
                body.leave().probe()
        handle.send(3)
        handle.close()
        worker.drain()
        worker.logging.flush()
        worker.logging.text("the end")
        worker.logging.flush()
        return events

    events = timely.execute_directly(work)
    kinds = {type(e).__name__ for _, _, e in events}
    assert {"PushProgressEvent", "ReachabilityEvent", "ProgressEvent", "TextEvent"} <= kinds
    records = [to_record(e) for e in events]
    assert [from_record(r) for r in records] == events
    assert [from_record(r) for r in json.loads(json.dumps(records))] == events
    from timely.capture import EventWriter
    from timely.capture.event import Messages

    with open(tmp_path / "x.tlog", "wb") as f:
        writer = EventWriter(f)
        writer.push(Messages(0, records))
        writer.finish()
    with open(tmp_path / "x.tlog", "rb") as f:
        back = [ev for m in EventReader(f) for ev in m.data]
    assert [from_record(r) for r in back] == events
