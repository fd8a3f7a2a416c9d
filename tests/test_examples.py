"""The runnable examples run, and give the same answers at every worker count."""

import pytest

from timely.examples import progress_tracking


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
