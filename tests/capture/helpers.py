"""Capturing and replaying small dataflows in tests.

Workers may be processes: every observation comes back as what ``work``
returns (captured events, extracted records), never through closures.
"""

from __future__ import annotations

import struct

import numpy as np

import timely
from timely.capture import EventLink, EventReader, EventWriter, replay_into, share


def records_for(worker_index: int, epoch: int) -> list:
    return [epoch * 1000 + worker_index * 100 + k for k in range(epoch % 4 + 1)]


def capture_epochs(worker, epochs: int, pusher, send: bool = True):
    """An input fed ``epochs`` epochs by every worker, exchanged, captured into
    ``pusher``; returns the stream's own ``(extract, counts per time)``."""
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        exchanged = stream.exchange(lambda x: x)
        exchanged.capture_into(pusher)
        original = exchanged.capture()
        counts = exchanged.count().capture()
    for epoch in range(epochs):
        if send:
            handle.send_batch(records_for(worker.index, epoch))
        handle.advance_to(epoch + 1)
        worker.step()
    handle.close()
    worker.drain()
    return original.extract(), counts.extract()


def capture_to_links(workers: int, epochs: int, send: bool = True):
    """``(events per capturing worker, merged extract, merged counts)``."""

    def work(worker):
        link = EventLink()
        extract, counts = capture_epochs(worker, epochs, link, send)
        return list(link), extract, counts

    results = timely.execute(work, workers=workers)
    return [r[0] for r in results], merge([r[1] for r in results]), merge_counts(
        [r[2] for r in results])


def capture_to_files(directory, workers: int, epochs: int, send: bool = True):
    """Each worker captures into ``directory/w{index}.cap``; returns the paths and
    the merged extract and counts."""

    def work(worker):
        path = directory / f"w{worker.index}.cap"
        writer = EventWriter(open(path, "wb"))
        extract, counts = capture_epochs(worker, epochs, writer, send)
        writer.close()
        return str(path), extract, counts

    results = timely.execute(work, workers=workers)
    return [r[0] for r in results], merge([r[1] for r in results]), merge_counts(
        [r[2] for r in results])


def replay_work(worker, make_sources):
    """Replays ``make_sources(worker)`` in this worker; returns ``(extract, counts,
    frontier is empty at the end)``."""
    sources = make_sources(worker)
    with worker.dataflow() as scope:
        replayed = replay_into(sources, scope)
        got = replayed.capture()
        counts = replayed.count().capture()
        probe = replayed.probe()
    worker.drain()
    return got.extract(), counts.extract(), probe.frontier().is_empty()


def links_for(events_per_source: list, worker) -> list:
    """An EventLink holding each event list of ``worker``'s share of the sources."""
    links = []
    for events in share(events_per_source, worker):
        link = EventLink()
        for event in events:
            link.push(event)
        links.append(link)
    return links


def replay_links(events_per_source: list, workers: int):
    """Replays the event lists (one per source) at ``workers`` workers, each worker
    its share; returns the merged extract and counts, and whether every worker
    saw the frontier empty at the end."""

    results = timely.execute(
        lambda w: replay_work(w, lambda worker: links_for(events_per_source, worker)),
        workers=workers, check_progress=True)
    return (merge([r[0] for r in results]), merge_counts([r[1] for r in results]),
            all(r[2] for r in results))


def replay_files(paths: list, workers: int, **reader_options):
    def sources(worker):
        return [EventReader(open(p, "rb"), **reader_options) for p in share(paths, worker)]

    results = timely.execute(lambda w: replay_work(w, sources), workers=workers,
                             check_progress=True)
    return (merge([r[0] for r in results]), merge_counts([r[1] for r in results]),
            all(r[2] for r in results))


def merge(results):
    merged: dict = {}
    for result in results:
        for time, records in result:
            merged.setdefault(time, []).extend(records)
    return [(t, sorted(merged[t], key=repr)) for t in sorted(merged, key=_key)]


def merge_counts(results):
    """Per time, the list of counts the workers reported (sorted); each worker's
    ``count()`` reports once per complete time it saw records at."""
    merged: dict = {}
    for result in results:
        for time, counts in result:
            merged.setdefault(time, []).extend(counts)
    return {t: sum(c) for t, c in merged.items()}, {t: len(c) for t, c in merged.items()}


def _key(t):
    return (t,) if isinstance(t, int) else t


def same(a, b) -> bool:
    """Exact equality of decoded records: types, float bits, nesting, order."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        if len(a) != len(b):
            return False
        return all(same(ka, kb) and same(va, vb)
                   for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if isinstance(a, np.ndarray):
        return (a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes() if a.dtype != object
                else a.shape == b.shape and all(same(x, y) for x, y in zip(a.ravel(), b.ravel())))
    return a == b
