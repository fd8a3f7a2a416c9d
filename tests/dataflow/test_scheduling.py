"""The compiled activations, counting and pipeline pushers and stateless
record loop (``timely.dataflow._activate``, ``timely.dataflow._channels``)
against their Python oracles (``tests/reference/scheduling.py``)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.progress.strategies import capped
from tests.reference import scheduling as ref
from timely.communication.allocator import Puller
from timely.dataflow._activate import Activations, ChildActivator
from timely.dataflow._channels import Counter, PipelinePusher, RecordLogic
from timely.dataflow.channels import Tee
from timely.progress import ChangeBatch

actions = st.lists(st.one_of(
    st.tuples(st.just("activate"), st.integers(1, 6)),
    st.tuples(st.just("round"), st.just(0)),
    st.tuples(st.just("next"), st.just(0)),
    st.tuples(st.just("end"), st.just(0)),
), max_size=40)


@settings(max_examples=capped(200))
@given(actions)
def test_activations_match_the_oracle(steps):
    """Activations during and between rounds land where the oracle's do, and
    ask for the scope exactly as often."""
    asked = [0, 0]
    compiled = Activations(lambda: asked.__setitem__(0, asked[0] + 1))
    oracle = ref.Activations(lambda: asked.__setitem__(1, asked[1] + 1))
    for action, index in steps:
        for acts in (compiled, oracle):
            if action == "activate":
                if isinstance(acts, Activations) and index % 2:
                    ChildActivator(acts, index)()
                else:
                    acts.activate(index)
            elif action == "round" and not acts.scheduling:
                acts.heap.extend(sorted(acts.deferred))
                acts.deferred.clear()
                acts.scheduling = True
            elif action == "next" and acts.scheduling and acts.heap:
                acts.heap.sort()
                acts.current = acts.heap.pop(0)
            elif action == "end":
                acts.scheduling = False
                acts.current = -1
        assert compiled.deferred == oracle.deferred
        assert sorted(compiled.heap) == sorted(oracle.heap)
        assert (compiled.scheduling, compiled.current) == (oracle.scheduling, oracle.current)
        assert asked[0] == asked[1]


messages = st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(-5, 5), max_size=4)),
                    max_size=8)


def counts(batch: ChangeBatch) -> dict:
    return dict(batch.drain())


def nonzero(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


@settings(max_examples=capped(200))
@given(st.sampled_from(["pass", "map", "filter", "batch", "advance", "branch_when"]),
       st.lists(messages, min_size=1, max_size=3), st.integers(0, 7))
def test_record_logic_matches_the_oracle(kind, inputs, limit):
    """Every message is taken and counted at its input, and what the kind
    makes of it is counted at its output, queued for the consumer and the
    consumer activated, exactly as the Python loop does."""
    fns = {"pass": None, "map": lambda x: x * 3, "filter": lambda x: x % 2, "advance": lambda t: t + 1 if t < limit else None,
           "batch": lambda t, data: [x for x in data if x > t - 3],
           "branch_when": lambda t: t < limit}
    fn = fns[kind]
    outputs = 2 if kind == "branch_when" else 1
    if kind != "pass":
        inputs = inputs[:1]

    activated = [[], []]
    acts = Activations(lambda: None)
    queues = [deque(m) for m in inputs]
    consumeds = [ChangeBatch() for _ in inputs]
    out_queues = [deque() for _ in range(outputs)]
    produceds = [ChangeBatch() for _ in range(outputs)]
    counters = []
    for o in range(outputs):
        tee = Tee()
        tee.pushers.append(PipelinePusher(out_queues[o], ChildActivator(acts, o + 1)))
        counters.append(Counter(tee, produceds[o]))
    RecordLogic(kind, [Puller(q) for q in queues], consumeds, fn, counters)(None)
    activated[0] = sorted(acts.deferred)

    ref_queues = [deque(m) for m in inputs]
    ref_consumeds = [{} for _ in inputs]
    ref_out = [deque() for _ in range(outputs)]
    ref_produced = [{} for _ in range(outputs)]
    woken: set = set()
    ref_counters = [ref.Counter([ref.PipelinePusher(ref_out[o], lambda o=o: woken.add(o + 1))],
                                ref_produced[o]) for o in range(outputs)]
    ref.record_logic(kind, ref_queues, ref_consumeds, fn, ref_counters)
    activated[1] = sorted(woken)

    assert all(not q for q in queues)
    assert [counts(b) for b in consumeds] == [nonzero(d) for d in ref_consumeds]
    assert [counts(b) for b in produceds] == [nonzero(d) for d in ref_produced]
    assert [list(q) for q in out_queues] == [list(q) for q in ref_out]
    assert activated[0] == activated[1]


@given(messages)
def test_counter_through_a_tee_and_other_pushers(sent):
    """A Counter with several channels (a tee) or another kind of pusher counts
    each non-empty message once and hands it to every channel."""

    class Plain:
        def __init__(self):
            self.got = []

        def push(self, time, data):
            self.got.append((time, list(data)))

    for width in (1, 2):
        tee = Tee()
        plains = [Plain() for _ in range(width)]
        tee.pushers.extend(plains)
        produced = ChangeBatch()
        counter = Counter(tee, produced)
        for time, data in sent:
            counter.push(time, data)
        expected = [(t, d) for t, d in sent if d]
        assert all(p.got == expected for p in plains)
        total: dict = {}
        for t, d in expected:
            total[t] = total.get(t, 0) + len(d)
        assert counts(produced) == total


def test_pipeline_pusher_calls_any_callback():
    woken = []
    queue: deque = deque()
    PipelinePusher(queue, lambda: woken.append(1)).push(3, ["a"])
    assert list(queue) == [(3, ["a"])] and woken == [1]


def test_record_logic_refuses_what_it_cannot_run():
    with pytest.raises(ValueError):
        RecordLogic("reduce", [], [], None, [])
    with pytest.raises(ValueError):
        RecordLogic("branch_when", [Puller(deque())], [ChangeBatch()], bool, [])
    with pytest.raises(TypeError):
        RecordLogic("pass", [Puller(deque())], [{}], None, [Counter(Tee(), ChangeBatch())])
    with pytest.raises(TypeError, match="Pullers"):
        RecordLogic("pass", [deque()], [ChangeBatch()], None, [Counter(Tee(), ChangeBatch())])


def test_completed_record_operators_release_their_functions():
    """A record operator that completes lets go of its function at once, while
    its dataflow still runs (no cycle collection needed), as user code may
    wait for that: a Sequencer closes when the last reference to it goes."""
    import weakref

    import timely

    def work(worker):
        class Plus:
            def __call__(self, x):
                return x + 1

        fn = Plus()
        gone = weakref.ref(fn)
        with worker.dataflow() as scope:
            probe = scope.to_stream(range(3)).map(fn).filter(fn).inspect(fn).probe()
            handle, _ = scope.new_input()          # keeps the dataflow running
        del fn
        alive_while_running = gone() is not None
        worker.step_while(lambda: not probe.done())
        for _ in range(3):
            worker.step()
        released = gone() is None
        handle.close()
        worker.drain()
        return alive_while_running, released

    assert timely.execute_directly(work) == (True, True)
