"""PooledDockerSandbox against a real daemon: a reused container is indistinguishable from a
new one, and one that cannot be shown clean is removed instead of reused.

Skipped, with the reason printed, when no daemon answers (``docker_image`` in conftest).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from endstate_harness.sandbox.docker.container import LABEL
from endstate_harness.sandbox.docker.pool import ContainerPool, PooledDockerSandbox

pytestmark = pytest.mark.docker


@pytest.fixture
def pool() -> Iterator[ContainerPool]:
    pool = ContainerPool(idle_s=30)
    yield pool
    pool.close()


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    root = tmp_path / "fixture"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("X = 1\n")
    return root


def _box(fixture: Path, image: str, pool: ContainerPool) -> PooledDockerSandbox:
    return PooledDockerSandbox(fixture, image=image, pull=False, pool=pool)


def _exists(container_id: str) -> bool:
    client = docker.from_env()
    try:
        client.api.inspect_container(container_id)
        return True
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


def test_a_reused_container_starts_from_a_fresh_tree_and_clean_writable_places(
    fixture_dir: Path, docker_image: str, pool: ContainerPool
) -> None:
    with _box(fixture_dir, docker_image, pool) as first:
        first_id = first.container_id
        dirty = (
            "echo planted > pkg/b.py; echo X = 2 > pkg/a.py; echo t > /tmp/t; "
            "mkdir -p /tmp/d && chmod 000 /tmp/d; echo s > /dev/shm/s; "
            "python3 -c 'import sys,os; from multiprocessing import shared_memory as m; "
            "m.SharedMemory(name=\"leak\", create=True, size=64)' ; true"
        )
        assert first.run(dirty).exit_code == 0
        assert first.run("ls /tmp /dev/shm").stdout.split().count("t") == 1
    with _box(fixture_dir, docker_image, pool) as second:
        assert second.container_id == first_id, "the container was not reused"
        assert sorted(p.name for p in (second.live / "pkg").iterdir()) == ["a.py"]
        assert second.read_text("pkg/a.py") == "X = 1\n"
        listing = second.run("ls -A /tmp /dev/shm; ls /work/pkg; cat pkg/a.py").stdout
        assert listing.split() == ["/dev/shm:", "/tmp:", "a.py", "X", "=", "1"]
        # nothing of the first sandbox's scratch is left on the host either
        assert sorted(p.name for p in second.scratch.iterdir()) == ["home", "live"]
    assert pool.created == 1 and pool.reused == 1


def test_a_process_left_running_is_killed_before_reuse(
    fixture_dir: Path, docker_image: str, pool: ContainerPool
) -> None:
    with _box(fixture_dir, docker_image, pool) as first:
        first_id = first.container_id
        assert first_id is not None
        # however it got there (the per-command sweep should have caught it): a process
        # still running in the container when the sandbox closes
        client = docker.from_env()
        try:
            exec_id = client.api.exec_create(first_id, ["sleep", "300"])["Id"]
            client.api.exec_start(exec_id, detach=True)
            time.sleep(0.3)
            look = client.api.exec_create(first_id, ["sh", "-c", "cat /proc/[0-9]*/cmdline"])
            assert b"300" in client.api.exec_start(look["Id"])
        finally:
            client.close()
    with _box(fixture_dir, docker_image, pool) as second:
        assert second.container_id == first_id
        assert "300" not in second.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout


def test_a_container_whose_dev_was_tampered_with_is_removed_not_reused(
    fixture_dir: Path, docker_image: str, pool: ContainerPool
) -> None:
    with _box(fixture_dir, docker_image, pool) as first:
        first_id = first.container_id
        assert first_id is not None
        first.run("touch /dev/planted || true")
        planted = first.run("ls /dev").stdout.split()
    if "planted" not in planted:
        pytest.skip("/dev is not writable for this uid in this image: nothing to tamper with")
    assert not _exists(first_id)
    with _box(fixture_dir, docker_image, pool) as second:
        assert second.container_id != first_id
        assert "planted" not in second.run("ls /dev").stdout.split()


def test_a_stopped_container_is_not_handed_out(
    fixture_dir: Path, docker_image: str, pool: ContainerPool
) -> None:
    with _box(fixture_dir, docker_image, pool) as first:
        first_id = first.container_id
        assert first_id is not None
    client = docker.from_env()
    try:
        client.api.kill(first_id)
    finally:
        client.close()
    with _box(fixture_dir, docker_image, pool) as second:
        assert second.container_id != first_id
        assert second.run("cat pkg/a.py").stdout == "X = 1\n"
    assert not _exists(first_id)


def test_idle_containers_are_removed_on_close_and_after_the_idle_time(
    fixture_dir: Path, docker_image: str
) -> None:
    quick = ContainerPool(idle_s=0.5)
    try:
        with _box(fixture_dir, docker_image, quick) as box:
            expired_id, scratch = box.container_id, box.scratch
        assert expired_id is not None and _exists(expired_id)
        deadline = time.monotonic() + 15
        while _exists(expired_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _exists(expired_id) and not scratch.exists()
        with _box(fixture_dir, docker_image, quick) as box:
            closed_id = box.container_id
        quick.idle_s = 300
    finally:
        quick.close()
    assert closed_id is not None and not _exists(closed_id)
    client = docker.from_env()
    try:
        mine = client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, sparse=True)
        assert closed_id not in {c.id for c in mine}
    finally:
        client.close()
