"""The host's UNIX socket for the runner inside a Docker sandbox
(:mod:`endstate_harness.sandbox.docker.runner`).
"""

from __future__ import annotations

import socket
from pathlib import Path

import docker.types

ACCEPT_S = 30.0
"""How long the runner may take to connect (an interpreter's start, under load)."""

SOCKET_MOUNT = "/.endstate-agent"
"""Where a container sees the folder of the host's socket for its runner (read-only)."""


class SocketOffer:
    """A UNIX socket on the host that the container's runner connects to, so that messages
    go straight between the two instead of through the daemon's relay.

    Why it is safe: the folder is the sandbox's private scratch (mode 0700), mounted into the
    container read-only; the runner is the first process to run there besides the keeper, and
    connects before its hello; the host accepts exactly one connection, and then closes the
    socket and removes the folder (:meth:`withdraw`) before any command runs, so nothing that
    runs later can reach it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.inside = f"{SOCKET_MOUNT}/s"
        self._path = folder / "s"
        self._listener: socket.socket | None = None
        folder.mkdir(mode=0o700)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self._path))
            listener.listen(1)
            listener.settimeout(ACCEPT_S)
        except OSError:
            listener.close()
            self.withdraw()
            raise
        self._listener = listener

    def mount(self) -> docker.types.Mount:
        return docker.types.Mount(SOCKET_MOUNT, str(self.folder), type="bind", read_only=True)

    def accept(self) -> socket.socket | None:
        listener = self._listener
        if listener is None:
            return None
        try:
            conn, _ = listener.accept()
        except OSError:
            return None
        finally:
            self.withdraw()
        conn.settimeout(None)
        return conn

    def withdraw(self) -> None:
        """Close the socket and remove its folder (idempotent)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        for remove in (self._path.unlink, self.folder.rmdir):
            try:
                remove()
            except OSError:
                pass


def offer_socket(scratch: Path) -> SocketOffer | None:
    """A socket for the runner in ``scratch``, or None where none can be made (a path too
    long for a UNIX socket, say): the runner then talks over the exec's streams."""
    folder = scratch / "runner"
    if len(str(folder / "s")) > 100:
        return None
    try:
        return SocketOffer(folder)
    except OSError:
        return None
