"""Running small dataflows in tests."""

from __future__ import annotations

import timely


def run_epochs(build, epochs, workers: int = 1, **options):
    """Builds ``build(scope, stream)`` on an input, feeds ``epochs`` (a list of
    record lists, one per epoch) from worker 0, and returns the captured
    ``[(time, sorted records)]`` of every worker, merged. ``build`` returns a
    capture handle, or a tuple of them (then a tuple of results comes back).
    Workers may be processes: observations must travel in captures, not in
    closures."""

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
        if isinstance(captured, tuple):
            return tuple(c.extract() for c in captured)
        return captured.extract()

    results = timely.execute(work, workers=workers, **options)
    if results and isinstance(results[0], tuple):
        return tuple(merge([r[i] for r in results]) for i in range(len(results[0])))
    return merge(results)


def merge(results):
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
