"""The two kinds of channel into a Docker sandbox (see
:class:`~endstate_harness.sandbox.channel.Channel`): through the runner inside the container
(:class:`RunnerChannel`), or an exec with stdin attached (:class:`DockerChannel`).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from docker.utils.socket import STDERR, frames_iter

from endstate_harness.process.cleanup import defer_signals
from endstate_harness.sandbox.channel import Channel
from endstate_harness.sandbox.docker.daemon import close_socket
from endstate_harness.sandbox.docker.runner import RunnerGone, RunnerLink

CHANNEL_DRAIN_S = 5.0
"""How long a closed channel's process may take to end by itself before it is killed."""


HAND_OVER_S = 10.0
"""How long the runner may take to hand a started command's stdin and stdout over."""


class RunnerChannel(Channel):
    """A command started by the runner with its stdin piped. Its stderr and its end come as
    the runner's messages; its stdout and stdin either as messages too (``I``/``O``), or,
    where the runner hands them over (:attr:`RunnerLink.hands_over`), as the pipes themselves:
    then :meth:`direct` gives them to the judge, and nothing is relayed at all."""

    def __init__(self, runner: RunnerLink, lock: threading.Lock, cap: int) -> None:
        self._runner = runner
        self._lock = lock
        self._cap = cap
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._err = bytearray()
        self._ended = threading.Event()
        self._settled = threading.Event()  # handed over (or not), or ended
        self._pipes: list[int] = []  # [stdout to read, stdin to write], when handed over
        self._closed = False
        if not runner.hands_over:
            self._settled.set()  # nothing will be handed over: relayed

    def take(self, kind: bytes, payload: bytes) -> None:
        """The runner's messages about this command (:meth:`RunnerLink.attach`)."""
        if kind == b"O":
            self._out.put(payload)
        elif kind == b"E":
            self._err.extend(payload[: max(0, self._cap - len(self._err))])
        elif kind == b"F":
            fds = [int(fd) for fd in json.loads(payload)]
            if len(fds) == 2:
                self._pipes = fds
            else:
                for fd in fds:
                    os.close(fd)
            self._settled.set()
        else:  # its end (X, !) or the runner's
            self._ended.set()
            self._settled.set()
            self._out.put(None)

    def _handed(self) -> bool:
        self._settled.wait(HAND_OVER_S)
        return bool(self._pipes)

    def direct(self) -> tuple[int, int] | None:
        """The command's own stdout and stdin, when the runner handed them over."""
        return (self._pipes[0], self._pipes[1]) if self._handed() else None

    def send(self, data: bytes) -> None:
        if self._handed():
            view = memoryview(data)
            while view:
                view = view[os.write(self._pipes[1], view):]
            return
        view = memoryview(data)
        for start in range(0, len(view), 1 << 20):
            try:
                self._runner.send(b"I", bytes(view[start:start + (1 << 20)]))
            except RunnerGone as exc:
                raise OSError(str(exc)) from None

    def close_input(self) -> None:
        if self._handed():
            fd, self._pipes[1] = self._pipes[1], -1
            if fd >= 0:
                os.close(fd)
            return
        try:
            self._runner.send(b"C")
        except RunnerGone:
            pass

    def chunks(self) -> Iterator[bytes]:
        if self._handed():
            while True:
                try:
                    data = os.read(self._pipes[0], 1 << 16)
                except OSError:
                    return
                if not data:
                    return
                yield data
        while True:
            item = self._out.get()
            if item is None:
                self._out.put(None)
                return
            yield item

    def stderr_text(self) -> str:
        return bytes(self._err).decode("utf-8", errors="replace")

    def close(self) -> None:
        with defer_signals():
            if self._closed:
                return
            self._closed = True
            try:
                # As the local channel does: the process and everything in the container but
                # the runner's own are killed at once (its answers are all in by now), and
                # its end awaited, so the next command starts on a quiet container.
                self.close_input()
                if not self._ended.is_set():
                    try:
                        self._runner.send(b"K")
                    except RunnerGone:
                        pass
                    if not self._ended.wait(CHANNEL_DRAIN_S):
                        self._runner.close()  # wedged: the sandbox goes on with execs
            finally:
                pipes, self._pipes = self._pipes, []
                for fd in pipes:
                    if fd >= 0:
                        os.close(fd)
                self._lock.release()


class DockerChannel(Channel):
    """An exec with its stdin attached; stdout and stderr demultiplexed by a reader thread."""

    def __init__(
        self, sock: Any, lock: threading.Lock, cap: int, sweep: Callable[[], None]
    ) -> None:
        self._sweep = sweep
        """Kills whatever the process left in the container, when its exec does not end."""
        self._sock = sock
        self._lock = lock
        self._cap = cap
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._err = bytearray()
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _raw(self) -> socket.socket:
        raw = getattr(self._sock, "_sock", self._sock)
        return raw  # type: ignore[no-any-return]

    def _read(self) -> None:
        try:
            for stream_no, chunk in frames_iter(self._sock, tty=False):
                if stream_no == STDERR:
                    room = max(0, self._cap - len(self._err))
                    self._err.extend(chunk[:room])
                else:
                    self._out.put(chunk)
        except (OSError, ValueError, AttributeError):
            pass  # the stream closed under the read (docker's SocketIO drops its socket)
        finally:
            self._out.put(None)

    def send(self, data: bytes) -> None:
        self._raw().sendall(data)

    def close_input(self) -> None:
        try:
            self._raw().shutdown(socket.SHUT_WR)
        except (OSError, AttributeError):  # already closed (the raw socket is gone)
            pass

    def chunks(self) -> Iterator[bytes]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def stderr_text(self) -> str:
        return bytes(self._err).decode("utf-8", errors="replace")

    def close(self) -> None:
        with defer_signals():
            if self._closed:
                return
            self._closed = True
            try:
                # Input closed, the child ends and the wrapper sweeps what it left; the
                # container is swept from an exec of its own as well, since the child may
                # have killed or traced its wrapper (a shell of its uid).
                self.close_input()
                self._reader.join(CHANNEL_DRAIN_S)
                close_socket(self._sock)
                self._sweep()
            finally:
                self._lock.release()
