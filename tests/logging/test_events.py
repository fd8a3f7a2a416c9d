"""The events of a known dataflow, at 1 and 2 workers: what exists, what ran,
what moved, and the numbers add up (records per channel equal what was sent)."""

from __future__ import annotations

import collections

import pytest

import timely
from timely.logging import (
    ChannelsEvent,
    FrameEvent,
    MessagesEvent,
    OperatesEvent,
    ProgressEvent,
    PushProgressEvent,
    ReachabilityEvent,
    ScheduleEvent,
    SetupEvent,
    ShutdownEvent,
)

from tests.logging.helpers import N, by_kind, logged_run, of_type, sent_total

NAMES = {"Dataflow", "Input", "Exchange", "Map", "Probe"}


def test_operators_and_channels_are_the_same_on_every_worker(workers):
    logs = logged_run(workers)
    assert len(logs) == workers
    graphs = []
    for w, events in enumerate(logs):
        setup = of_type(events, SetupEvent)
        assert setup and setup[0].index == w and setup[0].peers == workers
        assert all(worker == w for _, worker, _ in events)
        ops = of_type(events, OperatesEvent)
        chans = of_type(events, ChannelsEvent)
        assert {op.name for op in ops} == NAMES
        graphs.append((sorted(ops), sorted(chans)))
        by_addr = {op.addr: op for op in ops}
        assert by_addr[(0,)].scope and not by_addr[(0, 1)].scope
        assert by_addr[(0, 1)].outputs == 1 and by_addr[(0, 4)].inputs == 1
        pacts = sorted(c.pact for c in chans)
        assert len(chans) == 3 and pacts[0].startswith("Exchange(") and pacts[1:] == [
            "Pipeline", "Pipeline"]
        # The kind comes from the pact itself, not from its description.
        assert sorted(c.kind for c in chans) == ["exchange", "pipeline", "pipeline"]
        for c in chans:
            assert c.scope_addr == (0,)
            assert (0, c.source[0]) in by_addr and (0, c.target[0]) in by_addr
    assert all(g == graphs[0] for g in graphs)


def test_records_per_channel_equal_what_was_sent(workers):
    logs = logged_run(workers)
    chans = {c.id: c for c in of_type(logs[0], ChannelsEvent)}
    exchange = next(c.id for c in chans.values() if c.pact.startswith("Exchange"))
    names = {op.addr[-1]: op.name for op in of_type(logs[0], OperatesEvent)}
    into_probe = next(c.id for c in chans.values() if names[c.target[0]] == "Probe")

    sent = collections.Counter()
    received = collections.Counter()
    sent_seq, received_seq = set(), set()
    for events in logs:
        for m in of_type(events, MessagesEvent):
            key = (m.channel, m.source, m.target)
            if m.is_send:
                sent[key] += m.record_count
                sent_seq.add((*key, m.seq_no, m.time, m.record_count))
            else:
                received[key] += m.record_count
                received_seq.add((*key, m.seq_no, m.time, m.record_count))
    total = sent_total(workers)
    for channel in chans:
        assert sum(n for (c, _, _), n in sent.items() if c == channel) == total
        assert sum(n for (c, _, _), n in received.items() if c == channel) == total
    # Every message is received as sent, from the worker that sent it, in order.
    assert sent == received
    assert sent_seq == received_seq
    # Exchange routes by value: worker 0's records 0..N-1 go to worker x % peers.
    for target in range(workers):
        expected = len([x for x in range(N) if x % workers == target])
        assert sent[(exchange, 0, target)] == expected
    # Pipelines stay on their worker.
    assert all(s == t for (c, s, t) in sent if c == into_probe)


def test_scheduling_progress_and_shutdown(workers):
    logs = logged_run(workers)
    for w, events in enumerate(logs):
        ids = {op.id for op in of_type(events, OperatesEvent)}
        starts = collections.Counter(e.id for e in of_type(events, ScheduleEvent)
                                     if e.start_stop == "start")
        stops = [e for e in of_type(events, ScheduleEvent) if e.start_stop == "stop"]
        assert starts == collections.Counter(e.id for e in stops)
        assert set(starts) == ids
        assert all(e.elapsed_ns >= 0 for e in stops)
        # Start and stop nest: the dataflow's scheduling contains its operators'.
        depth = 0
        for e in of_type(events, ScheduleEvent):
            depth += 1 if e.start_stop == "start" else -1
            assert 0 <= depth <= 2
        assert depth == 0
        assert {e.id for e in of_type(events, ShutdownEvent)} == ids
        # Every frontier ends empty, and the tracker ends holding nothing.
        frontiers = collections.defaultdict(collections.Counter)
        for e in of_type(events, PushProgressEvent):
            for t, d in e.changes:
                frontiers[(e.id, e.port)][t] += d
        assert frontiers and all(not +c for c in frontiers.values())
        stamps = collections.Counter()
        for e in of_type(events, ReachabilityEvent):
            for is_source, node, port, t, d in e.updates:
                stamps[(is_source, node, port, t)] += d
        assert stamps and not +stamps and not -stamps
    # Progress batches: each received batch is one that was sent, and every
    # worker received all of its own.
    sent = {}
    for events in logs:
        for e in of_type(events, ProgressEvent):
            if e.is_send:
                sent[(e.source, e.seq_no)] = (e.messages, e.internal)
    for w, events in enumerate(logs):
        got = {(e.source, e.seq_no): (e.messages, e.internal)
               for e in of_type(events, ProgressEvent) if not e.is_send}
        assert all(sent[k] == v for k, v in got.items())
        assert {k for k in sent if k[0] == w} <= set(got)


def test_communication_events(workers):
    logs = logged_run(workers)
    frames = [of_type(events, FrameEvent) for events in logs]
    if workers == 1:
        assert frames == [[]]
        return
    for w, mine in enumerate(frames):
        out = [f for f in mine if f.is_send]
        into = [f for f in mine if not f.is_send]
        assert out and into
        assert all(f.source == w and f.target != w and f.bytes > 0 for f in out)
        assert all(f.target == w and f.source != w and f.messages > 0 for f in into)
    # No frame is received that was not sent.
    assert len([f for f in frames[1] if not f.is_send]) <= len([f for f in frames[0] if f.is_send])


def test_threads_mode_logs_the_same_counts():
    logs = logged_run(2, mode="threads")
    total = sent_total(2)
    for kind in (True, False):
        n = sum(m.record_count for events in logs for m in of_type(events, MessagesEvent)
                if m.is_send is kind)
        assert n == 3 * total    # three channels
    exchange = next(c.id for c in of_type(logs[0], ChannelsEvent) if c.pact != "Pipeline")
    received = [m for events in logs for m in of_type(events, MessagesEvent) if not m.is_send]
    # Threads do not tell the source of an exchanged message; pipelines do.
    assert {m.source for m in received if m.channel == exchange} == {-1}
    assert all(m.source == m.target for m in received if m.channel != exchange)


def test_kinds_select_what_is_logged():
    logs = logged_run(1, kinds="ScheduleEvent")
    assert set(by_kind(logs[0])) == {"ScheduleEvent"}
    logs = logged_run(1, kinds=["timely"])
    kinds = set(by_kind(logs[0]))
    assert "ReachabilityEvent" not in kinds and "ProgressEvent" not in kinds
    assert {"OperatesEvent", "MessagesEvent", "ScheduleEvent"} <= kinds
    with pytest.raises(ValueError, match="unknown log kind"):
        timely.logging.kinds_of("nonsense")


def test_several_callbacks_get_their_kinds():
    def work(worker):
        a, b = [], []
        worker.logging.register(lambda t, batch: a.extend(batch), kinds="OperatesEvent")
        worker.logging.register(lambda t, batch: b.extend(batch))
        known = __import__("tests.logging.helpers", fromlist=["known_dataflow"])
        known.known_dataflow(worker)
        worker.drain()
        worker.logging.flush()
        return a, b

    (a, b), = timely.execute(work, workers=1)
    assert {type(e) for _, _, e in a} == {OperatesEvent}
    assert [e for e in b if type(e[2]) is OperatesEvent] == a


def test_off_means_unwrapped_channels_and_no_logger():
    from timely.dataflow.channels import ExchangePusher, PipelinePusher
    from timely.logging.registry import LogMessagePusher, LogPusher

    def build(worker):
        with worker.dataflow() as scope:
            stream = scope.to_stream(range(4))
            stream.exchange(lambda x: x).map(lambda x: x).probe()
        return scope

    def tees(scope):
        sub = scope.subgraph
        return [type(p) for child in sub.children[1:]
                for out in getattr(child.operator, "_outputs", [])
                for p in out.counter.tee.pushers]

    def work(worker):
        assert worker.logger is None
        off = tees(build(worker))
        registration = worker.logging.register(lambda t, batch: None)
        assert worker.logger is not None
        on_scope = build(worker)
        on = tees(on_scope)
        inner = [type(p) for child in on_scope.subgraph.children[1:]
                 for out in getattr(child.operator, "_outputs", [])
                 for pusher in out.counter.tee.pushers
                 for p in getattr(pusher, "pushers", [])]
        registration.close()
        assert worker.logger is None
        worker.drain()
        return off, on, inner

    off, on, inner = timely.execute_directly(work)
    assert ExchangePusher in off and PipelinePusher in off
    assert LogPusher in on and ExchangePusher in on
    assert inner == [LogMessagePusher]


def test_events_are_ordered_and_timestamped_per_worker(workers):
    for events in logged_run(workers):
        times = [t for t, _, _ in events]
        assert times == sorted(times) and times[0] >= 0


def test_broadcast_and_columnar_channels_are_counted(workers):
    import numpy as np

    def work(worker):
        events = []
        worker.logging.register(lambda t, batch: events.extend(batch),
                                ["MessagesEvent", "ChannelsEvent"])
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.broadcast().probe()
            columns, cstream = scope.new_input()
            cstream.exchange("k").probe()
        if worker.index == 0:
            handle.send_batch(list(range(7)))
            columns.send_batch(timely.Batch({"k": np.arange(11, dtype=np.int64)}))
        handle.close()
        columns.close()
        worker.drain()
        worker.logging.flush()
        return [e for _, _, e in events]

    logs = timely.execute(work, workers=workers)
    pacts = {c.id: c.pact for c in logs[0] if type(c) is ChannelsEvent}
    sent = collections.Counter()
    received = collections.Counter()
    for events in logs:
        for m in events:
            if type(m) is MessagesEvent:
                key = (m.channel, m.source, m.target)
                (sent if m.is_send else received)[key] += m.record_count
    assert sent == received
    per_pact = collections.Counter()
    for (channel, _, _), n in sent.items():
        per_pact[pacts[channel]] += n
    assert per_pact["Broadcast"] == 7 * workers          # a copy for every worker
    assert per_pact["Exchange('k')"] == 11               # columnar rows, routed by column


def test_a_channel_kind_is_the_pacts_own_word():
    """Broadcast, scope boundaries and a pact of one's own are logged with
    the kind they say they are (a pact that says nothing: ``custom``)."""

    class Mine(timely.Pipeline):
        def __repr__(self):
            return "Exchange(looks like one)"

    def work(worker):
        events = []
        worker.logging.register(lambda time, batch: events.extend(batch), ["ChannelsEvent"])
        with worker.dataflow() as scope:
            stream = scope.to_stream(range(3))
            stream.broadcast().probe()
            stream.unary(Mine(), "Mine", lambda cap, info: lambda i, o: list(i)).probe()
            with scope.iterative() as inner:
                stream.enter(inner).leave().probe()
        worker.drain()
        worker.logging.flush()
        return sorted({(e.pact, e.kind) for _, _, e in events if type(e) is ChannelsEvent})

    (got,) = timely.execute(work, workers=1)
    kinds = {kind for _, kind in got}
    assert {"broadcast", "enter", "leave", "pipeline"} <= kinds
    assert ("Exchange(looks like one)", "pipeline") in got
