"""number_ids as a distributed sort: at 1, 2, 3 and 5 workers, random
text ids (unicode, the empty string, duplicates, ids that differ in one
character), sent all by worker 0 or spread over the workers, at one or
several times, are numbered exactly as a plain reference numbers them
(the sorted distinct ids of each time, 0 to n - 1); a pinned id and
``once`` keep their meaning; no worker's NumberIds operator receives much
more than its share of the ids; and the paths of bfs_paths are decoded
with the text of their own vertices only."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely.algorithms import bfs_paths
from timely.algorithms.ids import _numbering, number_ids
from timely.container import StringColumn
from timely.errors import WorkerFailed
from timely.logging import ChannelsEvent, MessagesEvent, OperatesEvent

KINDS = ("strings", "unicode", "objects")


def column(values: list[str], kind: str):
    if kind == "strings":
        return StringColumn.from_strings(values)
    if kind == "unicode":
        return np.array(values, dtype=str) if values else np.array([], dtype="U1")
    return np.array(values, dtype=object)


def numbered(times: list[list[str]], workers: int, spread: bool, kinds=KINDS) -> dict:
    """Per time, the ``(id, number)`` rows number_ids sends (over every
    worker): worker ``k`` sends every ``workers``-th id of a time when
    ``spread``, else worker 0 sends them all; a worker's column kind is
    ``kinds[k % len(kinds)]``. Checks that each worker sends its rows in
    order, its numbers all below those of the workers after it."""

    def work(worker):
        got = []
        with worker.dataflow() as scope:
            handle, ids = scope.new_input()
            probe = number_ids(ids).inspect_batch(
                lambda t, b: got.extend((t, *row) for row in b.to_records())).probe()
        k, p = worker.index, worker.peers
        kind = kinds[k % len(kinds)]
        for time, values in enumerate(times):
            mine = values[k::p] if spread else values if k == 0 else []
            handle.send_batch(timely.Batch(id=column(mine, kind)))
            handle.advance_to(time + 1)
            worker.step_while(lambda: probe.less_than(handle.time))
        handle.close()
        worker.drain()
        return got

    per_time: dict = defaultdict(list)
    for rows in timely.execute(work, workers=workers):
        mine: dict = defaultdict(list)
        for time, text, number in rows:
            mine[time].append(number)
            per_time[time].append((text, number))
        for time, numbers in mine.items():
            assert numbers == sorted(numbers)
            assert not per_time[time][:-len(numbers)] or (
                max(n for _, n in per_time[time][:-len(numbers)]) < numbers[0])
    return dict(per_time)


def reference(times: list[list[str]]) -> dict:
    """The sorted distinct ids of each time that has any, numbered."""
    return {t: list(enumerate(sorted(set(values)))) for t, values in enumerate(times) if values}


# No trailing NUL: a numpy U array cannot hold one.
TEXT = (st.sampled_from(["", "a", "A", "b", "ab", "aB", "a\x00b", "é", "e\u0301", "日本", "😀",
                         "x" * 50, "x" * 49 + "y", "x" * 49 + "z", " ", "Straße", "\uffff",
                         "\U0010ffff", "\x7f", "\x80"])
        | st.text(max_size=5).filter(lambda s: not s.endswith("\x00")))


@st.composite
def id_sets(draw):
    """Ids at one or several times, with duplicates and near neighbours:
    ids that differ from another in their last character."""
    times = []
    for _ in range(draw(st.integers(1, 3))):
        ids = draw(st.lists(TEXT, max_size=40))
        near = [s[:-1] + chr(ord(s[-1]) + 1) for s in ids[:5] if s and ord(s[-1]) < 0x10FFFF]
        ids += [s for s in near if not (0xD800 <= ord(s[-1]) < 0xE000)]
        ids += draw(st.lists(st.sampled_from(ids), max_size=10)) if ids else []
        times.append(draw(st.permutations(ids)))
    return times


@settings(max_examples=capped(20), deadline=None)
@given(id_sets(), st.booleans(), st.integers(0, 2))
def test_the_numbering_is_the_sorted_order_at_any_worker_count(times, spread, first_kind):
    want = reference(times)
    kinds = KINDS[first_kind:] + KINDS[:first_kind]
    for workers in (1, 2, 3, 5):
        got = numbered(times, workers, spread, kinds)
        assert set(got) == set(want), workers
        for time, pairs in want.items():
            rows = got[time]
            # Every id once, with its number, and the numbers are 0..n-1 in order.
            assert sorted(rows, key=lambda r: r[1]) == [(v, n) for n, v in pairs], workers
            assert len(rows) == len(pairs), workers


def test_ids_that_differ_in_one_byte_get_two_numbers():
    ids = ["ab", "a\x00b", "a\x01b", "aB", "ab" * 100, "ab" * 99 + "aa", "", "é", "e"]
    for workers in (1, 3):
        got = numbered([ids + ids[::-1]], workers, spread=True)
        assert sorted(got[0], key=lambda r: r[1]) == [(v, n) for n, v in reference([ids])[0]]


def test_a_pinned_id_is_numbered_minus_one_and_the_others_keep_their_rank():
    def work(worker):
        got = []
        with worker.dataflow() as scope:
            handle, ids = scope.new_input()
            _numbering(ids, "id", "m", None).inspect_batch(lambda t, b: got.extend(b.to_records()))
        handle.send_batch(timely.Batch(id=list("zyxmlkab")[worker.index::worker.peers]))
        handle.close()
        worker.drain()
        return got

    for workers in (1, 2, 3):
        rows = sorted(r for part in timely.execute(work, workers=workers) for r in part)
        assert rows == [("a", 0), ("b", 1), ("k", 2), ("l", 3), ("m", -1), ("x", 5), ("y", 6),
                        ("z", 7)]


@pytest.mark.parametrize("workers", [1, 3])
def test_once_refuses_ids_at_a_second_time_whichever_worker_sends_them(workers):
    def work(worker):
        with worker.dataflow() as scope:
            handle, ids = scope.new_input()
            probe = number_ids(ids, once=True).probe()
        if worker.index == 0:
            handle.send_batch(timely.Batch(id=["a", "b"]))
        handle.advance_to(1)
        worker.step_while(lambda: probe.less_than(1))
        if worker.index == worker.peers - 1:
            handle.send_batch(timely.Batch(id=["c"]))
        handle.close()
        worker.drain()

    with pytest.raises((timely.ColumnarError, WorkerFailed), match="arrive at one time"):
        timely.execute(work, workers=workers)


# -- each worker's share ------------------------------------------------------------

N = 3000
SAMPLE = 64             # the ids each worker samples, at these worker counts


def received(events: list, operator: str, worker: int) -> int:
    """The rows the one operator named ``operator`` received on ``worker``
    (its inputs' messages, as the log counts them)."""
    ops = [e.addr for e in events if type(e) is OperatesEvent and e.name == operator]
    assert len(ops) == 1
    (addr,) = ops
    into = {e.id for e in events if type(e) is ChannelsEvent
            and e.scope_addr == addr[:-1] and e.target[0] == addr[-1]}
    return sum(e.record_count for e in events if type(e) is MessagesEvent
               and not e.is_send and e.channel in into and e.target == worker)


def logged(worker) -> list:
    events: list = []
    worker.logging.register(lambda t, batch: events.extend(e for _, _, e in batch),
                            [OperatesEvent, ChannelsEvent, MessagesEvent])
    return events


def received_by_number_ids(workers: int, ids: list[str], spread: bool) -> list[int]:
    """Per worker, the rows its NumberIds operator received, numbering ``ids``."""

    def work(worker):
        events = logged(worker)
        got = []
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            number_ids(stream).inspect_batch(lambda t, b: got.append(len(b)))
        k, p = worker.index, worker.peers
        mine = ids[k::p] if spread else ids if k == 0 else []
        handle.send_batch(timely.Batch(id=mine))
        handle.close()
        worker.drain()
        worker.logging.flush()
        return received(events, "NumberIds", k), sum(got)

    results = timely.execute(work, workers=workers)
    assert sum(n for _, n in results) == len(set(ids))
    return [r for r, _ in results]


@pytest.mark.parametrize("workers", [2, 3, 4])
@pytest.mark.parametrize("spread", [False, True])
def test_no_worker_numbers_much_more_than_its_share(workers, spread):
    rng = np.random.default_rng(workers)
    # Skewed text: most ids share long prefixes, a few are unicode.
    ids = [f"user/{i % 7}/{i:06d}" for i in range(N - 300)]
    ids += ["é" * int(n) + "x" for n in rng.integers(1, 40, 100)] + ["日本" + str(i) for i in range(200)]
    ids = list(dict.fromkeys(ids))
    ids = [ids[i] for i in rng.permutation(len(ids))]
    ids += ids[:500]                                      # duplicates
    n = len(set(ids))
    # 1.5 n / W (not 2 n / W, which at two workers is all of them): a range
    # holds at most about n / W + 2 n / SAMPLE ids.
    limit = 1.5 * n / workers + SAMPLE
    received = received_by_number_ids(workers, ids, spread)
    assert max(received) <= limit, (received, limit)
    assert sum(received) >= n


@pytest.mark.parametrize("workers", [1, 3])
def test_paths_are_decoded_with_the_text_of_their_vertices_only(workers):
    # A short path s -> a -> t beside many other vertices: worker 0 gets the
    # path and the text of its three vertices, not every id.
    others = [(f"u{i:05d}", f"w{i:05d}") for i in range(2000)]
    edges = [("s", "a"), ("a", "t"), *others]

    def work(worker):
        events = logged(worker)
        got = []
        with worker.dataflow() as scope:
            opened = [scope.new_input() for _ in range(3)]
            e, f, t = (stream for _, stream in opened)
            bfs_paths(e, f, t, ids="string").inspect_batch(lambda _, b: got.extend(b.to_records()))
        k, p = worker.index, worker.peers
        mine = edges[k::p]
        sent = [timely.Batch(src=[u for u, _ in mine], dst=[v for _, v in mine]),
                timely.Batch(node=["s"] if k == 0 else []),
                timely.Batch(node=["t"] if k == 0 else [])]
        for (handle, _), batch in zip(opened, sent):
            handle.send_batch(batch)
            handle.close()
        worker.drain()
        worker.logging.flush()
        return got, received(events, "DecodeGathered", k)

    results = timely.execute(work, workers=workers)
    assert [row for got, _ in results for row in got] == [("s", "a", "t")]
    assert [n for _, n in results] == [4] + [0] * (workers - 1)
