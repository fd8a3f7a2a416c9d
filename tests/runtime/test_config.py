"""One typed configuration: every ``TIMELY_*`` variable is read and checked
in one place (:meth:`timely.Config.from_env`), arguments win over
variables, nothing reads the environment at import, and a Config passed to
a launcher reaches every worker, its allocator and its links whole."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import timely
from tests.runtime.test_launch import stop_worker_1
from timely.communication import process
from timely.communication.allocator import DEFAULT_WINDOW, MIN_WINDOW
from timely.communication.process import SHARED_SPIN, SPIN, default_spin, host_cores
from timely.config import (
    VARIABLES,
    CommunicationSettings,
    Config,
    LivenessSettings,
    SparkSettings,
    WorkerSettings,
)
from timely.errors import ConfigurationError, WorkerFailed
from timely.launch import execute_from_args, execute_processes

ROOT = Path(__file__).resolve().parents[2]

# (variable, text, the field it sets, the value it is read as)
GOOD = [
    ("TIMELY_WINDOW", "16m", "communication.window", 16 << 20),
    ("TIMELY_WINDOW", "2G", "communication.window", 2 << 30),
    ("TIMELY_WINDOW", "512k", "communication.window", 512 << 10),
    ("TIMELY_WINDOW", "262144", "communication.window", 262144),
    ("TIMELY_WINDOW", " none ", "communication.window", None),
    ("TIMELY_SPIN", "0", "communication.spin", 0.0),
    ("TIMELY_SPIN", "0.001", "communication.spin", 0.001),
    ("TIMELY_SPIN", " Auto ", "communication.spin", None),
    ("TIMELY_CONNECT_TIMEOUT", "20", "communication.connect_timeout", 20.0),
    ("TIMELY_SECRET", "s3cret", "communication.secret", "s3cret"),
    ("TIMELY_HEARTBEAT", "0.25", "liveness.heartbeat", 0.25),
    ("TIMELY_LIVENESS_TIMEOUT", "3", "liveness.timeout", 3.0),
    ("TIMELY_CHECK_PROGRESS", "1", "worker.check_progress", True),
    ("TIMELY_CHECK_PROGRESS", "False", "worker.check_progress", False),
    ("TIMELY_SCHEDULE_SEED", "42", "worker.schedule_seed", 42),
    ("TIMELY_PROGRESS_MODE", "eager", "worker.progress_mode", "eager"),
    ("TIMELY_STALL_WARNING", "2.5", "worker.stall_warning", 2.5),
    ("TIMELY_STALL_WARNING", "none", "worker.stall_warning", None),
]

BAD = [
    ("TIMELY_WINDOW", "lots"),
    ("TIMELY_WINDOW", "1x"),
    ("TIMELY_WINDOW", "-4m"),
    ("TIMELY_WINDOW", str(MIN_WINDOW - 1)),
    ("TIMELY_SPIN", "-1"),
    ("TIMELY_SPIN", "fast"),
    ("TIMELY_CONNECT_TIMEOUT", "0"),
    ("TIMELY_CONNECT_TIMEOUT", "a minute"),
    ("TIMELY_HEARTBEAT", "abc"),
    ("TIMELY_HEARTBEAT", "-1"),
    ("TIMELY_HEARTBEAT", "inf"),
    ("TIMELY_LIVENESS_TIMEOUT", "soon"),
    ("TIMELY_LIVENESS_TIMEOUT", "0"),
    ("TIMELY_LIVENESS_TIMEOUT", "nan"),
    ("TIMELY_CHECK_PROGRESS", "maybe"),
    ("TIMELY_SCHEDULE_SEED", "4.5"),
    ("TIMELY_PROGRESS_MODE", "lazy"),
    ("TIMELY_STALL_WARNING", "0"),
    ("TIMELY_STALL_WARNING", "later"),
]


def field_of(config: Config, path: str):
    group, name = path.split(".")
    return getattr(getattr(config, group), name)


# -- reading and checking ----------------------------------------------------------


def test_the_defaults_are_the_engines():
    config = Config.from_env({})
    assert config == Config()
    assert config.communication.window == DEFAULT_WINDOW == 4 << 20
    assert config.communication.spin is None           # chosen by the launcher
    assert config.communication.connect_timeout == 60.0
    assert config.communication.secret is None and config.communication.tls is None
    assert (config.liveness.heartbeat, config.liveness.timeout) == (1.0, 5.0)
    assert config.worker == WorkerSettings(check_progress=False, schedule_seed=None,
                                           progress_mode="demand", stall_warning=5.0)
    assert config.spark == SparkSettings(listen_address=None, ports=None,
                                         watchdog_timeout=300.0, retries=1)


@pytest.mark.parametrize(("variable", "text", "path", "expected"), GOOD)
def test_every_variable_is_read(variable, text, path, expected):
    config = Config.from_env({variable: text})
    assert field_of(config, path) == expected
    # Only that field moved from its default.
    default = Config()
    for other in ("communication.window", "communication.spin", "liveness.heartbeat",
                  "liveness.timeout", "worker.stall_warning", "worker.progress_mode"):
        if other != path:
            assert field_of(config, other) == field_of(default, other), other


def test_every_variable_in_the_table_is_tested():
    assert {v for v, *_ in GOOD} | {"TIMELY_TLS_CERT", "TIMELY_TLS_KEY", "TIMELY_TLS_CA"} \
        == set(VARIABLES)


@pytest.mark.parametrize(("variable", "text"), BAD)
def test_a_bad_variable_is_named_with_its_value(variable, text):
    with pytest.raises(ConfigurationError) as info:
        Config.from_env({variable: text})
    message = str(info.value)
    assert message.startswith(f"{variable} is "), message
    assert repr(text) in message, message


def test_a_blank_variable_keeps_its_default():
    config = Config.from_env({"TIMELY_WINDOW": "", "TIMELY_HEARTBEAT": "  "})
    assert config.communication.window == DEFAULT_WINDOW
    assert config.liveness.heartbeat == 1.0


def test_the_process_environment_is_read_by_default(monkeypatch):
    monkeypatch.setenv("TIMELY_WINDOW", "1m")
    monkeypatch.setenv("TIMELY_LIVENESS_TIMEOUT", "7")
    config = Config.from_env()
    assert (config.communication.window, config.liveness.timeout) == (1 << 20, 7.0)


def test_tls_needs_all_three_paths(tmp_path):
    paths = {"TIMELY_TLS_CERT": str(tmp_path / "c.pem"), "TIMELY_TLS_KEY": str(tmp_path / "k"),
             "TIMELY_TLS_CA": str(tmp_path / "ca.pem")}
    config = Config.from_env(paths)
    assert config.communication.tls == (paths["TIMELY_TLS_CERT"], paths["TIMELY_TLS_KEY"],
                                        paths["TIMELY_TLS_CA"])
    with pytest.raises(ConfigurationError,
                       match="TLS needs TIMELY_TLS_KEY, TIMELY_TLS_CA as well as "
                             "TIMELY_TLS_CERT="):
        Config.from_env({"TIMELY_TLS_CERT": paths["TIMELY_TLS_CERT"]})
    # The argument that completes the set is named as an argument.
    with pytest.raises(ConfigurationError, match="TLS needs TIMELY_TLS_CA as well as "
                                                  "TIMELY_TLS_CERT='c', tls_key='k2'$"):
        Config.from_env({"TIMELY_TLS_CERT": "c", "TIMELY_TLS_KEY": "k"}, tls_key="k2")
    with pytest.raises(ConfigurationError, match="TLS needs tls_key, tls_ca"):
        CommunicationSettings(tls_cert="c")


def test_the_secret_is_never_shown():
    config = Config.from_env({"TIMELY_SECRET": "hunter2"})
    assert config.communication.secret == "hunter2"
    assert "hunter2" not in repr(config)
    with pytest.raises(ConfigurationError) as info:
        Config.from_env(secret=b"hunter2")
    assert "secret is a str" in str(info.value) and "hunter2" not in str(info.value)


# -- arguments ---------------------------------------------------------------------


def test_arguments_win_over_variables():
    environ = {"TIMELY_WINDOW": "1m", "TIMELY_HEARTBEAT": "3", "TIMELY_SPIN": "0.5",
               "TIMELY_STALL_WARNING": "9"}
    config = Config.from_env(environ, window=None, heartbeat=0.5, stall_warning=None)
    assert config.communication.window is None
    assert config.liveness.heartbeat == 0.5
    assert config.worker.stall_warning is None
    assert config.communication.spin == 0.5            # not overridden: the variable's


def test_a_variable_an_argument_overrides_is_not_read():
    config = Config.from_env({"TIMELY_HEARTBEAT": "abc", "TIMELY_WINDOW": "lots"},
                             heartbeat=2, window="8m")
    assert (config.liveness.heartbeat, config.communication.window) == (2.0, 8 << 20)


@pytest.mark.parametrize(("keyword", "value"), [
    ("window", 5), ("window", "lots"), ("window", 1.5), ("spin", -0.1), ("heartbeat", 0),
    ("liveness_timeout", "soon"), ("connect_timeout", True), ("check_progress", "maybe"),
    ("schedule_seed", 1.5), ("progress_mode", "lazy"), ("stall_warning", 0),
    ("worker_config", {"rounds": 3}), ("ports", "0-10"), ("retries", -1),
    ("watchdog_timeout", "never"), ("listen_address", 7),
])
def test_a_bad_argument_is_named_with_its_value(keyword, value):
    with pytest.raises(ConfigurationError) as info:
        Config.from_env({}, **{keyword: value})
    assert str(info.value).startswith(f"{keyword} is "), str(info.value)
    assert repr(value) in str(info.value)
    # The same check when a group is built directly, or a config overridden.
    with pytest.raises(ConfigurationError, match=f"^{keyword} is "):
        Config().override(**{keyword: value})


def test_an_unknown_keyword_is_refused():
    with pytest.raises(ConfigurationError, match="windwo=1 is not a setting; the settings are "
                                                  ".*window"):
        Config.from_env({}, windwo=1)
    with pytest.raises(ConfigurationError, match="windwo"):
        timely.execute(lambda worker: None, workers=2, windwo=1)


def test_groups_are_frozen_and_override_makes_a_new_config():
    config = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.communication.window = 1 << 20  # type: ignore[misc]
    changed = config.override(window="1m", liveness_timeout=2, retries=0, ports="7100-7199")
    assert changed.communication.window == 1 << 20 and config.communication.window == DEFAULT_WINDOW
    assert changed.liveness == LivenessSettings(heartbeat=1.0, timeout=2.0)
    assert (changed.spark.retries, changed.spark.ports) == (0, (7100, 7199))
    assert config.override() is config
    with pytest.raises(ConfigurationError, match="communication is a timely.config."
                                                  "CommunicationSettings, not"):
        Config(communication=LivenessSettings())  # type: ignore[arg-type]


def test_the_spark_conf_is_read_and_named_by_its_keys():
    conf = {"spark.timely.listenAddress": "10.0.0.7", "spark.timely.ports": "7100-7199",
            "spark.timely.watchdogTimeout": "60", "spark.timely.retries": "3"}
    assert SparkSettings.from_conf(conf.get) == SparkSettings(
        listen_address="10.0.0.7", ports=(7100, 7199), watchdog_timeout=60.0, retries=3)
    assert SparkSettings.from_conf({}.get) == SparkSettings()
    assert SparkSettings.from_conf({"spark.timely.ports": "7100"}.get).ports == (7100, 7100)
    for key, bad in [("spark.timely.ports", "7199-7100"), ("spark.timely.ports", "many"),
                     ("spark.timely.watchdogTimeout", "-5"), ("spark.timely.retries", "two")]:
        with pytest.raises(ConfigurationError) as info:
            SparkSettings.from_conf({key: bad}.get)
        assert str(info.value).startswith(f"{key} is ") and repr(bad) in str(info.value)


def test_the_guide_lists_every_variable():
    text = (ROOT / "docs" / "configuration.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for variable, keyword in VARIABLES.items():
        assert any(f"`{variable}`" in row and f"`{keyword}`" in row for row in rows), variable
    for field in dataclasses.fields(Config):
        for inner in dataclasses.fields(getattr(Config(), field.name)):
            assert any(row.startswith(f"| `{field.name}.{inner.name}`") for row in rows), inner


# -- nothing at import ---------------------------------------------------------------


def test_a_bad_variable_does_not_break_an_import():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMELY_HEARTBEAT": "abc"}
    program = ("import timely.launch, timely.communication.tcp\n"
               "from timely.config import Config\n"
               "print('imported')\n"
               "try:\n"
               "    Config.from_env()\n"
               "except timely.ConfigurationError as error:\n"
               "    print(error)\n"
               "try:\n"
               "    timely.execute(lambda worker: None, workers=2)\n"
               "except timely.ConfigurationError as error:\n"
               "    print(type(error).__name__)\n")
    run = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "imported", "TIMELY_HEARTBEAT is a positive number of seconds, not 'abc'",
        "ConfigurationError"]


# -- passed whole ----------------------------------------------------------------------


def squares_and_settings(worker):
    """A small exchange dataflow, and the settings this worker was given."""
    seen = []
    with worker.dataflow() as scope:
        (scope.to_stream(range(worker.index, 60, worker.peers))
              .exchange(lambda x: x % 7)
              .map(lambda x: x * x)
              .inspect(seen.append))
    worker.drain()
    allocator = worker.allocator
    return {"seen": sorted(seen), "peers": worker.peers,
            "stall_warning": worker.stall_warning, "check_progress": worker.check_progress,
            "label": worker.config().get("label"),
            "window": getattr(allocator, "window", "none here"),
            "spin": getattr(allocator, "spin", "none here")}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_config_reaches_every_worker(workers, monkeypatch):
    # Given a Config, the launcher reads no variable.
    monkeypatch.setenv("TIMELY_WINDOW", "lots")
    config = Config(worker=WorkerSettings(check_progress=True, stall_warning=7.5,
                                          worker_config=timely.WorkerConfig({"label": "x"})),
                    communication=CommunicationSettings(window=MIN_WINDOW, spin=0.0))
    results = timely.execute(squares_and_settings, workers=workers, config=config)
    assert len(results) == workers
    assert sorted(x for r in results for x in r["seen"]) == sorted(x * x for x in range(60))
    for index, result in enumerate(results):
        assert result["seen"] == sorted(x * x for x in range(60) if x % 7 % workers == index)
        assert (result["peers"], result["stall_warning"], result["check_progress"],
                result["label"]) == (workers, 7.5, True, "x")
        if workers > 1:
            assert (result["window"], result["spin"]) == (MIN_WINDOW, 0.0)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_keyword_options_still_work(workers, monkeypatch):
    monkeypatch.delenv("TIMELY_WINDOW", raising=False)
    results = timely.execute(squares_and_settings, workers=workers, window=None, spin=0.002,
                             stall_warning=3.0, check_progress=True,
                             worker_config=timely.WorkerConfig().set("label", "kw"))
    for result in results:
        assert (result["stall_warning"], result["check_progress"], result["label"]) == \
            (3.0, True, "kw")
        if workers > 1:
            assert (result["window"], result["spin"]) == (None, 0.002)
    assert sorted(x for r in results for x in r["seen"]) == sorted(x * x for x in range(60))


def test_keyword_options_override_a_given_config():
    config = Config(communication=CommunicationSettings(window=1 << 20, spin=0.0),
                    worker=WorkerSettings(stall_warning=4.0))
    (result, _) = timely.execute(squares_and_settings, workers=2, config=config, window="2m")
    assert (result["window"], result["spin"], result["stall_warning"]) == (2 << 20, 0.0, 4.0)
    threads = timely.execute(squares_and_settings, workers=2, mode="threads", config=config,
                             stall_warning=None)
    assert [r["stall_warning"] for r in threads] == [None, None]
    assert timely.execute_directly(lambda worker: worker.stall_warning, config=config) == 4.0
    assert execute_from_args(["-w", "2"], squares_and_settings, config=config,
                             spin=0.001)[1]["spin"] == 0.001


# -- the spin before parking --------------------------------------------------------


def test_the_default_spin_is_short_where_workers_outnumber_cores():
    assert host_cores() == len(os.sched_getaffinity(0))
    assert default_spin(1, cores=1) == default_spin(4, cores=4) == SPIN
    assert default_spin(2, cores=1) == default_spin(5, cores=4) == SHARED_SPIN
    assert 0 < SHARED_SPIN < SPIN
    auto = CommunicationSettings()
    assert (auto.spin_for(2, cores=2), auto.spin_for(3, cores=2)) == (SPIN, SHARED_SPIN)
    assert auto.spin_for(host_cores()) == SPIN
    assert auto.spin_for(host_cores() + 1) == SHARED_SPIN
    # A spin that is given wins, whatever the count.
    assert CommunicationSettings(spin=0.002).spin_for(64, cores=2) == 0.002
    assert CommunicationSettings(spin=0).spin_for(1, cores=8) == 0.0
    assert Config.from_env({"TIMELY_SPIN": "auto"}).communication.spin is None


def spin_of(worker):
    return worker.allocator.spin


@pytest.mark.parametrize(("workers", "cores", "expected"), [(2, 2, SPIN), (3, 2, SHARED_SPIN)])
def test_a_launcher_chooses_the_spin_from_its_workers_and_cores(workers, cores, expected,
                                                                monkeypatch):
    monkeypatch.delenv("TIMELY_SPIN", raising=False)
    monkeypatch.setattr(process, "host_cores", lambda: cores)
    assert timely.execute(spin_of, workers=workers) == [expected] * workers
    # TIMELY_SPIN, or the keyword, still wins.
    monkeypatch.setenv("TIMELY_SPIN", "0.0003")
    assert timely.execute(spin_of, workers=workers) == [0.0003] * workers
    assert timely.execute(spin_of, workers=workers, spin=0) == [0.0] * workers


def test_the_environment_is_the_default_config(monkeypatch):
    monkeypatch.setenv("TIMELY_WINDOW", "1m")
    monkeypatch.setenv("TIMELY_SPIN", "0.0005")
    monkeypatch.setenv("TIMELY_STALL_WARNING", "6")
    results = timely.execute(squares_and_settings, workers=2)
    assert [(r["window"], r["spin"], r["stall_warning"]) for r in results] == \
        [(1 << 20, 0.0005, 6.0)] * 2


def test_a_bad_setting_fails_before_any_worker_starts(monkeypatch):
    started = []
    with pytest.raises(ConfigurationError, match="^window is .*not 5$"):
        timely.execute(lambda worker: started.append(worker), workers=2, mode="threads",
                       window=5)
    monkeypatch.setenv("TIMELY_SPIN", "-1")
    with pytest.raises(ConfigurationError, match="TIMELY_SPIN is .*not '-1'"):
        timely.execute(lambda worker: started.append(worker), workers=1)
    with pytest.raises(ConfigurationError, match="config is a timely.Config"):
        timely.execute(lambda worker: None, workers=2, config={"window": None})
    assert started == []


def test_the_liveness_timeout_of_a_config_bounds_a_stopped_worker(monkeypatch):
    monkeypatch.setenv("TIMELY_LIVENESS_TIMEOUT", "600")      # not read: the config wins
    config = Config(liveness=LivenessSettings(timeout=1.0))
    start = time.monotonic()
    with pytest.raises(WorkerFailed, match="worker 1 .* was stopped for more than 1 s"):
        execute_processes(stop_worker_1, 2, config=config)
    assert time.monotonic() - start < 15


def test_the_secret_comes_from_the_config(monkeypatch):
    from argparse import Namespace

    from timely.launch import execute_cluster

    monkeypatch.setenv("TIMELY_SECRET", "from the environment")
    with pytest.raises(ConfigurationError, match="set TIMELY_SECRET"):
        execute_cluster(lambda worker: None, Namespace(workers=1, processes=2, process=0,
                                                       hostfile=None), config=Config())


# -- a Spark task --------------------------------------------------------------------


def test_a_spark_task_takes_its_allocator_and_links_from_a_config():
    from timely.spark._task import TaskWorker

    peers = 2
    slots: list = [None] * peers
    met = threading.Barrier(peers, timeout=60)
    results: list = [None] * peers
    config = Config(communication=CommunicationSettings(window=1 << 20, spin=0.0,
                                                        connect_timeout=30),
                    liveness=LivenessSettings(heartbeat=0.2, timeout=9.0))

    def task(i: int) -> None:
        def all_gather(text: str) -> list:
            slots[i] = text
            met.wait()
            return list(slots)

        worker = TaskWorker(i, peers, all_gather, machine="one host", config=config)
        try:
            links = list(worker.allocator.links.values())
            results[i] = (worker.allocator.window, worker.allocator.spin,
                          [(link.heartbeat, link.liveness) for link in links])
            met.wait()
            worker.allocator.close_links()
        finally:
            worker.allocator.shutdown()
            worker.close()

    threads = [threading.Thread(target=task, args=(i,)) for i in range(peers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert results == [(1 << 20, 0.0, [(0.2, 9.0)])] * peers
