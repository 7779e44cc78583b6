"""Walls for the local sandbox: every command of the end state in namespaces of its own.

With bubblewrap (``bwrap``) each command gets its own user, PID, network, IPC, UTS and mount
namespaces: the system folders read-only, the live tree (or grading copy) the only writable
folder besides a private ``/tmp`` and ``$HOME``, a ``/proc`` that shows only its own processes,
no network but loopback, and no descriptor but its three streams. The host's other folders (the
task, the judge's trusted files, other sandboxes' scratch folders, ``/run``'s sockets) are not
there at all. A run forked from a warm interpreter gets the same view: the interpreter lives
behind bubblewrap too and builds each run's namespaces itself
(:mod:`endstate_harness.inside.fence`).

Where bubblewrap cannot start (not installed, no user namespaces) :func:`status` says why and
the local sandbox runs without walls, as every verdict it grades then says; ``ENDSTATE_WALLS=0``
turns them off on purpose (benchmarks, debugging).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from endstate_harness.process.cleanup import run_to_end

WALLS_ENV = "ENDSTATE_WALLS"
"""Set to ``0`` to run the local sandbox without walls even where bubblewrap works."""

BWRAP_ENV = "ENDSTATE_BWRAP"
"""The bubblewrap program to use (default: ``bwrap`` on PATH)."""

STAGING = "/run/endstate-walls"
"""Where a warm interpreter's run mounts its folders before it hides the scratch root; the
interpreter's walls hold :data:`STAGING_SLOTS` empty folders there."""
STAGING_SLOTS = 4
KEEP_SLOTS = 4
"""Staging slots for system folders a warm run must keep in view under its fresh ``/tmp``
(the harness's own virtualenv in a checkout under ``/tmp``, say)."""

PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
"""Parts of /proc made read-only behind the walls (as Docker does): they reach the whole
kernel, and a harness run as root would otherwise let the code under test write them."""

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Host folders every walled command sees, read-only (a link, as on a merged-/usr system, is
made again as the same link)."""

TOOL_FOLDERS = ("bin", "sbin", "shims")
"""A PATH folder of one of these names is bound with its parent (a virtualenv, a version
manager's root, ``~/.cargo``): what its programs load lives beside them."""


@dataclass(frozen=True)
class WallsStatus:
    """Whether walled commands can start here, and what says so."""

    available: bool
    reason: str
    """Why not (when unavailable), or the bubblewrap that builds them."""
    bwrap: str = ""

    def describe(self) -> str:
        if self.available:
            return f"walled by bubblewrap ({self.reason})"
        return f"no walls: {self.reason}"


@dataclass(frozen=True)
class Layout:
    """What one walled command sees besides the system: ``binds`` (host folder, where it
    appears) are writable, ``covers`` are emptied with a fresh tmpfs, ``cwd`` is where it
    starts. ``/tmp``, ``/dev/shm`` and ``/proc`` are always its own."""

    binds: tuple[tuple[str, str], ...]
    cwd: str
    covers: tuple[str, ...] = ()
    parent: str = ""
    """The scratch root the binds live in (hidden from a warm run, which starts where every
    scratch folder is in view)."""
    system: tuple[str, ...] = ()
    """The read-only system folders every command sees (:func:`system_binds`): those under a
    folder a warm run covers or binds are bound again on top of it, read-only."""

    def spec(self) -> dict[str, object]:
        """The layout as a warm interpreter's run reads it (plain data, ``marshal``-able)."""
        covers = sorted({"/tmp", "/dev/shm", self.parent, *self.covers} - {""}, key=len)
        binds = sorted(self.binds, key=lambda b: len(b[1]))
        hiding = set(covers) | {target for _source, target in binds}
        keep = sorted(s for s in self.system if _under(s, hiding) and s not in hiding)
        return {"covers": covers, "binds": [list(b) for b in binds], "staging": STAGING,
                "keep": keep[:KEEP_SLOTS],
                "proc_read_only": [f"/proc/{part}" for part in PROC_READ_ONLY]}


def enabled() -> bool:
    return os.environ.get(WALLS_ENV, "1").strip() != "0"


def _program() -> str | None:
    chosen = os.environ.get(BWRAP_ENV, "").strip()
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def _probe(program: str, path_env: str) -> WallsStatus:
    """Start one walled ``/bin/sh -c 'exit 0'`` with the namespaces, system, /dev, /proc and
    tmpfs every command gets (a live tree is bound the same way; none is made here, and an
    interrupted probe is killed, so it leaves nothing behind: :func:`run_to_end`)."""
    argv = command_argv(program, Layout((), "/"), ["/bin/sh", "-c", "exit 0"], path_env)
    try:
        proc = run_to_end(argv, timeout=30, env={"PATH": path_env})
    except (OSError, subprocess.SubprocessError) as exc:
        return WallsStatus(False, f"bubblewrap ({program}) cannot start: {exc}")
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return WallsStatus(
            False, f"bubblewrap cannot build the walls here ({why[-1] if why else 'exit '}"
            f"{'' if why else proc.returncode}; user namespaces may be disabled)")
    try:
        version = run_to_end([program, "--version"], timeout=10).stdout.decode(
            "utf-8", "replace").strip()
    except (OSError, subprocess.SubprocessError):
        version = ""
    return WallsStatus(True, version or "bubblewrap", program)


def status(path_env: str | None = None) -> WallsStatus:
    """Whether the local sandbox's commands run walled in this process (probed once)."""
    if not enabled():
        return WallsStatus(False, f"turned off ({WALLS_ENV}=0)")
    program = _program()
    if program is None:
        return WallsStatus(
            False, "bubblewrap is not installed (apt-get install bubblewrap)"
            if not os.environ.get(BWRAP_ENV) else f"{os.environ[BWRAP_ENV]} is not a program")
    with _PROBING:  # a second asker waits for the probe under way rather than start its own
        return _probe(program, path_env if path_env is not None else _host_path())


_PROBING = threading.Lock()
"""Held while a probe runs: prove's early start probes while prove imports (on another
thread), and the command's own look-up then finds that answer instead of probing again."""


def _host_path() -> str:
    return os.environ.get("PATH", os.defpath)


# ----------------------------------------------------------------------------- what is bound


def _under(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _forbidden(root: str) -> bool:
    """A folder never bound whole: the file system root, the host's HOME or an ancestor of
    it, or a folder holding the scratch folders."""
    if root in ("/", ""):
        return True
    home = os.path.realpath(os.path.expanduser("~"))
    temp = os.path.realpath(tempfile.gettempdir())
    return any(p == root or p.startswith(root.rstrip("/") + "/") for p in (home, temp, "/dev"))


def _tool_root(folder: str) -> str:
    parent = os.path.dirname(folder)
    if os.path.basename(folder) in TOOL_FOLDERS and not _forbidden(parent):
        return parent
    return folder


@functools.lru_cache(maxsize=8)
def system_binds(path_env: str) -> tuple[tuple[str, str, str], ...]:
    """``(kind, source, destination)`` for the system every walled command sees: ``ro``
    binds and ``link`` entries (``source`` is the link's text), in mount order.

    Besides :data:`SYSTEM`: the harness's own Python (its virtualenv and installation),
    every folder on the commands' PATH (with its parent, for the folder names of
    :data:`TOOL_FOLDERS`), and the installation of every ``python*`` found there, since a
    shim or a virtualenv's link leads to it."""
    out: list[tuple[str, str, str]] = []
    roots: set[str] = set()
    links: dict[str, str] = {}
    for top in SYSTEM:
        if os.path.islink(top):
            links[top] = os.readlink(top)
            out.append(("link", links[top], top))
        elif os.path.isdir(top):
            out.append(("ro", top, top))
            roots.add(top)
    for prefix in {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}:
        if not (_forbidden(prefix) or _under(prefix, roots)):  # the harness's own Python
            out.append(("ro", prefix, prefix))
            roots.add(prefix)
    for entry in path_env.split(os.pathsep):
        if not entry.startswith("/") or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        for candidate in (_tool_root(real), *_interpreters(real)):
            if _forbidden(candidate) or _under(candidate, roots):
                continue
            out.append(("ro", candidate, candidate))
            roots.add(candidate)
        if entry != real and not _under(entry, roots) and not _shown_as(entry, real, roots,
                                                                        links):
            out.append(("ro", real, entry))
            roots.add(entry)
    return tuple(out)


@functools.lru_cache(maxsize=8)
def mounted_binds(path_env: str) -> tuple[tuple[str, str, str], ...]:
    """:func:`system_binds` as a walled command's start mounts them (:func:`outermost`).
    The inner binds still count where a folder is covered: :func:`command_argv` binds them
    again on top, as :class:`Layout` keeps them."""
    return outermost(system_binds(path_env))


def outermost(binds: Iterable[tuple[str, str, str]]) -> tuple[tuple[str, str, str], ...]:
    """``binds`` less every read-only bind of a folder onto itself that lies inside another
    such bind of ``binds`` (the harness's Python under a version manager bound whole, say).

    Bubblewrap binds a folder with everything mounted in it and makes all of it read-only,
    so the inner bind shows nothing the outer one does not; and each bind is a mount of its
    own (two system calls and a read of the mount table) in every walled command's start."""
    found = tuple(binds)
    whole = {src for kind, src, dst in found if kind == "ro" and src == dst}
    return tuple(b for b in found if not (
        b[0] == "ro" and b[1] == b[2] and _under(b[1], whole - {b[1]})))


def _shown_as(entry: str, real: str, roots: set[str], links: dict[str, str]) -> bool:
    """Whether the PATH folder ``entry`` (a link on the host to ``real``) already leads to
    ``real`` behind the walls, with no bind of its own (``/bin`` on a merged-/usr system: the
    walls make ``/bin`` the same link into ``/usr``, which is bound read-only).

    Followed hop by hop: every link on the way must be one the walls make again (``links``)
    or lie in a folder bound whole (``roots``), where it reads as on the host, so it leads
    where it does on the host; anything else (a link in a folder the walls do not show)
    keeps the bind."""
    path, parts, hops = "/", [p for p in entry.split("/") if p], 0
    while parts:
        name = parts.pop(0)
        if name in (".", ".."):
            return False
        here = os.path.join(path, name)
        if not os.path.islink(here):
            path = here
            continue
        hops += 1
        if hops > 40 or not (here in links or _under(here, roots)):
            return False
        text = links.get(here) or os.readlink(here)
        parts = [p for p in text.split("/") if p] + parts
        path = "/" if text.startswith("/") else path
    return path == real and _under(real, roots)


def _interpreters(folder: str) -> list[str]:
    """The installation folders of the ``python*`` programs in ``folder`` (``<prefix>`` of
    ``<prefix>/bin/python3.11``)."""
    found = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith("python")]
    except OSError:
        return []
    for name in names:
        real = os.path.realpath(os.path.join(folder, name))
        bindir = os.path.dirname(real)
        found.append(os.path.dirname(bindir) if os.path.basename(bindir) == "bin" else bindir)
    return found


def covers_for(fixture: Path, path_env: str) -> tuple[str, ...]:
    """The task's suite folder, when it lies in a folder every command sees (a suite kept in
    ``/opt``, say): covered, so no command reads the holdout from the task folder."""
    suite = os.path.realpath(Path(fixture).parent.parent)
    roots = {s for kind, _src, s in system_binds(path_env) if kind == "ro"}
    return (suite,) if _under(suite, roots) else ()


# ----------------------------------------------------------------------------- argv


_NAMESPACES = ("--unshare-user", "--unshare-ipc", "--unshare-net", "--unshare-uts",
               "--unshare-cgroup-try")


def _system_args(path_env: str) -> list[str]:
    args: list[str] = []
    for kind, src, dst in mounted_binds(path_env):
        args += ["--symlink", src, dst] if kind == "link" else ["--ro-bind", src, dst]
    return args


def command_argv(program: str, layout: Layout, argv: list[str], path_env: str) -> list[str]:
    """``argv`` walled in (see the module docstring): its own namespaces, PID included, and
    killed with the process that started it."""
    return [*_command_prefix(program, layout, path_env), *argv]


@functools.lru_cache(maxsize=64)
def _command_prefix(program: str, layout: Layout, path_env: str) -> tuple[str, ...]:
    """Bubblewrap's part of :func:`command_argv`, made once per layout: every command of a
    sandbox before its seal has the same (and :func:`system_binds` is read once anyway)."""
    # /tmp and /dev/shm first: a system folder that lives under them (the harness's own
    # virtualenv in a checkout under /tmp, say) is then bound on top, not hidden by them
    args = [program, *_NAMESPACES, "--unshare-pid", "--die-with-parent", "--new-session",
            "--tmpfs", "/tmp", *_system_args(path_env), "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/dev/shm"]
    for part in PROC_READ_ONLY:
        args += ["--ro-bind-try", f"/proc/{part}", f"/proc/{part}"]
    for cover in layout.covers:
        args += ["--tmpfs", cover]
    for src, dst in sorted(layout.binds, key=lambda b: len(b[1])):
        args += ["--bind", src, dst]
    # a system folder under a folder mounted since (the harness's own virtualenv in a
    # checkout under /tmp, say): bound again on top, read-only
    hiding = {"/tmp", "/dev/shm", *layout.covers, *(dst for _src, dst in layout.binds)}
    under = [b for b in system_binds(path_env)
             if b[0] == "ro" and _under(b[2], hiding) and b[2] not in hiding]
    shown = outermost(under)
    for _kind, src, dst in shown:
        args += ["--ro-bind", src, dst]
    # a cover inside a folder bound again just now (the task suite in a checkout under /tmp
    # whose bin is on PATH) would be shown with it: covered again, on top
    for cover in layout.covers:
        if _under(cover, {dst for _kind, _src, dst in shown} - {cover}):
            args += ["--tmpfs", cover]
    return (*args, "--chdir", layout.cwd, "--")


def zygote_argv(program: str, parent: str, cwd: str, argv: list[str],
                path_env: str) -> list[str]:
    """A warm interpreter walled in: the same system, no network, its own user namespace;
    the scratch root ``parent`` in view (each run hides it again) and the host's ``/proc``,
    from which each run mounts one of its own. No PID namespace: the harness watches its
    runs by their host pids."""
    args = [program, *_NAMESPACES, "--tmpfs", "/tmp", *_system_args(path_env), "--dev", "/dev",
            "--bind", "/proc", "/proc"]
    args += ["--bind", parent, parent]
    for slot in range(STAGING_SLOTS + KEEP_SLOTS):
        args += ["--dir", f"{STAGING}/{slot}"]
    return [*args, "--chdir", cwd, "--", *argv]


@dataclass
class Walls:
    """The walls of one local sandbox (see :func:`status`)."""

    program: str
    path_env: str
    covers: tuple[str, ...] = field(default=())

    def command(self, argv: list[str], binds: list[tuple[str, str]], cwd: str) -> list[str]:
        return command_argv(self.program, Layout(tuple(binds), cwd, self.covers), argv,
                            self.path_env)

    def layout(self, binds: list[tuple[str, str]], cwd: str, parent: str) -> Layout:
        system = tuple(dst for kind, _src, dst in system_binds(self.path_env) if kind == "ro")
        return Layout(tuple(binds), cwd, self.covers, parent, system)

    def zygote(self, argv: list[str], parent: str, cwd: str) -> list[str]:
        return zygote_argv(self.program, os.path.realpath(parent), cwd, argv, self.path_env)

    def key(self) -> tuple[str, str]:
        """What makes two zygotes' walls the same (a run's own layout is per run)."""
        return self.program, self.path_env
