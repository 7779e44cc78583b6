"""The Docker sandbox: one locked-down container per task, driven through the docker SDK.

The container is created at ``start()``, held open (``sleep infinity`` under Docker's init, which
reaps orphans so a fork bomb's corpses do not pin the pids limit) and every command is an exec
in it, so one task's commands share files like a terminal session would; commands of one
sandbox run one at a time (concurrent calls queue), and nothing a command starts outlives it.
The live tree is bind-mounted at ``/work``: the agent's file tools write host-side into the same
bytes the shell sees, and graders read the end state on the host without copying anything out.
The container runs as the host's ``uid:gid`` so those files belong to the invoking user.

Locked down by default: no network (``network_mode="none"``: the fix for a task must be derived,
not downloaded), every capability dropped, no-new-privileges, a memory cap without extra swap,
a pids limit, and a read-only root file system with a small memory-backed ``/tmp``
(:data:`TMPFS_SIZE`, also ``HOME``), so a command that fills the disk there gets ENOSPC
instead of filling the host's. What Docker cannot bound is the bind-mounted live tree
``/work``: it is a folder on the host, so a runaway write there is stopped only by the
command's timeout (and, failing that, by the host disk). Keep commands' timeouts modest.

Each command is wrapped in coreutils ``timeout -s KILL`` inside the container,
in its own process group; when the command ends its group is killed and then every other process
of the container but init and the keeper (so ``sleep 100 &`` and even ``setsid`` children do not
linger between commands); a host-side watchdog kills everything in the container if an exec
still has not returned well after its limit.

The container is removed on every path out: ``close()``, an exception in a ``with`` block, Ctrl-C
(KeyboardInterrupt unwinds through it), SIGTERM/SIGHUP and interpreter exit (the open-sandbox
registry of ``sandbox.py``). Its name (``endstate-<pid>-<random>``) is chosen and remembered
*before* the create call, and the create call and recording its id run with signals deferred,
so an interrupt at any moment still leaves something to remove it by. Every container carries
the label ``endstate-author=1`` and the pid of its owner, so :func:`remove_stray_containers`
can find what a killed process (SIGKILL) left.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions
from docker.utils.socket import STDERR, frames_iter

from endstate_harness.sandbox import (
    COMMAND_ENV,
    DEFAULT_TIMEOUT_S,
    OUTPUT_CAP_BYTES,
    SCRATCH_PREFIX,
    ExecResult,
    SandboxError,
    TreeSandbox,
    cap_output,
    defer_signals,
)
from endstate_harness.tree import remove_tree

DEFAULT_IMAGE = "python:3.12-slim"
IMAGE_ENV = "ENDSTATE_SANDBOX_IMAGE"
"""Set it to use another image by default (the test suite uses ``endstate-sandbox:local``)."""
LOCAL_IMAGE = "endstate-sandbox:local"
"""The image ``scripts/ensure-docker.sh`` builds from Debian packages, for offline machines."""

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
_KEEPER = ["/bin/sh", "-c", f"echo $$ > {KEEPER_FILE}; exec sleep infinity"]

# $1 = seconds, $2 = the command. timeout(1) puts itself and the command in a new process group
# and on expiry SIGKILLs that whole group. Once the command ends, whatever it left running is
# killed: first its group, then (the sweep) every process of the container but init, the keeper
# and this shell, which also catches what left the group with setsid. Commands of one sandbox
# are serialised, so the sweep never hits another command. Exit status: the command's.
_WRAPPER = (
    'timeout -s KILL "$1" /bin/sh -c "$2" </dev/null & pid=$!; '
    'wait "$pid"; rc=$?; kill -s KILL -- "-$pid" 2>/dev/null; '
    f"if read keeper < {KEEPER_FILE} 2>/dev/null; then "
    "for p in /proc/[0-9]*; do p=${p#/proc/}; "
    'case "$p" in 1|"$keeper"|"$$") ;; *) kill -s KILL "$p" 2>/dev/null;; esac; done; fi; '
    'exit "$rc"'
)

_DockerFailure = (docker.errors.DockerException, requests.exceptions.RequestException)


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
    except _DockerFailure as exc:
        raise SandboxError(unreachable_message(_short(exc))) from None
    try:
        client.ping()
    except _DockerFailure as exc:
        client.close()
        raise SandboxError(unreachable_message(_short(exc))) from None
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


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


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
        for ctr in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
            owner = ctr.labels.get(PID_LABEL, "")
            if not all_owners and owner.isdigit() and _pid_alive(int(owner)):
                continue
            sources = [
                Path(m.get("Source", ""))
                for m in ctr.attrs.get("Mounts", [])
                if m.get("Destination") == WORKDIR
            ]
            try:
                ctr.remove(force=True)
                removed.append(ctr.id or "")
            except docker.errors.NotFound:
                pass
            for live in sources:
                scratch = live.parent
                if live.name == "live" and scratch.name.startswith(SCRATCH_PREFIX):
                    remove_tree(scratch)
    finally:
        client.close()
    return removed


def _no_timeout(sock: Any) -> None:
    for candidate in (sock, getattr(sock, "_sock", None)):
        if candidate is not None and hasattr(candidate, "settimeout"):
            candidate.settimeout(None)


def _close_socket(sock: Any) -> None:
    """Close an exec's raw socket and the HTTP response holding it (or the connection leaks)."""
    for closer in (getattr(sock, "_response", None), sock):
        try:
            if closer is not None:
                closer.close()
        except (OSError, ValueError):  # already closed by the other one
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DockerSandbox(TreeSandbox):
    """A :class:`TreeSandbox` whose commands run in a locked-down container (module docstring).

    Args:
        fixture: the task's fixture folder (read, never modified).
        image: the image (``$ENDSTATE_SANDBOX_IMAGE`` or ``python:3.12-slim`` when None); it
            needs ``/bin/sh``, coreutils ``timeout``, ``kill`` and ``sleep``.
        mem_limit: memory cap (swap included: ``memswap_limit`` is set to the same value).
        pids_limit: most processes alive at once in the container.
        pull: pull the image when it is not present locally.
        init: run Docker's init as PID 1 so orphans are reaped.
        scratch_root, default_timeout_s, output_cap: as for :class:`LocalSandbox`.
    """

    def __init__(
        self,
        fixture: Path,
        *,
        image: str | None = None,
        mem_limit: str = "1g",
        pids_limit: int = 256,
        pull: bool = True,
        init: bool = True,
        scratch_root: Path | None = None,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        output_cap: int = OUTPUT_CAP_BYTES,
    ) -> None:
        super().__init__(fixture, scratch_root=scratch_root, default_timeout_s=default_timeout_s)
        self.image = image or default_image()
        self.mem_limit = mem_limit
        self.pids_limit = pids_limit
        self.pull = pull
        self.init = init
        self.output_cap = output_cap
        self.container_id: str | None = None
        self.container_name: str | None = None
        """Chosen before the create call, so the container can be removed by name even when
        an interrupt lands before its id is known."""
        self.watchdog_grace_s = WATCHDOG_GRACE_S
        self._run_lock = threading.Lock()
        self._client: docker.DockerClient | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def command_env(self) -> dict[str, str]:
        """The whole environment of a command in the container (no host variable)."""
        return {"PATH": CONTAINER_PATH, "HOME": "/tmp", **COMMAND_ENV}

    def start(self) -> None:
        """Create and start the container. Raises :class:`SandboxError` with the fix when the
        daemon cannot be reached or the image is missing."""
        live = self.live  # raises when not set up
        if self.container_id is not None or self.container_name is not None:
            raise SandboxError("sandbox is already started")
        client = connect()
        self._client = client
        self._ensure_image(client)
        uid_gid = f"{os.getuid()}:{os.getgid()}"
        name = f"{NAME_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            # Name recorded, create call made and id recorded as one step: whenever an
            # interrupt lands, close() knows what to remove (by id, or else by name).
            with defer_signals():
                self.container_name = name
                ctr = client.containers.create(
                    self.image,
                    _KEEPER,
                    name=name,
                    detach=True,
                    init=self.init,
                    working_dir=WORKDIR,
                    mounts=[docker.types.Mount(WORKDIR, str(live), type="bind", read_only=False)],
                    read_only=True,
                    tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={TMPFS_SIZE},mode=1777"},
                    network_mode="none",
                    cap_drop=["ALL"],
                    security_opt=["no-new-privileges"],
                    mem_limit=self.mem_limit,
                    memswap_limit=self.mem_limit,
                    pids_limit=self.pids_limit,
                    user=uid_gid,
                    environment=self.command_env(),
                    labels={LABEL: "1", PID_LABEL: str(os.getpid())},
                )
                self.container_id = ctr.id
            ctr.start()
        except _DockerFailure as exc:
            self._remove_container()
            raise SandboxError(
                f"could not create or start a container from {self.image!r}: {_short(exc)}"
            ) from None
        except BaseException:
            self._remove_container()
            raise

    def _ensure_image(self, client: docker.DockerClient) -> None:
        try:
            client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        except _DockerFailure as exc:
            raise SandboxError(f"could not inspect image {self.image!r}: {_short(exc)}") from None
        fix = (
            f"pull it (docker pull {self.image}), or build the offline image with "
            f"`sudo bash scripts/ensure-docker.sh` and pass --image {LOCAL_IMAGE} "
            f"(or set {IMAGE_ENV}={LOCAL_IMAGE})"
        )
        if not self.pull:
            raise SandboxError(f"image {self.image!r} is not present locally: {fix}")
        try:
            client.images.pull(self.image)
        except _DockerFailure as exc:
            raise SandboxError(
                f"image {self.image!r} is not present locally and pulling it failed "
                f"({_short(exc)}): {fix}"
            ) from None

    def _close_backend(self) -> None:
        """Remove the container (forced) and drop the client; :meth:`TreeSandbox.close` then
        deletes the scratch folder, with signals deferred throughout."""
        try:
            self._remove_container()
        finally:
            client, self._client = self._client, None
            if client is not None:
                client.close()

    def _remove_container(self) -> None:
        """Force-remove the container by id, or by name when its id was never recorded.

        The record is cleared only once the daemon confirms (or says it is already gone),
        so a failed removal can be retried by the exit-time sweep.
        """
        with self._lock:
            ref = self.container_id or self.container_name
            if ref is None:
                return
            if self._client is None:  # nothing to talk to; stray-container sweep's job now
                self.container_id = self.container_name = None
                return
            try:
                self._client.api.remove_container(ref, force=True)
            except docker.errors.NotFound:
                pass
            except _DockerFailure as exc:
                raise SandboxError(
                    f"could not remove container {ref[:24]}: {_short(exc)}; "
                    f"remove it with: docker rm -f {ref[:24]}"
                ) from None
            self.container_id = self.container_name = None

    def check_health(self) -> None:
        """Raise :class:`SandboxError` unless the container is still running.

        A container killed from outside (``docker kill``, the OOM killer, a daemon restart)
        makes every later command fail: what a grader then reports is about the environment,
        not the agent's end state.
        """
        super().check_health()
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            raise SandboxError("the sandbox container is not running (never started or closed)")
        try:
            state = client.api.inspect_container(cid).get("State", {})
        except docker.errors.NotFound:
            raise SandboxError(f"the sandbox container {cid[:12]} no longer exists") from None
        except _DockerFailure as exc:
            raise SandboxError(unreachable_message(_short(exc))) from None
        if not state.get("Running") or state.get("Paused") or state.get("Restarting"):
            why = f"status {state.get('Status', '?')}, exit code {state.get('ExitCode', '?')}"
            if state.get("OOMKilled"):
                why += ", killed for running out of memory"
            raise SandboxError(f"the sandbox container {cid[:12]} stopped ({why})")

    # --- running --------------------------------------------------------------------------

    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in ``/work`` inside the container."""
        limit = self._timeout(timeout_s)
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            raise SandboxError("sandbox is not started (call start() or use it in a with block)")
        api = client.api
        cmd = ["/bin/sh", "-c", _WRAPPER, "endstate-sandbox", f"{limit:.3f}", command]
        bufs = (bytearray(), bytearray())
        dropped = [0, 0]
        fired = threading.Event()
        watchdog = threading.Timer(limit + self.watchdog_grace_s, self._kill_everything, (fired,))
        watchdog.daemon = True
        self._run_lock.acquire()  # one command at a time: the sweep must not hit another
        began = time.monotonic()
        try:
            exec_id = api.exec_create(
                cid,
                cmd,
                user=f"{os.getuid()}:{os.getgid()}",
                environment=self.command_env(),
                workdir=WORKDIR,
            )["Id"]
            watchdog.start()
            sock = api.exec_start(exec_id, socket=True)
            try:
                # A quiet command may print nothing for longer than any API timeout; its limit
                # is the in-container timeout(1), backed by the watchdog.
                _no_timeout(sock)
                for stream_no, chunk in frames_iter(sock, tty=False):
                    index = 1 if stream_no == STDERR else 0
                    buf = bufs[index]
                    room = max(0, self.output_cap - len(buf))
                    buf.extend(chunk[:room])
                    dropped[index] += len(chunk) - min(room, len(chunk))
            finally:
                _close_socket(sock)
            code = api.exec_inspect(exec_id).get("ExitCode")
        except _DockerFailure as exc:
            raise SandboxError(f"command could not run in the container: {_short(exc)}") from None
        finally:
            watchdog.cancel()
            self._run_lock.release()
        elapsed = time.monotonic() - began
        stdout = cap_output(bytes(bufs[0]), dropped[0])
        stderr = cap_output(bytes(bufs[1]), dropped[1])
        if code is None:
            code = -1
        # timeout(1) SIGKILLs itself with the group, so a timeout shows as 137 at the limit.
        if fired.is_set() or (code == 137 and elapsed >= limit * 0.98):
            return ExecResult(TIMEOUT_EXIT_CODE, stdout, stderr, timed_out=True)
        return ExecResult(int(code), stdout, stderr)

    def _kill_everything(self, fired: threading.Event) -> None:
        """Watchdog: SIGKILL every process in the container but init (``kill -9 -1``)."""
        fired.set()
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            return
        try:
            exec_id = client.api.exec_create(cid, ["kill", "-9", "-1"], user="0:0")["Id"]
            client.api.exec_start(exec_id)
        except _DockerFailure:
            pass

    # --- introspection (tests, diagnostics) -----------------------------------------------

    def container_attrs(self) -> dict[str, Any]:
        """The daemon's view of the container (``docker inspect``)."""
        if self.container_id is None or self._client is None:
            raise SandboxError("sandbox is not started")
        attrs: dict[str, Any] = self._client.api.inspect_container(self.container_id)
        return attrs
