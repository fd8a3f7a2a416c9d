"""ChangeBatch: compacting 10^6 updates, compiled vs the oracle.

Input (fixed seed): 10^6 updates whose diffs are +1 or -1 and whose times are
drawn uniformly from 10^4 distinct values: ``0 .. 9999`` at arity 1, the pairs
``(v // 100, v % 100)`` of the same draws at arity 2. One more arity-1 input,
``wide``, draws from 10^4 random values spread over all of [0, 2^64), the worst
case for a radix sort over the time's bytes. Answer: the compacted updates (time
order, zero sums dropped), checked against numpy (sort + ``add.reduceat``)
before any figure.

Paths, each timed from an empty batch to the drained answer:

- ``update``: ``update(time, diff)`` once per update from a Python loop, then
  ``drain()``. The loop and the call cost the same on both sides, so this path
  shows how much of the per-update cost is the structure's own.
- ``extend_arrays+drain_arrays``: one ``extend_arrays(times, diffs)`` with the
  numpy arrays, then ``drain_arrays()``.
- ``extend_arrays+drain``: the same, ending with ``drain()`` (a list of tuples).

The oracle is a dict of sums. Where it has no ``extend_arrays``/``drain_arrays``,
its bulk path converts the arrays with ``tolist()`` and calls ``extend``, and
builds the output arrays from ``drain()``, inside the timed region: that is what
a pure-Python structure has to do with arrays.
"""

from __future__ import annotations

import functools

import harness
import numpy as np
import pytest

N_UPDATES = 10**6
N_TIMES = 10**4
SEED = 20240601
SUITE = "ChangeBatch"


class Workload:
    """The updates as arrays and as Python objects, and the expected answer."""

    def __init__(self, arity: int, wide: bool = False) -> None:
        rng = np.random.default_rng(SEED)
        self.arity = arity
        draws = rng.integers(0, N_TIMES, N_UPDATES)
        self.diffs = rng.choice(np.array([-1, 1], dtype=np.int64), N_UPDATES)
        if wide:
            values = np.unique(rng.integers(0, 2**64, 2 * N_TIMES, dtype=np.uint64, endpoint=False))
            vocab = rng.permutation(values)[:N_TIMES]
        elif arity == 1:
            vocab = np.arange(N_TIMES, dtype=np.uint64)
        else:
            v = np.arange(N_TIMES, dtype=np.uint64)
            vocab = np.stack([v // 100, v % 100], axis=1)
        self.times = np.ascontiguousarray(vocab[draws])
        # Python objects for the update() loop; the 10^4 time objects are shared,
        # as they would be in a program that keeps its timestamps.
        vocab_objects = _objects(vocab)
        self.time_objects = [vocab_objects[i] for i in draws.tolist()]
        self.diff_objects = self.diffs.tolist()
        self.expected_times, self.expected_diffs = _compact(self.times, self.diffs)
        self.expected = list(zip(_objects(self.expected_times), self.expected_diffs.tolist()))


def _objects(times: np.ndarray) -> list[object]:
    """Timestamps as the Python API takes them: ints, or tuples of ints."""
    listed = times.tolist()
    return listed if times.ndim == 1 else list(map(tuple, listed))


def _compact(times: np.ndarray, diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The answer, computed with numpy: times in lexicographic order, summed, zeros dropped."""
    if times.ndim == 1:
        order = np.argsort(times, kind="stable")
        keys = times[order]
        new = keys[1:] != keys[:-1]
    else:
        order = np.lexsort(times.T[::-1])  # lexsort's last key is the primary one
        keys = times[order]
        new = np.any(keys[1:] != keys[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate(([True], new)))
    sums = np.add.reduceat(diffs[order], starts)
    keep = sums != 0
    return keys[starts][keep], sums[keep]


@functools.cache
def workload(arity: int, wide: bool = False) -> Workload:
    return Workload(arity, wide)


def _check_list(what: str, arity: int, wide: bool):
    def check(result: object) -> None:
        harness.expect_equal(what, result, workload(arity, wide).expected)  # type: ignore[arg-type]

    return check


def _check_arrays(arity: int, wide: bool):
    def check(result: object) -> None:
        w = workload(arity, wide)
        times, diffs = result  # type: ignore[misc]
        if times.dtype != np.uint64 or diffs.dtype != np.int64:
            raise harness.Mismatch(f"drain_arrays() dtypes {times.dtype}, {diffs.dtype}")
        if times.shape != w.expected_times.shape or not np.array_equal(times, w.expected_times):
            raise harness.Mismatch(f"drain_arrays() times differ (shape {times.shape})")
        if not np.array_equal(diffs, w.expected_diffs):
            raise harness.Mismatch("drain_arrays() diffs differ")

    return check


def make_update(arity: int, wide: bool):
    def make(impl: harness.Impl):
        batch_class = impl.ChangeBatch
        w = workload(arity, wide)
        times, diffs = w.time_objects, w.diff_objects

        def run() -> object:
            batch = batch_class(arity=arity)
            update = batch.update
            for time, diff in zip(times, diffs):
                update(time, diff)
            return batch.drain()

        return run

    return make


def make_bulk(arity: int, wide: bool, drain: str):
    def make(impl: harness.Impl):
        batch_class = impl.ChangeBatch
        w = workload(arity, wide)
        times, diffs = w.times, w.diffs
        native = hasattr(batch_class, "extend_arrays") and hasattr(batch_class, "drain_arrays")

        def run() -> object:
            batch = batch_class(arity=arity)
            if native:
                batch.extend_arrays(times, diffs)
                return batch.drain_arrays() if drain == "drain_arrays" else batch.drain()
            batch.extend(zip(_objects(times), diffs.tolist()))
            pairs = batch.drain()
            if drain == "drain":
                return pairs
            out_times = np.array([t for t, _ in pairs], dtype=np.uint64)
            out_diffs = np.array([d for _, d in pairs], dtype=np.int64)
            return out_times.reshape(
                (len(pairs),) if arity == 1 else (len(pairs), arity)
            ), out_diffs

        return run

    return make


def _bulk_note() -> str:
    try:
        oracle = harness.Impl(harness.ORACLE).ChangeBatch
    except harness.Unavailable:
        return ""
    if hasattr(oracle, "extend_arrays") and hasattr(oracle, "drain_arrays"):
        return ""
    return (
        "the oracle has no extend_arrays/drain_arrays: its bulk path is tolist() + extend() "
        "(then np.array of drain() for drain_arrays), all timed"
    )


def _cases(arity: int, wide: bool, paths: tuple[str, ...]) -> list[harness.Case]:
    name = f"arity {arity}" + (", 64-bit times" if wide else "")
    key = f"arity{arity}" + ("-wide" if wide else "")
    common = {
        "suite": SUITE,
        "size": N_UPDATES,
        "unit": "updates",
        "ops": N_UPDATES,
        "op": "update",
        "oracle_rounds": 3,
    }
    out = []
    if "update" in paths:
        out.append(
            harness.Case(
                subject=f"update() loop + drain(), {name}",
                key=f"update-{key}",
                make=make_update(arity, wide),
                check=_check_list("drain()", arity, wide),
                **common,
            )
        )
    if "drain_arrays" in paths:
        out.append(
            harness.Case(
                subject=f"extend_arrays() + drain_arrays(), {name}",
                key=f"extend_arrays-drain_arrays-{key}",
                make=make_bulk(arity, wide, "drain_arrays"),
                check=_check_arrays(arity, wide),
                note=_bulk_note(),
                **common,
            )
        )
    if "drain" in paths:
        out.append(
            harness.Case(
                subject=f"extend_arrays() + drain(), {name}",
                key=f"extend_arrays-drain-{key}",
                make=make_bulk(arity, wide, "drain"),
                check=_check_list("drain()", arity, wide),
                note=_bulk_note(),
                **common,
            )
        )
    return out


ALL_PATHS = ("update", "drain_arrays", "drain")
CASES = (
    _cases(1, False, ALL_PATHS) + _cases(2, False, ALL_PATHS) + _cases(1, True, ("drain_arrays",))
)


@pytest.mark.parametrize(("case", "impl"), harness.params(CASES))
def test_change_batch(run_case, case: harness.Case, impl: str) -> None:
    run_case(case, impl)
