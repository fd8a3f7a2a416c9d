"""What :func:`timely.spark.run` reads from a Spark session: its conf keys,
whether it is a Spark Connect session, how many tasks it can run at once,
and the check that a barrier stage of that many tasks can start."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from timely.config import (
    CONF_LISTEN_ADDRESS,
    CONF_PORTS,
    CONF_RETRIES,
    CONF_WATCHDOG,
    Config,
    SparkSettings,
)
from timely.errors import SparkConfigError

__all__ = ["conf", "is_connect", "local_cores", "preflight", "session_settings", "slots"]

#: Session conf keys read by :func:`run` (``spark.conf.set`` or ``--conf``).
def conf(spark: Any, key: str, default: Any = None) -> Any:
    """A session conf value, or ``default`` (classic and Spark Connect alike)."""
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a conf the server does not know
        value = None
    return default if value is None else value


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no RDDs)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[n]``, ``local[*]`` or
    ``local[n,failures]`` master; None for any other master."""
    if not master.startswith("local"):
        return None
    inside = master[len("local"):].strip("[]").split(",")[0]
    if inside == "":
        return 1
    if inside == "*":
        return os.cpu_count() or 1
    return int(inside)


def slots(spark: Any) -> int:
    """How many tasks the session can run at once: what Spark's own barrier
    check counts (every executor's free cores over ``spark.task.cpus``, from
    the scheduler backend), not ``defaultParallelism``. Under Spark Connect,
    which has no SparkContext: a local master's cores, else
    ``spark.executor.instances`` × ``spark.executor.cores``."""
    cpus = int(conf(spark, "spark.task.cpus", "1"))
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        context = None
    if context is not None:
        jsc = context._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager()
                                             .defaultResourceProfile()))
    master = conf(spark, "spark.master", "")
    cores = local_cores(master)
    if cores is None:
        instances = conf(spark, "spark.executor.instances")
        if instances is None:
            return -1                     # unknown: Spark's own check decides
        cores = int(instances) * int(conf(spark, "spark.executor.cores", "1"))
    return max(0, cores // cpus)


def preflight(spark: Any, workers: int) -> None:
    """Raises :class:`SparkConfigError` when a barrier stage of ``workers``
    tasks could hang or be refused: dynamic allocation on, or fewer free
    slots than workers. Costs no Spark job."""
    if workers < 1:
        raise SparkConfigError(f"workers must be at least 1, not {workers}")
    if str(conf(spark, "spark.dynamicAllocation.enabled", "false")).lower() == "true":
        raise SparkConfigError(
            "barrier stages cannot run with dynamic allocation: set "
            "spark.dynamicAllocation.enabled=false for this session")
    available = slots(spark)
    if 0 <= available < workers:
        raise SparkConfigError(
            f"{workers} timely workers need {workers} task slots at once, the session has "
            f"{available} (master {conf(spark, 'spark.master', '?')!r}, spark.task.cpus "
            f"{conf(spark, 'spark.task.cpus', '1')}): ask for fewer workers or more cores")


def session_settings(spark: Any, config: Config) -> Config:
    """``config`` with the ``spark.timely.*`` keys set in ``spark``'s conf
    over its ``spark`` group (:class:`timely.config.SparkSettings`); a value
    that cannot be used is a :class:`~timely.errors.ConfigurationError`
    naming its key."""
    keys = {CONF_LISTEN_ADDRESS: "listen_address", CONF_PORTS: "ports",
            CONF_WATCHDOG: "watchdog_timeout", CONF_RETRIES: "retries"}
    given = {key: value for key in keys if (value := conf(spark, key)) not in (None, "")}
    if not given:
        return config
    read = SparkSettings.from_conf(given.get)
    return dataclasses.replace(config, spark=dataclasses.replace(
        config.spark, **{keys[key]: getattr(read, keys[key]) for key in given}))
