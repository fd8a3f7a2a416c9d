"""Key columns of every kind in join, distinct, improve and KeyIndex, against
the plain-Python oracle in ``tests/reference/keys.py``, at 1, 2 and 3
workers: integers of each width, bools, floats (NaN, -0.0), datetimes,
timedeltas, bytes, and text as a StringColumn, a ``U`` array or an object
array of str (which must all give the same answers)."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from tests.reference import keys as ref
from timely.container import StringColumn
from timely.dataflow.operators.relational import KeyEncoder, KeyIndex, distinct, improve, join

NAT = np.iinfo(np.int64).min

# Text without lone surrogates (a U column holding one does not cross to another
# process) and without a trailing NUL (padding in a U column, as numpy reads it).
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=5).filter(
    lambda s: not s.endswith("\x00"))
blob = st.binary(max_size=6).map(lambda b: b.rstrip(b"\x00"))
floats32 = st.floats(width=32) | st.sampled_from([0.0, -0.0, float("nan"), -float("nan")])

# Groups of column kinds whose keys compare with each other, and values every
# kind of the group holds exactly.
GROUPS = {
    "int": (st.integers(-100, 100), ["int8", "int16", "int32", "int64"]),
    "unsigned": (st.integers(0, 255), ["uint8", "uint16", "uint32", "uint64"]),
    "int64": (st.integers(-2**63, 2**63 - 1), ["int64"]),
    "uint64": (st.integers(2**63 - 2, 2**64 - 1) | st.integers(0, 3), ["uint64"]),
    "bool": (st.booleans(), ["bool"]),
    "float": (floats32, ["float32", "float64"]),
    "datetime": (st.integers(-2**40, 2**40) | st.just(NAT), ["datetime64[s]"]),
    "timedelta": (st.integers(-10, 10) | st.just(NAT), ["timedelta64[ms]"]),
    "bytes": (blob, ["S", "object-bytes"]),
    "text": (text, ["U", "object-str", "string"]),
}


def column(kind: str, values: list):
    """A key column of ``kind`` holding ``values`` (plain Python)."""
    if kind == "string":
        return StringColumn.from_strings(values)
    if kind in ("object-str", "object-bytes"):
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    if kind == "U":
        return np.array(values, dtype="U") if values else np.array([], dtype="U1")
    if kind == "S":
        return np.array(values, dtype="S") if values else np.array([], dtype="S1")
    if kind.startswith(("datetime", "timedelta")):
        return np.array(values, dtype=np.int64).view(kind)
    return np.array(values, dtype=kind)


@st.composite
def keyed(draw, group: str, rows: int = 12):
    """A pool of key values of ``group`` and rows drawing keys from it (so
    that keys repeat): ``[(key, payload), ...]``."""
    values, _ = GROUPS[group]
    pool = draw(st.lists(values, min_size=1, max_size=5))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=rows))
    return [(pool[i], draw(st.integers(0, 9))) for i in picks]


def key_batch(kinds: dict, payloads: dict, values: dict) -> timely.Batch:
    """A Batch of key columns ``{name: kind}`` with ``values[name]`` and int64
    payload columns."""
    columns = {n: column(k, values[n]) for n, k in kinds.items()}
    columns.update({n: np.array(v, dtype=np.int64) for n, v in payloads.items()})
    return timely.Batch(columns)


def run(make, inputs: list[dict], workers: int, mode: str = "threads"):
    """``make(*streams)``'s output as ``(time, batch)`` pairs; ``inputs[j]``
    maps times to lists of Batches for input ``j``, the ``i``-th of a time
    introduced by worker ``i % peers``."""

    def work(worker):
        got = []
        with worker.dataflow() as scope:
            pairs = [scope.new_input() for _ in inputs]
            make(*[s for _, s in pairs]).inspect_batch(lambda t, b: got.append((t, b)))
        times = sorted(set().union(*inputs))
        for t in times:
            for (handle, _), by_time in zip(pairs, inputs):
                handle.advance_to(t)
                for i, b in enumerate(by_time.get(t, [])):
                    if i % worker.peers == worker.index:
                        handle.send_batch(b)
        for handle, _ in pairs:
            handle.close()
        worker.drain()
        return got

    return [p for part in timely.execute(work, workers=workers, mode=mode) for p in part]


def canonical(pairs, names) -> Counter:
    return Counter((t, row) for t, b in pairs for row in ref.canonical_rows(b, names))


# -- the encoder and the index -------------------------------------------------


@settings(max_examples=capped(150))
@given(st.sampled_from(sorted(GROUPS)), st.data())
def test_key_encoder_codes_equal_keys_alike(group, data):
    values, kinds = GROUPS[group]
    encoder = KeyEncoder()
    held: dict = {}
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(kinds))
        rows = data.draw(st.lists(values, max_size=20))
        keys = ref.canonical_column(column(kind, rows))
        probe = encoder.encode(column(kind, rows), "k", add=False)
        for code, key in zip(probe.tolist(), keys):
            if key in held:
                assert code == held[key]
            elif group in ("text", "bytes"):
                assert code == -1                          # looked up, not added
            else:
                assert code not in held.values()
        codes = encoder.encode(column(kind, rows), "k").tolist()
        for code, key in zip(codes, keys):
            assert held.setdefault(key, code) == code
        assert len(set(held.values())) == len(held)      # unequal keys, unequal codes
    if held:
        assert ref.canonical_column(encoder.decode(list(held.values()))) == list(held)


@settings(max_examples=capped(100))
@given(st.lists(st.lists(text | st.sampled_from(["\ud800", "a\udfff", "ключ", ""]),
                         max_size=12), max_size=4))
def test_text_forms_give_one_code_each(chunks):
    # Object str (lone surrogates included, as their three UTF-8 bytes), U
    # and StringColumn rows of one text get one code from one encoder.
    encoder = KeyEncoder()
    seen: dict = {}
    for chunk in chunks:
        forms = [column("object-str", chunk), np.array(chunk, dtype="U") if chunk else
                 np.array([], dtype="U1")]
        if not any("\ud800" <= ch <= "\udfff" for s in chunk for ch in s):
            forms.append(StringColumn.from_strings(chunk))
        codes = [encoder.encode(f, "t").tolist() for f in forms]
        assert all(c == codes[0] for c in codes)
        for s, c in zip(chunk, codes[0]):
            assert seen.setdefault(s, c) == c
    assert len(encoder) == len(seen) and len(set(seen.values())) == len(seen)


@settings(max_examples=capped(100))
@given(st.lists(st.lists(st.tuples(text, floats32, st.integers(-2**63, 2**63 - 1),
                                   st.booleans()), max_size=15), max_size=4))
def test_key_index_of_mixed_columns_numbers_keys_as_a_dict_does(chunks):
    index = KeyIndex(4)
    numbers: dict = {}
    for i, chunk in enumerate(chunks):
        texts, reals, ints, flags = (list(c) for c in zip(*chunk)) if chunk else ([],) * 4
        columns = [column(["string", "object-str", "U"][i % 3], texts),
                   column(["float32", "float64"][i % 2], reals), column("int64", ints),
                   column("bool", flags)]
        rows = list(zip(*[ref.canonical_column(c) for c in columns]))
        assert index.lookup(columns).tolist() == [numbers.get(r, -1) for r in rows]
        for r in rows:
            numbers.setdefault(r, len(numbers))
        assert index.insert(columns, ["t", "f", "i", "b"]).tolist() == [numbers[r] for r in rows]
    assert len(index) == len(numbers)
    assert list(zip(*[ref.canonical_column(k) for k in index.keys()])) == list(numbers)
    ids = np.arange(len(numbers))[::-1]
    assert list(zip(*[ref.canonical_column(k) for k in index.take(ids)])) == \
        list(numbers)[::-1]


def test_key_encoder_refusals_name_the_columns_and_kinds():
    encoder = KeyEncoder()
    encoder.encode(np.array(["a"], dtype=object), "word")
    with pytest.raises(timely.ColumnarError, match=r"'n'.*int64.*'word'.*object of str.*text"):
        encoder.encode(np.array([1]), "n")
    times = KeyEncoder()
    times.encode(np.array([1], dtype="M8[s]"), "at")
    with pytest.raises(timely.ColumnarError, match=r"datetime64\[ms\].*datetime64\[s\]"):
        times.encode(np.array([1], dtype="M8[ms]"), "at2")
    reals = KeyEncoder()
    reals.encode(np.array([1.0]), "x")
    with pytest.raises(timely.ColumnarError, match="cannot be compared"):
        reals.encode(np.array([1]), "y")
    wide = KeyEncoder()
    wide.encode(np.array([2**64 - 1], dtype=np.uint64), "u")
    with pytest.raises(timely.ColumnarError, match="2\\*\\*63"):
        wide.encode(np.array([-1]), "i")
    for bad in (np.array([1, "a"], dtype=object), np.array(["a", b"b"], dtype=object),
                np.array([1 + 2j]), np.zeros((2, 2))):
        with pytest.raises(timely.ColumnarError):
            KeyEncoder().encode(bad)
    with pytest.raises(timely.ColumnarError):
        KeyIndex(2).insert([np.array([1, 2]), np.array([1])])
    with pytest.raises(timely.ColumnarError):
        KeyIndex(2, [KeyEncoder()])
    # An empty object column says nothing of its kind: it takes any.
    empty = KeyEncoder()
    assert empty.encode(np.array([], dtype=object)).tolist() == [] and empty.kind == ""
    assert empty.encode(np.array([3], dtype=np.uint8)).tolist() == [3]
    assert empty.kind == "integer" and empty.decode([3]).dtype == np.uint8


def test_key_encoder_decodes_to_the_kinds_dtypes():
    cases = [(np.array([True, False]), np.bool_), (np.array([-1, 5], dtype=np.int16), np.int16),
             (np.array([-0.0, np.nan], dtype=np.float32), np.float32),
             (np.array([7, NAT], dtype=np.int64).view("m8[ms]"), np.dtype("m8[ms]")),
             (np.array([b"ab", b""]), np.dtype("S2"))]
    for values, dtype in cases:
        encoder = KeyEncoder()
        back = encoder.decode(encoder.encode(values))
        assert back.dtype == dtype
        assert ref.canonical_column(back) == ref.canonical_column(values)
    text_ = KeyEncoder()
    back = text_.decode(text_.encode(np.array(["é", ""])))
    assert type(back) is StringColumn and back.tolist() == ["é", ""]
    with pytest.raises(IndexError):
        text_.decode([5])


# -- the operators ---------------------------------------------------------------


@settings(max_examples=capped(50))
@given(st.sampled_from(sorted(GROUPS)), st.data())
def test_join_by_keys_of_every_kind(group, data):
    # Two rows sets per side and time, each of a kind of the group (text as a
    # StringColumn on one side and an object column on the other, say).
    _, kinds = GROUPS[group]
    persist = data.draw(st.sampled_from([None, "left", "right"]))
    sides = []
    for key in ("a", "b"):
        by_time: dict = {}
        for t in data.draw(st.lists(st.integers(0, 2), max_size=2, unique=True)):
            by_time[t] = [key_batch({key: data.draw(st.sampled_from(kinds))},
                                    {"x" if key == "a" else "y": [p for _, p in rows]},
                                    {key: [k for k, _ in rows]})
                          for rows in data.draw(st.lists(keyed(group), min_size=1, max_size=2))]
        sides.append(by_time)
    left, right = ({t: [r for b in bs for r in ref.canonical_rows(b, names)]
                    for t, bs in side.items()} for side, names in zip(sides, (("a", "x"),
                                                                               ("b", "y"))))
    expected = ref.join(left, right, 1, persist)
    for workers in (1, 2, 3):
        got = run(lambda l, r: join(l, r, left_on="a", right_on="b", persist=persist),
                  sides, workers)
        assert canonical(got, ("a", "x", "y")) == expected


@settings(max_examples=capped(50))
@given(st.data())
def test_join_by_three_columns_of_mixed_kinds(data):
    def side(payload: str):
        by_time = {}
        for t in data.draw(st.lists(st.integers(0, 1), max_size=2, unique=True)):
            parts = []
            for _ in range(data.draw(st.integers(1, 2))):
                n = data.draw(st.integers(0, 12))
                words = data.draw(st.lists(st.sampled_from(["", "a", "ключ", "ß"]),
                                           min_size=n, max_size=n))
                reals = data.draw(st.lists(st.sampled_from([0.0, -0.0, np.nan, 1.5]),
                                           min_size=n, max_size=n))
                ints = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
                parts.append(key_batch(
                    {"w": data.draw(st.sampled_from(["string", "object-str", "U"])),
                     "r": data.draw(st.sampled_from(["float32", "float64"])), "i": "uint8"},
                    {payload: list(range(n))}, {"w": words, "r": reals, "i": ints}))
            by_time[t] = parts
        return by_time

    sides = [side("x"), side("y")]
    persist = data.draw(st.sampled_from([None, "right"]))
    left, right = ({t: [r for b in bs for r in ref.canonical_rows(b, ("w", "r", "i", p))]
                    for t, bs in s.items()} for s, p in zip(sides, "xy"))
    expected = ref.join(left, right, 3, persist)
    for workers in (1, 2, 3):
        got = run(lambda l, r: join(l, r, ["w", "r", "i"], persist=persist), sides, workers)
        assert canonical(got, ("w", "r", "i", "x", "y")) == expected


@settings(max_examples=capped(50))
@given(st.sampled_from(sorted(GROUPS)), st.booleans(), st.data())
def test_distinct_of_every_kind(group, persist, data):
    _, kinds = GROUPS[group]
    by_time = {t: [key_batch({"k": data.draw(st.sampled_from(kinds)), "j": "int8"}, {},
                             {"k": [k for k, _ in rows], "j": [p for _, p in rows]})
                   for rows in data.draw(st.lists(keyed(group), min_size=1, max_size=2))]
               for t in data.draw(st.lists(st.integers(0, 3), max_size=3, unique=True))}
    expected = ref.distinct({t: [r for b in bs for r in ref.canonical_rows(b, ("k", "j"))]
                             for t, bs in by_time.items()}, persist)
    for workers in (1, 2, 3):
        got = run(lambda s: distinct(s, ["k", "j"], persist=persist), [by_time], workers)
        assert canonical(got, ("k", "j")) == expected


@settings(max_examples=capped(50))
@given(st.sampled_from(["min", "max"]), st.data())
def test_improve_with_text_keys(how, data):
    by_time = {t: [key_batch({"k": data.draw(st.sampled_from(GROUPS["text"][1]))},
                             {"v": [v for _, v in rows]}, {"k": [k for k, _ in rows]})
                   for rows in data.draw(st.lists(keyed("text"), min_size=1, max_size=2))]
               for t in data.draw(st.lists(st.integers(0, 3), max_size=3, unique=True))}
    expected = ref.improve({t: [(r[:1], r[1]) for b in bs for r in ref.canonical_rows(b, "kv")]
                            for t, bs in by_time.items()}, how)
    for workers in (1, 2, 3):
        got = run(lambda s: improve(s, "k", "v", how), [by_time], workers)
        assert Counter((t, (row[:1], row[1])) for t, row in canonical(got, "kv").elements()) \
            == expected


def test_text_keys_in_every_form_give_identical_answers(workers):
    # The same words as a StringColumn, an object column and a U column: one
    # answer from each operator, across times, with persisted state.
    words = [["b", "ключ", "", "a", "b"], ["ключ", "z", ""], ["a", "é", "é"]]

    def batches(kind):
        return {t: [key_batch({"k": kind}, {"v": list(range(len(w), 0, -1))}, {"k": w})]
                for t, w in enumerate(words)}

    answers = []
    for kind in ("string", "object-str", "U"):
        inputs = batches(kind)
        answers.append((
            canonical(run(lambda s: distinct(s, "k", persist=True), [inputs], workers,
                          "processes"), "k"),
            canonical(run(lambda s: improve(s, "k", "v", "max"), [inputs], workers,
                          "processes"), "kv"),
            canonical(run(lambda l, r: join(l, r.map_batch(
                lambda b: timely.Batch(k=b.column("k"), w=b["v"] * 10)), "k", persist="right"),
                [inputs, batches("string")], workers, "processes"), ("k", "v", "w"))))
    assert answers[0] == answers[1] == answers[2]
    distinct_, improved, joined = answers[0]
    assert sorted(distinct_.elements()) == [(0, ("",)), (0, ("a",)), (0, ("b",)),
                                            (0, ("ключ",)), (1, ("z",)), (2, ("é",))]
    assert sorted(improved.elements()) == [
        (0, ("", 3)), (0, ("a", 2)), (0, ("b", 5)), (0, ("ключ", 4)), (1, ("z", 2)),
        (2, ("a", 3)), (2, ("é", 2))]
    assert joined[(2, ("a", 3, 20))] == 1 and joined[(1, ("ключ", 3, 40))] == 1


def test_outputs_keep_the_input_key_columns():
    # Keys come out as the rows held them: their dtype, their -0.0, their
    # StringColumn; never the codes.
    def work(worker):
        got = {}
        with worker.dataflow() as scope:
            h, s = scope.new_input()
            h2, s2 = scope.new_input()
            s.distinct(["w", "r", "u"]).inspect_batch(lambda t, b: got.setdefault("d", b))
            s.improve(["w", "u"], "v").inspect_batch(lambda t, b: got.setdefault("i", b))
            s.join(s2, left_on=["w", "r"], right_on=["w2", "r2"]).inspect_batch(
                lambda t, b: got.setdefault("j", b))
        h.send_batch(timely.Batch(w=StringColumn.from_strings(["x", "y", "x"]),
                                  r=np.array([-0.0, 2.5, 0.0], dtype=np.float32),
                                  u=np.array([200, 7, 200], dtype=np.uint8),
                                  v=np.array([3, 2, 1])))
        h2.send_batch(timely.Batch(w2=np.array(["x"], dtype=object), r2=np.array([0.0])))
        h.close()
        h2.close()
        worker.drain()
        return got

    got = timely.execute_directly(work)
    d, i, j = got["d"], got["i"], got["j"]
    assert type(d.column("w")) is StringColumn and d["w"].tolist() == ["x", "y"]
    assert d["r"].dtype == np.float32 and np.signbit(d["r"][0])      # the first row's -0.0
    assert d["u"].dtype == np.uint8 and d["u"].tolist() == [200, 7]
    assert sorted(zip(i["w"].tolist(), i["u"].tolist(), i["v"].tolist())) == [
        ("x", 200, 1), ("y", 7, 2)]
    assert i["u"].dtype == np.uint8 and type(i.column("w")) is StringColumn
    assert sorted(j["v"].tolist()) == [1, 3] and j["r"].dtype == np.float32


def test_a_join_of_text_and_integer_keys_names_both(workers):
    # Enough keys that every worker holds rows of both sides.
    words = np.array([chr(97 + i) for i in range(26)], dtype=object)
    left = {0: [timely.Batch(word=words, x=np.arange(26))]}
    right = {0: [timely.Batch(n=np.arange(30), y=np.arange(30))]}
    with pytest.raises((timely.ColumnarError, timely.WorkerFailed)) as info:
        run(lambda l, r: join(l, r, left_on="word", right_on="n", persist="left"),
            [left, right], workers, "processes")
    if isinstance(info.value, timely.WorkerFailed):
        assert "ColumnarError" in str(info.value), str(info.value)
    assert re.search(r"key column 'n' \(int64: integer\) cannot be compared with key column "
                     r"'word' \((object of str|string): text\)", str(info.value))


def test_key_encoder_reads_byte_swapped_columns():
    for values in (np.array([1, -7, 1], dtype=np.int32), np.array([0.5, -0.0, np.nan]),
                   np.array([3, 4, 3], dtype="M8[s]"), np.array(["ab", "é", "ab"])):
        swapped = values.astype(values.dtype.newbyteorder("S"))
        native, other = KeyEncoder(), KeyEncoder()
        assert native.encode(values).tolist() == other.encode(swapped).tolist()


def test_indexes_sharing_encoders_take_one_encoding():
    encoders = (KeyEncoder(), KeyEncoder())
    first, second = KeyIndex(2, encoders), KeyIndex(2, encoders)
    first.insert([np.array(["a", "b"], dtype=object), np.array([1.0, 2.0])])
    second.insert([StringColumn.from_strings(["b", "c"]), np.array([2.0, 3.0], dtype=np.float32)])
    probe = [np.array(["c", "b", "z"]), np.array([3.0, 2.0, 3.0])]
    codes = first.encode(probe)
    assert codes.shape == (3, 2) and len(encoders[0]) == 3          # "z" not added
    assert first.lookup_codes(codes).tolist() == first.lookup(probe).tolist() == [-1, 1, -1]
    assert second.lookup_codes(codes).tolist() == [1, 0, -1]
    with pytest.raises(timely.ColumnarError):
        first.lookup_codes(codes[:, :1])
