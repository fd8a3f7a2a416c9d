"""One typed configuration of a computation, read and validated in one place
and passed whole (the crate's ``Config``, with its ``WorkerConfig`` and
``CommunicationConfig``).

A :class:`Config` holds four frozen groups of settings:

- ``worker`` (:class:`WorkerSettings`): what each :class:`~timely.Worker`
  is built with: progress checks, a scheduling seed, the progress mode, the
  stall warning and the key-value :class:`~timely.WorkerConfig`.
- ``communication`` (:class:`CommunicationSettings`): the send window per
  peer, how long a parking worker first spins on its rings, how long
  start-up waits for other hosts, the secret those hosts share and TLS.
- ``liveness`` (:class:`LivenessSettings`): how often an idle link proves
  it is alive, and how long a silent peer or a stopped local worker is
  waited for before the computation fails.
- ``spark`` (:class:`SparkSettings`): the session conf of
  :func:`timely.spark.run` (``spark.timely.*``).

:meth:`Config.from_env` is the one reader of the ``TIMELY_*`` environment
variables: each is parsed and checked there, and a value that cannot be used
is a :class:`~timely.errors.ConfigurationError` naming the variable and the
value. Keyword arguments, named as the launchers' keywords
(``window=``, ``heartbeat=``, ...), override the variables; a value given as
an argument is checked the same way and named by its argument. Building a
group directly checks its fields too. Nothing here reads the environment at
import, and nothing below the launchers reads it at all: allocators and
links take their values from a Config (``docs/configuration.md`` lists
every setting).

>>> config = Config.from_env({"TIMELY_WINDOW": "16m", "TIMELY_HEARTBEAT": "2"}, heartbeat=0.5)
>>> config.communication.window, config.liveness.heartbeat
(16777216, 0.5)
>>> Config.from_env({"TIMELY_HEARTBEAT": "abc"})
Traceback (most recent call last):
    ...
timely.errors.ConfigurationError: TIMELY_HEARTBEAT is a positive number of seconds, not 'abc'
>>> Config().override(window=None).communication.window is None
True
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, NoReturn

from timely.communication.allocator import DEFAULT_WINDOW, MIN_WINDOW
from timely.communication.process import default_spin
from timely.communication.tcp import CONNECT_TIMEOUT, HEARTBEAT, LIVENESS_TIMEOUT
from timely.errors import ConfigurationError
from timely.worker import STALL_WARNING, WorkerConfig

#: ``spark.timely.*`` session conf keys held by :class:`SparkSettings`.
CONF_LISTEN_ADDRESS = "spark.timely.listenAddress"
CONF_PORTS = "spark.timely.ports"
CONF_WATCHDOG = "spark.timely.watchdogTimeout"
CONF_RETRIES = "spark.timely.retries"

WATCHDOG_TIMEOUT = 300.0
RETRIES = 1

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


# -- parsers: (value, name) -> value; text as in a variable, or a typed value -------


def _fail(name: str, what: str, value: object) -> NoReturn:
    raise ConfigurationError(f"{name} is {what}, not {value!r}")


def _number(value: object, name: str, what: str) -> float:
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            _fail(name, what, value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    _fail(name, what, value)


def _positive_seconds(value: object, name: str) -> float:
    what = "a positive number of seconds"
    seconds = _number(value, name, what)
    if not (seconds > 0 and math.isfinite(seconds)):
        _fail(name, what, value)
    return seconds


def _spin(value: object, name: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    what = "a number of seconds, 0 or more, or auto"
    seconds = _number(value, name, what)
    if not (seconds >= 0 and math.isfinite(seconds)):
        _fail(name, what, value)
    return seconds


def _positive_seconds_or_none(value: object, name: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "off")):
        return None
    what = "a positive number of seconds or none"
    seconds = _number(value, name, what)
    if not (seconds > 0 and math.isfinite(seconds)):
        _fail(name, what, value)
    return seconds


def _window(value: object, name: str) -> int | None:
    what = f"a number of bytes of at least {MIN_WINDOW} (like 4m) or none"
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "none":
            return None
        number, unit = (text[:-1], text[-1]) if text and text[-1] in "kmg" else (text, "")
        try:
            window = int(number) * _UNITS[unit]
        except ValueError:
            _fail(name, what, value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        window = int(value)
    else:
        _fail(name, what, value)
    if window < MIN_WINDOW:
        _fail(name, what, value)
    return window


def _flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    _fail(name, "true or false (1 or 0)", value)


def _seed(value: object, name: str) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            _fail(name, "an integer or none", value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    _fail(name, "an integer or none", value)


def _progress_mode(value: object, name: str) -> str:
    text = value.strip().lower() if isinstance(value, str) else value
    if text not in ("demand", "eager"):
        _fail(name, "'demand' or 'eager'", value)
    return str(text)


def _worker_config(value: object, name: str) -> WorkerConfig | None:
    if value is None or isinstance(value, WorkerConfig):
        return value
    _fail(name, "a timely.WorkerConfig", value)


def _secret(value: object, name: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    # The value of a secret is never repeated in a message.
    raise ConfigurationError(f"{name} is a str, not a {type(value).__name__}")


def _path(value: object, name: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, os.PathLike)):
        return str(os.fspath(value))
    _fail(name, "a path", value)


def _address(value: object, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    _fail(name, "a host name or address", value)


def _ports(value: object, name: str) -> tuple[int, int] | None:
    what = "a port range first-last within 1..65535 (like 7100-7199), or one port"
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        first, _, last = value.strip().partition("-")
        try:
            pair = (int(first), int(last or first))
        except ValueError:
            _fail(name, what, value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        pair = (int(value), int(value))
    elif isinstance(value, (tuple, list)) and len(value) == 2 \
            and all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in value):
        pair = (int(value[0]), int(value[1]))
    else:
        _fail(name, what, value)
    if not 0 < pair[0] <= pair[1] < 65536:
        _fail(name, what, value)
    return pair


def _count(value: object, name: str) -> int:
    what = "a count (0, 1, ...)"
    if isinstance(value, str):
        try:
            count = int(value.strip())
        except ValueError:
            _fail(name, what, value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        count = int(value)
    else:
        _fail(name, what, value)
    if count < 0:
        _fail(name, what, value)
    return count


class _Setting(NamedTuple):
    """One field of a group: its keyword (the launchers' and the dataclass
    field's name unless ``field`` says otherwise), its variable or conf key,
    and its parser."""

    keyword: str
    group: str
    field: str
    variable: str | None
    conf: str | None
    parse: Callable[[object, str], Any]


_SETTINGS = (
    _Setting("check_progress", "worker", "check_progress", "TIMELY_CHECK_PROGRESS", None, _flag),
    _Setting("schedule_seed", "worker", "schedule_seed", "TIMELY_SCHEDULE_SEED", None, _seed),
    _Setting("progress_mode", "worker", "progress_mode", "TIMELY_PROGRESS_MODE", None,
             _progress_mode),
    _Setting("stall_warning", "worker", "stall_warning", "TIMELY_STALL_WARNING", None,
             _positive_seconds_or_none),
    _Setting("worker_config", "worker", "worker_config", None, None, _worker_config),
    _Setting("window", "communication", "window", "TIMELY_WINDOW", None, _window),
    _Setting("spin", "communication", "spin", "TIMELY_SPIN", None, _spin),
    _Setting("connect_timeout", "communication", "connect_timeout", "TIMELY_CONNECT_TIMEOUT",
             None, _positive_seconds),
    _Setting("secret", "communication", "secret", "TIMELY_SECRET", None, _secret),
    _Setting("tls_cert", "communication", "tls_cert", "TIMELY_TLS_CERT", None, _path),
    _Setting("tls_key", "communication", "tls_key", "TIMELY_TLS_KEY", None, _path),
    _Setting("tls_ca", "communication", "tls_ca", "TIMELY_TLS_CA", None, _path),
    _Setting("heartbeat", "liveness", "heartbeat", "TIMELY_HEARTBEAT", None, _positive_seconds),
    _Setting("liveness_timeout", "liveness", "timeout", "TIMELY_LIVENESS_TIMEOUT", None,
             _positive_seconds),
    _Setting("listen_address", "spark", "listen_address", None, CONF_LISTEN_ADDRESS, _address),
    _Setting("ports", "spark", "ports", None, CONF_PORTS, _ports),
    _Setting("watchdog_timeout", "spark", "watchdog_timeout", None, CONF_WATCHDOG,
             _positive_seconds),
    _Setting("retries", "spark", "retries", None, CONF_RETRIES, _count),
)
_BY_KEYWORD = {s.keyword: s for s in _SETTINGS}

#: Every environment variable :meth:`Config.from_env` reads, with the keyword
#: argument that overrides it.
VARIABLES: dict[str, str] = {s.variable: s.keyword for s in _SETTINGS if s.variable}


def _check(group: object, name: str) -> None:
    """Parses every field of ``group`` in place, naming it by its keyword."""
    for setting in _SETTINGS:
        if setting.group == name:
            value = setting.parse(getattr(group, setting.field), setting.keyword)
            object.__setattr__(group, setting.field, value)


def _check_tls(values: Mapping[str, object], names: Mapping[str, str]) -> None:
    """The three TLS paths are given together or not at all."""
    given = [f for f in ("tls_cert", "tls_key", "tls_ca") if values.get(f)]
    if given and len(given) < 3:
        missing = [names[f] for f in ("tls_cert", "tls_key", "tls_ca") if f not in given]
        shown = ", ".join(f"{names[f]}={values[f]!r}" for f in given)
        raise ConfigurationError(f"TLS needs {', '.join(missing)} as well as {shown}")


def _unknown(options: Mapping[str, object]) -> None:
    for keyword, value in options.items():
        if keyword not in _BY_KEYWORD:
            raise ConfigurationError(f"{keyword}={value!r} is not a setting; the settings are "
                                     f"{', '.join(sorted(_BY_KEYWORD))}")


# -- the groups -----------------------------------------------------------------


@dataclass(frozen=True)
class WorkerSettings:
    """What every :class:`~timely.Worker` of a computation is built with.

    ``check_progress`` checks every record against its input's frontier
    (``TIMELY_CHECK_PROGRESS``); ``schedule_seed``, when given, schedules
    operators in a random order drawn from it (``TIMELY_SCHEDULE_SEED``);
    ``progress_mode`` is ``"demand"`` or ``"eager"``
    (``TIMELY_PROGRESS_MODE``); ``stall_warning`` is the seconds without
    progress before a stalled dataflow is reported, None for never
    (``TIMELY_STALL_WARNING``); ``worker_config`` is the key-value
    :class:`~timely.WorkerConfig` each worker reads with
    ``worker.config()`` (None: an empty one).
    """

    check_progress: bool = False
    schedule_seed: int | None = None
    progress_mode: str = "demand"
    stall_warning: float | None = STALL_WARNING
    worker_config: WorkerConfig | None = None

    def __post_init__(self) -> None:
        _check(self, "worker")

    def options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`~timely.Worker` these settings give."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class CommunicationSettings:
    """How workers exchange data.

    ``window`` is the bytes a worker may have in flight to one peer before
    its sources wait, None for no bound (``TIMELY_WINDOW``: bytes with an
    optional ``k``, ``m`` or ``g``, or ``none``; at least the least window,
    ``MIN_WINDOW``); ``spin`` is the seconds a worker with nothing to do
    polls its rings before it parks, 0 for never, None (``auto``) for the
    launcher's choice (``TIMELY_SPIN``; :meth:`spin_for`);
    ``connect_timeout`` is the seconds start-up waits for the workers of
    other hosts (``TIMELY_CONNECT_TIMEOUT``). Between hosts, ``secret``
    authenticates every connection (``TIMELY_SECRET``, never shown in a
    repr or a message), and ``tls_cert``, ``tls_key`` and ``tls_ca`` (PEM
    files, all three or none: ``TIMELY_TLS_CERT``, ``TIMELY_TLS_KEY``,
    ``TIMELY_TLS_CA``) wrap links in mutually authenticated TLS.
    """

    window: int | None = DEFAULT_WINDOW
    spin: float | None = None
    connect_timeout: float = CONNECT_TIMEOUT
    secret: str | None = field(default=None, repr=False)
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None

    def __post_init__(self) -> None:
        _check(self, "communication")
        _check_tls(vars(self), {f: f for f in ("tls_cert", "tls_key", "tls_ca")})

    def spin_for(self, local_workers: int, cores: int | None = None) -> float:
        """The spin of each of ``local_workers`` workers a launcher starts on
        one host with ``cores`` processors (by default the ones this process
        may run on): ``spin`` when given, else ``SPIN`` (100 µs) while the
        workers are no more than the cores and ``SHARED_SPIN`` (10 µs)
        beyond, where a long spin would poll on a core that other workers
        need (:func:`timely.communication.process.default_spin`). Decided
        once, at start-up; costs one system call when ``spin`` is None."""
        if self.spin is not None:
            return self.spin
        return default_spin(local_workers, cores)

    @property
    def tls(self) -> tuple[str, str, str] | None:
        """``(cert, key, ca)`` when links run in TLS, else None."""
        if self.tls_cert and self.tls_key and self.tls_ca:
            return self.tls_cert, self.tls_key, self.tls_ca
        return None


@dataclass(frozen=True)
class LivenessSettings:
    """How failures that make no noise are found.

    ``heartbeat`` is the seconds after which an idle link sends a heartbeat
    (``TIMELY_HEARTBEAT``); ``timeout`` is the seconds a silent peer, or a
    stopped local worker process, is waited for before the computation
    fails naming it (``TIMELY_LIVENESS_TIMEOUT``; the launchers' keyword is
    ``liveness_timeout``).
    """

    heartbeat: float = HEARTBEAT
    timeout: float = LIVENESS_TIMEOUT

    def __post_init__(self) -> None:
        _check(self, "liveness")


@dataclass(frozen=True)
class SparkSettings:
    """The session conf of a Spark stage (:func:`timely.spark.run`).

    ``listen_address`` is the address tasks listen on (``spark.timely.listenAddress``;
    None: chosen on each executor); ``ports`` the range ``(first, last)``
    they listen in (``spark.timely.ports``, as ``"7100-7199"`` or one
    port; None: any free port); ``watchdog_timeout`` the seconds the driver
    waits for every task of a stage to meet (``spark.timely.watchdogTimeout``);
    ``retries`` how many times a stage is run again after a task failed the
    same way (``spark.timely.retries``).
    """

    listen_address: str | None = None
    ports: tuple[int, int] | None = None
    watchdog_timeout: float = WATCHDOG_TIMEOUT
    retries: int = RETRIES

    def __post_init__(self) -> None:
        _check(self, "spark")

    @classmethod
    def from_conf(cls, conf: Callable[[str], object]) -> SparkSettings:
        """The settings of the ``spark.timely.*`` keys, ``conf(key)`` giving each
        key's value or None when it is not set (as a session's
        ``spark.conf.get(key, None)``). A value that cannot be used is a
        :class:`~timely.errors.ConfigurationError` naming its key.

        >>> SparkSettings.from_conf({"spark.timely.ports": "7100-7199"}.get).ports
        (7100, 7199)
        """
        values: dict[str, Any] = {}
        for setting in _SETTINGS:
            if setting.group == "spark" and setting.conf is not None:
                value = conf(setting.conf)
                if value is not None and value != "":
                    values[setting.field] = setting.parse(value, setting.conf)
        return cls(**values)


_GROUPS: dict[str, type] = {"worker": WorkerSettings, "communication": CommunicationSettings,
                            "liveness": LivenessSettings, "spark": SparkSettings}


@dataclass(frozen=True)
class Config:
    """A computation's settings, in four groups: ``worker``
    (:class:`WorkerSettings`), ``communication``
    (:class:`CommunicationSettings`), ``liveness`` (:class:`LivenessSettings`)
    and ``spark`` (:class:`SparkSettings`). Each group's defaults are the
    engine's; :meth:`from_env` reads the ``TIMELY_*`` variables over them.

    Given to a launcher (``timely.execute(work, workers=2, config=...)``), a
    Config is used whole: the environment is not read again, and keyword
    arguments of the launcher override its fields (:meth:`override`).

    >>> import timely
    >>> config = Config(communication=CommunicationSettings(window=1 << 20))
    >>> timely.execute(lambda worker: worker.allocator.window, workers=2, config=config)
    [1048576, 1048576]
    """

    worker: WorkerSettings = field(default_factory=WorkerSettings)
    communication: CommunicationSettings = field(default_factory=CommunicationSettings)
    liveness: LivenessSettings = field(default_factory=LivenessSettings)
    spark: SparkSettings = field(default_factory=SparkSettings)

    def __post_init__(self) -> None:
        for name, kind in _GROUPS.items():
            value = getattr(self, name)
            if not isinstance(value, kind):
                _fail(name, f"a timely.config.{kind.__name__}", value)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        """The settings of the ``TIMELY_*`` variables of ``environ``
        (``os.environ`` by default), each checked, with ``overrides``
        (keyword arguments named as the launchers': ``window``, ``spin``,
        ``heartbeat``, ``liveness_timeout``, ...) in place of variables.
        A variable that is unset or blank leaves its default; a value that
        cannot be used is a :class:`~timely.errors.ConfigurationError`
        naming the variable (or the argument) and the value; a variable
        that an argument overrides is not read."""
        _unknown(overrides)
        environ = os.environ if environ is None else environ
        values: dict[str, dict[str, Any]] = {name: {} for name in _GROUPS}
        names: dict[str, str] = {}
        for setting in _SETTINGS:
            names[setting.field] = setting.variable or setting.keyword
            if setting.keyword in overrides:
                names[setting.field] = setting.keyword
                value = setting.parse(overrides[setting.keyword], setting.keyword)
            elif setting.variable is not None and environ.get(setting.variable, "").strip():
                value = setting.parse(environ[setting.variable], setting.variable)
            else:
                continue
            values[setting.group][setting.field] = value
        _check_tls(values["communication"], names)
        return cls(**{name: kind(**values[name]) for name, kind in _GROUPS.items()})

    def override(self, **overrides: Any) -> Config:
        """This configuration with the fields named by ``overrides`` (keyword
        arguments named as the launchers': ``window``, ``heartbeat``, ...)
        replaced, each checked; itself when there are none."""
        if not overrides:
            return self
        _unknown(overrides)
        changes: dict[str, dict[str, Any]] = {}
        for keyword, value in overrides.items():
            setting = _BY_KEYWORD[keyword]
            changes.setdefault(setting.group, {})[setting.field] = value
        return dataclasses.replace(self, **{
            name: dataclasses.replace(getattr(self, name), **fields)
            for name, fields in changes.items()})


def configured(config: Config | None, options: Mapping[str, Any]) -> Config:
    """What a launcher runs with: ``config`` with ``options`` (its keyword
    arguments) over it, or, without one, the environment's with ``options``
    over it (:meth:`Config.from_env`)."""
    if config is None:
        return Config.from_env(**options)
    if not isinstance(config, Config):
        _fail("config", "a timely.Config", config)
    return config.override(**options)


__all__ = ["CONF_LISTEN_ADDRESS", "CONF_PORTS", "CONF_RETRIES", "CONF_WATCHDOG", "RETRIES",
           "VARIABLES", "WATCHDOG_TIMEOUT", "CommunicationSettings", "Config",
           "LivenessSettings", "SparkSettings", "WorkerSettings", "configured"]
