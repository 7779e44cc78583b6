"""Holding a Docker sandbox still while the host acts on its live tree.

The live tree is a host folder bind-mounted into the container. When the host reads it (the
seal) or rewrites it (the refresh before a grading command, a write or a stage), a process of
the sandbox that still ran could swap a folder for a link between two of the host's steps, and
the host would read host files into the end state or write where that link leads. So before
the host acts, every process of the container but the trusted ones is ended, or the whole
container is frozen, and that is decided by the container's process namespace and cgroup,
never by anything a command could write:

* **Ended, by the runner** (the common case, ~0.2 ms: one round trip and a look at /proc):
  the runner inside the container
  (:mod:`endstate_harness.inside.box_runner`) kills every process but process 1 (the keeper,
  :mod:`endstate_harness.inside.keeper`), itself and its zygotes, and looks until none is
  left. All three trusted kinds are non-dumpable, so no command can trace them and make them
  act for it, and the runner holds what it spares in its own memory.
* **Frozen, by the cgroup** (when there is no runner, it does not answer, process 1 is not
  the non-dumpable keeper, or a command is running): what can be killed is killed (``kill(-1)``
  from an exec, when no command runs), then the container is paused (``docker pause``: the
  cgroup freezer stops every process of it, traced or not) for as long as the host acts, and
  resumed after. About 100 ms on an idle machine (an exec and two daemon calls; 350 ms
  under heavy load), so only on this path.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import docker.errors

from endstate_harness.errors import SandboxError
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.daemon import DockerFailure, short_error, sweep_processes
from endstate_harness.sandbox.docker.runner import RunnerGone, RunnerLink


class StillSandbox(TreeSandbox):
    """A :class:`TreeSandbox` of a container whose every act of the host on the live tree
    (the seal, the refresh, a write, a stage before the seal) runs :func:`held_still`.
    :class:`~endstate_harness.sandbox.docker.container.DockerSandbox` is one."""

    container_id: str | None
    _client: docker.DockerClient | None
    _run_lock: threading.Lock
    _run_lock_owner: int | None
    """The thread that holds ``_run_lock`` to open a channel, and refreshes the tree for it."""

    @abstractmethod
    def _live_runner(self) -> RunnerLink | None:
        """The runner, unless it stopped."""

    @abstractmethod
    def _stop_runner(self) -> None:
        """Close the runner (a sweep is about to kill it)."""

    def seal(self) -> str:
        if self.sealed:
            return super().seal()
        with held_still(self):
            return super().seal()

    def _refresh_live(self, *, with_holdout: bool) -> Path:
        with held_still(self):
            return super()._refresh_live(with_holdout=with_holdout)

    def write_text(self, rel: str, text: str) -> None:
        with held_still(self):
            super().write_text(rel, text)

    def stage(self, source: Path) -> None:
        if self.sealed:  # after the seal, staging reads ``source`` only
            super().stage(source)
            return
        with held_still(self):
            super().stage(source)


@contextmanager
def held_still(box: StillSandbox) -> Iterator[str]:
    """Nothing of the sandbox but its trusted processes runs inside this block (module
    docstring). Yields how: ``"ended"`` (by the runner), ``"frozen"``, or ``"no container"``
    (never started or removed: nothing runs).

    Raises:
        SandboxError: the container runs but could not be frozen (the daemon failed).
    """
    cid, client = box.container_id, box._client
    if cid is None or client is None:
        yield "no container"
        return
    mine = box._run_lock_owner == threading.get_ident()  # open_channel holds it already
    idle = mine or box._run_lock.acquire(blocking=False)
    try:
        if idle and _ended_by_runner(box):
            yield "ended"
            return
        if idle:  # no command runs: end what a kill reaches (the runner too, if any)
            box._stop_runner()
            sweep_processes(client, cid)
        with _frozen(client, cid):
            yield "frozen"
    finally:
        if idle and not mine:
            box._run_lock.release()


def _ended_by_runner(box: StillSandbox) -> bool:
    """Whether the runner ended every process but the trusted ones (module docstring)."""
    runner = box._live_runner()
    if runner is None or not runner.keeper_private:
        return False
    try:
        return runner.end_others()
    except RunnerGone:
        box._live_runner()  # dropped: the sandbox goes on with execs
        return False


@contextmanager
def _frozen(client: docker.DockerClient, cid: str) -> Iterator[None]:
    """The container paused for the block, resumed after (a container that is not running
    runs nothing: then the block runs as it is)."""
    try:
        client.api.pause(cid)
    except docker.errors.NotFound:
        yield
        return
    except DockerFailure as exc:
        if _running(client, cid):
            raise SandboxError(
                f"could not freeze the sandbox container before acting on its files: "
                f"{short_error(exc)}"
            ) from None
        yield
        return
    try:
        yield
    finally:
        try:
            client.api.unpause(cid)
        except DockerFailure:
            pass  # gone meanwhile: nothing to resume; its removal is close()'s


def _running(client: docker.DockerClient, cid: str) -> bool:
    """Whether processes of the container can run (running and not paused)."""
    try:
        state = client.api.inspect_container(cid).get("State", {})
    except docker.errors.NotFound:
        return False
    except DockerFailure:
        return True  # cannot tell: assume the worst
    return bool(state.get("Running")) and not state.get("Paused")
