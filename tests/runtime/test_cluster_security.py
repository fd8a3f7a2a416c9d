"""Workers on loopback "hosts" over TLS, and a man in the middle between two
hosts that rewrites a frame into a pickle: it is refused, never loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.communication.mitm import HEADER, Proxy
from tests.communication.test_tcp_security import Marker
from tests.runtime.test_cluster import PROGRAM, ROOT, finish, hostfile_for, launch
from timely.communication import codec
from timely.communication.tcp import DATA


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def self_signed(directory, name="timely"):
    """The README's one command: a key and a self-signed certificate that is its own CA."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1",
            "-subj", f"/CN={name}", cwd=directory)
    return directory / f"{name}.pem", directory / f"{name}.key"


def tls_env(cert, key, ca):
    return {"TIMELY_TLS_CERT": str(cert), "TIMELY_TLS_KEY": str(key), "TIMELY_TLS_CA": str(ca)}


def merged_values(results):
    merged = {}
    for code, out, err in results:
        assert code == 0, err
        for result in json.loads(out):
            for time_, records in result:
                merged.setdefault(time_, []).extend(x for x, _ in records)
    return {t: sorted(v) for t, v in merged.items()}


@pytest.mark.parametrize(("n", "w"), [(2, 1), (2, 2), (3, 1)])
def test_hosts_over_mutual_tls_agree_with_one_worker(n, w, tmp_path):
    cert, key = self_signed(tmp_path)
    hostfile = hostfile_for(tmp_path, n, w)
    results = finish(launch(n, hostfile, workers=w, extra_env=tls_env(cert, key, cert)))
    assert merged_values(results) == {t: list(range(t * 10, t * 10 + 10)) for t in range(5)}


def test_a_host_whose_certificate_another_ca_signed_is_refused(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    cert, key = self_signed(ours)
    other_cert, other_key = self_signed(theirs)
    hostfile = hostfile_for(tmp_path, 2, 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "s3cret",
           "TIMELY_CONNECT_TIMEOUT": "4"}
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM, "-n", "2", "-p", str(p), "-h",
                               str(hostfile)],
                              env={**env, **tls_env(*((cert, key) if p == 0
                                                      else (other_cert, other_key)), cert)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in range(2)]
    try:
        (code0, _, err0), (code1, _, err1) = finish(procs, timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert code0 != 0 and code1 != 0
    assert "workers [1] never connected" in err0
    assert "AuthenticationError" in err1 and "unknown ca" in err1, err1


def test_a_man_in_the_middle_cannot_make_a_worker_unpickle(tmp_path):
    marker = tmp_path / "marker"
    evil = b"".join(bytes(p) for p in codec.encode([(0, Marker(marker))]))
    real = hostfile_for(tmp_path, 2, 1)
    lines = real.read_text().splitlines()
    host, port = lines[0].rsplit(":", 1)
    rewritten = []

    def inject(n, kind, header, payload):
        if kind == DATA and not rewritten:
            rewritten.append(n)
            _, _, tag = HEADER.unpack(header)
            return [HEADER.pack(kind, len(evil), tag), evil]
        return [header, payload]

    proxy = Proxy((host, int(port)), inject)
    # Host 1 reaches host 0 through the proxy; host 0 listens where it always does.
    through = tmp_path / "through"
    through.write_text(f"127.0.0.1:{proxy.address[1]}\n{lines[1]}\n")
    procs = []
    try:
        env = {"TIMELY_LIVENESS_TIMEOUT": "5"}
        procs = [launch_one(0, real, env), launch_one(1, through, env)]
        (code0, _, err0), (code1, _, err1) = finish(procs, timeout=60)
    finally:
        proxy.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert rewritten, "no data frame crossed the proxy"
    assert code0 != 0 and code1 != 0
    assert "WorkerFailed" in err0
    assert "worker 1 sent a frame that was refused: AuthenticationError" in err0, err0
    assert not marker.exists()


def launch_one(p, hostfile, extra_env):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_SECRET": "s3cret",
           "TIMELY_CONNECT_TIMEOUT": "20", **extra_env}
    return subprocess.Popen([sys.executable, "-c", PROGRAM, "-w", "1", "-n", "2", "-p", str(p),
                             "-h", str(hostfile)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
