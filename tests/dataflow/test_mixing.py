"""Record operators and columnar ones do not mix silently: a Batch given to
an operator on records (``map``, ``filter``, ``flat_map``, ``inspect``,
``give``, ``send``), or records given to an operator on Batches, is a
:class:`timely.ColumnarError` (or, for a column name routing records, a
:class:`timely.RouteError`) naming the operator to use instead, at 1, 2
and 3 workers."""

from __future__ import annotations

import numpy as np
import pytest

import timely


def batches(scope):
    return scope.to_stream([1]).map_batch(lambda data: timely.Batch(k=np.arange(3)))


def records(scope):
    return scope.to_stream([(1, 2)])


CASES = {
    "map": (lambda s: batches(s).map(lambda x: x), "map() works on records", "map_batch"),
    "filter": (lambda s: batches(s).filter(bool), "filter() works on records",
               "filter_batch"),
    "flat_map": (lambda s: batches(s).flat_map(lambda x: [x]), "flat_map() works on records",
                 "map_batch"),
    "inspect": (lambda s: batches(s).inspect(print), "inspect() works on records",
                "inspect_batch"),
    "map_batch on records": (lambda s: records(s).filter_batch(lambda b: b["k"] > 0),
                             "filter_batch works on columnar Batches, not on a list",
                             "filter(pred)"),
    "aggregate on records": (lambda s: records(s).aggregate("k", "v", combine=False),
                             "routes columnar batches, not a list of records",
                             "give them a function or key="),
}


def give_a_batch(scope):
    def constructor(cap, info):
        held = [cap]

        def logic(output):
            if held:
                output.session(held[0]).give(timely.Batch(k=np.arange(2)))

        return logic

    return scope.source("Gives", constructor)


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mixed_stream_names_the_operator_to_use(case, workers):
    build, says, instead = CASES[case]

    def work(worker):
        with worker.dataflow() as scope:
            probe = build(scope).probe()
        worker.step_while(lambda: not probe.done())

    with pytest.raises((timely.ColumnarError, timely.RouteError, timely.WorkerFailed)) as caught:
        timely.execute(work, workers=workers)
    assert says in str(caught.value) and instead in str(caught.value)
    if workers == 1:
        assert isinstance(caught.value, (timely.ColumnarError, timely.RouteError))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_giving_or_sending_a_batch_as_a_record_names_the_call_to_use(workers):
    def gives(worker):
        with worker.dataflow() as scope:
            probe = give_a_batch(scope).probe()
        worker.step_while(lambda: not probe.done())

    with pytest.raises((timely.ColumnarError, timely.WorkerFailed),
                       match=r"give\(\) sends one record.*give_container\(batch\)"):
        timely.execute(gives, workers=workers)

    def sends(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.probe()
        try:
            handle.send(timely.Batch(k=np.arange(2)))
        finally:
            handle.close()

    with pytest.raises((timely.ColumnarError, timely.WorkerFailed),
                       match=r"send\(\) sends one record.*send_batch\(batch\)"):
        timely.execute(sends, workers=workers)


def test_the_records_themselves_still_flow():
    """The checks refuse only Batches: lists of records pass as before."""
    out = timely.example(lambda s: s.to_stream(range(5)).map(lambda x: x * 2)
                         .filter(lambda x: x > 2).flat_map(lambda x: [x, x])
                         .inspect(lambda x: None).capture())
    assert out.extract() == [(0, [4, 4, 6, 6, 8, 8])]
