"""A nested iterative dataflow, run with its logs captured."""

from __future__ import annotations

import timely
from timely.examples.viz import collatz_loop
from timely.logging import capture_to

RECORDS = 40


def nested_dataflow(worker, epochs: int = 2, records: int = RECORDS):
    """input -> iterative "Collatz" (a loop around a region "Step" that
    exchanges and steps) -> count -> probe; every record iterates down to 1."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = collatz_loop(scope, stream).exchange(lambda x: 0).count().probe()
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
