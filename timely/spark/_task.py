"""One timely worker inside one task of a barrier-mode Spark stage.

Start-up, in every task: open a TCP listener, make an incoming segment
holding this task's inbox (:class:`timely.communication.shm.Inboxes` with
one receiver and a ring from every worker, and its park flag, which tells
its local peers when to ring) and a doorbell that any process on the host
can ring (:class:`timely.communication.doorbell.SocketDoorbell`),
then one ``allGather`` carrying all of that, and the run token of partition
0 (the shared secret of this attempt). After it each worker attaches the
rings of the workers on its own host (same boot id and network namespace:
what decides whether a shared-memory segment and an abstract-socket doorbell
are reachable, unlike a host name), connects
to every worker over authenticated TCP (data to other hosts; liveness and
the final goodbye everywhere) and unlinks its own segment, which every local
peer has mapped by then: a task that dies later leaves no segment behind.
"""

from __future__ import annotations

import json
import os
import socket

from timely.communication.doorbell import SocketDoorbell
from timely.communication.process import RingAllocator
from timely.communication.ring import RingReader, RingWriter
from timely.communication.shm import Inboxes, Segment, sweep_orphans
from timely.communication.tcp import Link, connect_with
from timely.config import Config
from timely.errors import SparkTaskError


def machine_identity() -> str:
    """Boot id and network namespace: tasks that share them share memory
    (``/dev/shm`` of one running kernel) and doorbells (abstract ``AF_UNIX``
    names live in a network namespace). Two containers of one host with
    their own network namespaces are two machines here, and so are two
    hosts that happen to share a host name."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = socket.gethostname()
    try:
        namespace = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        namespace = 0
    return f"{boot}/net:{namespace}"


def listen_address(configured: str | None = None, driver_host: str | None = None) -> str:
    """The address this task listens on, decided on its executor: ``configured``
    (``spark.timely.listenAddress``) when given, else the executor's
    ``SPARK_LOCAL_IP``, else the local address of the route to the driver,
    else the address this host's name resolves to, else loopback."""
    if configured:
        return configured
    local = os.environ.get("SPARK_LOCAL_IP")
    if local:
        return local
    if driver_host:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect((driver_host, 9))       # chooses a route; sends nothing
            return probe.getsockname()[0]
        except OSError:
            pass
        finally:
            probe.close()
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def parse_ports(ports) -> tuple[int, int] | None:
    """``"7100-7199"`` (or ``"7100"``, or a pair) as ``(first, last)``; None
    for any free port.

    >>> parse_ports("7100-7199"), parse_ports("7100"), parse_ports(None)
    ((7100, 7199), (7100, 7100), None)
    """
    if ports is None or ports == "":
        return None
    if isinstance(ports, str):
        first, _, last = ports.partition("-")
        pair = (int(first), int(last or first))
    else:
        pair = (int(ports[0]), int(ports[1]))
    if not 0 < pair[0] <= pair[1] < 65536:
        raise ValueError(f"a port range is first-last within 1..65535, not {ports!r}")
    return pair


def listen(host: str, ports: tuple[int, int] | None) -> socket.socket:
    """A listening socket on ``host`` at the first free port of ``ports``."""
    if ports is None:
        return socket.create_server((host, 0))
    error = None
    for port in range(ports[0], ports[1] + 1):
        try:
            return socket.create_server((host, port))
        except OSError as e:
            error = e
    raise SparkTaskError(f"no free port in {ports[0]}-{ports[1]} (spark.timely.ports) on "
                         f"{host}: {error}")


class TaskWorker:
    """The allocator of worker ``index`` of ``peers`` Spark tasks, after the
    rendezvous through ``all_gather`` (a function of one str to the list of
    every task's str, as ``BarrierTaskContext.allGather``).

    ``host`` is the address this task listens on for TCP links (at the first
    free port of ``ports``, any by default); ``machine``
    (by default :func:`machine_identity`) says which tasks share memory:
    tasks with equal ``machine`` exchange through rings and ring each other's
    :class:`~timely.communication.doorbell.SocketDoorbell`, the others only
    over TCP. ``allocator`` is the worker's
    :class:`~timely.communication.process.RingAllocator`; :meth:`close`
    releases the segments and doorbells after it has shut down.

    ``config`` (by default the environment's, :meth:`timely.Config.from_env`)
    gives the allocator its send window and spin (by default chosen from
    the tasks on this machine and its cores), start-up its connect
    timeout and the links their heartbeat and liveness timeout.
    """

    def __init__(self, index: int, peers: int, all_gather, host: str = "127.0.0.1",
                 machine: str | None = None, ports: tuple[int, int] | None = None,
                 config: Config | None = None):
        config = Config.from_env() if config is None else config
        communication, liveness = config.communication, config.liveness
        sweep_orphans()
        self.index = index
        self.peers = peers
        self.segment = None
        self.attached: list = []
        self.bell = None
        self.peer_bells: list = []
        listener = listen(host, ports)
        try:
            # This task's inbox: one ring from every worker, indexed by sender.
            inbox = Inboxes(1, peers)
            self.segment = Segment.create(inbox.size)
            inbox.format(self.segment.buf)
            self.bell = SocketDoorbell.create()
            token = os.urandom(32).hex() if index == 0 else ""
            me = {"index": index, "machine": machine or machine_identity(),
                  "address": [host, listener.getsockname()[1]], "segment": self.segment.name,
                  "bell": self.bell.address.hex(), "token": token}
            everyone = [json.loads(m) for m in all_gather(json.dumps(me))]
            everyone.sort(key=lambda m: m["index"])
            self.everyone = everyone
            if [m["index"] for m in everyone] != list(range(peers)):
                raise SparkTaskError(f"the rendezvous saw tasks {[m['index'] for m in everyone]}, "
                                     f"not 0..{peers - 1}")
            secret = everyone[0]["token"].encode()
            writers, readers, peer_bells, peer_flags = {}, {}, {}, {}
            for m in everyone:
                j = m["index"]
                if j == index or m["machine"] != me["machine"]:
                    continue
                theirs = Segment.attach(m["segment"])
                self.attached.append(theirs)
                inbox.prefault(theirs, 0, index)
                inbox.prefault(self.segment, 0, j)
                writers[j] = RingWriter(inbox.ring(theirs.buf, 0, index))
                readers[j] = RingReader(inbox.ring(self.segment.buf, 0, j))
                peer_flags[j] = inbox.flag(theirs.buf, 0)
                peer_bells[j] = bell = SocketDoorbell.connect(bytes.fromhex(m["bell"]))
                self.peer_bells.append(bell)
            addresses = [tuple(m["address"]) for m in everyone]
            sessions = connect_with(listener, index, addresses, secret,
                                    timeout=communication.connect_timeout)
        except BaseException:
            listener.close()
            self.close()
            raise
        listener.close()
        # Every peer attached our segment before it connected to us.
        self.segment.unlink()
        self.allocator = RingAllocator(index, peers, writers, readers, self.bell, peer_bells,
                                       flag=inbox.flag(self.segment.buf, 0),
                                       peer_flags=peer_flags, window=communication.window,
                                       spin=communication.spin_for(1 + len(readers)))
        self.allocator.add_links({j: Link(s, self.allocator, heartbeat=liveness.heartbeat,
                                          liveness=liveness.timeout)
                                  for j, s in sessions.items()})

    def close(self) -> None:
        """Releases the rings, segments and doorbells (after the allocator shut down)."""
        if self.segment is not None:
            self.segment.unlink()
        for segment in [*self.attached, self.segment]:
            # After a failure ring ends may still view a segment: its
            # mapping then goes once they are gone.
            if segment is not None:
                segment.close_when_free()
        self.attached = []
        self.segment = None
        for bell in self.peer_bells:
            bell.close()
        self.peer_bells = []
        if self.bell is not None:
            self.bell.close()
            self.bell = None
