"""Columnar operators: sensor readings filtered, converted and summarized per epoch.

``--rows`` readings (``sensor``: a str column, ``celsius``: float64, some
of them invalid: NaN or below -100) are spread over ``--epochs`` epochs;
every worker takes every ``peers``-th reading and feeds its share into an
input as one :class:`timely.Batch` per epoch. The dataflow is vectorized end
to end:

- ``filter_batch`` keeps the valid readings (a numpy mask per batch);
- ``map_batch`` adds a ``fahrenheit`` column (numpy arithmetic per batch);
- ``aggregate("sensor", "fahrenheit", how=("count", "sum", "min", "max"))``
  pre-aggregates each batch, exchanges the partial aggregates by sensor
  name, and emits one batch per worker and epoch once the epoch is complete.

The example checks the result against the same summary computed with plain
numpy on all the readings, and prints it as a table.

Run: ``python -m timely.examples.columnar [--rows N] [--epochs E] [-w W]``
(``-w -n -p -h`` as for every timely computation).

>>> table = summarize(rows=2000, epochs=2, seed=1)
>>> same(table, expected_summary(*make_readings(2000, 2, seed=1)))
True
>>> sorted(table)[0]
(0, 'attic')
"""

from __future__ import annotations

import functools

import numpy as np

import timely
from timely.examples.cli import parser, timely_args
from timely import Batch

SENSORS = ("boiler", "cellar", "kitchen", "roof", "attic")


def make_readings(rows: int, epochs: int, seed: int = 7):
    """``(epoch, sensor, celsius)`` arrays of ``rows`` readings, epochs ascending;
    about 2% of the readings are invalid (NaN or -273)."""
    rng = np.random.default_rng(seed)
    epoch = np.sort(rng.integers(0, epochs, rows))
    names = np.array(SENSORS, dtype=object)
    index = rng.integers(0, len(SENSORS), rows)
    sensor = names[index]
    celsius = np.round(rng.normal(15.0 + 5.0 * index, 4.0), 1)
    broken = rng.random(rows) < 0.02
    celsius[broken] = np.where(rng.random(int(broken.sum())) < 0.5, np.nan, -273.0)
    return epoch, sensor, celsius


def valid(batch: Batch) -> np.ndarray:
    celsius = batch["celsius"]
    return ~np.isnan(celsius) & (celsius >= -100.0)


def to_fahrenheit(batch: Batch) -> Batch:
    return batch.with_columns(fahrenheit=batch["celsius"] * 1.8 + 32.0)


def _work(worker, rows: int, epochs: int, seed: int) -> dict:
    epoch, sensor, celsius = make_readings(rows, epochs, seed)
    mine = slice(worker.index, None, worker.peers)
    epoch, sensor, celsius = epoch[mine], sensor[mine], celsius[mine]
    summary: dict = {}

    def record(time, batch: Batch) -> None:
        for name, count, total, low, high in batch.to_records():
            summary[(time, name)] = (count, total, low, high)

    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        (
            stream.filter_batch(valid)
            .map_batch(to_fahrenheit)
            .aggregate("sensor", "fahrenheit", how=("count", "sum", "min", "max"))
            .inspect_batch(record)
        )
    bounds = np.searchsorted(epoch, np.arange(epochs + 1))
    for e in range(epochs):
        lo, hi = bounds[e], bounds[e + 1]
        handle.send_batch(Batch(sensor=sensor[lo:hi], celsius=celsius[lo:hi]))
        handle.advance_to(e + 1)
        worker.step()
    handle.close()
    worker.drain()
    return summary


def summarize(
    rows: int = 100_000, epochs: int = 3, seed: int = 7, workers: int = 1, args=None, **options
) -> dict:
    """``{(epoch, sensor): (count, sum, min, max)}`` of the valid readings in
    °F, computed by the dataflow (with ``args``, a command line's
    ``-w -n -p -h``; else on ``workers`` processes)."""
    work = functools.partial(_work, rows=rows, epochs=epochs, seed=seed)
    parts = timely.execute_from_args(args if args is not None else ["-w", str(workers)], work,
                                     **options)
    table: dict = {}
    for part in parts:
        if table.keys() & part.keys():
            raise AssertionError("an (epoch, sensor) was summarized on two workers")
        table.update(part)
    return table


def expected_summary(epoch, sensor, celsius) -> dict:
    """The same summary with numpy over all the readings at once."""
    keep = ~np.isnan(celsius) & (celsius >= -100.0)
    epoch, sensor, fahrenheit = epoch[keep], sensor[keep], celsius[keep] * 1.8 + 32.0
    out = {}
    for e in np.unique(epoch).tolist():
        for name in SENSORS:
            values = fahrenheit[(epoch == e) & (sensor == name)]
            if len(values):
                out[(e, name)] = (
                    len(values),
                    float(values.sum()),
                    float(values.min()),
                    float(values.max()),
                )
    return out


def same(table: dict, expected: dict) -> bool:
    """Equal keys, counts, minima and maxima; sums equal up to rounding (the
    dataflow adds in another order)."""
    return table.keys() == expected.keys() and all(
        table[k][0] == expected[k][0]
        and table[k][2:] == expected[k][2:]
        and abs(table[k][1] - expected[k][1]) <= 1e-9 * max(1.0, abs(expected[k][1]))
        for k in table
    )


def main(argv=None) -> dict:
    p = parser("columnar", __doc__, workers=2)
    p.add_argument("--rows", type=int, default=100_000, help="readings (default 10^5)")
    p.add_argument("--epochs", type=int, default=3, help="epochs (default 3)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)

    table = summarize(args.rows, args.epochs, args.seed, args=timely_args(args))
    if not same(table, expected_summary(*make_readings(args.rows, args.epochs, args.seed))):
        raise SystemExit("the dataflow's summary differs from numpy's")
    print(f"{'epoch':>5}  {'sensor':<8} {'count':>6} {'mean °F':>8} {'min °F':>7} {'max °F':>7}")
    for (epoch, name), (count, total, low, high) in sorted(table.items()):
        print(f"{epoch:>5}  {name:<8} {count:>6} {total / count:>8.1f} {low:>7.1f} {high:>7.1f}")
    print(f"{len(table)} rows; the same as numpy over all {args.rows:,} readings")
    return table


if __name__ == "__main__":
    main()
