"""Word count: a running count per word, reported at the end of every epoch.

The workload: ``--words`` words (10^6 by
default) drawn uniformly, with a fixed seed, from a vocabulary of 10^4 distinct
random lowercase words of 4 to 10 letters. Each worker takes every
``peers``-th word and feeds its share through an input in ``--epochs`` epochs,
``--batch`` words per message (``send_batch``). ``Exchange()`` routes every
word, its own key, to the worker that owns it (CRC-32 of the word, so every
process agrees; a batch at a time in compiled code); the
``Count`` operator (``unary_notify``) folds each arriving batch into a
per-epoch ``collections.Counter`` and, when the epoch is complete, adds it to
its running totals and emits ``(word, total)`` for every word seen in that
epoch. The last total emitted for a word is its count; the example checks them
against ``collections.Counter`` over all the words and prints words/s for both.

Cost: the operator does one C-level ``Counter.update`` per batch and, per
epoch, one dict update and one output message for its distinct words; the exchange hashes and places every word
in C, with no Python call per word.

Run: ``python -m timely.examples.wordcount [--words N] [--epochs E] [-w W]``

>>> words = make_words(1000, seed=1)
>>> counts = wordcount(words, epochs=3)
>>> counts == dict(collections.Counter(words))
True
"""

from __future__ import annotations

import collections
import functools
import random
import string
import time

import timely
from timely.examples.cli import parser, timely_args

VOCABULARY = 10**4
SEED = 20240601


def make_vocabulary(size: int = VOCABULARY, seed: int = SEED) -> list[str]:
    """``size`` distinct random lowercase words of 4 to 10 letters, the same for a seed."""
    rng = random.Random(seed)
    letters = string.ascii_lowercase
    seen: set[str] = set()
    vocabulary: list[str] = []
    while len(vocabulary) < size:
        word = "".join(rng.choices(letters, k=rng.randint(4, 10)))
        if word not in seen:
            seen.add(word)
            vocabulary.append(word)
    return vocabulary


def make_words(n: int, seed: int = SEED, vocabulary_size: int = VOCABULARY) -> list[str]:
    """``n`` words drawn uniformly from ``make_vocabulary(vocabulary_size, seed)``."""
    vocabulary = make_vocabulary(vocabulary_size, seed)
    return random.Random(seed + 1).choices(vocabulary, k=n)


def count_operator(stream):
    """``(word, running total)`` for every word seen in an epoch, once the epoch is complete."""
    totals: dict[str, int] = {}
    pending: dict = {}  # epoch -> Counter of the words received at that epoch

    def logic(input, output, notificator):
        for cap, words in input:
            epoch = cap.time
            counter = pending.get(epoch)
            if counter is None:
                counter = pending[epoch] = collections.Counter()
                notificator.notify_at(cap)
            counter.update(words)
        for cap, _ in notificator:
            updates = []
            for word, n in pending.pop(cap.time).items():
                total = totals.get(word, 0) + n
                totals[word] = total
                updates.append((word, total))
            # The epoch's totals as one message, not one give per word.
            output.session(cap).give_container(updates)

    return stream.unary_notify(timely.Exchange(), "Count", [], logic)


def _work(worker, words: list[str], epochs: int, batch: int) -> dict[str, int]:
    final: dict[str, int] = {}

    def record(batch_time, updates) -> None:
        # Totals only grow, and an epoch's updates come after the previous epoch's.
        final.update(updates)

    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        probe = count_operator(stream).inspect_batch(record).probe()

    mine = words[worker.index :: worker.peers]
    per_epoch = -(-len(mine) // epochs) if mine else 0
    for epoch in range(epochs):
        chunk = mine[epoch * per_epoch : (epoch + 1) * per_epoch]
        for start in range(0, len(chunk), batch):
            handle.send_batch(chunk[start : start + batch])
            worker.step()
        handle.advance_to(epoch + 1)
        # Keep at most one epoch in flight.
        worker.step_while(functools.partial(probe.less_than, epoch))
    handle.close()
    worker.step_while(lambda: not probe.done())
    return final


def wordcount(
    words: list[str], workers: int = 1, epochs: int = 10, batch: int = 1024, args=None,
    **options
) -> dict[str, int]:
    """The count of every word, computed by the dataflow on ``workers`` workers.

    With ``args`` (a command line's ``-w -n -p -h``) it runs as
    :func:`timely.execute_from_args` does, and returns the words counted on
    this host's workers. ``options`` go to :func:`timely.execute` (e.g.
    ``schedule_seed``, ``check_progress``).
    """
    parts = timely.execute_from_args(
        args if args is not None else ["-w", str(workers)],
        functools.partial(_work, words=words, epochs=epochs, batch=batch),
        **options,
    )
    counts: dict[str, int] = {}
    for part in parts:
        overlap = counts.keys() & part.keys()
        if overlap:
            raise AssertionError(f"words counted on two workers: {sorted(overlap)[:5]}")
        counts.update(part)
    return counts


def main(argv=None) -> dict[str, int]:
    p = parser("wordcount", __doc__, workers=2)
    p.add_argument("--words", type=int, default=10**6, help="words in all (default 10^6)")
    p.add_argument("--epochs", type=int, default=10, help="epochs (default 10)")
    p.add_argument("--batch", type=int, default=1024, help="words per message (default 1024)")
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)

    words = make_words(args.words, args.seed)
    start = time.perf_counter()
    expected = collections.Counter(words)
    baseline = time.perf_counter() - start

    start = time.perf_counter()
    counts = wordcount(words, epochs=args.epochs, batch=args.batch, args=timely_args(args))
    elapsed = time.perf_counter() - start
    if args.processes > 1:      # this host counted its own words only
        expected = collections.Counter({w: expected[w] for w in counts})
    if counts != dict(expected):
        wrong = [w for w in expected if counts.get(w) != expected[w]][:5]
        raise SystemExit(f"wrong counts, e.g. {[(w, counts.get(w), expected[w]) for w in wrong]}")
    print(
        f"{len(words):,} words, {len(counts):,} distinct, {args.workers} worker(s), "
        f"{args.epochs} epochs: counts match collections.Counter"
    )
    print(f"timely:  {elapsed:8.3f} s  {len(words) / elapsed / 1e6:6.2f} M words/s")
    print(
        f"Counter: {baseline:8.3f} s  {len(words) / baseline / 1e6:6.2f} M words/s "
        f"(timely takes {elapsed / baseline:.1f}x Counter's time)"
    )
    return counts


if __name__ == "__main__":
    main()
