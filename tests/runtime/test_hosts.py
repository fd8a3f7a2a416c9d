"""Several hosts for real: each "host" is a network namespace with its own
address on a private bridge and its own host name (UTS namespace), running
``execute_from_args(["-w", W, "-n", N, "-p", P, "-h", hostfile])`` with W
worker processes on shared-memory rings and TCP to the other hosts.

Needs root (network namespaces); skipped with the reason elsewhere, except
in CI (``CI=true``), which runs as root and must run them. Every namespace
and process a test makes is removed by it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SUBNET = "10.213.{}.{}"

PROGRAM = textwrap.dedent("""
    import json, socket, sys
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            out = (stream.exchange(lambda x: x)
                   .map(lambda x: (x, worker.index))
                   .capture())
            probe = stream.exchange(lambda x: x % 7).probe()
        for epoch in range(5):
            handle.send_batch(list(range(epoch * 100 + worker.index, epoch * 100 + 100,
                                         worker.peers)))
            handle.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        return out.extract()

    print(json.dumps({"host": socket.gethostname(),
                      "results": timely.execute_from_args(sys.argv[1:], work)}))
""")

LONG = textwrap.dedent("""
    import sys, time
    import timely

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            probe = stream.exchange(lambda x: x).probe()
        print("running", flush=True)
        for epoch in range(1000000):
            handle.send(epoch)
            handle.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
            time.sleep(0.001)

    timely.execute_from_args(sys.argv[1:], work)
""")


def _ip(*args) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Hosts:
    """``n`` namespaces joined by a bridge that lives in a namespace of its
    own; host ``p`` has address 10.213.<net>.<p + 1> and host name
    ``timely-host-<p>``. Nothing is added to the caller's namespace."""

    def __init__(self, n: int):
        tag = f"{os.getpid() % 100000}"
        self.net = os.getpid() % 250 + 1
        self.switch = f"tly{tag}sw"
        self.names = [f"tly{tag}h{p}" for p in range(n)]
        self.addresses = [SUBNET.format(self.net, p + 1) for p in range(n)]
        self.made: list[str] = []
        try:
            for name in [self.switch, *self.names]:
                _ip("netns", "add", name)
                self.made.append(name)
                _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for p, name in enumerate(self.names):
                port = f"port{p}"
                _ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name",
                    "eth0", "netns", name)
                _ip("-n", self.switch, "link", "set", port, "master", "br0")
                _ip("-n", self.switch, "link", "set", port, "up")
                _ip("-n", name, "addr", "add", f"{self.addresses[p]}/24", "dev", "eth0")
                _ip("-n", name, "link", "set", "eth0", "up")
        except BaseException:
            self.remove()
            raise

    def spawn(self, p: int, argv, env, **kwargs) -> subprocess.Popen:
        """``argv`` on host ``p``, under its host name (the process is
        ``argv[0]`` itself: ``ip netns exec``, ``unshare`` and ``sh`` exec into it)."""
        command = f"hostname timely-host-{p} && exec \"$0\" \"$@\""
        return subprocess.Popen(
            ["ip", "netns", "exec", self.names[p], "unshare", "--uts", "sh", "-c", command,
             *argv], env=env, **kwargs)

    def popen(self, p: int, program: str, args, env, **kwargs) -> subprocess.Popen:
        """``python -c program args`` on host ``p``, its output piped as text."""
        return self.spawn(p, [sys.executable, "-c", program, *args], env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)

    def remove(self) -> None:
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        self.made = []


def _can_make_namespaces() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"tly{os.getpid() % 100000}probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode != 0:
        return "cannot make a UTS namespace"
    return None


@pytest.fixture
def hosts():
    reason = _can_make_namespaces()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the several-hosts tests: {reason}")
        pytest.skip(reason)
    made = []

    def make(n):
        h = Hosts(n)
        made.append(h)
        return h

    yield make
    for h in made:
        h.remove()


def _env(**extra):
    return {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "several hosts",
            "TIMELY_CONNECT_TIMEOUT": "30", **extra}


def _kill(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _one_worker_answer():
    run = subprocess.run([sys.executable, "-c", PROGRAM, "-w", "1"], env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    (result,) = json.loads(run.stdout)["results"]
    return {t: sorted(x for x, _ in records) for t, records in result}


@pytest.mark.parametrize(("n", "w"), [(2, 2), (3, 2)])
def test_hosts_in_namespaces_agree_with_one_worker(hosts, n, w, tmp_path):
    h = hosts(n)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{address}:7100\n" for address in h.addresses))
    procs = [h.popen(p, PROGRAM, ["-w", str(w), "-n", str(n), "-p", str(p), "-h", str(hostfile)],
                     _env()) for p in range(n)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        _kill(procs)
    merged: dict = {}
    names = []
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err
        answer = json.loads(out)
        names.append(answer["host"])
        assert len(answer["results"]) == w
        for result in answer["results"]:
            for time_, records in result:
                merged.setdefault(time_, []).extend(tuple(r) for r in records)
    assert names == [f"timely-host-{p}" for p in range(n)]
    peers = n * w
    assert all(worker == x % peers for records in merged.values() for x, worker in records)
    assert {t: sorted(x for x, _ in records) for t, records in merged.items()} == \
        _one_worker_answer()


def _workers(pid: int) -> list[int]:
    """The forked worker processes of launcher ``pid`` (not its helpers,
    such as multiprocessing's resource tracker)."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    workers = []
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"resource_tracker" not in f.read():
                workers.append(child)
    return workers


def test_a_stopped_worker_on_another_host_fails_the_others(hosts, tmp_path):
    h = hosts(2)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{address}:7200\n" for address in h.addresses))
    env = _env(TIMELY_HEARTBEAT="0.5", TIMELY_LIVENESS_TIMEOUT="3")
    procs = [h.popen(p, LONG, ["-w", "2", "-n", "2", "-p", str(p), "-h", str(hostfile)], env,
                     start_new_session=True) for p in range(2)]
    stopped = None
    try:
        for p in procs:
            seen = 0
            while seen < 2:
                line = p.stdout.readline()
                assert line, p.stderr.read()
                seen += line.count("running")
        stopped = _workers(procs[1].pid)[0]
        os.kill(stopped, signal.SIGSTOP)
        start = time.monotonic()
        out, err = procs[0].communicate(timeout=60)
        elapsed = time.monotonic() - start
        assert procs[0].returncode != 0
        assert "WorkerFailed" in err
        assert "was silent for more than 3 s (liveness timeout)" in err, err
        # named: one of host 1's workers (2 or 3) is the silent one
        assert any(f"worker {j} was silent" in err for j in (2, 3)), err
        assert elapsed < 30
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _kill(procs)
