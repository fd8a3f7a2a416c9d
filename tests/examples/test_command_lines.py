"""Every example runs with no arguments and succeeds, shares one command line
(``-w/--workers -n -p -h/--hostfile --help``), and ``python -m timely.examples``
lists them all."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from timely.examples.__main__ import examples

ROOT = Path(__file__).resolve().parents[2]
NAMES = [name for name, _ in examples()]
# spark_pipeline and spark_windows need a Spark session: tests/spark/test_spark.py
# and tests/spark/test_windows.py run their mains.
# connected_components keeps its own command line for now (its own tests run it).
NO_ARGUMENTS = [n for n in NAMES
                if n not in ("spark_pipeline", "spark_windows", "connected_components")]


def run(args, cwd, timeout=300):
    """``python -m ARGS`` in ``cwd``, with this tree first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def test_the_list_names_every_example_with_one_line(tmp_path):
    done = run(["timely.examples"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line.split(None, 1) for line in done.stdout.splitlines() if line.startswith("  ")]
    assert [name for name, _ in lines] == NAMES
    assert all(len(text) > 10 for _, text in lines)
    files = sorted(p.stem for p in (ROOT / "timely" / "examples").glob("*.py"))
    assert sorted(NAMES) == [f for f in files if f not in ("__init__", "__main__", "cli")]


@pytest.mark.parametrize("name", NO_ARGUMENTS)
def test_runs_with_no_arguments(name, tmp_path):
    done = run([f"timely.examples.{name}"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "an example says what it did"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", [n for n in NAMES if n != "connected_components"])
def test_help_and_the_shared_options(name, tmp_path):
    done = run([f"timely.examples.{name}", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for option in ("--help", "-w WORKERS, --workers WORKERS", "-n PROCESSES", "-p PROCESS",
                   "-h HOSTFILE, --hostfile HOSTFILE"):
        assert option in text, (option, text)
    assert f"python -m timely.examples.{name}" in text


def test_examples_that_need_several_workers_default_to_two(tmp_path):
    done = run(["timely.examples.barrier", "--rounds", "1", "--delay", "1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 workers arrived" in done.stdout
    done = run(["timely.examples.sequencer", "--rounds", "1", "--delay", "1"], tmp_path)
    assert done.stdout.splitlines()[-1].startswith("2 workers read the same")


def test_progress_tracking_takes_w(tmp_path):
    done = run(["timely.examples.progress_tracking", "-w", "2", "--epochs", "2"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 workers, 2 epochs" in done.stdout


def test_capture_file_does_not_name_a_deleted_directory(tmp_path):
    done = run(["timely.examples.capture_file", "--epochs", "1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "/tmp" not in done.stdout and "deleted at exit" in done.stdout


def test_viz_counts_operators_as_its_page_does(tmp_path):
    done = run(["timely.examples.viz", "--records", "10", "--epochs", "1", "-o", "p.html"],
               tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "p.html").read_text()
    boxes = len(re.findall(r'class="op(?: [^"]*)?"', page))     # what the page's script counts
    first = done.stdout.split()[0]
    assert int(first) == boxes, (first, boxes)


def test_capture_send_without_a_receiver_says_so(tmp_path):
    import socket

    with socket.socket() as probe:           # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run(["timely.examples.capture_send", "-w", "1", "--port", str(port), "--wait",
                "0.2"], tmp_path)
    assert done.returncode == 1
    assert "no receiver listening" in done.stderr and "Traceback" not in done.stderr
