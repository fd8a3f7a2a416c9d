"""The send window between workers: a slow consumer bounds the memory of
the workers that feed it, over rings and over TCP, and workers that feed
each other never deadlock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import timely
from timely.communication.allocator import CREDIT_AT, DEFAULT_WINDOW, MIN_WINDOW
from timely.config import Config
from timely.container.routing import stable_hash
from tests.runtime.test_cluster import ROOT, finish, hostfile_for

ROWS = 100_000                       # 1.6 MB a batch: two int64 columns


def resident_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def key_for(worker: int, peers: int) -> int:
    return next(k for k in range(1000) if stable_hash(k) % peers == worker)


def slow_consumer(rounds: int, pause: float):
    """Workers other than the last send ``rounds`` batches as fast as they
    can; they all go to the last worker, which takes ``pause`` seconds a
    batch. Returns each worker's (rows seen, RSS after the first batches,
    largest RSS)."""

    def work(worker):
        peers = worker.peers
        key = key_for(peers - 1, peers)
        seen = [0]

        def consume(_time, batch):
            time.sleep(pause)
            seen[0] += len(batch)

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.exchange("k").inspect_batch(consume)
        sizes = []
        flights = [0]
        if worker.index < peers - 1 or peers == 1:
            for r in range(rounds):
                handle.send_batch(timely.Batch(k=np.full(ROWS, key, dtype=np.int64),
                                               v=np.arange(ROWS, dtype=np.int64) + r))
                handle.advance_to(r + 1)
                worker.step()
                sizes.append(resident_mb())
                in_flight = getattr(worker.allocator, "in_flight", {})   # a snapshot
                flights.append(max(in_flight.values(), default=0))
        handle.close()
        while worker.step_or_park(0.01):
            sizes.append(resident_mb())
        return seen[0], sizes[min(5, len(sizes) - 1)], max(sizes), max(flights)

    return work


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_slow_consumer_bounds_the_memory_of_its_producers(workers):
    rounds = 150
    results = timely.execute(slow_consumer(rounds, 0.004), workers)
    producers = max(1, workers - 1)
    assert sum(seen for seen, _, _, _ in results) == producers * rounds * ROWS
    for index, (_seen, steady, peak, flight) in enumerate(results):
        # What a sender has out never passes the window by more than the
        # batch it sent last (1.6 MB and its frame).
        assert flight < DEFAULT_WINDOW + (2 << 20), (index, flight)
        # 150 batches of 1.6 MB: without a window the producers grow by
        # more than 100 MB (see test_without_a_window_the_backlog_grows);
        # with it by less than a fresh process's whole size (~35 MB). The
        # growth is what counts: a worker forked from a big process starts
        # big.
        assert peak - steady < 30, (index, steady, peak)


def test_without_a_window_the_backlog_grows():
    """The control for the test above: the same run unbounded."""
    results = timely.execute(slow_consumer(150, 0.01), 2, window=None)
    _seen, steady, peak, flight = results[0]
    assert flight > 4 * DEFAULT_WINDOW, flight
    assert peak - steady > 100, (steady, peak)


def mutual(worker):
    """Every worker sends to every other as fast as it can, and consumes
    slowly: each waits on the others' windows while they wait on its."""
    got = []

    def consume(_time, batch):
        time.sleep(0.001)
        got.append(int(batch["v"].sum()))

    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        stream.exchange("k").inspect_batch(consume)
    for r in range(60):
        keys = np.arange(ROWS // 10, dtype=np.int64) + worker.index
        handle.send_batch(timely.Batch(k=keys, v=np.full(len(keys), r, dtype=np.int64)))
        handle.advance_to(r + 1)
        worker.step()
    handle.close()
    worker.drain()
    return sum(got)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_feeding_each_other_through_a_small_window_finish(workers):
    results = timely.execute(mutual, workers, window=MIN_WINDOW)
    assert sum(results) == workers * (ROWS // 10) * sum(range(60))


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_feeding_each_other_finish_as_threads(workers):
    results = timely.execute(mutual, workers, mode="threads")
    assert sum(results) == workers * (ROWS // 10) * sum(range(60))


def source_work(worker):
    """An iterator source on every worker, all of it to the last one, which
    is slow."""
    peers = worker.peers
    key = key_for(peers - 1, peers)
    chunks = iter(range(40))
    seen = [0]
    probe = timely.ProbeHandle()

    def next_input(_time):
        r = next(chunks, None)
        if r is None:
            return None
        # One record: an array of 0.8 MB. The next call comes at once: no
        # pacing by the probe.
        return (r, [(r, [np.arange(ROWS, dtype=np.int64)])], r)

    def consume(_time, records):
        time.sleep(0.02)
        seen[0] += sum(len(array) for array in records)

    from timely.dataflow.operators.flow_controlled import iterator_source
    with worker.dataflow() as scope:
        iterator_source(scope, "Source", next_input, probe).exchange(lambda _: key).inspect_batch(consume)
    sizes = [resident_mb()]
    flights = [0]
    while worker.step_or_park(0.01):
        sizes.append(resident_mb())
        in_flight = getattr(worker.allocator, "in_flight", {})   # a snapshot
        flights.append(max(in_flight.values(), default=0))
    return seen[0], min(sizes), max(sizes), max(flights)


@pytest.mark.parametrize("workers", [2, 3])
def test_an_iterator_source_waits_for_the_window(workers):
    results = timely.execute(source_work, workers)
    assert sum(seen for seen, _, _, _ in results) == workers * 40 * ROWS
    for index, (_seen, low, peak, flight) in enumerate(results):
        # Each source makes 32 MB; unbounded, much of it is out at once.
        assert flight < DEFAULT_WINDOW + (1 << 20), (index, flight)
        assert peak < low + 16, (index, low, peak)


def test_an_iterator_source_without_a_window_runs_ahead():
    results = timely.execute(source_work, 2, window=None)
    assert sum(seen for seen, _, _, _ in results) == 2 * 40 * ROWS
    _seen, _low, _peak, flight = results[0]
    assert flight > 2 * DEFAULT_WINDOW, flight


def test_an_iterator_source_at_one_worker():
    ((seen, _low, _peak, _flight),) = timely.execute(source_work, 1)
    assert seen == 40 * ROWS


def test_the_window_is_configured_by_the_environment(monkeypatch):
    def window_from_env():
        return Config.from_env().communication.window

    monkeypatch.delenv("TIMELY_WINDOW", raising=False)
    assert window_from_env() == DEFAULT_WINDOW
    for value, expected in [("1m", 1 << 20), ("262144", 262144), ("2G", 2 << 30), ("none", None)]:
        monkeypatch.setenv("TIMELY_WINDOW", value)
        assert window_from_env() == expected
    for bad in ["lots", "1x", "-4m", str(MIN_WINDOW - 1)]:
        monkeypatch.setenv("TIMELY_WINDOW", bad)
        with pytest.raises(timely.ConfigurationError, match="TIMELY_WINDOW"):
            window_from_env()
    # A bad setting fails before any worker starts.
    monkeypatch.setenv("TIMELY_WINDOW", "lots")
    with pytest.raises(timely.ConfigurationError):
        timely.execute(lambda worker: None, 2)
    assert CREDIT_AT < MIN_WINDOW


CLUSTER_PROGRAM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import timely
    from tests.runtime.test_backpressure import slow_consumer
    print(json.dumps(timely.execute_from_args(sys.argv[1:], slow_consumer(120, 0.004))))
""")


@pytest.mark.parametrize(("n", "w"), [(2, 1), (2, 2)])
def test_a_slow_consumer_on_another_host_bounds_its_producers(n, w, tmp_path):
    hostfile = hostfile_for(tmp_path, n, w)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "s3cret",
           "TIMELY_CONNECT_TIMEOUT": "20"}
    procs = [subprocess.Popen([sys.executable, "-c", CLUSTER_PROGRAM, "-w", str(w), "-n", str(n),
                               "-p", str(p), "-h", str(hostfile)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in range(n)]
    try:
        outcomes = finish(procs, timeout=120)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    results = []
    for code, out, err in outcomes:
        assert code == 0, err
        results += json.loads(out)
    assert sum(seen for seen, _, _, _ in results) == (n * w - 1) * 120 * ROWS
    for index, (_seen, steady, peak, flight) in enumerate(results):
        assert flight < DEFAULT_WINDOW + (2 << 20), (index, flight)
        assert peak - steady < 30, (index, steady, peak)


def drop_then_run(worker):
    """Worker 0 sends 16 MB into a dataflow that the last worker drops
    before running it; both then run another. Dropped data is credited
    when it arrives, so the sender's window opens again."""
    peers = worker.peers
    key = key_for(peers - 1, peers)
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        stream.exchange("k").inspect_batch(lambda _t, _b: None)
    first = worker.installed_dataflows()[0]
    if worker.index == peers - 1:
        worker.drop_dataflow(first)
    else:
        for r in range(10):
            handle.send_batch(timely.Batch(k=np.full(ROWS, key, dtype=np.int64),
                                           v=np.arange(ROWS, dtype=np.int64)))
            handle.advance_to(r + 1)
            worker.step()
        worker.drop_dataflow(first)
    seen = [0]
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        stream.exchange("k").inspect_batch(lambda _t, batch: seen.__setitem__(0, seen[0] + len(batch)))
    handle.send_batch(timely.Batch(k=np.full(10, key, dtype=np.int64), v=np.arange(10, dtype=np.int64)))
    handle.close()
    worker.drain(timeout=60)
    return seen[0]


@pytest.mark.parametrize("workers", [2, 3])
def test_data_for_a_dropped_dataflow_gives_its_window_back(workers):
    assert sum(timely.execute(drop_then_run, workers)) == 10 * workers


def stuck_consumer(worker):
    """The last worker sleeps on its first batch longer than the stall
    warning; the sender logs that it waits, naming it."""
    import logging

    peers = worker.peers
    key = key_for(peers - 1, peers)
    heard = []

    class Keep(logging.Handler):
        def emit(self, record):
            heard.append(record.getMessage())

    keep = Keep()
    logging.getLogger("timely.worker").addHandler(keep)
    slept = []

    def consume(_time, _batch):
        if not slept:
            slept.append(True)
            time.sleep(1.5)

    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        stream.exchange("k").inspect_batch(consume)
    if worker.index == 0:
        for r in range(8):
            handle.send_batch(timely.Batch(k=np.full(ROWS, key, dtype=np.int64),
                                           v=np.arange(ROWS, dtype=np.int64)))
            handle.advance_to(r + 1)
            worker.step()
    handle.close()
    worker.drain()
    logging.getLogger("timely.worker").removeHandler(keep)
    return heard


def test_a_long_wait_for_the_window_is_reported():
    heard = timely.execute(stuck_consumer, 2, stall_warning=0.3)[0]
    assert any("waited" in line and "[1]" in line and "send windows are full" in line
               for line in heard), heard
