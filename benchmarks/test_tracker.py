"""Tracker: progress propagation through a long chain and around a loop, compiled vs the oracle.

Graphs (node 0 is the scope boundary: its output 0 is the scope input, its
input 0 the scope output; it connects nothing to nothing):

- chain: operators 1 .. 1000, each one input and one output with the identity
  summary; edges ``(0,0) -> (1,0)``, ``(i,0) -> (i+1,0)``, ``(1000,0) -> (0,0)``.
- loop, arity 2: operators 1 .. 10 as above, then a feedback node 11 with summary
  ``(0, 1)``; edges ``(0,0) -> (1,0)``, ``(i,0) -> (i+1,0)`` up to 10,
  ``(10,0) -> (11,0)``, ``(11,0) -> (1,0)`` and the exit ``(10,0) -> (0,0)``.

Workloads, each timed per round on one long-lived tracker:

- chain round: the capability at operator 1's output (``Source(1, 0)``) is
  downgraded from t to t+1 (``update_source`` -1 at t, +1 at t+1), then
  ``propagate_all()``: every one of the 2001 locations downstream sees its
  frontier move.
- loop round: the capability goes once around the loop, one hop per operator
  (11 hops: ``update_source`` -1 at the output it leaves, +1 at the next
  operator's output, ``propagate_all()``); the hop through the feedback node
  adds 1 to the last coordinate.
- ``+drain`` variants also call ``pushed_changes()`` and ``output_changes()``
  after every ``propagate_all()``, as a scope must to tell its operators what
  changed. Without them the changes accumulate and cancel from round to round.
- build: ``Builder.build()`` of the chain (the builder is filled untimed).

Answers: round r must equal the oracle's first round shifted by r in the last
coordinate (the oracle's first two rounds are compared to check that this
holds): the drained changes for ``+drain``, otherwise the frontiers at the scope
output and at the first operator's input. ``build()`` must return the oracle's
scope summaries and node count.
"""

from __future__ import annotations

import functools

import harness
import pytest

SUITE = "Tracker"
CHAIN_OPS = 1000
LOOP_OPS = 10


def chain_builder(impl: harness.Impl, ops: int = CHAIN_OPS):
    builder = impl.Builder(1)
    builder.add_node(0, 1, 1, [[[]]])
    for i in range(1, ops + 1):
        builder.add_node(i, 1, 1, [[[0]]])
    builder.add_edge((0, 0), (1, 0))
    for i in range(1, ops):
        builder.add_edge((i, 0), (i + 1, 0))
    builder.add_edge((ops, 0), (0, 0))
    return builder


def loop_builder(impl: harness.Impl, ops: int = LOOP_OPS):
    builder = impl.Builder(2)
    builder.add_node(0, 1, 1, [[[]]])
    for i in range(1, ops + 1):
        builder.add_node(i, 1, 1, [[[(0, 0)]]])
    feedback = ops + 1
    builder.add_node(feedback, 1, 1, [[[(0, 1)]]])
    builder.add_edge((0, 0), (1, 0))
    for i in range(1, ops):
        builder.add_edge((i, 0), (i + 1, 0))
    builder.add_edge((ops, 0), (feedback, 0))
    builder.add_edge((feedback, 0), (1, 0))
    builder.add_edge((ops, 0), (0, 0))
    return builder


def _drain(tracker) -> tuple[list, list]:
    return tracker.pushed_changes(), tracker.output_changes()


def chain_round(drain: bool):
    """The timed chain round; each call returns (round, payload) for ``observe``."""

    def make(impl: harness.Impl):
        tracker, _ = chain_builder(impl).build()
        source = (1, 0)
        tracker.update_source(source, 0, 1)
        tracker.propagate_all()
        _drain(tracker)
        state = [0]

        def run() -> object:
            t = state[0]
            tracker.update_source(source, t, -1)
            tracker.update_source(source, t + 1, 1)
            tracker.propagate_all()
            state[0] = t + 1
            return t, (_drain(tracker) if drain else tracker)

        return run

    return make


def loop_round(drain: bool):
    def make(impl: harness.Impl):
        tracker, _ = loop_builder(impl).build()
        feedback = LOOP_OPS + 1
        # (from, to, added to the last coordinate on the way)
        hops = [((i, 0), (i + 1, 0), 0) for i in range(1, LOOP_OPS)]
        hops += [((LOOP_OPS, 0), (feedback, 0), 1), ((feedback, 0), (1, 0), 0)]
        tracker.update_source((1, 0), (0, 0), 1)
        tracker.propagate_all()
        _drain(tracker)
        state = [0]

        def run() -> object:
            r = state[0]
            t = r
            drained = []
            for leave, reach, step in hops:
                tracker.update_source(leave, (0, t), -1)
                tracker.update_source(reach, (0, t + step), 1)
                tracker.propagate_all()
                t += step
                if drain:
                    drained.append(_drain(tracker))
            state[0] = r + 1
            return r, (drained if drain else tracker)

        return run

    return make


def _shift(time: object, r: int) -> object:
    if isinstance(time, tuple):
        return time[:-1] + (time[-1] + r,)
    return time + r  # type: ignore[operator]


Observation = list[tuple[tuple, object, int]]  # (label, time, diff): only times shift


def _normal_drain(pushed: list, outputs: list, hop: int = 0) -> Observation:
    # Source and Target compare equal as tuples: keep the kind by name.
    out = [(("pushed", hop, type(loc).__name__, loc[0], loc[1]), t, d) for loc, t, d in pushed]
    out += [(("output", hop, o), t, d) for o, batch in enumerate(outputs) for t, d in batch]
    return out


def _observe(kind: str, payload: object) -> Observation:
    """What a round is checked on."""
    if kind == "chain" and isinstance(payload, tuple):
        return _normal_drain(*payload)
    if kind == "loop" and isinstance(payload, list):
        return [
            item for hop, drained in enumerate(payload) for item in _normal_drain(*drained, hop)
        ]
    tracker = payload
    out: Observation = []
    for target in ((0, 0), (1, 0)):  # the scope output, and the first operator's input
        frontier = tracker.target_frontier(target).elements()  # type: ignore[attr-defined]
        out += [(("frontier", target), t, 1) for t in frontier]
    return out


def _shift_all(observed: Observation, r: int) -> Observation:
    return [(label, _shift(t, r), d) for label, t, d in observed]


ROUNDS = {
    ("chain", False): chain_round(False),
    ("chain", True): chain_round(True),
    ("loop", False): loop_round(False),
    ("loop", True): loop_round(True),
}


@functools.cache
def reference_round(kind: str, drain: bool) -> Observation:
    """The oracle's first round, observed; checks that the second is it shifted by one."""
    run = ROUNDS[(kind, drain)](harness.Impl(harness.ORACLE))
    # Observed at once: without draining, the payload is the tracker itself.
    observed = _observe(kind, run()[1])
    if _observe(kind, run()[1]) != _shift_all(observed, 1):
        raise RuntimeError(
            f"{kind} rounds are not shift-invariant in the oracle; fix the benchmark"
        )
    return observed


def round_check(kind: str, drain: bool):
    def check(result: object) -> None:
        r, payload = result  # type: ignore[misc]
        want = _shift_all(reference_round(kind, drain), r)
        got = _observe(kind, payload)
        if got != want:
            raise harness.Mismatch(f"{kind} round {r}: {harness.first_difference(got, want)}")

    return check


def make_build(impl: harness.Impl):
    builder = chain_builder(impl)

    def run() -> object:
        return builder.build()

    return run


def _build_answer(result: object) -> list:
    tracker, summary = result  # type: ignore[misc]
    return [tracker.nodes, [[a.elements() for a in row] for row in summary]]


@functools.cache
def reference_build() -> list:
    return _build_answer(make_build(harness.Impl(harness.ORACLE))())


def build_check(result: object) -> None:
    harness.expect_equal("build()", _build_answer(result), reference_build())


CASES = [
    harness.Case(
        suite=SUITE,
        subject="chain of 1000, downgrade + propagate_all()",
        key="chain-round",
        size=CHAIN_OPS,
        unit="operators",
        make=ROUNDS[("chain", False)],
        check=round_check("chain", False),
        op="round",
        oracle_rounds=15,
    ),
    harness.Case(
        suite=SUITE,
        subject="chain of 1000, downgrade + propagate_all() + drain",
        key="chain-round-drain",
        size=CHAIN_OPS,
        unit="operators",
        make=ROUNDS[("chain", True)],
        check=round_check("chain", True),
        op="round",
        oracle_rounds=15,
    ),
    harness.Case(
        suite=SUITE,
        subject="loop of 10 + feedback, 11 hops + propagate_all() each",
        key="loop-round",
        size=LOOP_OPS + 1,
        unit="operators",
        make=ROUNDS[("loop", False)],
        check=round_check("loop", False),
        ops=LOOP_OPS + 1,
        op="hop",
        oracle_rounds=50,
    ),
    harness.Case(
        suite=SUITE,
        subject="loop of 10 + feedback, 11 hops + propagate_all() + drain each",
        key="loop-round-drain",
        size=LOOP_OPS + 1,
        unit="operators",
        make=ROUNDS[("loop", True)],
        check=round_check("loop", True),
        ops=LOOP_OPS + 1,
        op="hop",
        oracle_rounds=50,
    ),
    harness.Case(
        suite=SUITE,
        subject="Builder.build() of the chain",
        key="build-chain",
        size=CHAIN_OPS,
        unit="operators",
        make=make_build,
        check=build_check,
        op="build",
        oracle_rounds=10,
    ),
]


@pytest.mark.parametrize(("case", "impl"), harness.params(CASES))
def test_tracker(run_case, case: harness.Case, impl: str) -> None:
    run_case(case, impl)
