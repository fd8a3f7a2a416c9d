"""Capture and replay throughput, to and from a file in the page cache.

Columnar data: 10^7 rows in 100 :class:`timely.Batch` es of 10^5 rows, two
int64 columns (160 MB of column data), one batch per time.

- ``write columnar``: ``EventWriter.push(Messages(t, batch))`` for every
  batch into a fresh temporary file, then ``finish()``; GB/s of column data.
- ``read columnar``: ``EventReader(follow=False)`` over that file, every
  event to the end, each batch let go once looked at (as a consumer would);
  GB/s. A check outside the timing compares every column with what was
  written.
- ``capture_into``: a one-worker dataflow, the batches sent through an input
  (``send_batch``, one time per batch), captured with
  ``stream.capture_into(EventWriter(file))``; GB/s.
- ``replay_into``: one worker replays that file with ``replay_into`` and
  counts rows with ``inspect_batch``; GB/s.
- baselines, same data and file: ``file.write`` of each column's buffer
  (no framing, no checksum), and ``readinto`` of the file into preallocated
  arrays — the most any format can do here.

Plain records: 10^6 records in lists of 1024, written and read back with
the format (``ints``: Python ints, the int64 fast path; ``tuples``: records
``(int, str, float)``, the tagged encoding); M records/s each way. Baseline:
``pickle`` protocol 5 of each list (what the format refuses to read from an
untrusted stream).

Target: ≥ 1 GB/s each way for columnar data. Every figure is the best of a
few rounds and follows a check of the answer. Run with
``pytest benchmarks/test_capture.py --benchmark-only`` (a table is printed at
the end) or ``python benchmarks/test_capture.py``.
"""

from __future__ import annotations

import functools
import os
import pickle
import tempfile
import time

import harness  # puts this checkout first on sys.path, so `timely` is the in-place build
import numpy as np
import pytest

import timely
from timely import Batch
from timely.capture import EventReader, EventWriter, Messages, replay_into

ROWS = 10**7
PER_BATCH = 10**5
RECORDS = 10**6
PER_LIST = 1024
TARGET = 1e9          # bytes per second, each way
ROUNDS = 3


@functools.cache
def batches() -> list:
    out = []
    for start in range(0, ROWS, PER_BATCH):
        key = np.arange(start, start + PER_BATCH, dtype=np.int64)
        out.append(Batch({"key": key, "value": key * 3 + 1}))
    return out


def column_bytes() -> int:
    return sum(b.nbytes for b in batches())


@functools.cache
def record_lists(kind: str) -> list:
    if kind == "ints":
        records = list(range(RECORDS))
    else:
        records = [(i, f"w{i % 1000}", i / 7) for i in range(RECORDS)]
    return [records[i:i + PER_LIST] for i in range(0, RECORDS, PER_LIST)]


def scratch_path(name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"timely-bench-{os.getpid()}-{name}")


def fresh(path: str) -> str:
    """``path``, removed if it exists: every write makes a new file. (Rewriting a
    truncated file makes some file systems, ext4 among them, flush it on close,
    which would time the disk, not the format.)"""
    if os.path.exists(path):
        os.unlink(path)
    return path


# ---------------------------------------------------------------------------
# Columnar workloads (each returns what its check needs)
# ---------------------------------------------------------------------------


def write_columnar(path: str) -> int:
    with open(fresh(path), "wb") as f:
        writer = EventWriter(f)
        for t, batch in enumerate(batches()):
            writer.push(Messages(t, batch))
        writer.finish()
    return os.path.getsize(path)


def read_columnar(path: str, keep: bool = False) -> list:
    """Every event of the file; ``keep=False`` (the timed form) keeps of each
    batch only its time, rows and end values, and lets the batch go as a
    consumer would (holding all 160 MB would time fresh memory's page faults)."""
    out = []
    with open(path, "rb") as f:
        for event in EventReader(f, follow=False):
            if keep:
                out.append(event)
            else:
                key, value = event.data["key"], event.data["value"]
                out.append((event.time, len(event.data), int(key[0]), int(value[-1])))
    return out


def check_columnar(events: list) -> None:
    expected = batches()
    if len(events) != len(expected):
        raise harness.Mismatch(f"read {len(events)} batches, wrote {len(expected)}")
    for t, (event, batch) in enumerate(zip(events, expected)):
        if type(event) is tuple:
            want = (t, len(batch), int(batch["key"][0]), int(batch["value"][-1]))
            if event != want:
                raise harness.Mismatch(f"batch {t}: {event}, expected {want}")
        elif event.time != t or not event.data.equals(batch):
            raise harness.Mismatch(f"batch {t} differs")


def capture_columnar(path: str) -> int:
    def work(worker):
        writer = EventWriter(open(fresh(path), "wb"))
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.capture_into(writer)
        for t, batch in enumerate(batches()):
            handle.send_batch(batch)
            handle.advance_to(t + 1)
            worker.step()
        handle.close()
        worker.drain()
        writer.close()
        return os.path.getsize(path)

    return timely.execute_directly(work)


def replay_columnar(path: str) -> tuple:
    def work(worker):
        rows = [0, 0]

        def count(time, batch):
            rows[0] += len(batch)
            rows[1] += int(batch["key"][-1])

        reader = EventReader(open(path, "rb"), follow=False)
        with worker.dataflow() as scope:
            replay_into([reader], scope).inspect_batch(count)
        worker.drain()
        reader.close()
        return tuple(rows)

    return timely.execute_directly(work)


def check_replayed(result) -> None:
    expected = (ROWS, sum(int(b["key"][-1]) for b in batches()))
    if tuple(result) != expected:
        raise harness.Mismatch(f"replayed (rows, sum of last keys) {result}, expected {expected}")


def raw_write(path: str) -> int:
    with open(fresh(path), "wb") as f:
        for batch in batches():
            for column in batch.columns.values():
                f.write(column)
    return os.path.getsize(path)


def raw_read(path: str) -> list:
    out = []
    with open(path, "rb") as f:
        for _ in batches():
            key = np.empty(PER_BATCH, dtype=np.int64)
            value = np.empty(PER_BATCH, dtype=np.int64)
            f.readinto(key)
            f.readinto(value)
            out.append((key, value))
    return out


def check_raw(result) -> None:
    if isinstance(result, int):
        if result != column_bytes():
            raise harness.Mismatch(f"raw file of {result} bytes")
        return
    for (key, value), batch in zip(result, batches()):
        if not (np.array_equal(key, batch["key"]) and np.array_equal(value, batch["value"])):
            raise harness.Mismatch("raw read differs")


def check_written(size) -> None:
    if not column_bytes() < size < column_bytes() * 1.01:
        raise harness.Mismatch(f"a capture of {size} bytes for {column_bytes()} of columns")


# ---------------------------------------------------------------------------
# Plain records
# ---------------------------------------------------------------------------


def write_records(path: str, kind: str) -> int:
    with open(fresh(path), "wb") as f:
        writer = EventWriter(f)
        for t, records in enumerate(record_lists(kind)):
            writer.push(Messages(t, records))
        writer.finish()
    return os.path.getsize(path)


def read_records(path: str) -> list:
    with open(path, "rb") as f:
        return [e.data for e in EventReader(f, follow=False)]


def pickle_records(kind: str) -> list:
    return [pickle.loads(pickle.dumps(r, protocol=5)) for r in record_lists(kind)]


def check_records(kind: str):
    def check(result) -> None:
        if isinstance(result, int):
            return
        if result != record_lists(kind):
            raise harness.Mismatch(f"{kind}: records differ after the round trip")

    return check


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def best_of(fn, check, rounds: int = ROUNDS) -> float:
    timing = harness.measure(fn, check, rounds=rounds)
    return timing.best


def columnar_figures(rounds: int = ROUNDS) -> dict:
    """Best seconds of every columnar workload."""
    path = scratch_path("columnar")
    raw = scratch_path("raw")
    figures = {}
    try:
        figures["write columnar"] = best_of(lambda: write_columnar(path), check_written, rounds)
        check_columnar(read_columnar(path, keep=True))     # every value, once, untimed
        figures["read columnar"] = best_of(lambda: read_columnar(path), check_columnar, rounds)
        figures["capture_into"] = best_of(lambda: capture_columnar(path), check_written, rounds)
        figures["replay_into"] = best_of(lambda: replay_columnar(path), check_replayed, rounds)
        figures["baseline: file.write of the columns"] = best_of(
            lambda: raw_write(raw), check_raw, rounds)
        figures["baseline: readinto preallocated arrays"] = best_of(
            lambda: raw_read(raw), check_raw, rounds)
    finally:
        for p in (path, raw):
            if os.path.exists(p):
                os.unlink(p)
    return figures


def record_figures(kind: str, rounds: int = ROUNDS) -> dict:
    path = scratch_path(f"records-{kind}")
    check = check_records(kind)
    try:
        return {
            f"write records ({kind})": best_of(lambda: write_records(path, kind), check, rounds),
            f"read records ({kind})": best_of(lambda: read_records(path), check, rounds),
            f"baseline: pickle dumps+loads ({kind})": best_of(
                lambda: pickle_records(kind), check, rounds),
        }
    finally:
        if os.path.exists(path):
            os.unlink(path)


def table(columnar: dict, records: dict) -> str:
    size = column_bytes()
    lines = ["| workload | best time | throughput | ≥ 1 GB/s |", "| --- | --- | --- | --- |"]
    for name, seconds in columnar.items():
        rate = size / seconds
        met = "–" if name.startswith("baseline") else ("yes" if rate >= TARGET else "**no**")
        lines.append(f"| {name}, {ROWS:.0e} rows x 2 int64 | {harness.format_seconds(seconds)} "
                     f"| {rate / 1e9:.2f} GB/s | {met} |")
    for name, seconds in records.items():
        lines.append(f"| {name}, {RECORDS:.0e} records | {harness.format_seconds(seconds)} "
                     f"| {RECORDS / seconds / 1e6:.2f} M records/s | – |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

_columnar: dict = {}
_records: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _capture_summary(request):
    harness.print_at_end(request, "timely-capture-summary",
                         "capture format and replay throughput, measured in this run",
                         lambda: table(_columnar, _records) if (_columnar or _records) else "")
    yield


def test_columnar_throughput(benchmark):
    if not benchmark.enabled:
        # Without --benchmark-only: every workload once, checked, no figure.
        path = scratch_path("smoke")
        try:
            write_columnar(path)
            check_columnar(read_columnar(path, keep=True))
            check_written(capture_columnar(path))
            check_replayed(replay_columnar(path))
        finally:
            os.unlink(path)
        return
    figures: dict = {}
    benchmark.pedantic(lambda: figures.update(columnar_figures()), rounds=1, iterations=1)
    _columnar.update(figures)
    size = column_bytes()
    benchmark.extra_info.update(
        {f"{name}: GB/s": round(size / s / 1e9, 2) for name, s in figures.items()})
    benchmark.extra_info["meets_target"] = all(
        size / s >= TARGET for name, s in figures.items() if not name.startswith("baseline"))


@pytest.mark.parametrize("kind", ["ints", "tuples"])
def test_record_throughput(benchmark, kind):
    if not benchmark.enabled:
        path = scratch_path("smoke-records")
        try:
            write_records(path, kind)
            check_records(kind)(read_records(path))
        finally:
            os.unlink(path)
        return
    figures: dict = {}
    benchmark.pedantic(lambda: figures.update(record_figures(kind)), rounds=1, iterations=1)
    _records.update(figures)
    benchmark.extra_info.update(
        {f"{name}: M records/s": round(RECORDS / s / 1e6, 2) for name, s in figures.items()})


if __name__ == "__main__":
    start = time.perf_counter()
    columnar = columnar_figures()
    records = {**record_figures("ints"), **record_figures("tuples")}
    print(table(columnar, records))
    print(f"\n({time.perf_counter() - start:.0f} s)")
