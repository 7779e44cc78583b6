"""A warm start for the Python programs that run *in* a sandbox: recognise, then fork from a
zygote (:mod:`endstate_harness.inside.zygote`); anything not recognised runs fresh.
``ENDSTATE_WARM=0`` or ``ENDSTATE_WARM_SANDBOX=0`` turns it off.
"""

from __future__ import annotations

import functools
import marshal
import os
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import endstate_harness.inside as inside
import endstate_harness.sandbox.walls as walls_mod
from endstate_harness.fdtree import remove_tree
from endstate_harness.process import watchdog
from endstate_harness.process.cleanup import defer_signals, pid_alive
from endstate_harness.process.groups import await_gone, kill_tree
from endstate_harness.process.zygote import ForkedRun, ZygoteRegistry, warm_enabled
from endstate_harness.sandbox.command import DEFAULT_HASH_SEED, seeded_env
from endstate_harness.sandbox.recognise import (
    PER_RUN,
    PythonRun,
    ZygoteShape,
    recognise_argv,
    recognise_joined,
    recognise_shell,
    shell_epilogue,
)
from endstate_harness.sandbox.walls import Layout, Walls

__all__ = [
    "PER_RUN",
    "PythonRun",
    "SandboxZygote",
    "WarmRun",
    "ZygoteShape",
    "prestart",
    "prestart_channel",
    "recognise_argv",
    "recognise_joined",
    "recognise_shell",
    "sandbox_warm_enabled",
    "shell_epilogue",
    "start_warm",
    "started",
]

SANDBOX_WARM_ENV = "ENDSTATE_WARM_SANDBOX"
"""Set to ``0`` to start every run in the sandbox fresh while the judge stays warm
(``ENDSTATE_WARM=0`` turns both off); for benchmarks that show each part's share."""


def sandbox_warm_enabled() -> bool:
    return warm_enabled() and os.environ.get(SANDBOX_WARM_ENV, "1").strip() != "0"


_MAX_MSG = 1 << 22
ANSWER_S = 10.0
"""How long the zygote may take to answer a request (it forks or reaps at once) before it is
killed and its runs are reported as killed; the next run starts a new zygote."""


class WarmRun(ForkedRun):
    """A run forked by a sandbox zygote: the subset of :class:`subprocess.Popen` the
    sandboxes use (``pid``, the three pipes, ``poll``/``wait``/``kill``, ``returncode``)."""

    def __init__(self, zygote: SandboxZygote, pid: int, pipes: list[IO[bytes] | None],
                 ready: int | None = None) -> None:
        super().__init__(zygote, pid)
        self.stdin, self.stdout, self.stderr = pipes
        self._ready = ready
        self._walls: str | None = None

    def walls_failed(self) -> str | None:
        """Why a walled run's walls did not stand (it then ran nothing), or None. Blocks
        until the run says, which it does before anything of it runs."""
        fd, self._ready = self._ready, None
        if fd is not None:
            said = b""
            try:
                while not said.startswith(b"+") and (part := os.read(fd, 4096)):
                    said += part
            except OSError as exc:
                said = f"-{exc}".encode()
            finally:
                os.close(fd)
            if not said.startswith(b"+"):
                self._walls = said[1:].decode("utf-8", "replace") or "the run ended first"
        return self._walls

    def _reap(self) -> int:
        if self._ready is not None:
            os.close(self._ready)
            self._ready = None
        return super()._reap()


class SandboxZygote:
    """One pre-started interpreter (see the module docstring); :meth:`spawn` forks a run."""

    def __init__(self, run: PythonRun, zygote_env: dict[str, str], parent: str | None,
                 walls: Walls | None = None,
                 on_ready: Callable[[SandboxZygote], None] | None = None) -> None:
        """Start it and wait until it is ready; then ``on_ready`` puts it in its table, from
        here for the reason :class:`endstate_harness.process.zygote.Zygote` gives."""
        self.run = run
        self.walls = walls
        self._lock = threading.Lock()
        _remove_orphaned_folders(parent)
        source = inside.program("zygote")
        self.argv_head = [run.python, *run.flags]
        try:
            zygote_env = self._start(run, zygote_env, parent, walls, source)
            ready = self._ready()
            self._sock.settimeout(ANSWER_S)
            if not isinstance(ready, dict) or ready.get("ready") is not True or (
                    walls is not None and ready.get("walled") is not True):
                raise OSError(f"the warm {run.python} did not start")
            self.shape = ZygoteShape({"cwd": self.folder, **ready}, zygote_env, self.home)
            if on_ready is not None:
                on_ready(self)
        except BaseException:
            if "_sock" in self.__dict__:  # started (a failed start has removed its folder)
                self.close()  # twice is harmless, should it be in the table already
            raise

    def _start(self, run: PythonRun, zygote_env: dict[str, str], parent: str | None,
               walls: Walls | None, source: str) -> dict[str, str]:
        """Its folder and its process; the environment it was started with. From the folder
        to ``self._sock``, signals wait: a Ctrl-C in between would leave a folder or a process
        nobody knows of (the section is short: a fork and an exec); one that came meanwhile is
        raised as it ends."""
        with defer_signals():
            self.folder = tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-", dir=parent)
            watchdog.protect(self.folder)  # Ray kills a unit's whole tree, this zygote with it
            self.home = os.path.join(self.folder, "home")
            zygote_env = {**zygote_env, "HOME": self.home, "TMPDIR": self.home}
            mine = theirs = None
            try:
                os.mkdir(self.home)
                mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                argv = [*self.argv_head, "-c", source, str(theirs.fileno()),
                        ",".join(run.preload())]
                if walls is not None:  # behind bubblewrap; each run walls itself in further
                    argv = walls.zygote([*argv, "walled"], os.path.dirname(self.folder),
                                        self.folder)
                self.proc = subprocess.Popen(
                    argv,
                    cwd=self.folder, env=zygote_env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),), start_new_session=True,
                )
            except BaseException:
                if mine is not None:
                    mine.close()
                remove_tree_quietly(self.folder)
                watchdog.release(self.folder)
                raise
            finally:
                if theirs is not None:
                    theirs.close()
            self._sock = mine
        return zygote_env

    def _ready(self) -> Any:
        """What the zygote says once it is up (``{}``: it said nothing, or nothing readable)."""
        self._sock.settimeout(60)
        try:
            return marshal.loads(self._sock.recv(_MAX_MSG))
        except (OSError, EOFError, ValueError, TypeError):
            return {}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def shadowed(self, run: PythonRun, cwd: str) -> bool:
        """Whether the working folder could change what a fresh run imports or runs."""
        try:
            names = os.listdir(cwd)
        except OSError:
            return True
        home = dict(run.env).get("HOME")
        return self.shape.shadows(run, names, home is None or os.path.lexists(
            os.path.join(home, ".local")))

    def run_env(self, run: PythonRun, cwd: str) -> dict[str, str]:
        return self.shape.run_env(run, cwd)

    def _ask(self, request: dict[str, Any], fds: list[int] | None = None,
             got: list[int] | None = None) -> dict[str, Any]:
        """One request, one answer; descriptors sent with the answer land in ``got``."""
        with self._lock:
            try:
                socket.send_fds(self._sock, [marshal.dumps(request)], fds or [])
                reply, received, _flags, _addr = socket.recv_fds(self._sock, _MAX_MSG, 1)
            except TimeoutError:
                # Stopped (a run can SIGSTOP its parent) or wedged: never wait on it again.
                self.proc.kill()
                raise OSError("the warm interpreter does not answer") from None
        if got is not None:
            got.extend(received)
        else:
            for fd in received:
                os.close(fd)
        if not reply:
            raise OSError("the warm interpreter is gone")
        answer = marshal.loads(reply)
        if not isinstance(answer, dict) or "error" in answer:
            raise OSError(str(answer.get("error") if isinstance(answer, dict) else answer))
        return answer

    def spawn(self, run: PythonRun, cwd: str, env: dict[str, str],
              fds: tuple[int, int, int], layout: Layout | None = None) -> tuple[int, int | None]:
        argv = [f"{run.mode}", *run.args] if run.mode == "-m" else ["-c", *run.args]
        orig = [run.python, *run.flags, run.mode, run.target, *run.args]
        request: dict[str, Any] = {"op": "spawn", "cwd": cwd, "env": env, "argv": argv,
                                   "orig_argv": orig, "mode": run.mode, "target": run.target}
        if layout is not None:
            request["walls"] = layout.spec()
        got: list[int] = []
        answer = self._ask(request, list(fds), got)
        if layout is not None and len(got) != 1:
            for fd in got:
                os.close(fd)
            raise OSError("the warm interpreter forked a walled run without its report")
        return int(answer["pid"]), got[0] if got else None

    def reap(self, pid: int) -> int:
        return int(self._ask({"op": "reap", "pid": pid})["status"])

    def close(self) -> None:
        with defer_signals():  # a signal halfway through would leave the folder behind
            try:
                self._sock.close()
                # Behind bubblewrap the interpreter is bubblewrap's child, which the death of
                # bubblewrap alone does not end (the zygote's walls have no PID namespace, so
                # that the harness can watch its runs): both are killed, and awaited.
                inner = kill_tree(self.proc.pid) if self.proc.poll() is None else []
                self.proc.wait()
                await_gone(inner)
            finally:
                remove_tree_quietly(self.folder)
                watchdog.release(self.folder)


_FOLDER_PREFIX = "endstate-zygote-"


def _remove_orphaned_folders(parent: str | None) -> None:
    """Folders of zygotes whose harness (the pid in the name) is gone. A zygote removes its own
    when its harness dies, but one killed with it (Ray kills a dead worker's whole tree) cannot."""
    folder = Path(parent or tempfile.gettempdir())
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_FOLDER_PREFIX)]
    except OSError:
        return
    for name in names:
        owner = name[len(_FOLDER_PREFIX):].partition("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and not pid_alive(int(owner)):
            remove_tree_quietly(str(folder / name))


def remove_tree_quietly(path: str) -> None:
    try:
        remove_tree(Path(path))
    except OSError:
        pass


_zygotes: dict[tuple[Any, ...], SandboxZygote] = {}
_zygotes_lock = threading.Lock()


_REGISTRY = ZygoteRegistry(_zygotes, _zygotes_lock)


def _zygote_for(run: PythonRun, parent: str | None,
                walls: Walls | None = None) -> SandboxZygote | None:
    env = {k: v for k, v in run.env if k not in PER_RUN}
    key = (run.python, run.flags, run.mode, run.preload(), tuple(sorted(env.items())), parent,
           walls.key() if walls is not None else None)
    _REGISTRY.register()
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            zygote.close()
            del _zygotes[key]
        try:
            zygote = SandboxZygote(run, env, parent, walls,
                                   on_ready=functools.partial(_zygotes.__setitem__, key))
        except (OSError, ValueError):
            return None
        _note_started(run.python, env.get("PATH"), walls is not None)
    return zygote


_STARTED: set[tuple[str, str, str]] = set()
"""(PATH, walls, program) of every warm interpreter that started (see :func:`started`)."""


def _note_started(program: str, path: str | None, walled: bool) -> None:
    """Note that ``program`` started as a warm interpreter with this PATH (searched from the
    zygote's own folder, so only a PATH of absolute folders, which no working folder changes;
    and only a bare name, as PATH finds it)."""
    if path is None or "/" in program:
        return
    if all(part and os.path.isabs(part) for part in path.split(os.pathsep)):
        _STARTED.add((path, "bubblewrap" if walled else "none", program))


def started(path_env: str, walls: str, program: str) -> bool:
    """Whether ``program`` started here as a warm interpreter under this PATH and these walls
    (``bubblewrap`` or ``none``, a local sandbox's :meth:`walls`): then it is on that PATH
    behind those walls, as the harness's own start of it showed, before any code under test
    ran (its zygote starts in a folder of its own, with the host's read-only folders and
    nothing of a task). The environment probe reads it instead of starting a process to ask
    (:func:`endstate_harness.graders.environment.program_probe`)."""
    return (path_env, walls, program) in _STARTED


def prestart(run: PythonRun | None, parent: str | None, walls: Walls | None = None) -> None:
    """Start the zygote ``run`` would be forked from (in ``parent``, as :func:`start_warm`
    would) now rather than at the first run: the same zygote under the same key, only
    earlier. A no-op when the run is not recognised, the warm start is off, or it runs."""
    if run is not None and sandbox_warm_enabled():
        _zygote_for(run, parent, walls)


def prestart_channel(
    argv: list[str], *, scratch_root: Path | None = None, path_env: str | None = None,
    hash_seed: str = DEFAULT_HASH_SEED,
) -> None:
    """Start the warm interpreter a channel of ``argv`` in a ``LocalSandbox`` made with this
    ``scratch_root`` and ``path_env`` forks from, before any such sandbox exists: the same
    zygote (same interpreter, flags, environment and folder) ``open_local_channel`` would
    start at its first use, so nothing about a run changes but when the start is paid.
    ``hash_seed``: the sandbox's (a zygote serves only runs of the seed it started with)."""
    path = path_env if path_env is not None else os.environ.get("PATH", os.defpath)
    env = {"PATH": path, **seeded_env(hash_seed), "HOME": "", "TMPDIR": ""}  # HOME, TMPDIR: per run
    base = str(scratch_root) if scratch_root is not None else tempfile.gettempdir()
    found = walls_mod.status(path)
    walls = Walls(found.bwrap, path) if found.available else None
    # what ``box.scratch.parent`` is: the parent of a ``mkdtemp(dir=scratch_root)``
    prestart(recognise_argv(argv, env), str(Path(os.path.abspath(os.path.join(base, "x"))).parent),
             walls)


def start_warm(
    run: PythonRun | None, cwd: str, *, stdin_pipe: bool, parent: str | None = None,
    walled: tuple[Walls, Layout] | None = None,
) -> WarmRun | None:
    """Fork ``run`` in ``cwd`` from its zygote, with a pipe (or /dev/null) as stdin and
    pipes as stdout and stderr; None when the run must be a fresh process (see module doc).
    ``walled``: the zygote lives behind these walls and the run in this layout."""
    if run is None or not sandbox_warm_enabled():
        return None
    zygote = _zygote_for(run, parent, walled[0] if walled is not None else None)
    if zygote is None or zygote.shadowed(run, cwd):
        return None
    ours: list[int] = []
    theirs: list[int] = []
    try:
        if stdin_pipe:
            r, w = os.pipe()
            theirs.append(r)
            ours.append(w)
        else:
            theirs.append(os.open(os.devnull, os.O_RDONLY))
            ours.append(-1)
        for _ in range(2):
            r, w = os.pipe()
            theirs.append(w)
            ours.append(r)
        env = zygote.run_env(run, cwd)
        pid, ready = zygote.spawn(run, cwd, env, (theirs[0], theirs[1], theirs[2]),
                                  walled[1] if walled is not None else None)
    except OSError:
        for fd in ours + theirs:
            if fd >= 0:
                os.close(fd)
        return None
    for fd in theirs:
        os.close(fd)
    pipes: list[IO[bytes] | None] = [
        os.fdopen(ours[0], "wb") if ours[0] >= 0 else None,
        os.fdopen(ours[1], "rb"),
        os.fdopen(ours[2], "rb"),
    ]
    return WarmRun(zygote, pid, pipes, ready)
