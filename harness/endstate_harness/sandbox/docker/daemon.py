"""The Docker daemon, seen from the harness: reaching it, naming images, sweeping strays."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from endstate_harness.errors import SandboxError
from endstate_harness.process.cleanup import pid_alive
from endstate_harness.sandbox.scratch import SCRATCH_PREFIX
from endstate_harness.sandbox.tree import remove_tree

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

KEEPER_FILE = "/tmp/.endstate-keeper"
# The process holding the container open records its pid, so the sweep below spares it.
KEEPER_ARGV = ["/bin/sh", "-c", f"echo $$ > {KEEPER_FILE}; exec sleep infinity"]

# SIGKILL is delivered asynchronously: wait (up to ~1 s, shell builtins only) until no process
# but init, the keeper and this shell is alive (zombies excepted), so that "nothing outlives the
# command" already holds when the exec returns.
_SETTLE = (
    "n=0; while [ $n -lt 50 ]; do alive=; for p in /proc/[0-9]*; do p=${p#/proc/}; "
    'case "$spared" in *" $p "*) ;; *) st=; read -r st 2>/dev/null < "/proc/$p/stat"; '
    'st=${st##*) }; case "$st" in ""|Z*|X*) ;; *) alive=1;; esac;; esac; done; '
    '[ -z "$alive" ] && break; n=$((n+1)); sleep 0.02; done'
)

# Once the command ($pid) ended: kill its group, sweep, settle, exit with its status. Spared:
# init, the keeper, this shell and the pids in $3 (the runner that started it, if any).
_AFTER_COMMAND = (
    'wait "$pid"; rc=$?; kill -s KILL -- "-$pid" 2>/dev/null; '
    f"if read keeper < {KEEPER_FILE} 2>/dev/null; then "
    'spared=" 1 $keeper $$ $3 "; '
    "for p in /proc/[0-9]*; do p=${p#/proc/}; "
    'case "$spared" in *" $p "*) ;; *) kill -s KILL "$p" 2>/dev/null;; esac; done; '
    f"{_SETTLE}; fi; "
    'exit "$rc"'
)

# $1 = seconds, $2 = the command, $3 = more pids to spare (space-separated, may be empty).
# timeout(1) puts itself and the command in a new process group
# and on expiry SIGKILLs that whole group. Once the command ends, whatever it left running is
# killed: first its group, then (the sweep) every process of the container but init, the keeper
# and this shell, which also catches what left the group with setsid. Commands of one sandbox
# are serialised, so the sweep never hits another command. Exit status: the command's.
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


def _daemon_url() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def unreachable_message(detail: str = "") -> str:
    """The one message for a daemon that does not answer, naming the fix."""
    why = f" ({detail})" if detail else ""
    return (
        f"cannot reach the Docker daemon at {_daemon_url()}{why}: start it "
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


def sweep_processes(client: Any, container_id: str | None) -> None:
    """Kill whatever a command left in a container: every process but init and the keeper
    (whose pid is in :data:`KEEPER_FILE`). Never raises: a container that is gone has
    nothing left to kill."""
    if container_id is None or client is None:
        return
    sweep = (
        f"if read keeper < {KEEPER_FILE} 2>/dev/null; then "
        "for p in /proc/[0-9]*; do p=${p#/proc/}; "
        'case "$p" in 1|"$keeper"|"$$") ;; *) kill -s KILL "$p" 2>/dev/null;; esac; '
        "done; fi"
    )
    try:
        exec_id = client.api.exec_create(
            container_id, ["/bin/sh", "-c", sweep], user=f"{os.getuid()}:{os.getgid()}"
        )["Id"]
        client.api.exec_start(exec_id)
    except DockerFailure:
        pass


def kill_all_processes(client: Any, container_id: str | None) -> None:
    """SIGKILL every process in a container but init (``kill -9 -1`` as root); never raises."""
    if container_id is None or client is None:
        return
    try:
        exec_id = client.api.exec_create(container_id, ["kill", "-9", "-1"], user="0:0")["Id"]
        client.api.exec_start(exec_id)
    except DockerFailure:
        pass
