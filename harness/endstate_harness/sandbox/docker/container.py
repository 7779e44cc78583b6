"""The Docker sandbox: one locked-down container per task, driven through the docker SDK."""

from __future__ import annotations

import os
import shlex
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
from docker.utils.socket import STDERR, frames_iter

from endstate_harness.errors import SandboxDied
from endstate_harness.sandbox.base import (
    DEFAULT_TIMEOUT_S,
    OUTPUT_CAP_BYTES,
    ExecResult,
    SandboxError,
    cap_output,
    defer_signals,
)
from endstate_harness.sandbox.channel import Channel
from endstate_harness.sandbox.command import seeded_env
from endstate_harness.sandbox.docker.channel import DockerChannel, RunnerChannel
from endstate_harness.sandbox.docker.daemon import (
    API_TIMEOUT_S,
    CHANNEL_WRAPPER,
    CONTAINER_PATH,
    DEFAULT_IMAGE,
    IMAGE_ENV,
    LABEL,
    LOCAL_IMAGE,
    NAME_PREFIX,
    PID_LABEL,
    TIMEOUT_EXIT_CODE,
    TMPFS_SIZE,
    WATCHDOG_GRACE_S,
    WORKDIR,
    WRAPPER,
    DockerFailure,
    close_socket,
    connect,
    default_image,
    docker_available,
    keeper_argv,
    kill_all_processes,
    no_timeout,
    remove_stray_containers,
    short_error,
    sweep_processes,
    unreachable_message,
)
from endstate_harness.sandbox.docker.runner import (
    RunnerGone,
    RunnerLink,
    runner_enabled,
    start_runner,
)
from endstate_harness.sandbox.docker.runner_socket import SocketOffer, offer_socket
from endstate_harness.sandbox.docker.still import StillSandbox

__all__ = [
    "API_TIMEOUT_S",
    "CONTAINER_PATH",
    "DEFAULT_IMAGE",
    "IMAGE_ENV",
    "LABEL",
    "LOCAL_IMAGE",
    "NAME_PREFIX",
    "PID_LABEL",
    "TIMEOUT_EXIT_CODE",
    "TMPFS_SIZE",
    "WATCHDOG_GRACE_S",
    "WORKDIR",
    "DockerChannel",
    "DockerSandbox",
    "SandboxError",
    "connect",
    "default_image",
    "docker_available",
    "remove_stray_containers",
    "unreachable_message",
]


class DockerSandbox(StillSandbox):
    """A :class:`TreeSandbox` whose commands run in a locked-down container (module docstring);
    the host reads or writes its live tree only while nothing of it but the trusted processes
    runs (:class:`~endstate_harness.sandbox.docker.still.StillSandbox`).

    Args:
        fixture: the task's fixture folder (read, never modified).
        image: the image (``$ENDSTATE_SANDBOX_IMAGE`` or ``python:3.12-slim`` when None); it
            needs ``/bin/sh``, coreutils ``timeout``, ``kill`` and ``sleep``.
        mem_limit: memory cap (swap included: ``memswap_limit`` is set to the same value).
        pids_limit: most processes alive at once in the container.
        pull: pull the image when it is not present locally.
        init: kept for callers: process 1 is always the toolkit's keeper
            (:mod:`endstate_harness.inside.keeper`), which reaps orphans as Docker's init did
            and, unlike it, cannot be traced by a command (so a sweep may spare it).
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
        self._runner: RunnerLink | None = None
        """The runner inside the container (:mod:`endstate_harness.sandbox.docker.runner`) that
        starts commands without an exec each; None: every command is an exec."""
        self._run_lock_owner: int | None = None
        """The thread that holds the command lock to open a channel (whose refresh must not
        wait for that lock: :func:`~endstate_harness.sandbox.docker.still.held_still`)."""

    # --- lifecycle ------------------------------------------------------------------------

    def walls(self) -> str:
        return "docker"

    def command_env(self) -> dict[str, str]:
        """The whole environment of a command in the container (no host variable)."""
        return {"PATH": CONTAINER_PATH, "HOME": "/tmp", **seeded_env(self.hash_seed)}

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
        offer = offer_socket(self.scratch) if runner_enabled() else None
        mounts = [docker.types.Mount(WORKDIR, str(live), type="bind", read_only=False)]
        if offer is not None:
            mounts.append(offer.mount())
        try:
            # Name recorded, create call made and id recorded as one step: whenever an
            # interrupt lands, close() knows what to remove (by id, or else by name).
            with defer_signals():
                self.container_name = name
                ctr = client.containers.create(
                    self.image,
                    keeper_argv(),
                    name=name,
                    detach=True,
                    init=False,  # the keeper is process 1 (daemon.KEEPER_SCRIPT says why)
                    working_dir=WORKDIR,
                    mounts=mounts,
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
        except DockerFailure as exc:
            self._remove_container()
            raise SandboxError(
                f"could not create or start a container from {self.image!r}: {short_error(exc)}"
            ) from None
        except BaseException:
            self._remove_container()
            raise
        finally:
            if offer is not None and self.container_id is None:
                offer.withdraw()
        self._start_runner(offer)

    def _start_runner(self, offer: SocketOffer | None) -> None:
        """Start the runner inside the container (best effort: without it, execs)."""
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            if offer is not None:
                offer.withdraw()
            return
        self._runner = start_runner(client, cid, f"{os.getuid()}:{os.getgid()}",
                                  self.command_env(), WORKDIR, offer)

    def _live_runner(self) -> RunnerLink | None:
        """The runner, unless it stopped (then it is dropped: later commands are execs)."""
        runner = self._runner
        if runner is not None and runner.gone:
            self._runner = None
            runner.close()
            return None
        return runner

    def _stop_runner(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()

    def _ensure_image(self, client: docker.DockerClient) -> None:
        try:
            client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        except DockerFailure as exc:
            why = short_error(exc)
            raise SandboxError(f"could not inspect image {self.image!r}: {why}") from None
        fix = (
            f"pull it (docker pull {self.image}), or build the toolkit's offline image with "
            f"`sudo endstate-author sandbox build` and pass --image {LOCAL_IMAGE} "
            f"(or set {IMAGE_ENV}={LOCAL_IMAGE})"
        )
        if not self.pull:
            raise SandboxError(f"image {self.image!r} is not present locally: {fix}")
        try:
            client.images.pull(self.image)
        except DockerFailure as exc:
            raise SandboxError(
                f"image {self.image!r} is not present locally and pulling it failed "
                f"({short_error(exc)}): {fix}"
            ) from None

    def _close_backend(self) -> None:
        """Remove the container (forced) and drop the client; :meth:`TreeSandbox.close` then
        deletes the scratch folder, with signals deferred throughout."""
        try:
            self._stop_runner()
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
            except DockerFailure as exc:
                raise SandboxError(
                    f"could not remove container {ref[:24]}: {short_error(exc)}; "
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
        if self._runner_answers():
            return  # a process in it answered just now: it runs (0.1 ms, not a daemon call)
        try:
            state = client.api.inspect_container(cid).get("State", {})
        except docker.errors.NotFound:
            raise SandboxDied(f"the sandbox container {cid[:12]} no longer exists") from None
        except DockerFailure as exc:
            raise SandboxError(unreachable_message(short_error(exc))) from None
        if not state.get("Running") or state.get("Paused") or state.get("Restarting"):
            why = f"status {state.get('Status', '?')}, exit code {state.get('ExitCode', '?')}"
            if state.get("OOMKilled"):
                why += ", killed for running out of memory"
            raise SandboxDied(f"the sandbox container {cid[:12]} stopped ({why})")

    def _runner_answers(self) -> bool:
        """Whether the runner answers a ping (only when no command runs right now)."""
        if not self._run_lock.acquire(blocking=False):
            return False
        try:
            runner = self._live_runner()
            return runner is not None and runner.ping()
        finally:
            self._run_lock.release()

    # --- running --------------------------------------------------------------------------

    def _run_command(self, command: str, limit: float) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in ``/work`` inside the container."""
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            raise SandboxError("sandbox is not started (call start() or use it in a with block)")
        api = client.api
        bufs = (bytearray(), bytearray())
        dropped = [0, 0]
        epilogue = b""

        def keep(index: int, chunk: bytes) -> None:
            buf = bufs[index]
            room = max(0, self.output_cap - len(buf))
            buf.extend(chunk[:room])
            dropped[index] += len(chunk) - min(room, len(chunk))

        fired = threading.Event()
        watchdog = threading.Timer(limit + self.watchdog_grace_s, self._kill_everything, (fired,))
        watchdog.daemon = True
        self._run_lock.acquire()  # one command at a time: the sweep must not hit another
        began = time.monotonic()
        swept = False
        try:
            runner = self._live_runner()
            cmd = ["/bin/sh", "-c", WRAPPER, "endstate-sandbox", f"{limit:.3f}", command]
            if runner is not None:
                code, epilogue = self._run_by_runner(runner, command, cmd, limit, watchdog, keep)
                swept = code is not None  # the runner swept before it said how it ended
            else:
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
                    # A quiet command may print nothing for longer than any API timeout; its
                    # limit is the in-container timeout(1), backed by the watchdog.
                    no_timeout(sock)
                    for stream_no, chunk in frames_iter(sock, tty=False):
                        keep(1 if stream_no == STDERR else 0, chunk)
                finally:
                    close_socket(sock)
                code = api.exec_inspect(exec_id).get("ExitCode")
        except DockerFailure as exc:
            why = short_error(exc)
            raise SandboxError(f"command could not run in the container: {why}") from None
        finally:
            watchdog.cancel()
            try:
                if not swept:
                    # The wrapper's own sweep runs in a shell the command may have killed or
                    # traced: what it left is ended from an exec of its own (~80 ms; only
                    # when there is no runner, or it was lost during the command).
                    sweep_processes(client, cid)
            finally:
                self._run_lock.release()
        elapsed = time.monotonic() - began
        # timeout(1) SIGKILLs itself with the group, so a timeout shows as 137 at the limit.
        timed_out = fired.is_set() or (code == 137 and elapsed >= limit * 0.98)
        keep(1, epilogue)  # the wrapper's dash says it after a timeout's SIGKILL too
        stdout = cap_output(bytes(bufs[0]), dropped[0])
        stderr = cap_output(bytes(bufs[1]), dropped[1])
        if timed_out:
            return ExecResult(TIMEOUT_EXIT_CODE, stdout, stderr, timed_out=True)
        return ExecResult(-1 if code is None else int(code), stdout, stderr)

    def _run_by_runner(self, runner: RunnerLink, command: str, cmd: list[str], limit: float,
                      watchdog: threading.Timer,
                      keep: Callable[[int, bytes], None]) -> tuple[int | None, bytes]:
        """Run the command through the runner (forked warm, or the wrapped ``cmd``); its exit
        code (None: the runner stopped before it said, as an exec killed with its container
        says nothing) and what the shell would have written after it."""
        try:
            runner.start_command(command, [*cmd, ""], len(cmd), stdin=False, limit=limit,
                                cwd=WORKDIR, listing=self._listing())
            watchdog.start()
            for kind, payload in runner.messages():
                if kind == b"O":
                    keep(0, payload)
                elif kind == b"E":
                    keep(1, payload)
                elif kind == b"X":
                    return runner.exit_code(payload), runner.epilogue(payload)
                else:
                    raise SandboxError(f"command could not run in the container: "
                                       f"{payload.decode('utf-8', 'replace')[:300]}")
        except RunnerGone:
            self._live_runner()
        return None, b""

    def _listing(self) -> list[str]:
        """The names in the live tree's top folder (``/work``), for the warm start's check
        that nothing there shadows a preloaded module."""
        try:
            return os.listdir(self.live)
        except OSError:
            return [".python-version"]  # unreadable: shadows everything, so a fresh start

    def open_channel(self, argv: list[str], *, timeout_s: float) -> Channel:
        """See :meth:`Sandbox.open_channel`: an exec with stdin attached, in ``/work``
        rewritten from the snapshot without the holdout. Holds the command lock until closed."""
        limit = self._timeout(timeout_s)
        cid, client = self.container_id, self._client
        if cid is None or client is None:
            raise SandboxError("sandbox is not started (call start() or use it in a with block)")
        if not self.sealed:
            raise SandboxError("a channel is opened on the sealed end state: seal() first")
        self._run_lock.acquire()
        try:
            self._run_lock_owner = threading.get_ident()
            try:
                with self._lock:
                    self._refresh_live(with_holdout=False)
            finally:
                self._run_lock_owner = None
            cmd = ["/bin/sh", "-c", CHANNEL_WRAPPER, "endstate-sandbox", f"{limit:.3f}",
                   shlex.join(argv)]
            runner = self._live_runner()
            if runner is not None:
                channel = RunnerChannel(runner, self._run_lock, self.output_cap)
                try:
                    runner.start_command(argv, [*cmd, ""], len(cmd), stdin=True, limit=limit,
                                        cwd=WORKDIR, listing=self._listing(), sink=channel.take,
                                        direct=True)
                    return channel
                except RunnerGone:
                    self._live_runner()
            api = client.api
            exec_id = api.exec_create(
                cid,
                cmd,
                stdin=True,
                user=f"{os.getuid()}:{os.getgid()}",
                environment=self.command_env(),
                workdir=WORKDIR,
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
            no_timeout(sock)
        except DockerFailure as exc:
            self._run_lock.release()
            why = short_error(exc)
            raise SandboxError(f"could not start a process in the container: {why}") from None
        except BaseException:
            self._run_lock.release()
            raise
        return DockerChannel(sock, self._run_lock, self.output_cap,
                             lambda: sweep_processes(self._client, self.container_id))

    def _kill_everything(self, fired: threading.Event) -> None:
        """Watchdog: SIGKILL every process in the container but init (``kill -9 -1``)."""
        fired.set()
        kill_all_processes(self._client, self.container_id)

    # --- introspection (tests, diagnostics) -----------------------------------------------

    def container_attrs(self) -> dict[str, Any]:
        """The daemon's view of the container (``docker inspect``)."""
        if self.container_id is None or self._client is None:
            raise SandboxError("sandbox is not started")
        attrs: dict[str, Any] = self._client.api.inspect_container(self.container_id)
        return attrs
