"""A warm start for the Python programs that run *in* a sandbox: recognise, then fork from a
zygote (:mod:`endstate_harness.inside.zygote`); anything not recognised runs fresh.
``ENDSTATE_WARM=0`` or ``ENDSTATE_WARM_SANDBOX=0`` turns it off.
"""

from __future__ import annotations

import functools
import marshal
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from endstate_harness import inside
from endstate_harness.process import watchdog
from endstate_harness.process.cleanup import OPEN_SANDBOXES, defer_signals, pid_alive
from endstate_harness.process.zygote import ForkedRun, ZygoteRegistry, warm_enabled
from endstate_harness.sandbox.tree import remove_tree

SANDBOX_WARM_ENV = "ENDSTATE_WARM_SANDBOX"
"""Set to ``0`` to start every run in the sandbox fresh while the judge stays warm
(``ENDSTATE_WARM=0`` turns both off); for benchmarks that show each part's share."""


def sandbox_warm_enabled() -> bool:
    return warm_enabled() and os.environ.get(SANDBOX_WARM_ENV, "1").strip() != "0"


_PYTHON = re.compile(r"python(3(\.\d+)?)?")
_FLAGS = frozenset({"-s", "-S", "-B", "-P", "-u"})
"""Flags a run may carry (the zygote gets the same). Not -E or -I: they ignore
PYTHONHASHSEED, so every fresh process has its own hash secret, which forks would share."""
_MODULES = {"unittest": ("runpy", "unittest", "unittest.main"), "pytest": ("runpy", "pytest")}
_KEPT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\+([A-Za-z_][A-Za-z0-9_]*)=\$([A-Za-z_]\w*)\}")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
PER_RUN = ("HOME", "TMPDIR", "PWD")
"""Set per run, so not part of a zygote's key or environment."""
_CWD = "\0cwd"
"""Stands for the run's working folder in :attr:`PythonRun.env` (``/bin/sh`` exports PWD)."""
_NEVER_PRELOAD = frozenset({
    "__main__", "site", "readline", "rlcompleter", "curses", "tkinter", "turtle", "idlelib",
    "this", "antigravity", "ensurepip", "venv", "pydoc", "webbrowser", "getpass", "pdb",
})
_MAX_MSG = 1 << 22
ANSWER_S = 10.0
"""How long the zygote may take to answer a request (it forks or reaps at once) before it is
killed and its runs are reported as killed; the next run starts a new zygote."""


@dataclass(frozen=True)
class PythonRun:
    """A recognised run: ``python FLAGS MODE TARGET ARGS`` in ``env``."""

    python: str
    flags: tuple[str, ...]
    mode: str
    target: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]

    def preload(self) -> tuple[str, ...]:
        if self.mode == "-m":
            return _MODULES[self.target]
        return _stdlib_imports(self.target)


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+))", re.M)


@functools.lru_cache(maxsize=64)
def _stdlib_imports(source: str) -> tuple[str, ...]:
    """The standard-library modules a program's source imports (line by line, absolute
    imports; an under-count only means less is preloaded)."""
    stdlib = set(getattr(sys, "stdlib_module_names", ())) - _NEVER_PRELOAD
    found = {a or b for a, b in _IMPORT.findall(source)}
    return tuple(sorted(n for n in found if n.partition(".")[0] in stdlib))


def recognise_argv(argv: list[str], env: dict[str, str]) -> PythonRun | None:
    """The run ``argv`` (executed directly, in ``env``) stands for, or None."""
    if not argv or not _PYTHON.fullmatch(argv[0]):
        return None
    if not env.get("PYTHONHASHSEED", "").isdigit():
        return None  # a random hash seed per process cannot be forked
    if any(k in env for k in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT")):
        return None
    i = 1
    while i < len(argv) and argv[i] in _FLAGS:
        i += 1
    if i + 1 >= len(argv) or argv[i] not in ("-c", "-m"):
        return None
    mode, target, args = argv[i], argv[i + 1], tuple(argv[i + 2:])
    if mode == "-m" and target not in _MODULES:
        return None
    return PythonRun(argv[0], tuple(argv[1:i]), mode, target, args, tuple(sorted(env.items())))


def recognise_shell(command: str, env: dict[str, str], *,
                    sh_is_dash: bool | None = None) -> PythonRun | None:
    """The run a ``/bin/sh -c command`` in ``env`` stands for, or None (see module doc).

    Only where ``/bin/sh`` is dash (this host's, unless ``sh_is_dash`` says of another
    system's), whose one visible trace (besides PWD) is the line it writes when the command
    dies of a signal: :func:`shell_epilogue` writes the same."""
    if not (_SH_IS_DASH if sh_is_dash is None else sh_is_dash):
        return None
    words = _canonical_words(command)
    if words is None:
        return None
    kept: dict[int, tuple[str, str]] = {}
    rendered = []
    for n, word in enumerate(words):
        match = _KEPT.fullmatch(word)
        if match and match.group(1) == match.group(2) == match.group(3):
            kept[n] = (match.group(1), match.group(1))
            rendered.append(f'${{{match.group(1)}+"{match.group(1)}=${match.group(1)}"}}')
        else:
            rendered.append(shlex.quote(word))
    if " ".join(rendered) != command:
        return None  # anything the shell would expand or interpret: not recognised
    run_env = dict(env)
    if words[:2] == ["env", "-i"]:
        run_env = {}
        i = 2
        while i < len(words):
            if i in kept:
                name = kept[i][0]
                if name in env:
                    run_env[name] = env[name]
            elif (assign := _ASSIGN.fullmatch(words[i])) and not words[i].startswith("-"):
                run_env[assign.group(1)] = assign.group(2)
            else:
                break
            i += 1
        words = words[i:]
        if "PATH" not in run_env or any(k >= i for k in kept):
            return None
    elif kept:
        return None
    else:
        run_env.setdefault("PWD", _CWD)  # what /bin/sh adds to the environment it passes on
    return recognise_argv(words, run_env)


_WORD = re.compile(
    r"""([\w@%+=:,./-]+)|('[^']*'(?:"'"'[^']*')*)|(\$\{[A-Za-z_]\w*\+"[A-Za-z_]\w*=\$[A-Za-z_]\w*"\})""",
    re.ASCII,
)


def _canonical_words(command: str) -> list[str] | None:
    """The words of ``command`` as :func:`shlex.split` gives them, when it is words joined by
    single spaces, each a plain word, a single-quoted one (``'"'"'`` for a quote, as
    :func:`shlex.quote` writes it) or a ``${NAME+"NAME=$NAME"}``; else None.

    Why not shlex itself: it reads a character at a time in Python, and the hardened
    ``tests_pass`` command carries its runner's whole source in one word (18 ms a command,
    measured, for what this regex does in well under one)."""
    words: list[str] = []
    pos, end = 0, len(command)
    while True:
        match = _WORD.match(command, pos)
        if match is None:
            return None
        plain, quoted, kept = match.groups()
        if plain is not None:
            words.append(plain)
        elif quoted is not None:
            words.append(quoted[1:-1].replace("'\"'\"'", "'"))
        else:
            words.append(kept.replace('"', ""))
        pos = match.end()
        if pos == end:
            return words
        if command[pos] != " ":
            return None
        pos += 1


def recognise_joined(argv: list[str], env: dict[str, str], *,
                     sh_is_dash: bool | None = None) -> PythonRun | None:
    """What :func:`recognise_shell` says of ``shlex.join(argv)``, without joining and
    re-parsing it (the judge's child carries its whole source in one word)."""
    if not (_SH_IS_DASH if sh_is_dash is None else sh_is_dash):
        return None
    if argv[:1] == ["env"]:
        return recognise_shell(shlex.join(argv), env, sh_is_dash=sh_is_dash)
    return recognise_argv(argv, {**env, "PWD": env.get("PWD", _CWD)})


_SH_IS_DASH = os.path.basename(os.path.realpath("/bin/sh")) == "dash"


def shell_epilogue(code: int) -> bytes:
    """What dash writes to stderr after its command ended with ``code`` (negative: a signal)."""
    if code >= 0 or -code in (signal.SIGINT, signal.SIGPIPE):
        return b""
    try:
        return (signal.strsignal(-code) or "").encode() + b"\n"
    except ValueError:
        return b""


class ZygoteShape:
    """What a started zygote reported of itself (``ready``: its preloaded modules, working
    folder and environment), and what follows for a run forked from it; shared by the
    host's zygotes and those inside a container (:mod:`endstate_harness.sandbox.docker.runner`)."""

    def __init__(self, ready: dict[str, Any], zygote_env: dict[str, str], home: str) -> None:
        self.modules = frozenset(str(m) for m in ready.get("modules", ()))
        # What the interpreter's start did to its environment (a pyenv shim prepends to PATH
        # and sets PYENV_* and PWD; Python sets LC_CTYPE): done to every run's too, with the
        # zygote's own folders standing for the run's.
        seen = ready.get("environ", {})
        self.cwd = str(ready.get("cwd", ""))
        self.home = home
        self.env_added = {k: v for k, v in seen.items() if zygote_env.get(k) != v}
        self.env_removed = [k for k in zygote_env if k not in seen]

    def shadows(self, run: PythonRun, names: list[str], home_has_local: bool) -> bool:
        """Whether a working folder holding ``names`` could change what a fresh run imports
        or runs (``home_has_local``: HOME is unset or holds ``.local``)."""
        if any(n == ".python-version" or n.partition(".")[0] in self.modules for n in names):
            return True
        # Without -s, a fresh run would add HOME's user site-packages (and its .pth files).
        return "-s" not in run.flags and home_has_local

    def run_env(self, run: PythonRun, cwd: str) -> dict[str, str]:
        """The environment a fresh process of ``run`` in ``cwd`` would see at its start."""
        env = {k: (cwd if v == _CWD else v) for k, v in run.env}
        for k in self.env_removed:
            env.pop(k, None)
        for k, v in self.env_added.items():
            if v == self.cwd:
                v = cwd
            elif v == self.home:
                v = env.get("HOME", v) if k != "TMPDIR" else env.get("TMPDIR", v)
            env[k] = v
        return env


class WarmRun(ForkedRun):
    """A run forked by a sandbox zygote: the subset of :class:`subprocess.Popen` the
    sandboxes use (``pid``, the three pipes, ``poll``/``wait``/``kill``, ``returncode``)."""

    def __init__(self, zygote: SandboxZygote, pid: int, pipes: list[IO[bytes] | None]) -> None:
        super().__init__(zygote, pid)
        self.stdin, self.stdout, self.stderr = pipes


class SandboxZygote:
    """One pre-started interpreter (see the module docstring); :meth:`spawn` forks a run."""

    def __init__(self, run: PythonRun, zygote_env: dict[str, str], parent: str | None) -> None:
        self.run = run
        self._lock = threading.Lock()
        _remove_orphaned_folders(parent)
        self.folder = tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-", dir=parent)
        watchdog.protect(self.folder)  # Ray kills a unit's whole tree, this zygote with it
        source = inside.program("zygote")
        self.argv_head = [run.python, *run.flags]
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = os.path.join(self.folder, "home")
        os.mkdir(self.home)
        zygote_env = {**zygote_env, "HOME": self.home, "TMPDIR": self.home}
        try:
            self.proc = subprocess.Popen(
                [*self.argv_head, "-c", source, str(theirs.fileno()), ",".join(run.preload())],
                cwd=self.folder, env=zygote_env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        except OSError:
            mine.close()
            remove_tree_quietly(self.folder)
            watchdog.release(self.folder)
            raise
        finally:
            theirs.close()
        self._sock = mine
        mine.settimeout(60)
        try:
            ready = marshal.loads(mine.recv(_MAX_MSG))
        except (OSError, EOFError, ValueError, TypeError):
            ready = {}
        mine.settimeout(ANSWER_S)
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            self.close()
            raise OSError(f"the warm {run.python} did not start")
        self.shape = ZygoteShape({"cwd": self.folder, **ready}, zygote_env, self.home)

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

    def _ask(self, request: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        with self._lock:
            try:
                socket.send_fds(self._sock, [marshal.dumps(request)], fds or [])
                reply = self._sock.recv(_MAX_MSG)
            except TimeoutError:
                # Stopped (a run can SIGSTOP its parent) or wedged: never wait on it again.
                self.proc.kill()
                raise OSError("the warm interpreter does not answer") from None
        if not reply:
            raise OSError("the warm interpreter is gone")
        answer = marshal.loads(reply)
        if not isinstance(answer, dict) or "error" in answer:
            raise OSError(str(answer.get("error") if isinstance(answer, dict) else answer))
        return answer

    def spawn(self, run: PythonRun, cwd: str, env: dict[str, str],
              fds: tuple[int, int, int]) -> int:
        argv = [f"{run.mode}", *run.args] if run.mode == "-m" else ["-c", *run.args]
        orig = [run.python, *run.flags, run.mode, run.target, *run.args]
        answer = self._ask({"op": "spawn", "cwd": cwd, "env": env, "argv": argv,
                            "orig_argv": orig, "mode": run.mode, "target": run.target},
                           list(fds))
        return int(answer["pid"])

    def reap(self, pid: int) -> int:
        return int(self._ask({"op": "reap", "pid": pid})["status"])

    def close(self) -> None:
        with defer_signals():  # a signal halfway through would leave the folder behind
            try:
                self._sock.close()
                if self.proc.poll() is None:
                    self.proc.kill()
                self.proc.wait()
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


def _zygote_for(run: PythonRun, parent: str | None) -> SandboxZygote | None:
    env = {k: v for k, v in run.env if k not in PER_RUN}
    key = (run.python, run.flags, run.mode, run.preload(), tuple(sorted(env.items())), parent)
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            zygote.close()
            del _zygotes[key]
        try:
            zygote = SandboxZygote(run, env, parent)
        except (OSError, ValueError):
            return None
        _zygotes[key] = zygote
    OPEN_SANDBOXES.add(_REGISTRY)
    return zygote


def prestart(run: PythonRun | None, parent: str | None) -> None:
    """Start the zygote ``run`` would be forked from (in ``parent``, as :func:`start_warm`
    would) now rather than at the first run: the same zygote under the same key, only
    earlier. A no-op when the run is not recognised, the warm start is off, or it runs."""
    if run is not None and sandbox_warm_enabled():
        _zygote_for(run, parent)


def start_warm(
    run: PythonRun | None, cwd: str, *, stdin_pipe: bool, parent: str | None = None
) -> WarmRun | None:
    """Fork ``run`` in ``cwd`` from its zygote, with a pipe (or /dev/null) as stdin and
    pipes as stdout and stderr; None when the run must be a fresh process (see module doc)."""
    if run is None or not sandbox_warm_enabled():
        return None
    zygote = _zygote_for(run, parent)
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
        pid = zygote.spawn(run, cwd, env, (theirs[0], theirs[1], theirs[2]))
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
    return WarmRun(zygote, pid, pipes)
