"""Columnar streams: batches through exchange, broadcast, tees and progress at
1, 2 and 3 workers (the routing kernels are tested in tests/container)."""

from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import pytest

import timely
from tests.container.helpers import object_array
from timely import Batch
from timely.capture.event import Messages
from timely.dataflow.channels import Pipeline

# -- dataflows ----------------------------------------------------------------------

EPOCHS = 3


def make_batches():
    """The whole input: ``(epoch, batch)`` pairs, the same whatever the worker count.
    Values are unique, so each row can be followed."""
    rng = np.random.default_rng(20240)
    batches = []
    value = 0
    for i in range(9):
        n = [0, 1, 7, 40, 300][i % 5]
        keys = rng.integers(-60, 60, size=n, dtype=np.int64)
        if n >= 2:
            keys[:2] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
        values = np.arange(value, value + n, dtype=np.int64)
        value += n
        batches.append((i % EPOCHS, Batch(key=keys, value=values)))
    return batches


BATCHES = make_batches()


def input_rows(epoch=None) -> Counter:
    return Counter((t, k, v) for t, b in BATCHES if epoch in (None, t) for k, v in b.to_records())


def feed(worker, handle, epoch) -> None:
    """Sends this worker's share of the batches of ``epoch`` (batch i from worker i % peers)."""
    for i, (t, batch) in enumerate(BATCHES):
        if t == epoch and i % worker.peers == worker.index:
            handle.send_batch(batch)


def run_epochs(worker, handle) -> None:
    for epoch in range(EPOCHS):
        feed(worker, handle, epoch)
        handle.advance_to(epoch + 1)
        worker.step()
    handle.close()
    worker.drain()


def captured_rows(capture, names=("key", "value")) -> list:
    """``(time, *row)`` of every row a capture saw; every message must be a Batch."""
    rows = []
    for event in capture.events:
        if type(event) is Messages:
            assert type(event.data) is Batch, type(event.data)
            rows += [(event.time, *r) for r in event.data.select(names).to_records()]
    return rows


def test_exchange_by_key_column(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.exchange("key").capture()
        run_epochs(worker, handle)
        return worker.index, worker.peers, captured_rows(capture)

    results = timely.execute(work, workers=workers)
    everything: Counter = Counter()
    for index, peers, rows in results:
        assert peers == workers
        assert all(key % peers == index for _, key, _ in rows)
        everything.update(rows)
    assert everything == input_rows()


def test_exchange_by_a_function_of_the_batch(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.exchange(lambda b: b["value"] * 3).capture()
        run_epochs(worker, handle)
        return worker.index, captured_rows(capture)

    everything: Counter = Counter()
    for index, rows in timely.execute(work, workers=workers):
        assert all(value * 3 % workers == index for _, _, value in rows)
        everything.update(rows)
    assert everything == input_rows()


def test_str_keys_go_where_records_with_those_keys_go(workers):
    words = [
        "",
        "a",
        "timely",
        "dataflow",
        "ключ",
        "鍵",
        "emoji 🦀",
        "\ud800lone",
        *(f"w{i}" for i in range(60)),
    ]

    def work(worker):
        with worker.dataflow() as scope:
            batch_handle, batches = scope.new_input()
            record_handle, records = scope.new_input()
            by_column = batches.exchange("key").capture()
            by_record = records.exchange(lambda r: r).capture()
        if worker.index == 0:
            batch_handle.send_batch(Batch(key=object_array(words), n=np.arange(len(words))))
            record_handle.send_batch(list(words))
        batch_handle.close()
        record_handle.close()
        worker.drain()
        from_batches = [k for _, k in captured_rows(by_column, ("key",))]
        from_records = [r for _, data in by_record.extract() for r in data]
        return worker.index, sorted(from_batches), sorted(from_records)

    seen = []
    for index, from_batches, from_records in timely.execute(work, workers=workers):
        assert from_batches == from_records
        assert all(
            zlib.crc32(w.encode("utf-8", "surrogatepass")) % workers == index for w in from_batches
        )
        seen += from_batches
    assert sorted(seen) == sorted(words)


def test_a_str_route_refuses_records(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange("key").capture()
        handle.send_batch([{"key": 1}])
        handle.close()
        worker.drain()

    with pytest.raises(Exception) as caught:
        timely.execute(work, workers=workers)
    assert "routes columnar batches, not a list" in str(caught.value)


def test_exchange_route_must_be_callable_or_a_name():
    with pytest.raises(TypeError, match="neither callable nor a column name"):
        timely.Exchange(3)


def test_broadcast_reaches_every_worker(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.broadcast().capture()
        run_epochs(worker, handle)
        return captured_rows(capture)

    results = timely.execute(work, workers=workers)
    assert len(results) == workers
    for rows in results:
        assert Counter(rows) == input_rows()


def test_a_tee_shares_one_batch_with_every_consumer(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            exchanged = stream.exchange("key")
            first = exchanged.capture()
            second = exchanged.capture()

            def doubler(capability, info):
                capability.drop()

                def logic(inp, out):
                    for cap, data in inp:
                        out.session(cap).give_container(data.with_columns(value=data["value"] * 2))

                return logic

            doubled = exchanged.unary(Pipeline(), "Double", doubler).capture()
            third = exchanged.capture()
        run_epochs(worker, handle)
        batches = [
            [e.data for e in c.events if type(e) is Messages] for c in (first, second, third)
        ]
        shared = all(a is b is c for a, b, c in zip(*batches))
        same_count = len({len(b) for b in batches}) == 1
        return (
            shared,
            same_count,
            captured_rows(first),
            captured_rows(second),
            captured_rows(third),
            captured_rows(doubled),
        )

    totals = [Counter() for _ in range(4)]
    for shared, same_count, *captures in timely.execute(work, workers=workers):
        assert shared and same_count
        assert captures[0] == captures[1] == captures[2]
        for total, rows in zip(totals, captures):
            total.update(rows)
    assert totals[0] == totals[1] == totals[2] == input_rows()
    assert totals[3] == Counter((t, k, 2 * v) for t, k, v in input_rows().elements())


def test_probe_passes_only_after_every_row_of_a_time_arrived(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            exchanged = stream.exchange("key")
            capture = exchanged.capture()
            counts = exchanged.count().capture()
            probe = exchanged.probe()
        seen_at_pass = []
        for epoch in range(EPOCHS):
            feed(worker, handle, epoch)
            handle.advance_to(epoch + 1)
            while probe.less_than(epoch + 1):
                worker.step_or_park(0.001)
            seen_at_pass.append(sorted(r for r in captured_rows(capture) if r[0] == epoch))
        handle.close()
        worker.drain()
        assert probe.done()
        return seen_at_pass, captured_rows(capture), counts.extract()

    results = timely.execute(work, workers=workers)
    for epoch in range(EPOCHS):
        total: Counter = Counter()
        counted = 0
        for seen_at_pass, rows, counts in results:
            final = sorted(r for r in rows if r[0] == epoch)
            assert seen_at_pass[epoch] == final  # nothing at `epoch` came after the probe passed
            total.update(final)
            # count() reports once per complete time, the rows (len of batches) at that time.
            at_epoch = [c for t, cs in counts if t == epoch for c in cs]
            assert at_epoch == ([len(final)] if final else [])
            counted += sum(at_epoch)
        assert total == input_rows(epoch)
        assert counted == sum(len(b) for t, b in BATCHES if t == epoch)


def test_send_batch_sends_one_message(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.capture()
        if worker.index == 0:
            handle.send(-1)  # buffered records go first, as their own message
            handle.send_batch(BATCHES[4][1])
            handle.send_batch(Batch(key=np.zeros(0, dtype=np.int64)))  # empty: nothing sent
        handle.close()
        worker.drain()
        return [(e.time, e.data) for e in capture.events if type(e) is Messages]

    results = timely.execute(work, workers=workers)
    assert results[0][0] == (0, [-1])
    assert results[0][1][0] == 0 and results[0][1][1] == BATCHES[4][1]
    assert len(results[0]) == 2
    assert all(r == [] for r in results[1:])


def test_exchange_keeps_every_column_and_dtype(workers):
    n = 500
    keys = np.arange(n, dtype=np.int64) * 7 - 900
    batch = Batch(
        key=keys,
        when=(keys * 1000).astype("M8[ms]"),
        tag=np.array([str(k).encode() for k in keys], dtype="S6"),
        f=(keys / 3).astype(np.float32),
        odd=keys % 2 == 1,
        name=object_array([f"n{k}" for k in keys]),
    )

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            capture = stream.exchange("key").capture()
        if worker.index == worker.peers - 1:
            handle.send_batch(batch)
        handle.close()
        worker.drain()
        got = [e.data for e in capture.events if type(e) is Messages]
        return worker.index, Batch.concat(got) if got else None

    parts = []
    for index, got in timely.execute(work, workers=workers):
        if got is None:
            continue
        assert got.names == batch.names
        assert [got[n].dtype for n in got.names] == [batch[n].dtype for n in batch.names]
        assert (got["key"] % workers == index).all()
        parts.append(got)
    whole = Batch.concat(parts)
    order = np.argsort(whole["key"])
    assert whole.take(order) == batch
