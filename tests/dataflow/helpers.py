"""Running small dataflows in tests."""

from __future__ import annotations

import timely


def run_epochs(build, epochs, workers: int = 1, **options):
    """Builds ``build(scope, stream) -> capture handle`` on an input, feeds
    ``epochs`` (a list of record lists, one per epoch) from worker 0, and
    returns the captured ``[(time, sorted records)]`` of every worker, merged."""

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            captured = build(scope, stream)
        for epoch, records in enumerate(epochs):
            if worker.index == 0:
                handle.send_batch(list(records))
            handle.advance_to(epoch + 1)
            worker.step()
        handle.close()
        worker.drain()
        return captured.extract()

    results = timely.execute(work, workers=workers, **options)
    merged: dict = {}
    for result in results:
        for time, records in result:
            merged.setdefault(time, []).extend(records)
    return [(t, ordered(merged[t])) for t in sorted(merged)]


def ordered(records):
    """Records sorted naturally, or by repr when their types do not compare."""
    try:
        return sorted(records)
    except TypeError:
        return sorted(records, key=repr)
