"""The launchers: results in index order, fail-stop, and nothing left behind
(no worker process, no shared-memory segment) whether the computation ends,
fails, or its launcher is killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from argparse import Namespace
from pathlib import Path

import pytest

from timely.communication.shm import PREFIX, SHM_DIRECTORY
from timely.errors import TimelyError, WorkerFailed
from timely.launch import execute_cluster, execute_processes, execute_threads

ROOT = Path(__file__).resolve().parent.parent.parent


def my_segments():
    return [n for n in os.listdir(SHM_DIRECTORY) if n.startswith(f"{PREFIX}{os.getpid()}-")]


def index_and_peers(worker):
    return worker.index, worker.peers


@pytest.mark.parametrize("launch", [execute_processes, execute_threads])
def test_results_come_in_index_order(launch):
    assert launch(index_and_peers, 3) == [(0, 3), (1, 3), (2, 3)]
    assert my_segments() == []


def test_processes_can_be_a_slice_of_the_workers():
    """Workers 2 and 3 of 4, with no link to the others: only their own
    indices and the total are visible."""
    assert execute_processes(index_and_peers, 2, first=2, peers=4) == [(2, 4), (3, 4)]


def fail_in_worker_1(worker):
    if worker.index == 1:
        raise ValueError("boom in worker 1")
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = stream.exchange(lambda x: x).probe()
    t = 0
    while True:
        t += 1
        handle.advance_to(t)
        worker.step_while(lambda: probe.less_than(handle.time))


def test_a_failing_process_stops_the_others_and_leaves_no_segment():
    start = time.monotonic()
    with pytest.raises(WorkerFailed, match="(?s)worker 1 failed.*boom in worker 1"):
        execute_processes(fail_in_worker_1, 3)
    assert time.monotonic() - start < 30
    assert my_segments() == []


def test_a_failing_thread_stops_the_others():
    with pytest.raises(WorkerFailed, match="(?s)worker 1 failed.*boom in worker 1") as info:
        execute_threads(fail_in_worker_1, 3)
    assert isinstance(info.value.__cause__, ValueError)


def test_the_cluster_start_up_checks_its_configuration(monkeypatch):
    config = Namespace(workers=1, processes=2, process=0, hostfile=None)
    monkeypatch.delenv("TIMELY_SECRET", raising=False)
    with pytest.raises(TimelyError, match="TIMELY_SECRET"):
        execute_cluster(index_and_peers, config)
    monkeypatch.setenv("TIMELY_SECRET", "s3cret")
    with pytest.raises(TimelyError, match=r"-p 2 is not in \[0, 2\)"):
        execute_cluster(index_and_peers, Namespace(**{**vars(config), "process": 2}))
    with pytest.raises(TimelyError, match="-w 0"):
        execute_cluster(index_and_peers, Namespace(**{**vars(config), "workers": 0}))


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
    # Its own process group, so that kill -9 of the whole group takes launcher
    # and workers at once: nothing of theirs may run any cleanup.
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path)], env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("worker-*"))) < 2:
            assert launcher.poll() is None, "the launcher exited early"
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.05)
        workers = [int(p.read_text()) for p in tmp_path.glob("worker-*")]
        # The workers share the launcher's rings by inheritance: the segment
        # has no name in /dev/shm even while they run.
        assert not [n for n in os.listdir(SHM_DIRECTORY)
                    if n.startswith(f"{PREFIX}{launcher.pid}-")]
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "workers outlived their launcher"
            time.sleep(0.05)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)
    assert not [n for n in os.listdir(SHM_DIRECTORY) if n.startswith(f"{PREFIX}{launcher.pid}-")]


def stop_worker_1(worker):
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = stream.exchange(lambda x: x).probe()
    for t in range(1, 10**6):
        if worker.index == 1 and t == 20:
            os.kill(os.getpid(), signal.SIGSTOP)
        handle.send(t)
        handle.advance_to(t)
        worker.step_while(lambda: probe.less_than(handle.time))
    return worker.index


@pytest.mark.parametrize("workers", [2, 3])
def test_a_stopped_worker_fails_the_computation_within_the_liveness_timeout(monkeypatch,
                                                                             workers):
    monkeypatch.setenv("TIMELY_LIVENESS_TIMEOUT", "1")
    start = time.monotonic()
    with pytest.raises(WorkerFailed, match="worker 1 .* was stopped for more than 1 s"):
        execute_processes(stop_worker_1, workers)
    assert time.monotonic() - start < 15
    assert my_segments() == []


def test_the_liveness_timeout_is_checked(monkeypatch):
    monkeypatch.setenv("TIMELY_LIVENESS_TIMEOUT", "soon")
    with pytest.raises(TimelyError, match="TIMELY_LIVENESS_TIMEOUT"):
        execute_processes(index_and_peers, 2)
