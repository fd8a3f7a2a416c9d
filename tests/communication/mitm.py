"""A man in the middle on loopback: forwards a TCP connection, and rewrites
the frames of one direction (client to server) after the handshake."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

HEADER = struct.Struct("<BQ32s")
CHALLENGES = 64          # the client's answer and its own challenge, before the frames


def _recv_exact(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


class Proxy:
    """Listens on loopback and forwards each connection to ``target``.

    ``rewrite(n, kind, header, payload)`` is called for every frame ``n``
    (from 0, the introduction) the client sends after its challenges, and
    returns the list of byte strings to forward in its place (``[]`` holds
    it back: a later call may return it)."""

    def __init__(self, target, rewrite):
        self.target = target
        self.rewrite = rewrite
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.sockets: list = []
        self.frames: list = []               # (kind, length) of every frame seen
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = self._dial()
            if server is None:
                client.close()
                continue
            self.sockets += [client, server]
            threading.Thread(target=self._frames, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _dial(self, patience: float = 20.0):
        # The target may not listen yet: the client reached the proxy first.
        deadline = time.monotonic() + patience
        while True:
            try:
                return socket.create_connection(self.target)
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.02)

    def _pipe(self, src, dst):
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _frames(self, src, dst):
        with contextlib.suppress(OSError, ConnectionError):
            dst.sendall(_recv_exact(src, CHALLENGES))
            n = 0
            while True:
                header = _recv_exact(src, HEADER.size)
                kind, length, _ = HEADER.unpack(header)
                payload = _recv_exact(src, length)
                self.frames.append((kind, length))
                for piece in self.rewrite(n, kind, header, payload):
                    dst.sendall(piece)
                n += 1
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self):
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()
