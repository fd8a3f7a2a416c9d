"""Exactly-once ``foreach_batch`` when the driver process really dies: the
query of ``streaming_program.py`` runs in its own process and ends with
``os._exit`` (no cleanup, as a SIGKILL leaves it) at each point between the
sink's write and its commit, on a different micro-batch each time; each
restart on the same checkpoint goes on from there, and in the end every
(epoch, key) reached the sink exactly once. Four processes in all, each
with one ``local[1]`` session; what a killed one leaves (its JVM, Spark's
Python workers) is stopped by its process group, the group of the PID we
started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq

from tests.spark.streaming_program import KILLED
from timely.spark.sinks import DirectorySink

PROGRAM = os.path.join(os.path.dirname(__file__), "streaming_program.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = [[(1, 10), (2, 20), (1, 5)], [(2, 1), (3, 3)], [(3, 4), (4, 4), (3, 1)], [(5, 9)]]
# point of the write -> the batch it kills
KILLS = [("before write", 1), ("after write", 2), ("after commit", 3), (None, None)]


def expected() -> Counter:
    totals: Counter = Counter()
    for epoch, rows in enumerate(FILES):
        for key, value in rows:
            totals[(epoch, key)] += value
    return totals


def run_program(source, out, checkpoint, kill_at) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    env.pop("TIMELY_TEST_KILL_AT", None)
    if kill_at is not None:
        env["TIMELY_TEST_KILL_AT"] = f"{kill_at[0]}:{kill_at[1]}"
    process = subprocess.Popen([sys.executable, PROGRAM, str(source), str(out), str(checkpoint)],
                               env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        _, err = process.communicate(timeout=300)
    finally:
        # The JVM and Spark's Python workers are in the session we started.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == (KILLED if kill_at else 0), err.decode(errors="replace")[-3000:]
    return process.returncode


def sink_rows(out) -> Counter:
    got: Counter = Counter()
    for name in sorted(os.listdir(out)):
        if not name.startswith("batch="):
            continue
        table = pq.read_table(os.path.join(out, name))
        for epoch, key, total in zip(*(table.column(c).to_pylist()
                                       for c in ("epoch", "key", "total"))):
            assert epoch == int(name.split("=")[1])
            got[(epoch, key, total)] += 1
    return got


def test_a_killed_query_restarted_on_its_checkpoint_applies_every_key_once(tmp_path):
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    source.mkdir()
    now = time.time()
    for i, rows in enumerate(FILES):
        path = source / f"{i}.json"
        path.write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in rows))
        os.utime(path, (now - 100 + i, now - 100 + i))   # read in this order
    sink = DirectorySink(str(out))
    for point, batch in KILLS:
        run_program(source, out, checkpoint, None if point is None else (point, batch))
        committed = sink.committed()
        if point == "after commit" or point is None:
            assert committed == 3
        else:
            # killed before the rename: the batch is not committed, and the
            # batch before it is (the restart replayed it once)
            assert committed == batch - 1, (point, committed)
        if point == "after write":
            assert os.path.isdir(out / f"_staging-{batch}")
    want = Counter({(epoch, key, total): 1 for (epoch, key), total in expected().items()})
    assert sink_rows(out) == want
    assert not [n for n in os.listdir(out) if n.startswith("_staging")]
