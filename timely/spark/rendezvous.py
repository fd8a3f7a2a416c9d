"""How the tasks of one barrier stage find each other, and how the driver
watches them.

Each task has a short JSON description of itself (its listening address, its
segment, its doorbell, its machine) and needs everyone's, in partition order.
Two ways:

- ``"allgather"``: ``BarrierTaskContext.allGather``. Nothing to run on the
  driver, but the JVM answers it on a one-second poll, so every stage pays
  about a second before its first record.
- ``"driver"`` (the default): a small server in the driver process, started
  by the first :func:`timely.spark.run` and reached at ``spark.driver.host``;
  every run registers with it under a random run id. Each task connects,
  proves it knows the server's secret (the HMAC challenge of
  :func:`timely.communication.tcp.authenticate`, both ways), sends its run id
  and description in a frame authenticated under the connection's key and
  waits; when all partitions of a round of that run have arrived the server
  answers every task with the list. A round starts over when a partition
  registers twice, which is what a retried stage does after tasks of the
  failed attempt died or were killed mid-rendezvous: the stale connections
  are closed, so any survivor of the old attempt fails fast; and a round is
  only completed by connections still open, so a killed task's registration
  never completes a round of the retry. Each execution of the DataFrame
  (each action, each retry) is one round.

With the driver's server each task keeps its connection open until it ends
and then says how: ``done``, or ``failed`` with its exception's type, message
and traceback. That gives the driver two things:

- the cause of a failure: a task stopped because a peer went away asks the
  server (:meth:`Meeting.cause`) and raises the peer's own exception, so
  whichever task Spark reports, its error names the task that failed first;
- a watchdog: when a round has not completed ``timeout`` seconds after its
  first task arrived, or no new round has completed ``timeout`` seconds after
  a task of the last one failed or vanished (an executor lost with no slot
  to retry on), the server calls the run's ``on_timeout(stage, reason)``
  (:func:`timely.spark.run` cancels the stage with that reason), so the job
  fails instead of waiting for slots that never come.

:func:`data_paths` says, per pair of tasks, whether they exchange through
rings (same machine) or TCP; the server logs it at INFO once per round.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time

from timely.communication.tcp import DATA, authenticate
from timely.errors import AuthenticationError, FrameError, RendezvousError

MAX_MESSAGE = 1 << 16
MAX_ROSTER = 1 << 26
MAX_REPORT = 1 << 20

log = logging.getLogger("timely.spark")


def _recv(session, limit: int, timeout: float | None) -> bytes:
    deadline = None if timeout is None else time.monotonic() + timeout
    kind, payload = session.recv_frame(limit, deadline)
    if kind != DATA:
        raise RendezvousError(f"an unexpected frame of kind {kind} in the rendezvous")
    return bytes(payload)


def data_paths(descriptions) -> list[tuple[int, int, str]]:
    """``(i, j, "rings" | "tcp")`` for every pair ``i < j`` of task
    descriptions (dicts with ``index`` and ``machine``).

    >>> data_paths([{"index": 0, "machine": "a"}, {"index": 1, "machine": "a"},
    ...             {"index": 2, "machine": "b"}])
    [(0, 1, 'rings'), (0, 2, 'tcp'), (1, 2, 'tcp')]
    """
    ordered = sorted(descriptions, key=lambda m: m.get("index", -1))
    return [(a.get("index", -1), b.get("index", -1),
             "rings" if a.get("machine") == b.get("machine") else "tcp")
            for k, a in enumerate(ordered) for b in ordered[k + 1:]]


def describe_paths(descriptions) -> str:
    """One line of :func:`data_paths`: ``0-1 rings, 0-2 tcp, ...``."""
    return ", ".join(f"{i}-{j} {path}" for i, j, path in data_paths(descriptions)) or "one task"


class _Run:
    """What the server knows of one run."""

    def __init__(self, peers: int, timeout: float | None, on_timeout, retries: int | None):
        self.peers = peers
        self.timeout = timeout
        self.on_timeout = on_timeout
        self.retries = retries         # None: as many as Spark makes
        self.failed_round = 0          # the last round a task failed in, by itself
        self.repeats = 0               # consecutive failed rounds with the same failure
        self.last_failure: tuple | None = None   # its (type, message)
        self.waiting: dict = {}        # partition -> (session, description): the open round
        self.live: dict = {}           # partition -> session: tasks of the last complete round
        self.stage = -1
        self.rounds = 0
        self.failures: list = []       # (round, partition, report) of the last complete round
        self.deadline: float | None = None
        self.why = ""
        self.changed = threading.Condition()

    def arm(self, what: str) -> None:
        """Starts the watchdog's clock for ``what`` (a reason ending in the
        time it had)."""
        if self.timeout is not None:
            self.deadline = time.monotonic() + self.timeout
            self.why = (f"{what} within {self.timeout:g} s (spark.timely.watchdogTimeout): "
                        f"are there {self.peers} free task slots?")


class DriverRendezvous:
    """The driver's side: collects every partition's description, per run and
    round, hears how each task ended, and runs the watchdog."""

    def __init__(self, host: str = "127.0.0.1"):
        self.secret = os.urandom(32)
        self.listener = socket.create_server((host, 0))
        self.address = (host, self.listener.getsockname()[1])
        self.runs: dict = {}          # run id -> _Run
        self.lock = threading.RLock()
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True,
                                       name="timely-rendezvous")
        self.thread.start()
        self.watchdog = threading.Thread(target=self._watch, daemon=True,
                                         name="timely-rendezvous-watchdog")
        self.watchdog.start()

    @property
    def rounds(self) -> dict:
        """run id -> the partitions waiting in its open round."""
        with self.lock:
            return {run: dict(state.waiting) for run, state in self.runs.items()}

    def new_run(self, peers: int, timeout: float | None = None, on_timeout=None,
                retries: int | None = None) -> str:
        """Registers a run of ``peers`` tasks; ``on_timeout(stage, reason)`` is
        called (once per arming) when the watchdog's ``timeout`` passes, and
        at once when a task fails with the same exception (type and message)
        as in the ``retries`` rounds before (None: never)."""
        if retries is not None and retries < 0:
            raise ValueError(f"retries is a count, not {retries!r}")
        run = os.urandom(8).hex()
        with self.lock:
            self.runs[run] = _Run(peers, timeout, on_timeout, retries)
        return run

    def close(self) -> None:
        self.closed = True
        self.listener.close()

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._register, args=(sock,), daemon=True).start()

    def _watch(self) -> None:
        while not self.closed:
            time.sleep(0.2)
            due = []
            now = time.monotonic()
            with self.lock:
                for state in self.runs.values():
                    if state.deadline is not None and now >= state.deadline:
                        state.deadline = None
                        due.append((state.on_timeout, state.stage, state.why))
            for on_timeout, stage, why in due:
                log.error("timely.spark watchdog: %s", why)
                if on_timeout is not None:
                    try:
                        on_timeout(stage, why)
                    except Exception:  # noqa: BLE001 - the watchdog must go on
                        log.exception("timely.spark watchdog: cancelling stage %d failed", stage)

    def _register(self, sock) -> None:
        try:
            session = authenticate(sock, self.secret, -1, accepting=True)
            partition = session.peer
            message = json.loads(_recv(session, MAX_MESSAGE, 10))
            run = message["run"]
            if "why" in message:
                self._answer_why(session, run, partition)
                return
            me = message["me"]
            description = json.dumps(me).encode()
            sock.settimeout(None)
        except (AuthenticationError, FrameError, OSError, ConnectionError, ValueError, KeyError,
                TypeError, RendezvousError):
            sock.close()
            return
        with self.lock:
            state = self.runs.get(run)
            if state is None or not 0 <= partition < state.peers:
                sock.close()
                return
            current = state.waiting
            if partition in current:
                for conn, _ in current.values():     # a stale, incomplete round
                    conn.close()
                current.clear()
            if not current:
                state.arm(f"the barrier stage of {state.peers} timely workers did not start "
                          "all its tasks")
            state.stage = int(message.get("stage", state.stage))
            current[partition] = (session, description)
            if len(current) == state.peers:
                # A task killed while waiting (a failed attempt) left a closed
                # connection: it must not complete a round of the retry.
                for j in [j for j, (conn, _) in current.items() if not _alive(conn.sock)]:
                    current.pop(j)[0].close()
            if len(current) < state.peers:
                return
            complete = dict(current)
            current.clear()
            state.rounds += 1
            round_ = state.rounds
            state.deadline = None
            state.failures = []
            state.live = {j: conn for j, (conn, _) in complete.items()}
            descriptions = [json.loads(complete[j][1]) for j in range(state.peers)]
        log.info("timely.spark run %s round %d (stage %d): data paths %s", run, round_,
                 state.stage, describe_paths(descriptions))
        roster = b"[" + b",".join(complete[j][1] for j in range(len(complete))) + b"]"
        for conn, _ in complete.values():
            with contextlib.suppress(OSError):
                conn.send_frame([roster])
        for j, (conn, _) in complete.items():
            if j != partition:
                threading.Thread(target=self._follow, args=(state, round_, j, conn),
                                 daemon=True).start()
        self._follow(state, round_, partition, complete[partition][0])

    def _follow(self, state: _Run, round_: int, partition: int, session) -> None:
        """Waits for how task ``partition`` of round ``round_`` ends."""
        report = None
        try:
            report = json.loads(_recv(session, MAX_REPORT, None))
        except (AuthenticationError, FrameError, OSError, ConnectionError, ValueError,
                RendezvousError):
            report = {"lost": True}
        finally:
            session.close()
        give_up = None
        with state.changed:
            with self.lock:
                if state.rounds != round_:
                    return
                state.live.pop(partition, None)
                if report.get("done"):
                    return
                state.failures.append((partition, report))
                if "type" in report and not report.get("secondary"):
                    give_up = self._repeated(state, round_, partition, report)
                if state.deadline is None:  # else armed by an earlier failure of the round
                    what = (f"task {partition} failed ({report.get('type', '?')})"
                            if "type" in report else f"task {partition} was lost")
                    state.arm(f"{what} and the barrier stage of {state.peers} timely workers "
                              "was not retried")
                if give_up is not None:
                    state.deadline = None
            state.changed.notify_all()
        if give_up is not None and state.on_timeout is not None:
            log.error("timely.spark: %s", give_up.splitlines()[0])
            try:
                state.on_timeout(state.stage, give_up)
            except Exception:  # noqa: BLE001 - the stage fails by itself then
                log.exception("timely.spark: cancelling stage %d failed", state.stage)

    @staticmethod
    def _repeated(state: _Run, round_: int, partition: int, report: dict) -> str | None:
        """Counts a round's first failure of a task by itself; the reason to
        stop the stage when the same failure (type and message) has now
        ended one more round than ``retries`` allows, else None."""
        if state.failed_round == round_ or state.retries is None:
            return None
        failure = (report["type"], report.get("message", ""))
        consecutive = state.failed_round == round_ - 1 and state.last_failure == failure
        state.repeats = state.repeats + 1 if consecutive else 1
        state.failed_round, state.last_failure = round_, failure
        if state.repeats <= state.retries:
            return None
        kind = report["type"].removeprefix("builtins.")
        tries = "once" if state.repeats == 1 else f"in {state.repeats} attempts in a row"
        return (f"{kind}: {report.get('message', '')}\n{report.get('traceback', '')}"
                f"(timely.spark: task {partition} of the barrier stage failed with this "
                f"{tries}; spark.timely.retries is {state.retries}, so the stage is not "
                "retried again)")

    def _answer_why(self, session, run: str, partition: int) -> None:
        """Answers a task that lost a peer with the first failure reported by
        another task of its round, waiting a little for one to arrive."""
        state = self.runs.get(run)
        answer = None
        if state is not None:
            deadline = time.monotonic() + 3.0
            with state.changed:
                while True:
                    with self.lock:
                        reports = [(j, r) for j, r in state.failures
                                   if j != partition and "type" in r
                                   and not r.get("secondary")]
                    if reports or time.monotonic() >= deadline:
                        break
                    state.changed.wait(max(0.0, deadline - time.monotonic()))
            if reports:
                j, report = reports[0]
                answer = {"partition": j, **report}
        with contextlib.suppress(OSError):
            session.send_frame([json.dumps(answer).encode()])
        session.close()


def _alive(sock) -> bool:
    """False when the peer of a waiting connection has gone (EOF or error)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


_server: DriverRendezvous | None = None
_server_lock = threading.Lock()


def driver_server(host: str) -> DriverRendezvous:
    """This driver process's rendezvous server, started on first use."""
    global _server
    with _server_lock:
        if _server is None:
            _server = DriverRendezvous(host)
        return _server


class Meeting:
    """The task's side of :class:`DriverRendezvous` for partition
    ``partition`` of ``run`` at ``address``: :meth:`gather` is like
    ``allGather``; the connection then stays open until :meth:`done` or
    :meth:`failed` says how the task ended."""

    def __init__(self, address, secret: bytes, run: str, partition: int,
                 timeout: float = 600.0, stage: int = -1):
        self.address = tuple(address)
        self.secret = secret
        self.run = run
        self.partition = partition
        self.timeout = timeout
        self.stage = stage
        self.session = None
        self.local_address: str | None = None

    def _connect(self):
        try:
            sock = socket.create_connection(self.address, timeout=10)
        except OSError as error:
            raise RendezvousError(f"cannot reach the driver's rendezvous at {self.address}: "
                                  f"{error}") from error
        try:
            return authenticate(sock, self.secret, self.partition, accepting=False)
        except BaseException:
            sock.close()
            raise

    def gather(self, description: str) -> list[str]:
        """Sends this task's description; returns everyone's in partition order."""
        try:
            session = self._connect()
        except (FrameError, AuthenticationError, OSError, ConnectionError) as error:
            if isinstance(error, RendezvousError):
                raise
            raise RendezvousError(f"the rendezvous of partition {self.partition} failed: "
                                  f"{error}") from error
        try:
            session.send_frame([json.dumps({"run": self.run, "stage": self.stage,
                                            "me": json.loads(description)}).encode()])
            roster = _recv(session, MAX_ROSTER, self.timeout)
        except (FrameError, AuthenticationError, OSError, ConnectionError) as error:
            session.close()
            raise RendezvousError(f"the rendezvous of partition {self.partition} failed: "
                                  f"{error}") from error
        self.session = session
        return [json.dumps(m) for m in json.loads(roster)]

    def _report(self, report: dict) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        with contextlib.suppress(OSError):
            session.send_frame([json.dumps(report).encode()[:MAX_REPORT]])
        session.close()

    def done(self) -> None:
        """This task finished."""
        self._report({"done": True})

    def failed(self, error: BaseException, traceback: str, secondary: bool = False) -> None:
        """This task failed with ``error`` (its type, message and traceback
        are kept); ``secondary`` when only because another task failed."""
        self._report({"type": f"{type(error).__module__}.{type(error).__qualname__}",
                      "message": str(error)[:1 << 14], "traceback": traceback[-(1 << 18):],
                      "secondary": secondary})

    def cause(self) -> dict | None:
        """The first failure another task of this round reported (a dict of
        ``partition``, ``type``, ``message``, ``traceback``), waiting up to a
        few seconds for one; None when no task reported one."""
        try:
            session = self._connect()
            try:
                session.send_frame([json.dumps({"run": self.run, "why": True}).encode()])
                return json.loads(_recv(session, MAX_REPORT, 10))
            finally:
                session.close()
        except (FrameError, AuthenticationError, OSError, ConnectionError, ValueError):
            return None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def driver_gather(address, secret: bytes, run: str, partition: int, timeout: float = 600.0):
    """A function like ``allGather`` over :class:`Meeting` that closes its
    connection once it has everyone's description."""

    def gather(description: str) -> list[str]:
        meeting = Meeting(address, secret, run, partition, timeout)
        try:
            return meeting.gather(description)
        finally:
            meeting.close()

    return gather
