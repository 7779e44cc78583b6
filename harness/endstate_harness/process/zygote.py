"""A warm start for trusted host processes (the judge): a pre-started interpreter, forked per
run. ``ENDSTATE_WARM=0`` turns it off.

Usage (internal): ``python -s -B -m endstate_harness.process.zygote MODULE SOCKET_FD``.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, Protocol

from endstate_harness.process.cleanup import OPEN_SANDBOXES, defer_signals

WARM_ENV = "ENDSTATE_WARM"
"""Set to ``0`` to start every judge as a fresh process."""

_MAX_MSG = 1 << 20


def warm_enabled() -> bool:
    return os.environ.get(WARM_ENV, "1").strip() != "0" and hasattr(os, "pidfd_open")


class _Reaper(Protocol):
    def reap(self, pid: int) -> int: ...


class ForkedRun:
    """A run forked by a zygote (this module's or a sandbox's): the part of
    :class:`subprocess.Popen` that waits for it, polls and kills it. Its pid stays reserved
    until the zygote reaps it on request, so :meth:`kill` can never hit a recycled pid."""

    def __init__(self, zygote: _Reaper, pid: int) -> None:
        self._zygote = zygote
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid)

    def _ended(self, timeout: float | None) -> bool:
        ready, _, _ = select.select([self._pidfd], [], [], timeout)
        return bool(ready)

    def _reap(self) -> int:
        if self.returncode is None:
            try:
                self.returncode = self._zygote.reap(self.pid)
            except OSError:
                self.returncode = -signal.SIGKILL  # the zygote is gone, and with it the status
            os.close(self._pidfd)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        return self._reap() if self._ended(0) else None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired("warm run", timeout or 0.0)
        return self._reap()

    def kill(self) -> None:
        if self.returncode is None:  # not reaped, so the pid is still this run's
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class WarmProcess(ForkedRun):
    """A judge forked by the zygote: the subset of :class:`subprocess.Popen` the judge uses."""

    def __init__(self, zygote: Zygote, pid: int, stdin: IO[bytes] | None,
                 stdout: IO[bytes] | None) -> None:
        super().__init__(zygote, pid)
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout


class Zygote:
    """The pre-started interpreter for one module; :meth:`spawn` forks a run of it."""

    def __init__(self, module: str, env: dict[str, str],
                 on_ready: Callable[[Zygote], None] | None = None) -> None:
        """Start it and wait until it is ready; then ``on_ready`` puts it in its table.

        Why the table is filled from here: a Ctrl-C can land at any call's return, also at
        this constructor's, before the caller stores what it got. Until ``on_ready`` has run
        the zygote is known to nobody but this frame, so anything raised until then (a
        signal's exception included) ends it here; once it is in the table, the exit sweep
        ends it."""
        self.module = module
        self._lock = threading.Lock()
        try:
            self._start(env)
            self._sock.settimeout(60)
            try:  # the zygote says it is ready (module imported)
                reply = self._sock.recv(_MAX_MSG)
            except OSError:
                reply = b""
            self._sock.settimeout(None)
            if json.loads(reply or b"{}").get("ready") is not True:
                raise OSError(f"the warm interpreter for {module} did not start")
            if on_ready is not None:
                on_ready(self)
        except BaseException:
            if "_sock" in self.__dict__:
                self.close()  # twice is harmless, should it be in the table already
            raise

    def _start(self, env: dict[str, str]) -> None:
        """Its process. Signals wait until ``self._sock`` says it exists: a Ctrl-C between the
        fork and that would leave a process nobody knows of (the section is short: a fork and
        an exec); one that came meanwhile is raised as it ends."""
        with defer_signals():
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self.proc = subprocess.Popen(
                    [sys.executable, "-s", "-B", "-m", "endstate_harness.process.zygote",
                     self.module, str(theirs.fileno())],
                    cwd="/",
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
            except BaseException:
                mine.close()
                raise
            finally:
                theirs.close()
            self._sock = mine

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _ask(self, request: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        with self._lock:
            socket.send_fds(self._sock, [json.dumps(request).encode()], fds or [])
            reply = self._sock.recv(_MAX_MSG)
        if not reply:
            raise OSError("the warm interpreter is gone")
        answer: dict[str, Any] = json.loads(reply)
        if "error" in answer:
            raise OSError(str(answer["error"]))
        return answer

    def spawn(self, arg: str, *, cwd: str, report_fd: int,
              stdio: tuple[int, int] | None = None) -> WarmProcess:
        """Fork a run of the module with ``arg`` as ``sys.argv[1]`` (a JSON config whose
        ``report_fd`` is rewritten to the run's own copy of ``report_fd``); its stdin and
        stdout are new pipes, or the two descriptors of ``stdio`` (then not pipes of ours)."""
        if stdio is not None:
            answer = self._ask({"op": "spawn", "arg": arg, "cwd": cwd},
                               [stdio[0], stdio[1], report_fd])
            return WarmProcess(self, int(answer["pid"]), None, None)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            answer = self._ask(
                {"op": "spawn", "arg": arg, "cwd": cwd}, [in_r, out_w, report_fd]
            )
        except BaseException:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        return WarmProcess(self, int(answer["pid"]), os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"))

    def reap(self, pid: int) -> int:
        return int(self._ask({"op": "reap", "pid": pid})["status"])

    def close(self) -> None:
        with defer_signals():  # a signal halfway through would leave the process behind
            try:
                self._sock.close()
            finally:
                if self.proc.poll() is None:
                    self.proc.kill()
                self.proc.wait()


_zygotes: dict[tuple[str, str], Zygote] = {}
_zygotes_lock = threading.Lock()


class ZygoteRegistry:
    """Closes every zygote of one table (registered with the open-sandbox registry for exit
    and signals); the judge's zygotes here and the sandboxes' in ``sandbox_warm``."""

    def __init__(self, table: dict[Any, Any], lock: threading.Lock) -> None:
        self._table = table
        self._lock = lock
        self._registered = False

    def register(self) -> None:
        """Put the table where the exit sweep and the signal handlers find it, once, before
        its first zygote starts: a sweep meanwhile then waits for the table's lock and closes
        what was being started (registered after the start, as it was, it missed a zygote
        still coming up). Once: the table is never taken off again."""
        if not self._registered:
            OPEN_SANDBOXES.add(self)
            self._registered = True

    def close(self) -> None:
        with self._lock:
            zygotes = list(self._table.values())
            self._table.clear()
        for zygote in zygotes:
            try:
                zygote.close()
            except OSError:  # one that cannot be closed must not keep the others open
                pass


_REGISTRY = ZygoteRegistry(_zygotes, _zygotes_lock)


def zygote_for(module: str, env: dict[str, str]) -> Zygote | None:
    """The running zygote of ``module`` for this environment (started on first use), or None
    when the warm start is off or cannot start."""
    if not warm_enabled():
        return None
    key = (module, json.dumps(env, sort_keys=True))
    _REGISTRY.register()
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            zygote.close()
        try:
            zygote = Zygote(module, env, on_ready=functools.partial(_zygotes.__setitem__, key))
        except (OSError, ValueError):
            _zygotes.pop(key, None)
            return None
    return zygote


# ----------------------------------------------------------------------------- the zygote side


def _serve(module_name: str, sock: socket.socket) -> None:
    """The zygote's loop: fork a run per ``spawn``, reap one per ``reap``; exit on EOF.

    Undumpable first (its runs are too): no other process of this user, the code a run
    judges included, can read its memory or descriptors or trace it."""
    import ctypes  # deferred: only the zygote process, never the harness, needs it

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    module = importlib.import_module(module_name)
    sock.send(json.dumps({"ready": True}).encode())
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MSG, 8)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        request = json.loads(msg)
        if request.get("op") == "reap":
            try:
                _, status = os.waitpid(int(request["pid"]), 0)
                code = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                code = -1
            sock.send(json.dumps({"status": code}).encode())
            continue
        if request.get("op") != "spawn" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "bad request"}).encode())
            continue
        try:
            pid = os.fork()
        except OSError as exc:
            pid = -1
            error = str(exc)
        if pid == 0:
            _run_child(module, sock, request, fds)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid} if pid > 0 else {"error": error}).encode())


def _run_child(module: Any, sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked run: become what a fresh ``python -s -B -m MODULE ARG`` in ``cwd`` with
    its own session would be, then run ``main()``; never returns."""
    try:
        sock.close()
        os.setsid()
        stdin_fd, stdout_fd, report_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.close(stdin_fd)
        os.close(stdout_fd)
        cwd = str(request["cwd"])
        os.chdir(cwd)
        sys.path[0] = cwd  # what -m makes of sys.path[0]: the working folder at start
        config = json.loads(request["arg"])
        config["report_fd"] = report_fd
        sys.argv = [module.__file__, json.dumps(config)]
        module.main()
    finally:
        os._exit(70)


if __name__ == "__main__":
    _serve(sys.argv[1], socket.socket(fileno=int(sys.argv[2])))
