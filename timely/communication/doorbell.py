"""Doorbells: how a worker that parks learns that data may have arrived.

A worker with nothing to do waits in ``select`` on its doorbell's
``fileno()``; whoever gives it data (a peer that wrote into its ring, a link
thread that received a frame, a failure) rings it. One interface,
:class:`Doorbell`:

- ``fileno()``: readable while the bell has been rung and not cleared;
- ``ring()``: never blocks, never fails because the bell is already rung;
- ``clear()``: drains every ring so far, never blocks;
- ``close()``: releases the descriptor.

A ring is a hint, not a message: rings may merge, and a waker must put the
data in place (ring, inbox) before ringing, so that the sleeper that clears
the bell and then looks finds it. Two implementations:

- :class:`EventfdDoorbell`: a Linux eventfd, shared by processes forked from
  the one that made it (the process launcher). One system call to ring or
  clear.
- :class:`SocketDoorbell`: a datagram socket in the abstract ``AF_UNIX``
  namespace, bound by its owner (:meth:`SocketDoorbell.create`) under a name
  any process on the host can ring (:meth:`SocketDoorbell.connect`) without
  sharing a descriptor: Spark tasks, which no common parent forks. One
  datagram per ring; ``clear`` reads until the socket is empty. The name
  vanishes when the owner closes it, and a ring of a bell whose owner has
  gone is dropped (that peer's failure is reported by its link, not here).

>>> import select
>>> bell = EventfdDoorbell.create()
>>> bell.ring(); bell.ring()
>>> select.select([bell], [], [], 0)[0] == [bell]
True
>>> bell.clear()
>>> select.select([bell], [], [], 0)[0]
[]
>>> bell.close()
"""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Protocol, runtime_checkable


@runtime_checkable
class Doorbell(Protocol):
    """What every doorbell provides."""

    def fileno(self) -> int:
        """A descriptor that is readable while the bell is rung."""

    def ring(self) -> None:
        """Wakes the owner; never blocks."""

    def clear(self) -> None:
        """Forgets every ring so far; never blocks."""

    def close(self) -> None:
        """Releases this handle's descriptor."""


class EventfdDoorbell:
    """A doorbell on a Linux eventfd (non-blocking).

    :meth:`create` makes one; processes forked afterwards inherit the
    descriptor and wrap it with ``EventfdDoorbell(fd)`` to ring or wait.
    ``close`` closes this process's descriptor only.
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def create(cls) -> EventfdDoorbell:
        """A new bell on a non-blocking, close-on-exec eventfd.

        Raises :class:`OSError` where eventfd is not available (it is Linux only).
        """
        return cls(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))

    def fileno(self) -> int:
        """The file descriptor to wait on with ``select``/``poll``."""
        return self.fd

    def ring(self) -> None:
        """Wakes the bell's owner: one system call; ringing a rung bell does nothing more."""
        # Only a counter about to overflow refuses a write: it is rung already.
        with contextlib.suppress(BlockingIOError):
            os.eventfd_write(self.fd, 1)

    def clear(self) -> None:
        """Resets the bell after a wake-up; does nothing if it was not rung."""
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self.fd)

    def close(self) -> None:
        """Closes the eventfd; later calls do nothing."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __repr__(self) -> str:
        return f"EventfdDoorbell({self.fd})"


class SocketDoorbell:
    """A doorbell on an ``AF_UNIX`` datagram socket named ``address`` in the
    abstract namespace (a name that starts with a NUL byte and is no file).

    The owner's handle (:meth:`create`) is bound to ``address``: it waits,
    clears, and can ring itself (a link thread of the owner does). A peer's
    handle (:meth:`connect`) is connected to ``address`` and only rings.
    """

    __slots__ = ("sock", "address", "owner")

    def __init__(self, sock: socket.socket, address: bytes, owner: bool):
        self.sock = sock
        self.address = address
        self.owner = owner

    @staticmethod
    def new_address() -> bytes:
        """A fresh abstract name carrying this process's pid."""
        return f"\0timely-bell-{os.getpid()}-{os.urandom(6).hex()}".encode()

    @classmethod
    def create(cls, address: bytes | None = None) -> SocketDoorbell:
        """The owner's doorbell, bound to ``address`` (fresh by default)."""
        address = cls.new_address() if address is None else address
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            sock.setblocking(False)
            sock.bind(address)
        except BaseException:
            sock.close()
            raise
        return cls(sock, address, owner=True)

    @classmethod
    def connect(cls, address: bytes) -> SocketDoorbell:
        """A handle that rings the doorbell bound at ``address`` by another
        process (or this one); raises ConnectionRefusedError when none is."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            sock.setblocking(False)
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
        return cls(sock, address, owner=False)

    def fileno(self) -> int:
        """The socket's file descriptor, to wait on with ``select``/``poll``."""
        return self.sock.fileno()

    def ring(self) -> None:
        """Wakes the bell's owner with a one-byte datagram; does nothing if the bell is rung
        already or its owner has closed it.
        """
        # A full queue means the bell is rung already; a refused datagram
        # means the owner has closed its bell, and nobody is left to wake.
        with contextlib.suppress(BlockingIOError, ConnectionRefusedError, FileNotFoundError):
            if self.owner:
                self.sock.sendto(b"\x01", self.address)
            else:
                self.sock.send(b"\x01")

    def clear(self) -> None:
        """Resets the bell after a wake-up, reading every datagram waiting."""
        with contextlib.suppress(BlockingIOError):
            while True:
                self.sock.recv(64)

    def close(self) -> None:
        """Closes the socket."""
        self.sock.close()

    def __repr__(self) -> str:
        role = "owner" if self.owner else "peer"
        return f"SocketDoorbell({self.address!r}, {role})"


__all__ = ["Doorbell", "EventfdDoorbell", "SocketDoorbell"]
