"""Operators that keep a state per time (``aggregate`` on Batches,
``count`` on records) run a compiled loop (``PerTimeLogic``), also under
``check_progress``, where their input is read through a checking puller.
Over random inputs spread over several open times, at 1, 2 and 3 workers,
both runs give the same answers, at the same times, as a plain oracle
does."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely.dataflow._channels import PerTimeLogic

KEYS = st.integers(-2**63, 2**63 - 1) | st.integers(0, 5)
# Rounds of sends: per round, the keys sent at each of its four times (the
# times stay open together until the round ends and the workers step).
ROUNDS = st.lists(st.lists(st.lists(KEYS, max_size=5), min_size=4, max_size=4),
                  min_size=1, max_size=4)


def run(rounds: list, workers: int, check: bool):
    def work(worker):
        sums: list = []
        counts: list = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.count().inspect_batch(lambda t, data: counts.extend((t, n) for n in data))
            batches = stream.map_batch(lambda data: timely.Batch(
                k=np.array(data, dtype=np.int64), v=np.ones(len(data), dtype=np.int64)))
            probe = batches.aggregate("k", "v", how="sum").inspect_batch(
                lambda t, b: sums.extend(
                    (t, k, s) for k, s in zip(b["k"].tolist(), b["sum"].tolist()))).probe()
        compiled = sum(isinstance(getattr(c.operator, "_logic", None), PerTimeLogic)
                       for sub in worker.scopes for c in sub.children if c is not None)
        base = 0
        for keys_at in rounds:
            for offset, keys in enumerate(keys_at):
                handle.advance_to(base + offset)
                handle.send_batch([wrap(k + worker.index) for k in keys])
            base += 4
            handle.advance_to(base)
            worker.step_while(lambda: probe.less_than(base))
        handle.close()
        worker.step_while(lambda: not probe.done())
        return compiled, sums, counts

    return timely.execute(work, workers=workers, check_progress=check)


def wrap(k: int) -> int:
    return (k + 2**63) % 2**64 - 2**63


@settings(max_examples=capped(12), deadline=None)
@given(ROUNDS, st.sampled_from([1, 2, 3]))
def test_compiled_per_time_logic_matches_the_oracle_checked_or_not(rounds, workers):
    fast = run(rounds, workers, False)
    slow = run(rounds, workers, True)
    assert all(compiled == 2 for compiled, _, _ in fast)      # count and aggregate
    assert all(compiled == 2 for compiled, _, _ in slow)      # checked, the same logic
    sums: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    for r, keys_at in enumerate(rounds):
        for offset, keys in enumerate(keys_at):
            for w in range(workers):
                for k in keys:
                    sums[(4 * r + offset, wrap(k + w))] += 1
                counts[4 * r + offset] += len(keys)
    for result in (fast, slow):
        got_sums = collections.Counter()
        got_counts = collections.Counter()
        for _, s, c in result:
            for t, k, n in s:
                assert (t, k) not in got_sums          # one row per key and time, one worker
                got_sums[(t, k)] = n
            for t, n in c:
                got_counts[t] += n
        assert got_sums == sums
        assert got_counts == +counts
    # Each worker emits the same rows either way (the keys routed to it;
    # their order within a time follows the order messages arrived in).
    assert [(sorted(s), sorted(c)) for _, s, c in fast] == \
        [(sorted(s), sorted(c)) for _, s, c in slow]
