"""The Docker daemon, seen from the harness: reaching it, naming images, sweeping strays."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

import endstate_harness.inside as inside
from endstate_harness.errors import SandboxError
from endstate_harness.fdtree import remove_tree
from endstate_harness.process.cleanup import pid_alive
from endstate_harness.sandbox.docker.address import daemon_url
from endstate_harness.sandbox.scratch import SCRATCH_PREFIX

DEFAULT_IMAGE = "python:3.12-slim"
IMAGE_ENV = "ENDSTATE_SANDBOX_IMAGE"
"""Set it to use another image by default."""
IMAGE_NAME = "endstate-sandbox"
"""The repository name of the toolkit's own image; the tag is the toolkit's version."""


def toolkit_version() -> str:
    """The installed endstate-author's version (the harness never imports endstate_author, so
    it asks the package metadata; the same wheel ships both)."""
    try:
        return importlib.metadata.version("endstate-author")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


LOCAL_IMAGE = f"{IMAGE_NAME}:{toolkit_version()}"
"""The toolkit's own image, which ``endstate-author sandbox build`` builds from Debian packages
(for offline machines; the test suite uses it)."""

LABEL = "endstate-author"
PID_LABEL = "endstate-author.pid"
WORKDIR = "/work"
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TIMEOUT_EXIT_CODE = 124
WATCHDOG_GRACE_S = 10.0
"""How long past its limit an exec may take to return before everything in the container is
killed (only if the in-container ``timeout`` failed, e.g. the command escaped its group)."""
API_TIMEOUT_S = 60.0
TMPFS_SIZE = "64m"
"""The size of the container's ``/tmp`` (memory-backed, counted against ``mem_limit``): the one
writable place besides ``/work`` on an otherwise read-only root file system."""
NAME_PREFIX = "endstate-"

KEEPER_SCRIPT = (
    'if command -v python3 >/dev/null 2>&1; then exec python3 -I -S -c "$1"; fi; '
    'trap "" INT TERM; while :; do sleep 2147483647 & wait; done'
)
"""Process 1 of every sandbox container: the keeper (:mod:`endstate_harness.inside.keeper`),
non-dumpable and reaping orphans. Every sweep spares process 1 by its number, which nothing
in the container can take or forge; no file the code under test can write decides what is
spared (a keeper pid read from ``/tmp`` once let a command name its own process the keeper).
Without python3 in the image a shell reaps instead; it can be traced, so without a runner the
host freezes the container while it acts on the live tree (``DockerSandbox._quiet``)."""


def keeper_argv() -> list[str]:
    """The container's command (Docker's own init is not used: it can be traced)."""
    return ["/bin/sh", "-c", KEEPER_SCRIPT, "endstate-keeper", inside.program("keeper")]


# Kill every process but process 1, this shell and the pids in $3 (the runner that started
# it and its zygotes, if any), then look again, until a look finds none alive (zombies
# excepted: they run nothing; the keeper reaps them) or ~2 s went by. Looking again is what
# catches a process forked while the last look was under way; SIGKILL is delivered
# asynchronously, so "nothing outlives the command" holds only once a look finds none.
_SWEEP = (
    'spared=" 1 $$ $3 "; n=0; while [ $n -lt 100 ]; do alive=; '
    "for p in /proc/[0-9]*; do p=${p#/proc/}; "
    'case "$spared" in *" $p "*) ;; *) st=; read -r st 2>/dev/null < "/proc/$p/stat"; '
    'st=${st##*) }; case "$st" in ""|Z*|X*) ;; *) alive=1; kill -s KILL "$p" 2>/dev/null;; '
    "esac;; esac; done; "
    '[ -z "$alive" ] && break; n=$((n+1)); sleep 0.02; done'
)

# Once the command ($pid) ended: kill its group, sweep, exit with its status. Through the
# runner, the runner sweeps again itself once this shell ended (the command could have
# stopped or killed this shell, which it may trace: the runner it cannot).
_AFTER_COMMAND = (
    'wait "$pid"; rc=$?; kill -s KILL -- "-$pid" 2>/dev/null; '
    f"{_SWEEP}; "
    'exit "$rc"'
)

# $1 = seconds, $2 = the command, $3 = more pids to spare (space-separated, may be empty).
# timeout(1) puts itself and the command in a new process group
# and on expiry SIGKILLs that whole group. Once the command ends, whatever it left running is
# killed: first its group, then (the sweep) every process of the container but process 1 (the
# keeper), this shell and $3, which also catches what left the group with setsid. Commands of
# one sandbox are serialised, so the sweep never hits another command. Exit status: the
# command's.
WRAPPER = (
    'timeout -s KILL "$1" /bin/sh -c "$2" </dev/null & pid=$!; '
    + _AFTER_COMMAND
)

# The same, but the command keeps the exec's stdin (an asynchronous list would get /dev/null).
CHANNEL_WRAPPER = (
    'exec 3<&0; timeout -s KILL "$1" /bin/sh -c "$2" <&3 3<&- & pid=$!; exec 3<&-; '
    + _AFTER_COMMAND
)

DockerFailure = (docker.errors.DockerException, requests.exceptions.RequestException)


def default_image() -> str:
    """The image a sandbox uses when none is given: ``$ENDSTATE_SANDBOX_IMAGE`` or
    ``python:3.12-slim``."""
    return os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE


def unreachable_message(detail: str = "") -> str:
    """The one message for a daemon that does not answer, naming the fix."""
    why = f" ({detail})" if detail else ""
    return (
        f"cannot reach the Docker daemon at {daemon_url()}{why}: start it "
        "(sudo systemctl start docker, or sudo dockerd &), check DOCKER_HOST and that you may use "
        "the socket, or use --sandbox local"
    )


def connect(*, timeout_s: float | None = API_TIMEOUT_S) -> docker.DockerClient:
    """A client for the daemon of the environment (DOCKER_HOST etc.), checked with a ping.

    Raises:
        SandboxError: with :func:`unreachable_message` when the daemon does not answer.
    """
    try:
        client = docker.from_env(timeout=timeout_s)  # type: ignore[arg-type]
    except DockerFailure as exc:
        raise SandboxError(unreachable_message(short_error(exc))) from None
    try:
        client.ping()
    except DockerFailure as exc:
        client.close()
        raise SandboxError(unreachable_message(short_error(exc))) from None
    return client


def docker_available(timeout_s: float = 3.0) -> bool:
    """Whether a Docker daemon answers a ping within ``timeout_s``. Never raises; not cached,
    because a daemon can start or stop between two calls."""
    try:
        client = connect(timeout_s=timeout_s)
    except SandboxError:
        return False
    client.close()
    return True


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def remove_container(ctr: Any) -> bool:
    """Force-remove one container; False when it is already gone or another process is
    removing it (Docker's 404 and 409), which is what both wanted."""
    try:
        ctr.remove(force=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code == 409:  # "removal of container … is already in progress"
            return False
        raise
    return True


def remove_stray_containers(*, all_owners: bool = False) -> list[str]:
    """Force-remove sandbox containers whose owning process is gone (or all of them).

    Only a SIGKILLed harness can leave one behind; this finds them by label, and removes the
    scratch folder it had mounted as well (when it is on this host and named like one).
    Containers of another process of this host that is still alive are kept unless
    ``all_owners``. Returns the ids removed.
    """
    client = connect()
    removed: list[str] = []
    try:
        # ignore_removed: a container another process (its owner's watcher) removes between
        # the list and its inspect is skipped, not a NotFound for the whole clean-up
        listed = client.containers.list(
            all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True
        )
        for ctr in listed:
            owner = ctr.labels.get(PID_LABEL, "")
            if not all_owners and owner.isdigit() and pid_alive(int(owner)):
                continue
            sources = [
                Path(m.get("Source", ""))
                for m in ctr.attrs.get("Mounts", [])
                if m.get("Destination") == WORKDIR
            ]
            if remove_container(ctr):
                removed.append(ctr.id or "")
            for live in sources:
                scratch = live.parent
                if live.name == "live" and scratch.name.startswith(SCRATCH_PREFIX):
                    remove_tree(scratch)
    finally:
        client.close()
    return removed


def no_timeout(sock: Any) -> None:
    for candidate in (sock, getattr(sock, "_sock", None)):
        if candidate is not None and hasattr(candidate, "settimeout"):
            candidate.settimeout(None)


def close_socket(sock: Any) -> None:
    """Close an exec's raw socket and the HTTP response holding it (or the connection leaks)."""
    for closer in (getattr(sock, "_response", None), sock):
        try:
            if closer is not None:
                closer.close()
        except (OSError, ValueError):  # already closed by the other one
            pass


END_EVERYTHING = ["/bin/sh", "-c", "kill -s KILL -- -1; " + _SWEEP]
"""Kill every process of the container but process 1 and this shell: ``kill(-1)`` is one
system call that reaches every process the caller may signal at once (no process can fork
past it), then the sweep's looks until none is alive. Run as the container's uid (its root
has no CAP_KILL, and no ``kill`` program is on every image's PATH)."""


def sweep_processes(client: Any, container_id: str | None) -> None:
    """Kill whatever a command left in a container: every process but process 1 (the keeper)
    and the sweeping shell itself, the runner included. Never raises: a container that is
    gone has nothing left to kill."""
    if container_id is None or client is None:
        return
    try:
        exec_id = client.api.exec_create(
            container_id, END_EVERYTHING, user=f"{os.getuid()}:{os.getgid()}"
        )["Id"]
        client.api.exec_start(exec_id)
    except DockerFailure:
        pass


def kill_all_processes(client: Any, container_id: str | None) -> None:
    """The watchdog's: SIGKILL every process in a container but process 1; never raises."""
    sweep_processes(client, container_id)
