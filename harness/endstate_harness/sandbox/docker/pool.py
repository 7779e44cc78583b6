"""Reusing Docker sandbox containers between checks: the container is reset, never shared,
and handed back only when a digest shows the reset worked. ``ENDSTATE_SANDBOX_REUSE=0``
turns it off.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

import endstate_harness.sandbox.tree as tree
from endstate_harness.process.cleanup import OPEN_SANDBOXES, defer_signals
from endstate_harness.sandbox.docker.container import DockerSandbox
from endstate_harness.sandbox.docker.daemon import DockerFailure
from endstate_harness.sandbox.docker.runner import RunnerGone, RunnerLink

IDLE_S = 60.0
"""How long a container may wait in the pool for the next sandbox before it is removed."""

MAX_IDLE = 4
"""Most idle containers kept per setting (more are removed when handed back)."""

REUSE_ENV = "ENDSTATE_SANDBOX_REUSE"
"""Set to ``0`` to give every sandbox a container of its own again (debugging, benchmarks)."""


def reuse_enabled() -> bool:
    return os.environ.get(REUSE_ENV, "1").strip() != "0"

@dataclass
class Lease:
    """A running container and its scratch folder, between two sandboxes."""

    key: tuple[Any, ...]
    container_id: str
    container_name: str
    scratch: Path
    client: docker.DockerClient
    runner: RunnerLink | None
    """The container's runner (kept with it: its commands run without an exec each). A
    container without one, or whose process 1 is not the non-dumpable keeper, is never
    reused: only the runner, which nothing in the container can trace, can show that nothing
    but itself, its zygotes and the keeper is left, and only a keeper no command could take
    over may be spared into the next sandbox."""
    baseline: str
    """The runner's digest of what a reset restores, taken when the container was new (every
    reset is checked against it)."""
    idle_since: float = field(default=0.0)


RESET_S = 30.0
"""How long a reset may take before the container is removed instead."""


class ContainerPool:
    """Idle containers by setting, handed to the next :class:`PooledDockerSandbox`."""

    def __init__(self, *, max_idle: int = MAX_IDLE, idle_s: float = IDLE_S) -> None:
        self.max_idle = max_idle
        self.idle_s = idle_s
        self._idle: list[Lease] = []
        self._lock = threading.Lock()
        self._closed = False
        self._timer: threading.Timer | None = None
        self.created = 0
        self.reused = 0

    def take(self, key: tuple[Any, ...]) -> Lease | None:
        """An idle container with these settings that is still running, or None."""
        while True:
            with self._lock:
                if self._closed or not reuse_enabled():
                    return None
                lease = next((x for x in self._idle if x.key == key), None)
                if lease is None:
                    return None
                self._idle.remove(lease)
            running = lease.runner is not None and lease.runner.ping()
            try:
                if not running:
                    state = lease.client.api.inspect_container(lease.container_id).get(
                        "State", {})
                    running = bool(state.get("Running")) and not state.get("Paused")
            except DockerFailure:
                running = False
            if running:
                self.reused += 1
                return lease
            self.discard(lease)

    def give(self, lease: Lease) -> None:
        """Keep a reset container for the next sandbox (or remove it: pool full or closed)."""
        lease.idle_since = time.monotonic()
        with self._lock:
            alike = sum(x.key == lease.key for x in self._idle)
            keep = not self._closed and reuse_enabled() and alike < self.max_idle
            if keep:
                self._idle.append(lease)
        if not keep:
            self.discard(lease)
            return
        OPEN_SANDBOXES.add(self)
        self._schedule()

    def _schedule(self) -> None:
        """One timer at a time, due when the oldest idle container has waited long enough."""
        with self._lock:
            if self._timer is not None or not self._idle:
                return
            due = min(x.idle_since for x in self._idle) + self.idle_s - time.monotonic()
            self._timer = threading.Timer(max(0.1, due + 0.1), self._expire)
            self._timer.daemon = True
            self._timer.start()

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            self._timer = None
            old = [x for x in self._idle if now - x.idle_since >= self.idle_s]
            for lease in old:
                self._idle.remove(lease)
        for lease in old:
            self.discard(lease)
        self._schedule()

    @staticmethod
    def discard(lease: Lease) -> None:
        """Remove the container and its scratch folder (best effort: the exit-time and stray
        sweeps find what a failing daemon left)."""
        with defer_signals():
            try:
                if lease.runner is not None:
                    lease.runner.close()
                lease.client.api.remove_container(lease.container_id, force=True)
            except DockerFailure:
                pass
            finally:
                tree.remove_tree(lease.scratch)
                lease.client.close()

    def close(self) -> None:
        """Remove every idle container; sandboxes closing later remove theirs."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for lease in idle:
            self.discard(lease)
        OPEN_SANDBOXES.discard(self)


POOL = ContainerPool()
"""The process's pool (prove's checks and scripted runs share it)."""


class PooledDockerSandbox(DockerSandbox):
    """A :class:`DockerSandbox` that takes its container from a pool and hands it back reset
    (module docstring). Any argument of :class:`DockerSandbox` but ``scratch_root``."""

    def __init__(self, fixture: Path, *, pool: ContainerPool = POOL, **kwargs: Any) -> None:
        super().__init__(fixture, **kwargs)
        self.pool = pool
        self._lease: Lease | None = None
        self._reusable = False

    def _key(self) -> tuple[Any, ...]:
        uid = f"{os.getuid()}:{os.getgid()}"
        # the hash seed: the container's runner forks every run with the environment it was
        # started with, so a container started under another seed serves none of this one's
        return (self.image, self.mem_limit, self.pids_limit, self.init, uid, self.scratch_root,
                self.hash_seed)

    def _make_scratch(self) -> Path:
        lease = self.pool.take(self._key())
        if lease is None:
            return super()._make_scratch()
        self._lease = lease
        self.container_id, self.container_name = lease.container_id, lease.container_name
        self._client = lease.client
        self._runner = lease.runner
        return lease.scratch

    def start(self) -> None:
        if self._lease is not None:
            return  # running since it was made, reset and verified when handed back
        super().start()
        cid, client = self.container_id, self._client
        assert cid is not None and client is not None and self.container_name is not None
        if self._runner is None or not self._runner.keeper_private:
            return  # not reusable (see Lease.runner); works like a plain DockerSandbox
        try:
            baseline = self._runner.digest(RESET_S)
        except RunnerGone:
            self._live_runner()
            return
        if baseline is not None:
            self.pool.created += 1
            self._lease = Lease(self._key(), cid, self.container_name, self.scratch, client,
                                self._runner, baseline)

    def _close_backend(self) -> None:
        lease, self._lease = self._lease, None
        self._reusable = False
        if lease is not None and self._reset(lease):
            self._lease, self._reusable = lease, True
            self.container_id = self.container_name = None
            self._client = None
            self._runner = None  # handed on with the lease
            return
        if lease is not None:
            self.container_id, self.container_name = lease.container_id, lease.container_name
            self._client = lease.client
            self._runner = lease.runner
            lease.runner = None
        super()._close_backend()

    def _reset(self, lease: Lease) -> bool:
        """Bring the container back to its state at creation; True when verified."""
        # a command still running (closed from another thread at exit): remove, do not wait
        if not self._run_lock.acquire(timeout=1.0):
            return False
        runner = self._live_runner()  # one that stopped goes, and the container with it
        lease.runner = runner
        try:
            if runner is None or not runner.keeper_private:
                return False
            # the runner resets in-process (no shell, no exec): about 1 ms
            return runner.reset(RESET_S) == lease.baseline
        except RunnerGone:
            lease.runner = self._live_runner()
            return False
        finally:
            self._run_lock.release()

    def _drop_scratch(self, scratch: Path) -> None:
        lease, self._lease = self._lease, None
        if not self._reusable or lease is None:
            super()._drop_scratch(scratch)
            return
        self._reusable = False
        live = scratch / "live"
        try:
            for child in list(os.scandir(scratch)):
                if child.name != "live":
                    tree.remove_tree(Path(child.path))
            for child in list(os.scandir(live)):
                tree.remove_tree(Path(child.path))
            clean = os.listdir(scratch) == ["live"] and not os.listdir(live)
            clean = clean and live.is_dir() and not live.is_symlink()
        except OSError:
            clean = False
        if clean:
            self.pool.give(lease)
        else:
            ContainerPool.discard(lease)
