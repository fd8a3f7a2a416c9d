"""Record batches between workers: pickle protocol 5 against the compiled
tagged encoding (``timely.container.records``), per record shape.

Each case writes (``encode``) or reads (``decode``) one batch of 1024
records of one shape, as the wire between workers does for a message of
records: pickle ``dumps``/``loads`` of the list, or the tagged encoding's
``encode_records``/``decode_records``. Figures: ns per record for both
codecs, measured in the same run (the other codec's best of 5 x 200 batches
in ``extra_info``), their ratio (``speedup`` = pickle's time / tagged's), and
bytes per record. Shapes: int, str (the word-count vocabulary), bytes,
float, ``(str, int)`` pairs, ``(int, int, int)`` tuples,
``(str, float, bytes)`` tuples. Every decode is checked against the batch.

The wire (``timely.communication.codec``) writes a list of records tagged
when its first record is of a common shape; this benchmark is the
measurement behind that choice.
"""

from __future__ import annotations

import pickle
import random
import timeit

import pytest

from timely.container.records import decode_records, encode_records
from timely.examples.wordcount import make_words

N = 1024
_words = make_words(N, seed=3)
_rng = random.Random(7)
SHAPES = {
    "int": [_rng.randrange(-10**9, 10**9) for _ in range(N)],
    "str": _words,
    "bytes": [w.encode() for w in _words],
    "float": [_rng.random() for _ in range(N)],
    "(str,int)": [(w, i) for i, w in enumerate(_words)],
    "(int,int,int)": [(i // 10, i % 1000, i) for i in range(N)],
    "(str,float,bytes)": [(w, 0.5 * i, w.encode()) for i, w in enumerate(_words)],
}


def tagged_encode(records):
    out = bytearray()
    encode_records(records, out, True)
    return out


def tagged_decode(buffer):
    return decode_records(buffer, 0, len(buffer), N, True)[0]


CODECS = {
    "pickle": (lambda r: pickle.dumps(r, protocol=5), pickle.loads),
    "tagged": (tagged_encode, tagged_decode),
}


def best_ns(fn) -> float:
    return min(timeit.repeat(fn, number=200, repeat=5)) / 200 / N * 1e9


@pytest.mark.parametrize("direction", ["encode", "decode"])
@pytest.mark.parametrize("shape", SHAPES)
def test_record_codec(benchmark, shape, direction):
    records = SHAPES[shape]
    figures = {}
    for name, (encode, decode) in CODECS.items():
        data = encode(records)
        assert decode(data) == records
        fn = (lambda e=encode: e(records)) if direction == "encode" else (
            lambda d=decode, b=data: d(b))
        figures[name] = (best_ns(fn), len(data) / N)
    encode, decode = CODECS["tagged"]
    data = encode(records)
    if direction == "encode":
        benchmark(encode, records)
    else:
        benchmark(decode, data)
    benchmark.extra_info.update({
        "tagged_ns_per_record": round(figures["tagged"][0], 1),
        "pickle_ns_per_record": round(figures["pickle"][0], 1),
        "speedup": round(figures["pickle"][0] / figures["tagged"][0], 2),
        "tagged_bytes_per_record": round(figures["tagged"][1], 1),
        "pickle_bytes_per_record": round(figures["pickle"][1], 1),
    })
