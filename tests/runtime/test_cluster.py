"""Workers in separate processes over authenticated TCP, on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

PROGRAM = textwrap.dedent("""
    import json, sys
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = (stream.exchange(lambda x: x)
                   .map(lambda x: (x, worker.index))
                   .capture())
            probe = stream.exchange(lambda x: x).probe()
        for epoch in range(5):
            handle.send_batch(list(range(epoch * 10 + worker.index, epoch * 10 + 10, worker.peers)))
            handle.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        return out.extract()

    print(json.dumps(timely.execute_from_args(sys.argv[1:], work)))
""")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def launch(n, hostfile, secret="s3cret", extra_env=None, workers=1):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": secret,
           "TIMELY_CONNECT_TIMEOUT": "20", **(extra_env or {})}
    return [subprocess.Popen([sys.executable, "-c", PROGRAM, "-w", str(workers), "-n", str(n),
                              "-p", str(i), "-h", str(hostfile)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(n)]


def finish(procs, timeout=60):
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        outs.append((p.returncode, out, err))
    return outs


def hostfile_for(tmp_path, n, w):
    """``n`` host lines whose ports ``port .. port + w - 1`` are all free."""
    lines = []
    while len(lines) < n:
        (port,) = free_ports(1)
        probe = []
        try:
            for k in range(w):
                s = socket.socket()
                probe.append(s)
                s.bind(("127.0.0.1", port + k))
        except OSError:
            continue
        finally:
            for s in probe:
                s.close()
        lines.append(f"127.0.0.1:{port}\n")
    path = tmp_path / "hosts"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(("n", "w"), [(2, 1), (3, 1), (2, 2), (3, 2)])
def test_processes_over_tcp_agree_with_one_worker(n, w, tmp_path):
    hostfile = hostfile_for(tmp_path, n, w)
    results = finish(launch(n, hostfile, workers=w))
    merged = {}
    for code, out, err in results:
        assert code == 0, err
        host_results = json.loads(out)
        assert len(host_results) == w
        for result in host_results:
            for time_, records in result:
                merged.setdefault(time_, []).extend(tuple(r) for r in records)
    peers = n * w
    for t in range(5):
        values = sorted(x for x, _ in merged[t])
        assert values == list(range(t * 10, t * 10 + 10))
        # each value was handled by worker value % peers
        assert all(w == x % peers for x, w in merged[t])


def test_garbage_and_unauthenticated_peers_are_dropped(tmp_path):
    ports = free_ports(2)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "s3cret",
           "TIMELY_CONNECT_TIMEOUT": "20"}
    first = subprocess.Popen([sys.executable, "-c", PROGRAM, "-n", "2", "-p", "0", "-h",
                              str(hostfile)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        # A peer that sends garbage, one that sends nothing, one with the wrong secret.
        deadline = time.monotonic() + 20
        while True:
            try:
                junk = socket.create_connection(("127.0.0.1", ports[0]), timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        junk.sendall(os.urandom(64) + b"\x80\x04\x95" * 100)
        silent = socket.create_connection(("127.0.0.1", ports[0]), timeout=1)
        wrong = subprocess.run(
            [sys.executable, "-c", PROGRAM, "-n", "2", "-p", "1", "-h", str(hostfile)],
            env={**env, "TIMELY_SECRET": "not the secret"}, capture_output=True, text=True,
            timeout=60)
        assert wrong.returncode != 0
        assert "AuthenticationError" in wrong.stderr
        # The real peer still gets in, and the computation completes.
        right = subprocess.run(
            [sys.executable, "-c", PROGRAM, "-n", "2", "-p", "1", "-h", str(hostfile)],
            env=env, capture_output=True, text=True, timeout=60)
        assert right.returncode == 0, right.stderr
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        junk.close()
        silent.close()
    finally:
        if first.poll() is None:
            first.kill()


LONG = textwrap.dedent("""
    import sys, time
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        print("running", flush=True)
        for epoch in range(100000):
            handle.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
            time.sleep(0.001)

    timely.execute_from_args(sys.argv[1:], work)
""")


def _our_segments():
    return [n for n in os.listdir("/dev/shm") if n.startswith("timely-")]


@pytest.mark.parametrize("w", [1, 2])
def test_a_peer_that_dies_fails_the_others(w, tmp_path):
    hostfile = hostfile_for(tmp_path, 2, w)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "s3cret",
           "TIMELY_CONNECT_TIMEOUT": "20"}
    procs = [subprocess.Popen([sys.executable, "-c", LONG, "-w", str(w), "-n", "2", "-p", str(i),
                               "-h", str(hostfile)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        for p in procs:
            seen = 0                   # the host's workers print at once: lines may interleave
            while seen < w:
                line = p.stdout.readline()
                assert line, p.stderr.read()
                seen += line.count("running")
        procs[1].kill()           # the launcher of host 1; its workers die with it
        code, out, err = finish(procs[:1], timeout=30)[0]
        procs[1].wait()
        assert code != 0
        # a worker of host 0 names the vanished worker of host 1
        assert any(f"worker {j} disconnected" in err for j in range(w, 2 * w)), err
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            leftover = [n for n in _our_segments()
                        if n.split("-")[1] in {str(procs[0].pid), str(procs[1].pid)}]
            if not leftover:
                break
            time.sleep(0.1)
        assert not leftover
    finally:
        for p in procs:          # never leave a host behind, even when an assertion fails
            if p.poll() is None:
                p.kill()
                p.wait()


def test_missing_secret_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TIMELY_SECRET"}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, "-c", PROGRAM, "-n", "2", "-p", "0"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "TIMELY_SECRET" in run.stderr
