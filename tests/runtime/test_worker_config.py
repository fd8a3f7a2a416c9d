"""A key-value configuration every worker reads (the crate's
``config.worker.set(...)`` / ``worker.config().get(...)``)."""

from __future__ import annotations

import pytest

import timely
from timely.errors import ConfigurationError


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("mode", ["processes", "threads"])
def test_every_worker_reads_the_values_set(workers, mode):
    config = timely.WorkerConfig().set("rounds", 7).set("name", "graph")

    def work(worker):
        got = worker.config()
        return got.get("rounds"), got.get("name"), got.get("missing", "default"), "rounds" in got

    results = timely.execute(work, workers=workers, mode=mode, worker_config=config)
    assert results == [(7, "graph", "default", True)] * workers


def test_without_a_config_every_get_gives_its_default():
    assert timely.execute_directly(lambda worker: worker.config().get("x", 1)) == 1


def test_a_config_is_checked_at_once():
    with pytest.raises(ConfigurationError, match="a worker config key is a str"):
        timely.WorkerConfig().set(3, "three")
    with pytest.raises(ConfigurationError, match="worker_config is a timely.WorkerConfig"):
        timely.execute_directly(lambda worker: None, worker_config={"rounds": 3})
