"""The probe's compiled loop (``ProbeLogic``), with and without
``check_progress`` (which reads its input through a checking puller): over
random sequences of input advances, at 1, 2 and 3 workers, with plain and
nested times and with the passthrough's records, every worker's probe
reports the same frontiers either way, and those are the input's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely.dataflow._channels import ProbeLogic


def run(steps: list[int], workers: int, check: bool, nested: bool):
    def work(worker):
        seen = []
        passed: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            if nested:
                with scope.iterative() as inner:
                    inside = stream.enter(inner)
                    probe = timely.ProbeHandle()
                    inside.probe_with(probe).inspect(passed.append).leave()
            else:
                probe = timely.ProbeHandle()
                stream.probe_with(probe).inspect(passed.append)
        core = next(c.operator for sub in worker.scopes for c in sub.children
                    if c is not None and getattr(c.operator, "name", "") == "Probe")
        compiled = isinstance(core._logic, ProbeLogic)
        for epoch, step in enumerate(steps):
            handle.send(epoch * 10 + worker.index)
            handle.advance_to(handle.time + step)
            worker.step_while(lambda: probe.less_than((handle.time, 0) if nested else handle.time))
            seen.append(probe.frontier().elements())
        handle.close()
        worker.step_while(lambda: not probe.done())
        return compiled, seen, sorted(passed)

    return timely.execute(work, workers=workers, check_progress=check)


@settings(max_examples=capped(15), deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=6), st.sampled_from([1, 2, 3]),
       st.booleans())
def test_compiled_probe_reports_the_input_frontier_checked_or_not(steps, workers, nested):
    fast = run(steps, workers, False, nested)
    slow = run(steps, workers, True, nested)
    assert all(compiled for compiled, _, _ in fast)
    assert all(compiled for compiled, _, _ in slow)
    for (_, a, pa), (_, b, pb) in zip(fast, slow):
        assert a == b and pa == pb
    time = 0
    for k, step in enumerate(steps):
        time += step
        expected = [(time, 0)] if nested else [time]
        assert all(seen[k] == expected for _, seen, _ in fast)
    total = sorted(e * 10 + w for e in range(len(steps)) for w in range(workers))
    assert sorted(x for _, _, passed in fast for x in passed) == total
