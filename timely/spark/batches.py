"""Stateless vectorized steps over a DataFrame's Arrow batches."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from timely.container import Batch
from timely.spark import dryrun
from timely.spark.partitions import check_schemas

__all__ = ["map_batches"]

def map_batches(df: Any, fn: Callable[[Batch], Any], schema: Any, cast: bool = False,
                dry_run: bool = True) -> Any:
    """``fn(batch) -> Batch`` (or a dict of arrays) over every Arrow batch of
    ``df``: numpy views of the columns in (nulls and nested types as
    :class:`timely.container.ArrowColumn`), the result held to ``schema`` as
    :func:`run` does (checked on one made-up row at the driver first). No
    barrier and no exchange: for stateless steps and pre-aggregation."""
    from timely.spark.schema import conform

    schemas = check_schemas(df, schema, None)
    struct, arrow_schema, incoming = schemas.struct, schemas.output, schemas.incoming

    def one(batch: Batch) -> Batch:
        result = fn(batch)
        return result if isinstance(result, Batch) else Batch(result)

    if dry_run:
        dryrun.dry_run(lambda batch: [one(batch)], incoming, arrow_schema, None, cast)

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        for record_batch in batches:
            yield conform(one(Batch.from_arrow(record_batch)), arrow_schema, cast)

    return df.mapInArrow(task, struct)
