"""A nested iterative dataflow, run with its logs captured."""

from __future__ import annotations

import timely
from timely.logging import capture_to

RECORDS = 40


def collatz(x: int) -> int:
    return x // 2 if x % 2 == 0 else 3 * x + 1


def nested_dataflow(worker, epochs: int = 2, records: int = RECORDS):
    """input -> iterative "Collatz" (a loop around a region "Step" that
    exchanges and steps) -> count -> probe; every record iterates down to 1."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        with scope.iterative("Collatz") as inner:
            loop, looped = inner.feedback(1)
            body = stream.enter(inner).concat(looped)
            with inner.region("Step") as region:
                stepped = body.enter(region).exchange(lambda x: x).map(collatz).leave()
            more, done = stepped.branch(lambda t, x: x == 1)
            more.connect_loop(loop)
            result = done.leave()
        probe = result.exchange(lambda x: 0).count().probe()
    for epoch in range(epochs):
        if worker.index == 0:
            for x in range(2, records + 2):
                handle.send(x)
        handle.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(handle.time))
    handle.close()
    return probe


def captured_nested(tmp_path, workers: int) -> list:
    pattern = str(tmp_path / "nested-{worker}.tlog")

    def work(worker):
        capture_to(worker, pattern)
        nested_dataflow(worker)

    timely.execute(work, workers=workers)
    return [tmp_path / f"nested-{w}.tlog" for w in range(workers)]
