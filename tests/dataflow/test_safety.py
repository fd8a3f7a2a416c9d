"""The safety property under adversarial schedules.

With ``schedule_seed``, every scope runs its activated operators in a random
order each round; with ``check_progress``, every input checks each message it
hands to operator logic against its frontier and raises ``ProgressError`` if
the frontier had already passed the message's time. The answers must equal
those of the ordinary schedule.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely import Pipeline


def pipeline(scope, stream):
    """Exchange, a loop with a notify operator inside, a delay and a count."""
    keyed = stream.exchange(lambda x: x).map(lambda x: x % 17)
    with scope.iterative() as inner:
        h, loop = inner.feedback(1)
        state = keyed.enter(inner).concat(loop)

        def logic(inp, out, notificator):
            for cap, data in inp:
                notificator.notify_at(cap.retain())
                out.session(cap).give_container([x // 2 for x in data])
            for cap, count in notificator:
                # one notification per worker holding the time: its output
                # would depend on the worker count, so it only checks order
                assert not inp.frontier.less_equal(cap.time)

        stepped = state.unary_notify(Pipeline, "Halve", [], logic)
        stepped.filter(lambda x: x > 0).connect_loop(h)
        left = stepped.filter(lambda x: x <= 0).leave()
    delayed = left.delay(lambda x, t: t + 1)
    return delayed.exchange(lambda x: 0).count().concat(left.filter(lambda x: x == 0)).capture()


def run(epochs, workers=1, **options):
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            captured = pipeline(scope, stream)
        for epoch, records in enumerate(epochs):
            # every worker sends its share
            handle.send_batch([x for i, x in enumerate(records) if i % worker.peers == worker.index])
            handle.advance_to(epoch + 1)
            for _ in range(epoch % 3):
                worker.step()
        handle.close()
        worker.drain()
        return captured.extract()

    merged: dict = {}
    for result in timely.execute(work, workers=workers, **options):
        for time, records in result:
            merged.setdefault(time, []).extend(records)
    return sorted((t, sorted(r)) for t, r in merged.items())


EPOCHS = [list(range(20)), [], [5, 99, 1000], list(range(50, 60))]


@pytest.mark.parametrize("mode", ["demand", "eager"])
@pytest.mark.parametrize("seed", range(12))
def test_random_schedules_give_the_same_answer_and_never_pass_a_frontier(seed, workers, mode):
    expected = run(EPOCHS)
    got = run(EPOCHS, workers, schedule_seed=seed, check_progress=True, progress_mode=mode)
    assert got == expected


@settings(max_examples=capped(60), deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 300), max_size=12), min_size=1, max_size=5),
    st.integers(0, 2**32),
)
def test_random_inputs_and_schedules(epochs, seed):
    workers = 1 + seed % 3
    assert run(epochs, workers, schedule_seed=seed, check_progress=True) == run(epochs)


def test_the_check_catches_a_violation():
    """An operator that sends data at a time it does not hold makes the
    downstream check fire (the engine's own check, not the test's)."""
    from timely.dataflow.capability import Capability

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()

            def constructor(cap, info):
                cap.drop()

                def logic(inp, out):
                    for c, data in inp:
                        # Forge a capability at time 0 after the frontier moved on.
                        forged = Capability._minted(0, out)
                        out.session(forged).give_container(data)

                return logic

            stream.unary(Pipeline, "Forger", constructor).map(lambda x: x).probe()
        handle.advance_to(5)
        for _ in range(3):
            worker.step()      # every frontier is at 5 now
        handle.send(1)
        handle.close()
        worker.drain()

    with pytest.raises(timely.ProgressError, match="had passed it"):
        timely.execute_directly(work, check_progress=True)
