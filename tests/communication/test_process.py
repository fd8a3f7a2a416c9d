"""Worker processes: the launcher killed outright leaves no worker and, after
the next launch's sweep, no shared memory behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import timely
from timely.communication.process import PREFIX, sweep_orphans

ROOT = Path(__file__).resolve().parent.parent.parent

LAUNCHER = textwrap.dedent("""
    import os, sys, time
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        with open(os.path.join(sys.argv[1], f"worker-{worker.index}"), "w") as f:
            f.write(str(os.getpid()))
        t = 0
        while True:
            t += 1
            handle.advance_to(t)
            worker.step_while(lambda: probe.less_than(handle.time))
            time.sleep(0.001)

    timely.execute(work, workers=2)
""")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not running any more
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_killed_launcher_takes_its_workers_and_segments_with_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("worker-*"))) < 2:
            assert launcher.poll() is None, "the launcher exited early"
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.05)
        workers = [int(p.read_text()) for p in tmp_path.glob("worker-*")]
        segments = [n for n in os.listdir("/dev/shm") if n.startswith(f"{PREFIX}{launcher.pid}-")]
        assert len(segments) == 1
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "workers outlived their launcher"
            time.sleep(0.05)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    # The segment's owner is gone: the next launch's sweep removes it, if
    # multiprocessing's resource tracker has not already done so.
    sweep_orphans()
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"{PREFIX}{launcher.pid}-")]


def test_sweep_removes_segments_of_dead_launchers_only(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = tmp_path / f"{PREFIX}{os.getpid()}-aaaa"
    orphan = tmp_path / f"{PREFIX}{dead.pid}-bbbb"
    other = tmp_path / "someone-else"
    for path in (mine, orphan, other):
        path.write_bytes(b"")
    assert sweep_orphans(str(tmp_path)) == [orphan.name]
    assert mine.exists() and other.exists() and not orphan.exists()


def test_a_producer_faster_than_its_consumer_stays_bounded():
    """Worker 0 sends 20 MB to a slow worker 1 through a 1 MiB ring: the rest
    waits in worker 0's queue, nobody blocks, nothing is lost."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            total = (stream.exchange(lambda x: 1)
                     .inspect_batch(lambda t, b: time.sleep(0.0005))
                     .map(len).accumulate(0, lambda acc, b: acc + sum(b)).capture())
        if worker.index == 0:
            for _ in range(200):
                handle.send_batch([b"x" * 1000] * 100)
        handle.close()
        worker.drain()
        return total.extract()

    results = timely.execute(work, workers=2)
    assert results[0] == []
    assert results[1] == [(0, [200 * 100 * 1000])]
