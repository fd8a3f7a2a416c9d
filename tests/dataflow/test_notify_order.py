"""A notification asked for while notifications are delivered comes in time
order among them, as the Rust crate's frontier-aware ``notify_at`` gives it."""

from __future__ import annotations

import pytest

import timely


def delivered(workers: int, init: list[int], asks: dict[int, int]) -> list[list[int]]:
    """Each worker's notified times for a ``unary_notify`` operator made with
    ``init`` times, which asks for ``asks[t]`` while handling ``t``."""

    def work(worker):
        seen: list[int] = []

        def logic(input, output, notificator):
            for _cap, _data in input:
                pass
            for cap, _count in notificator:
                seen.append(cap.time)
                if cap.time in asks:
                    notificator.notify_at(cap.delayed(asks[cap.time]))

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.unary_notify(timely.Pipeline, "order", init, logic)
        handle.close()
        worker.drain()
        return seen

    return timely.execute(work, workers=workers)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_time_asked_for_during_delivery_comes_in_order(workers):
    assert delivered(workers, [0, 2], {0: 1}) == [[0, 1, 2]] * workers


@pytest.mark.parametrize("workers", [1, 3])
def test_a_chain_of_asks_and_a_later_time(workers):
    # 0 asks for 3, 3 for 4; 5 was asked for at the start.
    assert delivered(workers, [0, 5], {0: 3, 3: 4}) == [[0, 3, 4, 5]] * workers
