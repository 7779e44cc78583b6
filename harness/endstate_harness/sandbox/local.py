"""The local sandbox: commands run as host subprocesses in the live tree, walled in.

Where bubblewrap can start, every command (the agent's shell, a grader's command, the judge's
child, a run forked from a warm interpreter) runs behind walls
(:mod:`endstate_harness.sandbox.walls`); where it cannot, it runs without them, says so once,
and every verdict it grades is marked "no walls" (docs/guide/sandbox.md says what each
guarantees).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import endstate_harness.sandbox.walls as walls_mod
from endstate_harness.fdtree import remove_tree
from endstate_harness.process.groups import await_gone, await_group_gone, kill_group, kill_tree
from endstate_harness.sandbox.base import (
    DEFAULT_TIMEOUT_S,
    OUTPUT_CAP_BYTES,
    Channel,
    ExecResult,
    SandboxError,
    TreeSandbox,
    cap_output,
    defer_signals,
)
from endstate_harness.sandbox.command import seeded_env
from endstate_harness.sandbox.walls import Walls
from endstate_harness.sandbox.warm import (
    WarmRun,
    recognise_argv,
    recognise_shell,
    shell_epilogue,
    start_warm,
)

Process = subprocess.Popen[bytes] | WarmRun
"""A command's process: a fresh one, or a run forked by the warm interpreter
(:mod:`endstate_harness.sandbox.warm`); either way its own session and process group."""

TIMEOUT_EXIT_CODE = 124
"""The exit code of a command that ran out of time (coreutils ``timeout``'s convention)."""

DRAIN_GRACE_S = 1.0
"""After the command's group is killed, how long to wait for its pipes to close. Only a
process that escaped the group (``setsid``) can hold them open longer; we stop reading then."""

_READ_CHUNK = 1 << 16


class _Stream:
    """Captured bytes of one pipe, up to a cap; the excess is counted and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if room > 0:
            self.parts.append(data[:room])
            self.size += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        return cap_output(b"".join(self.parts), self.dropped)


def _read_until_closed(fd: int) -> Iterator[bytes]:
    """What a pipe carries, chunk by chunk, until its writers close it (or it breaks)."""
    while True:
        try:
            data = os.read(fd, _READ_CHUNK)
        except OSError:
            return
        if not data:
            return
        yield data


class _ExitWatch:
    """A file descriptor that becomes readable when a process exits, *without reaping it*.

    While the leader is an unreaped zombie its pid, hence its process-group id, cannot be
    reused, so killing the group afterwards can never hit an unrelated process. pidfd (Linux
    5.3+) gives that directly; elsewhere a thread waits with ``WNOWAIT`` and writes to a pipe.
    """

    def __init__(self, pid: int) -> None:
        self._pidfd: int | None = None
        self._pipe: tuple[int, int] | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            read_end, write_end = os.pipe()
            self._pipe = (read_end, write_end)
            threading.Thread(target=self._wait, args=(pid, write_end), daemon=True).start()

    @staticmethod
    def _wait(pid: int, write_end: int) -> None:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except OSError:
            pass
        try:
            os.write(write_end, b"x")
        except OSError:
            pass  # the reader gave up already
        finally:
            os.close(write_end)  # owned by this thread, so it is never closed twice

    def fileno(self) -> int:
        if self._pidfd is not None:
            return self._pidfd
        assert self._pipe is not None
        return self._pipe[0]

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
        if self._pipe is not None:
            os.close(self._pipe[0])


class LocalSandbox(TreeSandbox):
    """A :class:`TreeSandbox` whose commands are host subprocesses (see the module docstring).

    Args:
        fixture: the task's fixture folder (read, never modified).
        scratch_root: where to make the scratch folder (the system temp dir by default).
        default_timeout_s: the limit of a command run without ``timeout_s``.
        output_cap: bytes kept per stream (stdout, stderr) of one command.
        path_env: the PATH commands get (the host's PATH by default, so tools are found).
        walls: ``None`` walls every command in where bubblewrap can start (and runs without
            walls, saying so, where it cannot); ``False`` never; ``True`` requires them
            (:meth:`start` raises :class:`SandboxError` with the reason when they cannot
            stand).
    """

    def __init__(
        self,
        fixture: Path,
        *,
        scratch_root: Path | None = None,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        output_cap: int = OUTPUT_CAP_BYTES,
        path_env: str | None = None,
        walls: bool | None = None,
    ) -> None:
        super().__init__(fixture, scratch_root=scratch_root, default_timeout_s=default_timeout_s)
        self.output_cap = output_cap
        self.path_env = path_env if path_env is not None else os.environ.get("PATH", os.defpath)
        self._walls_wanted = walls
        self._walls: Walls | None = None
        self._no_walls: str | None = "not started"
        self._channels: dict[int, LocalChannel] = {}
        """Open channels, ended by :meth:`close` if their callers have not ended them."""

    def start(self) -> None:
        """Decide the walls (:func:`endstate_harness.sandbox.walls.status`) and make the
        sandbox's own ``/tmp``, which its commands see until the seal."""
        self._decide_walls()
        (self.scratch / "tmp").mkdir(exist_ok=True)

    def _decide_walls(self) -> None:
        if self._no_walls != "not started":
            return
        if self._walls_wanted is False:
            self._walls, self._no_walls = None, "turned off for this sandbox"
        else:
            found = walls_mod.status(self.path_env)
            if not found.available and self._walls_wanted:
                raise SandboxError(f"the local sandbox cannot be walled in: {found.reason}")
            self._walls = Walls(found.bwrap, self.path_env,
                                walls_mod.covers_for(self.fixture, self.path_env)
                                ) if found.available else None
            self._no_walls = None if found.available else found.reason

    def walls_note(self) -> str | None:
        """Why commands run without walls here, or None when they are walled in."""
        self._decide_walls()
        return self._no_walls

    def walls(self) -> str:
        return "none" if self.walls_note() is not None else "bubblewrap"

    def command_env(self) -> dict[str, str]:
        """The whole environment of a command: nothing is inherited from the host."""
        return {"PATH": self.path_env, "HOME": str(self.home), **seeded_env(self.hash_seed)}

    def binds(self, private: Path | None = None) -> list[tuple[str, str]]:
        """The folders a walled command may write (host folder, where it appears): the live
        tree, and before the seal the sandbox's HOME and its own ``/tmp``; after it, the run's
        private folder as ``/tmp``, which is its HOME and TMPDIR too (:meth:`private_env`)."""
        if private is not None:
            return [(str(self.live), str(self.live)), (str(private), "/tmp")]
        tmp = self.scratch / "tmp"
        tmp.mkdir(exist_ok=True)  # made at start(); a sandbox used without it gets it here
        return [(str(self.live), str(self.live)), (str(self.home), str(self.home)),
                (str(tmp), "/tmp")]

    def private_env(self, private: Path) -> dict[str, str]:
        """A grading command's environment: HOME and TMPDIR are its private folder (``/tmp``
        behind the walls, where that folder is)."""
        self._decide_walls()
        where = "/tmp" if self._walls is not None else str(private)
        return {**self.command_env(), "HOME": where, "TMPDIR": where}

    def open_channel(self, argv: list[str], *, timeout_s: float) -> Channel:
        """See :meth:`Sandbox.open_channel`; the process gets its own HOME and TMPDIR."""
        return open_local_channel(self, argv, self._timeout(timeout_s))

    def _close_backend(self) -> None:
        for channel in list(self._channels.values()):
            channel.close()

    def _run_command(self, command: str, limit: float) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in the live tree; see the module docstring."""
        with self._private_env() as (env, private):
            return self._run_in(command, limit, env, self.binds(private))

    @contextmanager
    def _private_env(self) -> Iterator[tuple[dict[str, str], Path | None]]:
        """The command's environment; after the seal with a HOME and TMPDIR of its own,
        removed afterwards, so what a grading command leaves there dies with it."""
        if not self.sealed:
            yield self.command_env(), None
            return
        private: Path | None = None
        try:
            with defer_signals():  # a signal meanwhile is raised as it ends: inside this try
                private = Path(tempfile.mkdtemp(prefix="run-", dir=self.scratch))
            yield self.private_env(private), private
        finally:
            if private is not None:
                remove_tree(private)

    def walled(self, argv: list[str], binds: list[tuple[str, str]]) -> list[str]:
        """``argv`` as it starts: behind the walls, when there are walls."""
        self._decide_walls()
        if self._walls is None:
            return argv
        return self._walls.command(argv, binds, str(self.live))

    def warm_walls(self, binds: list[tuple[str, str]]) -> tuple[Walls, walls_mod.Layout] | None:
        """The walls a warm run of this sandbox is forked behind, and its layout."""
        self._decide_walls()
        if self._walls is None:
            return None
        return self._walls, self._walls.layout(binds, str(self.live), str(self.scratch.parent))

    def _run_in(self, command: str, limit: float, env: dict[str, str],
                binds: list[tuple[str, str]], warm: bool = True) -> ExecResult:
        live = self.live
        out, err = _Stream(self.output_cap), _Stream(self.output_cap)
        timed_out = False
        proc: Process | None = None
        unwalled: str | None = None
        try:
            # Spawned and recorded as one step: an interrupt landing just after the fork would
            # otherwise leave a child nobody kills. The wait below is not deferred, so Ctrl-C
            # still stops a long command at once.
            with defer_signals():
                proc = start_warm(recognise_shell(command, env) if warm else None, str(live),
                                  stdin_pipe=False, parent=str(self.scratch.parent),
                                  walled=self.warm_walls(binds))
                try:
                    proc = proc or subprocess.Popen(
                        self.walled(["/bin/sh", "-c", command], binds),
                        cwd=live,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        start_new_session=True,  # its own session, hence its own process group
                        close_fds=True,
                    )
                except OSError as exc:
                    raise SandboxError(f"could not start /bin/sh in {live}: {exc}") from exc
            timed_out = _collect(proc, out, err, limit)
        finally:
            # Also on Ctrl-C: nothing the command started survives it. The leader is not
            # reaped yet, so its group id still names only its own processes.
            if proc is not None:
                inner = kill_tree(proc.pid)  # behind walls: a session and namespace of its own
                if isinstance(proc, WarmRun):
                    unwalled = proc.walls_failed()
                proc.wait()
                await_group_gone(proc.pid)
                await_gone(inner)
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
        assert proc is not None
        if unwalled is not None:  # the warm run's walls did not stand: it ran nothing
            return self._run_in(command, limit, env, binds, warm=False)
        if timed_out:
            return ExecResult(TIMEOUT_EXIT_CODE, out.text(), err.text(), timed_out=True)
        code = proc.wait()  # reaped already: the exit code
        if isinstance(proc, WarmRun):
            err.add(shell_epilogue(code))  # the line /bin/sh writes after a signal
        if code < 0:
            code = 128 - code  # killed by a signal: report it the way a shell does
        return ExecResult(code, out.text(), err.text())


def _collect(proc: Process, out: _Stream, err: _Stream, limit: float) -> bool:
    """Read both pipes until the command ends (or time runs out); True when it timed out.

    When the leader exits its group is killed at once, so background children die with it
    and the pipes reach end of file; their buffered output is still read.
    """
    assert proc.stdout is not None and proc.stderr is not None
    streams: dict[int, _Stream] = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    watch = _ExitWatch(proc.pid)
    deadline = time.monotonic() + limit
    exited = False
    with selectors.DefaultSelector() as sel:
        pipe: IO[bytes]
        for pipe in (proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
            sel.register(pipe.fileno(), selectors.EVENT_READ)
        sel.register(watch.fileno(), selectors.EVENT_READ)
        try:
            while True:
                if exited and not streams:
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if exited:
                        return False  # an escaped process holds the pipes; stop reading
                    return True
                for key, _ in sel.select(remaining):
                    fd = int(key.fd)
                    if fd == watch.fileno():
                        exited = True
                        sel.unregister(fd)
                        kill_group(proc.pid)
                        deadline = min(deadline, time.monotonic() + DRAIN_GRACE_S)
                        continue
                    try:
                        data = os.read(fd, _READ_CHUNK)
                    except BlockingIOError:
                        continue
                    if data:
                        streams[fd].add(data)
                    else:
                        sel.unregister(fd)
                        del streams[fd]
        finally:
            watch.close()


class LocalChannel(Channel):
    """A host subprocess in its own session, talked to over pipes (see :class:`Channel`)."""

    def __init__(self, proc: Process, private: Path, limit: float, cap: int,
                 on_close: Callable[[LocalChannel], object] | None = None) -> None:
        self.proc = proc
        self._private = private
        self._on_close = on_close
        self._err = _Stream(cap)
        self._closed = False
        self._timer = threading.Timer(limit, self._kill)
        self._timer.daemon = True
        self._timer.start()
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for data in _read_until_closed(self.proc.stderr.fileno()):
            self._err.add(data)

    def _kill(self) -> None:
        kill_tree(self.proc.pid)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_input(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def chunks(self) -> Iterator[bytes]:
        assert self.proc.stdout is not None
        yield from _read_until_closed(self.proc.stdout.fileno())

    def stderr_text(self) -> str:
        return self._err.text()

    def direct(self) -> tuple[int, int] | None:
        """The process's own pipes (see :meth:`Channel.direct`): it is a process here."""
        if self.proc.stdout is None or self.proc.stdin is None:
            return None
        return self.proc.stdout.fileno(), self.proc.stdin.fileno()

    def close(self) -> None:
        with defer_signals():
            if self._closed:
                return
            self._closed = True
            self._timer.cancel()
            inner = kill_tree(self.proc.pid)
            self.proc.wait()
            await_gone(inner)
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
            remove_tree(self._private)
            if self._on_close is not None:
                self._on_close(self)


def open_local_channel(box: LocalSandbox, argv: list[str], limit: float) -> LocalChannel:
    """Start ``argv`` in ``box``'s live tree, refreshed from the snapshot without the holdout."""
    if not box.sealed:
        raise SandboxError("a channel is opened on the sealed end state: seal() first")
    with box._lock:
        live = box._refresh_live(with_holdout=False)
    # The folder, the process and the channel that ends both are made and recorded in the
    # sandbox as one step: the sandbox's close ends a channel its caller never got to hold
    # (a signal at this function's return, before the caller stores what it returns).
    with defer_signals():
        channel = _start_channel(box, argv, live, limit)
        box._channels[id(channel)] = channel
    return channel


def _start_channel(box: LocalSandbox, argv: list[str], live: Path, limit: float) -> LocalChannel:
    """The channel's folder and process (see :func:`open_local_channel`)."""
    private = Path(tempfile.mkdtemp(prefix="channel-", dir=box.scratch))
    env = box.private_env(private)
    binds = box.binds(private)
    proc: Process | None = start_warm(
        recognise_argv(argv, env), str(live), stdin_pipe=True, parent=str(box.scratch.parent),
        walled=box.warm_walls(binds),
    )
    if isinstance(proc, WarmRun) and proc.walls_failed() is not None:
        kill_group(proc.pid)  # it ran nothing: started again below, fresh and walled
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc = None
    try:
        proc = proc or subprocess.Popen(
            box.walled(argv, binds),
            cwd=live,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        remove_tree(private)
        raise SandboxError(f"could not start {argv[0]!r} in the sandbox: {exc}") from exc
    return LocalChannel(proc, private, limit, box.output_cap,
                        on_close=lambda ended: box._channels.pop(id(ended), None))
