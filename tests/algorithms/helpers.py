"""Running graph algorithms the way the algorithm tests compare them."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

import timely


def run_graph(algorithms: dict, edges, node_columns=(), weights=None, workers: int = 1) -> dict:
    """Per name of ``algorithms`` (``build(edges, *node_streams)`` making a
    stream; one stream of Batches with a column ``node`` per entry of
    ``node_columns``), its rows over all workers in the order of the workers
    and of arrival. Each worker introduces every ``workers``-th edge and
    node; edges carry a ``weight`` (``weights``, else 1.0)."""
    src = np.array([u for u, _ in edges], dtype=np.int64)
    dst = np.array([v for _, v in edges], dtype=np.int64)
    weight = np.array(weights if weights is not None else [1.0] * len(edges), dtype=np.float64)
    columns = [np.array(list(c), dtype=np.int64) for c in node_columns]

    def work(worker):
        got: dict = defaultdict(list)
        with worker.dataflow() as scope:
            edge_input, edge_stream = scope.new_input()
            opened = [scope.new_input() for _ in columns]
            for name, build in algorithms.items():
                build(edge_stream, *(stream for _, stream in opened)).inspect_batch(
                    lambda t, b, name=name: got[name].extend(b.to_records()))
        k, p = worker.index, worker.peers
        edge_input.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p], weight=weight[k::p]))
        for (handle, _), values in zip(opened, columns):
            handle.send_batch(timely.Batch(node=values[k::p]))
        for handle in (edge_input, *(h for h, _ in opened)):
            handle.close()
        worker.drain()
        return dict(got)

    merged: dict = {name: [] for name in algorithms}
    for part in timely.execute(work, workers=workers):
        for name, rows in part.items():
            merged[name].extend(rows)
    return merged


def rows_received(logs: list, *, by_time: bool = False) -> dict:
    """Per ``(worker, operator name)`` (with ``by_time``, per ``(worker,
    operator name, time)``), the records that the worker's operator of that
    name took in, over all its inputs, from the :mod:`timely.logging`
    events of each worker (``logs[k]``: worker k's ``(time_ns, worker,
    event)`` triples, with ``MessagesEvent``, ``OperatesEvent`` and
    ``ChannelsEvent``)."""
    from timely.logging import ChannelsEvent, MessagesEvent, OperatesEvent

    got: dict = defaultdict(int)
    for worker, events in enumerate(logs):
        names = {tuple(e.addr): e.name for _, _, e in events if type(e) is OperatesEvent}
        into = {e.id: names.get((*e.scope_addr, e.target[0]))
                for _, _, e in events if type(e) is ChannelsEvent}
        for _, _, e in events:
            if type(e) is MessagesEvent and not e.is_send and into.get(e.channel):
                key = (worker, into[e.channel], e.time) if by_time else (worker, into[e.channel])
                got[key] += e.record_count
    return dict(got)


def logged_graph_run(build, src, dst, workers: int, *, all_on_first: bool = True) -> tuple:
    """``build(edges)`` run at ``workers`` worker processes on the edges
    ``src -> dst``, all introduced by worker 0 (or every ``workers``-th by
    each); returns ``(rows, logs)``: the output rows of all workers and each
    worker's logged events (see :func:`rows_received`)."""

    def work(worker):
        events: list = []
        worker.logging.register(lambda _t, batch: events.extend(batch),
                                kinds=["MessagesEvent", "OperatesEvent", "ChannelsEvent"])
        got: list = []
        with worker.dataflow() as scope:
            handle, edges = scope.new_input()
            build(edges).inspect_batch(lambda t, b: got.extend(b.to_records()))
        k, p = worker.index, worker.peers
        if not all_on_first:
            handle.send_batch(timely.Batch(src=src[k::p], dst=dst[k::p]))
        elif k == 0:
            handle.send_batch(timely.Batch(src=src, dst=dst))
        handle.close()
        worker.drain()
        worker.logging.flush()
        return got, events

    parts = timely.execute(work, workers=workers)
    return [r for rows, _ in parts for r in rows], [events for _, events in parts]
