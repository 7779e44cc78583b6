"""The host's end of the runner inside a Docker sandbox
(:mod:`endstate_harness.inside.box_runner`); ``ENDSTATE_SANDBOX_RUNNER=0`` turns it off.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker
import docker.types
from docker.utils.socket import STDERR, frames_iter

import endstate_harness.inside as inside
from endstate_harness.sandbox.docker.daemon import DockerFailure, close_socket, no_timeout
from endstate_harness.sandbox.docker.runner_socket import SocketOffer
from endstate_harness.sandbox.recognise import (
    PER_RUN,
    PythonRun,
    ZygoteShape,
    recognise_joined,
    recognise_shell,
    shell_epilogue,
)
from endstate_harness.sandbox.warm import sandbox_warm_enabled

HELLO_S = 30.0
"""How long the runner may take to start (an interpreter's start, under load) before the
sandbox does without it."""
PYTHON = "python3"
RUNNER_ENV = "ENDSTATE_SANDBOX_RUNNER"
"""Set to ``0`` to run every command of a Docker sandbox as an exec of its own (debugging,
benchmarks)."""
OLD_RUNNER_ENV = "ENDSTATE_SANDBOX_AGENT"
"""Read as well: the name this switch had before the in-container program was called the
runner (in this project, "agent" means the model under evaluation)."""


def runner_enabled() -> bool:
    value = os.environ.get(RUNNER_ENV, os.environ.get(OLD_RUNNER_ENV, "1"))
    return value.strip() != "0"


PING_S = 5.0
"""How long a runner may take to answer a ping before its container is asked of the daemon."""
ZYGOTE_S = 70.0
"""How long the runner may take to start a zygote (it waits up to 60 s for it itself)."""


@functools.cache
def _source() -> str:
    """What the runner runs: its box and zygote parts, then its main part (all shipped as
    source, one text)."""
    return inside.program("box_runner")


@functools.cache
def _zygote_source() -> str:
    return inside.program("zygote")


MAX_FDS = 4
"""Most descriptors one message of the runner may carry (more are dropped by the kernel)."""


class RunnerGone(Exception):
    """The runner's stream ended (it was killed, or the container stopped)."""


class RunnerLink:
    """One runner process in a running container; commands through it run one at a time
    (the sandbox's command lock)."""

    def __init__(self, client: docker.DockerClient, cid: str, user: str,
                 env: dict[str, str], workdir: str, offer: SocketOffer | None = None) -> None:
        api = client.api
        argv = [PYTHON, "-I", "-S", "-c", _source(), offer.inside if offer is not None else ""]
        exec_id = api.exec_create(cid, argv, stdin=True, user=user, environment=env,
                                  workdir=workdir)["Id"]
        self._sock = api.exec_start(exec_id, socket=True)
        no_timeout(self._sock)
        self._conn: socket.socket | None = None
        self._inbox: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue()
        self._send_lock = threading.Lock()
        self._sink: Callable[[bytes, bytes], None] | None = None
        self._fd_batches: collections.deque[list[int]] = collections.deque()
        self._sink_lock = threading.Lock()
        self.stderr = bytearray()
        self.gone = False
        threading.Thread(target=self._read_exec, daemon=True).start()
        hello = self._next(HELLO_S)
        if hello is None or hello[0] != b"H":
            self.close()
            raise RunnerGone(self.stderr.decode("utf-8", "replace").strip()
                            or "the runner did not start")
        info = json.loads(hello[1])
        if info.get("socket") and offer is not None:
            self._conn = offer.accept()
            if self._conn is None:
                self.close()
                raise RunnerGone("the runner's socket connection did not arrive")
            threading.Thread(target=self._read_conn, args=(self._conn,), daemon=True).start()
        self.pid = int(info["pid"])
        self.environ: dict[str, str] = dict(info.get("environ", {}))
        """The environment an exec gets in this container (the runner's own)."""
        self.sh_is_dash = info.get("sh") == "dash"
        self.keeper_private = info.get("keeper") is True
        """Whether process 1 is the keeper and cannot be traced (the runner looked): then
        ending every other process leaves nothing a command could have taken over."""
        self.can_fork = bool(info.get("pidfd"))
        self._zygotes: dict[str, ZygoteShape | None] = {}

    def attach(self, sink: Callable[[bytes, bytes], None]) -> None:
        """Hand the next messages to ``sink`` (on the reader thread) instead of queueing
        them, up to and including the command's ``X``/``!``, or ``(b"", b"")`` when the
        runner is gone: a channel's round trip then crosses one thread less. Attached right
        before the command's request, when nothing else is awaited."""
        with self._sink_lock:
            self._sink = sink
            if self.gone:
                self._sink = None
                sink(b"", b"")

    def _deliver(self, item: tuple[bytes, bytes] | None) -> None:
        with self._sink_lock:
            sink = self._sink
            if sink is not None and (item is None or item[0] in (b"X", b"!")):
                self._sink = None
        if sink is None:
            self._inbox.put(item)
        else:
            sink(*(item or (b"", b"")))
            if item is None:
                self._inbox.put(None)

    def _parse(self, buf: bytearray) -> None:
        """Deliver every whole message at the start of ``buf`` (and drop it from there)."""
        while len(buf) >= 5:
            size = int.from_bytes(buf[1:5], "big")
            if len(buf) < 5 + size:
                break
            kind, payload = bytes(buf[:1]), bytes(buf[5:5 + size])
            del buf[:5 + size]
            if kind == b"F":  # the descriptors arrived with its first byte, in order
                fds = self._fd_batches.popleft() if payload == b"1" and self._fd_batches else []
                payload = json.dumps(fds).encode()
            self._deliver((kind, payload))

    def _read_exec(self) -> None:
        """The exec's stream: the hello (and every message, without a socket), the runner's
        own stderr, and its end, which is the runner's."""
        buf = bytearray()
        try:
            for stream_no, chunk in frames_iter(self._sock, tty=False):
                if stream_no == STDERR:
                    self.stderr.extend(chunk[: max(0, 4096 - len(self.stderr))])
                    continue
                buf.extend(chunk)
                self._parse(buf)
        except (OSError, ValueError, AttributeError):
            pass  # the stream closed under the read (docker's SocketIO drops its socket)
        finally:
            self.gone = True
            self._deliver(None)

    def _read_conn(self, conn: socket.socket) -> None:
        buf = bytearray()
        try:
            while True:
                data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, MAX_FDS,
                                                           socket.MSG_CMSG_CLOEXEC)
                if fds:
                    self._fd_batches.append(fds)
                if not data:
                    break
                buf.extend(data)
                self._parse(buf)
        except OSError:
            pass
        finally:
            self.gone = True
            self._deliver(None)
            for batch in self._fd_batches:  # handed over, never claimed
                for fd in batch:
                    os.close(fd)

    def _next(self, timeout: float | None = None) -> tuple[bytes, bytes] | None:
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            self._inbox.put(None)  # every later reader sees the end too
        return item

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        raw = self._conn or getattr(self._sock, "_sock", self._sock)
        with self._send_lock:
            try:
                raw.sendall(kind + len(payload).to_bytes(4, "big") + payload)
            except OSError:
                raise RunnerGone("the runner's stream is closed") from None

    def start(self, argv: list[str], cwd: str, *, stdin: bool, spare_arg: int | None = None,
              sink: Callable[[bytes, bytes], None] | None = None, direct: bool = False) -> None:
        """Start ``argv`` in the runner's own environment (an exec's); then read its output
        with :meth:`messages`. ``argv[spare_arg]`` is replaced by the runner's pids (itself
        and its zygotes), which the wrapper's sweep and the reset must spare."""
        if self.gone:
            raise RunnerGone("the runner stopped")
        if sink is not None:
            self.attach(sink)
        self.send(b"R", json.dumps(self._request(argv, cwd, stdin, spare_arg, direct)).encode())

    def _request(self, argv: list[str], cwd: str, stdin: bool, spare_arg: int | None,
                 direct: bool = False) -> dict[str, Any]:
        return {"argv": argv, "cwd": cwd, "stdin": stdin, "spare_arg": spare_arg,
                "direct": direct and stdin and self.hands_over}

    @property
    def hands_over(self) -> bool:
        """Whether a command's own stdin and stdout can be handed to this process (the
        runner talks over a UNIX socket, which carries descriptors)."""
        return self._conn is not None

    def start_command(self, command: str | list[str], fallback: list[str], spare_arg: int, *,
                      stdin: bool, limit: float, cwd: str, listing: list[str],
                      sink: Callable[[bytes, bytes], None] | None = None,
                      direct: bool = False) -> None:
        """Start ``/bin/sh -c command`` as ``fallback`` (the wrapped command) does, but
        forked from a warm interpreter when the command is a recognised Python run
        (:mod:`endstate_harness.sandbox.warm`) and ``listing`` (the working folder's names)
        shadows nothing the interpreter preloaded. A list stands for its ``shlex.join``
        (the shell splits it back into exactly that argv)."""
        if self.gone:
            raise RunnerGone("the runner stopped")
        warm = self._warm_request(command, limit, cwd, listing, stdin)
        if warm is None:
            self.start(fallback, cwd, stdin=stdin, spare_arg=spare_arg, sink=sink, direct=direct)
            return
        warm["fallback"] = self._request(fallback, cwd, stdin, spare_arg, direct)
        warm["direct"] = warm["fallback"]["direct"]
        if sink is not None:
            self.attach(sink)
        self.send(b"W", json.dumps(warm).encode())

    def _warm_request(self, command: str | list[str], limit: float, cwd: str,
                      listing: list[str], stdin: bool) -> dict[str, Any] | None:
        if not (self.can_fork and sandbox_warm_enabled()):
            return None
        if isinstance(command, list):  # skips re-parsing a long ``-c`` source with shlex
            run = recognise_joined(command, self.environ, sh_is_dash=self.sh_is_dash)
        else:
            run = recognise_shell(command, self.environ, sh_is_dash=self.sh_is_dash)
        if run is None:
            return None
        home = dict(run.env).get("HOME")
        user_site = "-s" not in run.flags
        if user_site and home is None:
            return None
        key = json.dumps([run.python, run.flags, run.mode, run.preload(), sorted(
            (k, v) for k, v in run.env if k not in PER_RUN)])
        shape = self._zygote(key, run)
        if shape is None or shape.shadows(run, listing, home_has_local=False):
            return None
        argv = [run.mode, *run.args] if run.mode == "-m" else ["-c", *run.args]
        spawn = {"op": "spawn", "cwd": cwd, "env": shape.run_env(run, cwd), "argv": argv,
                 "orig_argv": [run.python, *run.flags, run.mode, run.target, *run.args],
                 "mode": run.mode, "target": run.target}
        absent = [f"{home}/.local"] if user_site else []
        return {"key": key, "spawn": spawn, "limit": limit, "absent": absent, "stdin": stdin}

    def _zygote(self, key: str, run: PythonRun) -> ZygoteShape | None:
        """The shape of the container's zygote for ``key`` (started at first use; one that
        cannot start is not tried again in this container)."""
        if key in self._zygotes:
            return self._zygotes[key]
        env = {k: v for k, v in run.env if k not in PER_RUN}
        self.send(b"Z", json.dumps({"key": key, "head": [run.python, *run.flags],
                                    "source": _zygote_source(), "preload": ",".join(
                                        run.preload()), "env": env}).encode())
        reply = self._next(ZYGOTE_S)
        shape = None
        if reply is None:
            self.close()
            raise RunnerGone("the runner stopped or did not answer")
        if reply[0] == b"Z":
            answer = json.loads(reply[1])
            if answer.get("ok"):
                shape = ZygoteShape(answer["ready"], answer["env"], answer["home"])
        self._zygotes[key] = shape
        return shape

    def messages(self) -> Iterator[tuple[bytes, bytes]]:
        """The running command's ``O``/``E`` chunks, then its ``X`` (or ``!``); raises
        :class:`RunnerGone` when the stream ends first."""
        while True:
            item = self._next()
            if item is None:
                raise RunnerGone("the runner stopped")
            yield item
            if item[0] in (b"X", b"!"):
                return

    def call(self, argv: list[str], timeout_s: float) -> tuple[int, str]:
        """Run ``argv`` as it is (no wrapper) and wait for it: (exit code, stdout and stderr).
        A runner that does not answer in time is closed and :class:`RunnerGone` raised."""
        deadline = time.monotonic() + timeout_s
        self.start(argv, "/", stdin=False)
        out = bytearray()
        while True:
            item = self._next(max(0.0, deadline - time.monotonic()))
            if item is None:
                self.close()
                raise RunnerGone("the runner stopped or did not answer")
            kind, payload = item
            if kind in (b"O", b"E"):
                out.extend(payload)
            elif kind == b"X":
                return self.exit_code(payload), out.decode("utf-8", "replace")
            else:
                raise RunnerGone(payload.decode("utf-8", "replace"))

    def ping(self, timeout_s: float = PING_S) -> bool:
        """Whether the runner answers (so its container runs, and is not paused). Only while
        no command runs (the caller holds the sandbox's command lock)."""
        if self.gone:
            return False
        try:
            self.send(b"P")
        except RunnerGone:
            return False
        reply = self._next(timeout_s)
        if reply is None or reply[0] != b"P":
            self.close()  # an answer out of turn, or none: this runner is not trusted again
            return False
        return True

    def digest(self, timeout_s: float) -> str | None:
        """The digest of what a reset restores (``/tmp``, ``/dev``, the IPC tables)."""
        return self._ask_digest(b"D", b"", timeout_s)

    def reset(self, timeout_s: float) -> str | None:
        """Bring the container back to its state at creation (see ``_reset`` in the runner's
        source); the digest afterwards, or None when something would not go."""
        return self._ask_digest(b"Q", b"{}", timeout_s)

    def end_others(self, timeout_s: float = PING_S) -> bool:
        """Have the runner kill every process of the container but the keeper (process 1),
        itself and its zygotes, and wait until none is left (``_end_others`` in its source).
        True when it says none is left; False when some would not go. Raises
        :class:`RunnerGone` (and closes this runner) when it does not answer in time: a
        command may have stopped it. Only while no command runs."""
        self.send(b"K", b"ack")
        reply = self._next(timeout_s)
        if reply is None or reply[0] != b"K":
            self.close()  # an answer out of turn, or none: this runner is not trusted again
            raise RunnerGone("the runner did not answer")
        return bool(json.loads(reply[1]).get("quiet"))

    def _ask_digest(self, kind: bytes, payload: bytes, timeout_s: float) -> str | None:
        self.send(kind, payload)
        reply = self._next(timeout_s)
        if reply is None:
            self.close()
            raise RunnerGone("the runner stopped or did not answer")
        if reply[0] != b"D":
            return None
        digest = json.loads(reply[1]).get("digest")
        return digest if isinstance(digest, str) else None

    @staticmethod
    def exit_code(payload: bytes) -> int:
        """The code an exec would report: 128 + N for a death by signal N."""
        value: Any = json.loads(payload).get("code")
        if not isinstance(value, int):
            return -1
        return 128 - value if value < 0 else value

    @staticmethod
    def epilogue(payload: bytes) -> bytes:
        """What ``/bin/sh`` would have written after a forked run that died of a signal
        (it ran in no shell); nothing for a command the shell ran."""
        end = json.loads(payload)
        code = end.get("code")
        if not end.get("warm") or not isinstance(code, int):
            return b""
        return shell_epilogue(code)

    def close(self) -> None:
        """End the runner (it exits when its stdin closes) and the exec's connection."""
        self.gone = True
        for raw in (self._conn, getattr(self._sock, "_sock", self._sock)):
            try:
                if raw is not None:
                    raw.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass
        if self._conn is not None:
            self._conn.close()
        close_socket(self._sock)


def start_runner(client: docker.DockerClient, cid: str, user: str, env: dict[str, str],
                workdir: str, offer: SocketOffer | None = None) -> RunnerLink | None:
    """A runner in the container, or None when it cannot start there (see module doc) or is
    turned off (``ENDSTATE_SANDBOX_RUNNER=0``). The socket offered is withdrawn either way."""
    try:
        if not runner_enabled():
            return None
        return RunnerLink(client, cid, user, env, workdir, offer)
    except (RunnerGone, *DockerFailure, OSError, ValueError, KeyError):
        return None
    finally:
        if offer is not None:
            offer.withdraw()
