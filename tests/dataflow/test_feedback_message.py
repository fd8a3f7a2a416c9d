"""The error for a loop that does not advance time explains itself in full."""

import pytest

import timely


def test_feedback_of_zero_says_what_to_do():
    def work(worker):
        with worker.dataflow() as scope:
            with pytest.raises(timely.SummaryError) as raised:
                scope.feedback(0)
        return str(raised.value)

    (message,) = timely.execute(work, workers=1)
    assert message.startswith("feedback summary 0 does not advance timestamps")
    assert message.endswith("(use 1, or a summary with a positive coordinate)")
