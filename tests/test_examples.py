"""The runnable examples run, and give the same answers at every worker count."""

import doctest
import importlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from timely.examples import barrier, capture_file, capture_recv, progress_tracking, sequencer


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_progress_tracking_example(workers):
    steps, _, peers = progress_tracking.run(workers=workers, epochs=4, seed=3, records=8,
                                            verbose=False)
    assert steps > 0
    for p in peers:
        # Every worker saw every epoch complete, in order, and nothing is left.
        assert p.released == [0, 1, 2, 3]
        assert not p.tracker.tracking_anything()
        assert p.output_frontier.is_empty()


def test_progress_tracking_main(capsys):
    progress_tracking.main(["--workers", "2", "--epochs", "2", "--seed", "1"])
    out = capsys.readouterr().out
    assert "all workers saw every epoch complete" in out


# -- synchronization: barrier and sequencer ----------------------------------


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_barrier_example(workers):
    stamps = barrier.meet(rounds=3, delay_ms=5, workers=workers)
    assert len(stamps) == workers and all(len(s) == 3 for s in stamps)
    barrier.check(stamps)


def test_barrier_main(capsys):
    barrier.main(["-w", "2", "--rounds", "2", "--delay", "5"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all("2 workers arrived" in line and "none left before the last arrived" in line
               for line in lines)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_sequencer_example(workers):
    sequences = sequencer.announce(rounds=3, delay_ms=2, workers=workers)
    assert len(sequences) == workers
    sequencer.check(sequences)
    assert sorted(sequences[0]) == sorted(f"worker {w}, round {r}"
                                          for w in range(workers) for r in range(3))


def test_sequencer_main(capsys):
    sequencer.main(["-w", "2", "--rounds", "2", "--delay", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines[:-1]) == sorted(f"worker {w}, round {r}" for w in range(2) for r in range(2))
    assert lines[-1] == "2 workers read the same 4 announcements in the same order"


@pytest.mark.parametrize("name", ["barrier", "sequencer"])
def test_synchronization_example_docstrings(name):
    module = importlib.import_module(f"timely.examples.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- capture and replay ------------------------------------------------------

CAPTURE_EXAMPLES = ["capture_send", "capture_recv", "capture_file"]


@pytest.mark.parametrize("name", CAPTURE_EXAMPLES)
def test_capture_docstring_examples(name):
    module = importlib.import_module(f"timely.examples.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("senders,receivers", [(5, 3), (1, 2), (2, 1), (3, 3)])
def test_capture_over_tcp_in_one_process(senders, receivers):
    per_worker = capture_recv.run_pair(senders=senders, receivers=receivers, records=10)
    assert len(per_worker) == receivers
    assert sorted(x for part in per_worker for x in part) == sorted(list(range(10)) * senders)
    # Worker i replayed sources i, i + receivers, ...: ten records from each.
    for index, part in enumerate(per_worker):
        assert len(part) == 10 * len(range(index, senders, receivers))


def _free_base_port(count: int) -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        try:
            held = [socket.create_server(("127.0.0.1", base + i)) for i in range(count)]
        except OSError:
            continue
        for s in held:
            s.close()
        return base
    raise RuntimeError("no run of free ports")


def test_capture_send_and_recv_commands():
    """The two commands of the example, as two processes: 5 senders replayed by
    3 receivers print 50 lines, five copies of 0 .. 9."""
    root = Path(__file__).resolve().parent.parent
    base = _free_base_port(5)
    receiver = subprocess.Popen(
        [sys.executable, "-m", "timely.examples.capture_recv", "-w", "3", "--port", str(base),
         "--sources", "5"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sender = subprocess.run(
            [sys.executable, "-m", "timely.examples.capture_send", "-w", "5", "--port",
             str(base)], cwd=root, capture_output=True, text=True, timeout=120, check=False)
        assert sender.returncode == 0, sender.stderr
        out, err = receiver.communicate(timeout=120)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.communicate()
    assert receiver.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 50
    assert sorted(int(line.removeprefix("replayed: ")) for line in lines) == sorted(
        list(range(10)) * 5)


@pytest.mark.parametrize("capturers,replayers", [(1, 3), (2, 1), (3, 2)])
def test_capture_file(tmp_path, capturers, replayers):
    paths = capture_file.capture(str(tmp_path), workers=capturers, epochs=4)
    assert len(paths) == capturers
    assert capture_file.replay(paths, workers=replayers) == {e: 4 for e in range(4)}


def test_capture_file_main(tmp_path, capfd):
    capture_file.main(["--dir", str(tmp_path), "-w", "2", "-r", "3", "--epochs", "3"])
    out = capfd.readouterr().out
    assert "every epoch complete and correct" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capture-0.tcap", "capture-1.tcap"]


# -- pictures ----------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_viz_example(tmp_path, workers):
    from timely.examples import viz

    out = tmp_path / "page.html"
    summary = viz.run(workers=workers, records=30, epochs=2, out=str(out), hold=0.2,
                      stuck_after=0, dot=str(tmp_path / "page.dot"))
    assert summary["counted"] == [30, 30]
    page = out.read_text()
    for name in ("Collatz", "Step", "Feedback", "Exchange", "Branch", "Capture"):
        assert name in page
    assert 'id="stuck"' not in page                      # the finished run
    assert 'id="stuck"' in (tmp_path / "page-live.html").read_text()   # the held input
    assert (tmp_path / "page.dot").read_text().startswith("digraph timely {")
    result = doctest.testmod(viz, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- columnar operators --------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_columnar_example(workers):
    from timely.examples import columnar

    table = columnar.summarize(rows=5000, epochs=3, seed=2, workers=workers)
    assert columnar.same(table, columnar.expected_summary(*columnar.make_readings(5000, 3, seed=2)))
    assert len(table) == 3 * len(columnar.SENSORS)


def test_columnar_main(capsys):
    from timely.examples import columnar

    columnar.main(["-w", "2", "--rows", "3000", "--epochs", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["epoch", "sensor", "count"]
    assert len(lines) == 2 + 2 * len(columnar.SENSORS)
    assert lines[-1] == "10 rows; the same as numpy over all 3,000 readings"


def test_columnar_example_docstring():
    from timely.examples import columnar

    result = doctest.testmod(columnar, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
