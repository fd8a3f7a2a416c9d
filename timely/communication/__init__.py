"""Communication between workers: transport only.

An allocator gives each logical channel, named by an identifier that every
worker allocates in the same order, one pusher per worker and one puller.
What is pushed to worker ``j``'s pusher arrives, in order and at most once,
at worker ``j``'s puller of the same channel. This package moves bytes and
messages between workers; it knows nothing of workers' dataflows, and
starting or supervising workers belongs to the runtime
(:mod:`timely.launch`).

The parts, bottom up, each public and usable alone:

- :mod:`~timely.communication.ring`: the compiled single-producer,
  single-consumer ring (``RingWriter``, ``RingReader``, ``format_ring``).
- :mod:`~timely.communication.shm`: shared-memory segments with one owner
  (``Segment``), their names and the sweep of orphans (``sweep_orphans``),
  and the layout of rings in them (``Inboxes``, ``RING_BYTES``).
- :mod:`~timely.communication.doorbell`: how a parked worker is woken
  (``Doorbell``; ``EventfdDoorbell``, ``SocketDoorbell``).
- :mod:`~timely.communication.tcp`: authenticated links between hosts
  (``authenticate``, ``handshake``, ``Session``: frames under a per-connection
  MAC; ``Link``: heartbeats and liveness; ``connect``, ``connect_with``;
  optional ``TLS``; ``recv_exact``, ``read_hostfile``, ``worker_addresses``).
- :mod:`~timely.communication.codec`: the frame of messages between workers.
- allocators: ``Allocator`` (the interface), ``ThreadAllocator`` (one
  worker), ``ThreadGroupAllocator`` (worker threads of one process),
  ``BatchingAllocator`` (channel queues and outboxes over any transport),
  ``RingAllocator`` (rings and links), ``ProcessAllocator`` (the rings of
  workers forked by one launcher).

Names other than the allocator interface are loaded on first use, so that
``import timely`` does not pay for sockets and shared memory.
"""

from __future__ import annotations

import importlib

from timely.communication.allocator import (
    Allocator,
    BatchingAllocator,
    LocalPusher,
    Puller,
    RemotePusher,
    ThreadAllocator,
)

_LAZY = {
    "RingReader": "ring", "RingWriter": "ring", "format_ring": "ring",
    "PREFIX": "shm", "RING_BYTES": "shm", "Inboxes": "shm", "Segment": "shm",
    "segment_name": "shm", "sweep_orphans": "shm",
    "Doorbell": "doorbell", "EventfdDoorbell": "doorbell", "SocketDoorbell": "doorbell",
    "Link": "tcp", "Session": "tcp", "TLS": "tcp", "authenticate": "tcp",
    "tls_contexts": "tcp", "connect": "tcp", "connect_with": "tcp", "handshake": "tcp",
    "read_hostfile": "tcp", "recv_exact": "tcp", "worker_addresses": "tcp",
    "ThreadGroupAllocator": "threads", "ThreadGroup": "threads",
    "ProcessAllocator": "process", "RingAllocator": "process",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["Allocator", "BatchingAllocator", "LocalPusher", "Puller", "RemotePusher",
           "ThreadAllocator", *_LAZY]
