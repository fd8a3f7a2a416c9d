"""The runnable examples run, and give the same answers at every worker count."""

import doctest
import importlib

import pytest

from timely.examples import barrier, progress_tracking, sequencer


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
