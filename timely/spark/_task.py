"""One timely worker inside one task of a barrier-mode Spark stage.

Start-up, in every task: open a TCP listener, make an incoming segment with
one ring from every other worker and a doorbell (a datagram socket in the
abstract namespace), then one ``allGather`` carrying all of that, and the run
token of partition 0 (the shared secret of this attempt). After it each
worker attaches the rings of the workers on its own host (same host name and
boot id), connects to every worker over authenticated TCP (data to other
hosts; liveness and the final goodbye everywhere) and unlinks its own
segment, which every local peer has mapped by then: a task that dies later
leaves no segment behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from multiprocessing import resource_tracker, shared_memory

from timely.communication.process import RingAllocator
from timely.communication.ring import RingReader, RingWriter, format_ring
from timely.communication.shm import PREFIX, RING_BYTES, sweep_orphans
from timely.communication.tcp import Link, connect_with
from timely.errors import SparkTaskError


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _attach(name: str):
    """Maps another task's segment; its owner, not this process, unlinks it."""
    segment = shared_memory.SharedMemory(name=name)
    with contextlib.suppress(Exception):
        resource_tracker.unregister(segment._name, "shared_memory")
    return segment


class SocketBell:
    """A doorbell any process on this host can ring: a datagram socket bound
    to a name in the abstract namespace."""

    def __init__(self, name: bytes | None = None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        if name is not None:
            self.sock.bind(name)
        self.name = name

    def fileno(self) -> int:
        return self.sock.fileno()

    def ring(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self.sock.send(b"\x01")

    def clear(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while True:
                self.sock.recv(64)

    def close(self) -> None:
        self.sock.close()


class _PeerBell(SocketBell):
    def __init__(self, name: bytes):
        super().__init__()
        self.sock.connect(name)


class TaskWorker:
    """The allocator of worker ``index`` of ``peers`` Spark tasks, after the
    rendezvous through ``all_gather`` (a function of one str to the list of
    every task's str, as ``BarrierTaskContext.allGather``)."""

    def __init__(self, index: int, peers: int, all_gather, host: str = "127.0.0.1"):
        sweep_orphans()
        self.index = index
        self.peers = peers
        self.segment = None
        self.attached: list = []
        self.bells: list = []
        listener = socket.create_server((host, 0))
        tag = os.urandom(6).hex()
        try:
            name = f"{PREFIX}{os.getpid()}-{tag}"
            self.segment = shared_memory.SharedMemory(name=name, create=True,
                                                      size=peers * RING_BYTES)
            for j in range(peers):
                format_ring(self.segment.buf[j * RING_BYTES:(j + 1) * RING_BYTES])
            bell_name = f"\0timely-bell-{os.getpid()}-{tag}".encode()
            self.bell = SocketBell(bell_name)
            token = os.urandom(32).hex() if index == 0 else ""
            me = {"index": index, "machine": socket.gethostname() + "/" + _boot_id(),
                  "address": [host, listener.getsockname()[1]], "segment": name,
                  "bell": bell_name.hex(), "token": token}
            everyone = [json.loads(m) for m in all_gather(json.dumps(me))]
            everyone.sort(key=lambda m: m["index"])
            if [m["index"] for m in everyone] != list(range(peers)):
                raise SparkTaskError(f"the rendezvous saw tasks {[m['index'] for m in everyone]}, "
                                     f"not 0..{peers - 1}")
            secret = everyone[0]["token"].encode()
            writers, readers, peer_bells = {}, {}, {}
            for m in everyone:
                j = m["index"]
                if j == index or m["machine"] != me["machine"]:
                    continue
                theirs = _attach(m["segment"])
                self.attached.append(theirs)
                writers[j] = RingWriter(theirs.buf[index * RING_BYTES:(index + 1) * RING_BYTES])
                readers[j] = RingReader(self.segment.buf[j * RING_BYTES:(j + 1) * RING_BYTES])
                peer_bells[j] = bell = _PeerBell(bytes.fromhex(m["bell"]))
                self.bells.append(bell)
            addresses = [tuple(m["address"]) for m in everyone]
            sockets = connect_with(listener, index, addresses, secret)
        except BaseException:
            listener.close()
            self.close()
            raise
        listener.close()
        # Every peer attached our segment before it connected to us.
        self._unlink()
        self.allocator = RingAllocator(index, peers, writers, readers, self.bell, peer_bells)
        self.allocator.add_links({j: Link(s, j, self.allocator) for j, s in sockets.items()})

    def _unlink(self) -> None:
        if self.segment is not None:
            with contextlib.suppress(FileNotFoundError):
                self.segment.unlink()

    def close(self) -> None:
        """Releases the rings, segments and bells (after the allocator shut down)."""
        self._unlink()
        for segment in [*self.attached, self.segment]:
            if segment is not None:
                with contextlib.suppress(Exception):
                    segment.close()
        self.attached = []
        self.segment = None
        for bell in self.bells:
            bell.close()
        if getattr(self, "bell", None) is not None:
            self.bell.close()
