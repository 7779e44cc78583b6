"""DockerSandbox against a real daemon: isolation, limits, the bind mount, cleanup.

Skipped, with the reason printed, when no daemon answers (see ``docker_image`` in conftest).
The unreachable-daemon tests need no daemon and always run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from endstate_harness.sandbox.docker.container import (
    LABEL,
    PID_LABEL,
    DockerSandbox,
    SandboxError,
    docker_available,
    remove_stray_containers,
)
from tests.support import session

HARNESS = Path(__file__).resolve().parents[2] / "harness"

pytestmark = pytest.mark.docker


def _labelled_ids() -> set[str]:
    """This session's sandbox containers (another run's on the same daemon come and go)."""
    client = docker.from_env()
    try:
        return session.containers(client, f"{LABEL}=1")
    finally:
        client.close()


# ----------------------------------------------------------------------------- no daemon needed


def test_unreachable_daemon_gives_one_clear_message(
    fixture_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert docker_available(timeout_s=1) is False
    sb = DockerSandbox(fixture_tree)
    with pytest.raises(SandboxError) as info:
        with sb:
            pass
    message = str(info.value)
    assert "cannot reach the Docker daemon at unix:///nonexistent/docker.sock" in message
    assert "dockerd" in message and "--sandbox local" in message
    assert "Traceback" not in message
    assert sb._scratch is None, "the scratch folder is removed when start() fails"


# ----------------------------------------------------------------------------- real daemon


def test_container_is_locked_down(fixture_tree: Path, docker_image: str) -> None:
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        host = sb.container_attrs()["HostConfig"]
        config = sb.container_attrs()["Config"]
        assert host["NetworkMode"] == "none"
        assert host["CapDrop"] == ["ALL"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Memory"] == 1 << 30 and host["MemorySwap"] == 1 << 30
        assert host["PidsLimit"] == 256
        assert config["User"] == f"{os.getuid()}:{os.getgid()}"
        assert config["Labels"][LABEL] == "1"
        assert host["ReadonlyRootfs"] is True
        assert "size=64m" in host["Tmpfs"]["/tmp"]
        assert sb.container_name and sb.container_attrs()["Name"] == f"/{sb.container_name}"
        status = sb.run("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
        assert "CapEff:\t0000000000000000" in status.stdout
        assert "NoNewPrivs:\t1" in status.stdout


def test_no_egress(fixture_tree: Path, docker_image: str) -> None:
    probe = (
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n    s.connect(('1.1.1.1', 53)); print('CONNECTED')\n"
        "except OSError as e:\n    print('BLOCKED', e)\n"
    )
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        sb.write_text("probe.py", probe)
        result = sb.run("python3 probe.py")
        assert result.ok, result.output
        assert result.stdout.startswith("BLOCKED"), result.stdout
        interfaces = sb.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        assert interfaces.stdout.split() == ["lo"]


def test_bind_mount_is_live_both_ways_and_owned_by_the_user(
    fixture_tree: Path, docker_image: str
) -> None:
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        sb.write_text("from_host.txt", "hello from the host\n")
        seen = sb.run("cat from_host.txt && pwd && mkdir -p out && echo hi > out/from_ctr.txt")
        assert seen.ok and seen.stdout == "hello from the host\n/work\n"
        assert sb.read_text("out/from_ctr.txt") == "hi\n"
        made = sb.live / "out" / "from_ctr.txt"
        assert made.stat().st_uid == os.getuid() and made.stat().st_gid == os.getgid()
        assert (sb.live / "out").stat().st_uid == os.getuid()
        assert sb.changed_paths() == ["from_host.txt", "out/from_ctr.txt"]
        fixed = sb.run('python3 -c "import pkg.calc as c; print(c.add(2, 2))"')
        assert fixed.stdout == "0\n"  # the fixture's bug, run in the container
        env = sb.run("echo $PYTHONDONTWRITEBYTECODE $PYTHONHASHSEED $HOME")
        assert env.stdout == "1 0 /tmp\n"


def test_seal_holds_with_container_writes(
    fixture_tree: Path, docker_image: str, tmp_path: Path
) -> None:
    holdout = tmp_path / "holdout"
    holdout.mkdir()
    (holdout / "hidden.txt").write_text("holdout\n")
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        sb.run("echo agent > agent.txt")
        sealed = sb.seal()
        sb.stage(holdout)
        assert sb.run("cat hidden.txt && echo late > late.txt").stdout == "holdout\n"
        assert sb.tree_hash() == sealed
        assert not sb.exists("late.txt") and not sb.exists("hidden.txt")
        assert sb.changed_paths() == ["agent.txt"]


def test_timeout_and_background_leftovers_are_killed(fixture_tree: Path, docker_image: str) -> None:
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        began = time.monotonic()
        result = sb.run("sleep 60 & sleep 60", timeout_s=1)
        assert result.timed_out and result.exit_code == 124
        assert time.monotonic() - began < 10
        quick = sb.run("sleep 60 & echo started")
        assert quick.ok and quick.stdout == "started\n"
        procs = sb.run("cat /proc/[0-9]*/comm")
        assert procs.stdout.split().count("sleep") == 0  # nothing lingers
        assert sb.run("cat /proc/1/comm").stdout == "python3\n"  # the keeper holds it open
        assert sb.run("exit 7").exit_code == 7


def test_fork_bomb_is_contained(fixture_tree: Path, docker_image: str) -> None:
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        began = time.monotonic()
        result = sb.run("bomb() { bomb | bomb & }; bomb; sleep 5", timeout_s=8)
        elapsed = time.monotonic() - began
        assert elapsed < 30, "the exec returns"
        assert "Cannot fork" in result.stderr, "the pids limit stopped it inside the container"
        # The limit was hit inside, the host is fine, and the sandbox is usable again.
        assert subprocess.run(["true"], check=False).returncode == 0
        deadline = time.monotonic() + 20
        after = sb.run("echo alive")
        while not after.ok and time.monotonic() < deadline:
            time.sleep(0.5)
            after = sb.run("echo alive")
        assert after.stdout == "alive\n"
        # Nothing of the bomb is left: PID 1, its sleep, and this command's own processes.
        left = sb.run("ls -d /proc/[0-9]* | wc -l")
        assert int(left.stdout) < 10, left


def test_memory_cap_is_enforced(fixture_tree: Path, docker_image: str) -> None:
    with DockerSandbox(fixture_tree, image=docker_image, mem_limit="256m") as sb:
        small = sb.run("python3 -c \"b = b'x' * (64 * 1024 * 1024); print(len(b))\"")
        assert small.ok and small.stdout == str(64 * 1024 * 1024) + "\n"
        big = sb.run("python3 -c \"b = b'x' * (2 * 1024 ** 3); print('ALLOCATED')\"", timeout_s=60)
        assert "ALLOCATED" not in big.stdout
        assert big.exit_code == 137 and not big.timed_out, big


def test_missing_image_is_a_clear_error(fixture_tree: Path, docker_image: str) -> None:
    before = _labelled_ids()
    sb = DockerSandbox(fixture_tree, image="endstate-no-such-image:nope", pull=False)
    with pytest.raises(SandboxError) as info:
        with sb:
            pass
    message = str(info.value)
    assert "endstate-no-such-image:nope" in message
    assert "docker pull" in message and "endstate-author sandbox build" in message
    assert _labelled_ids() == before


def test_no_container_left_behind_after_close_or_exception(
    fixture_tree: Path, docker_image: str
) -> None:
    before = _labelled_ids()
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        cid = sb.container_id
        assert cid in _labelled_ids()
    assert _labelled_ids() == before
    with (
        pytest.raises(ValueError, match="boom"),
        DockerSandbox(fixture_tree, image=docker_image) as sb,
    ):
        assert sb.container_id in _labelled_ids()
        raise ValueError("boom")
    assert _labelled_ids() == before
    sb.close()  # idempotent


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_no_container_left_behind_on_ctrl_c_or_sigterm(
    fixture_tree: Path, docker_image: str, signum: int
) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(HARNESS)!r})
        from endstate_harness.sandbox.docker.container import DockerSandbox
        with DockerSandbox(Path({str(fixture_tree)!r}), image={docker_image!r}) as sb:
            print(sb.container_id, sb.scratch, flush=True)
            sb.run("sleep 60")
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    cid, scratch = proc.stdout.readline().split()
    assert cid in _labelled_ids()
    time.sleep(0.5)
    proc.send_signal(signum)
    assert proc.wait(timeout=30) != 0
    assert cid not in _labelled_ids()
    assert not Path(scratch).exists()


def test_stray_containers_of_a_killed_process_are_found(
    fixture_tree: Path, docker_image: str
) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        sys.path.insert(0, {str(HARNESS)!r})
        from endstate_harness.sandbox.docker.container import DockerSandbox
        sb = DockerSandbox(Path({str(fixture_tree)!r}), image={docker_image!r})
        sb.setup(); sb.start()
        print(sb.container_id, sb.scratch, flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    cid, scratch = proc.stdout.split()
    assert proc.returncode == -9 and cid in _labelled_ids() and Path(scratch).is_dir()
    with DockerSandbox(fixture_tree, image=docker_image) as mine:
        removed = remove_stray_containers()
        assert cid in removed and not Path(scratch).exists()
        assert mine.container_id in _labelled_ids(), "a live owner's container is kept"


def test_a_container_removed_by_someone_else_is_no_error(
    fixture_tree: Path, docker_image: str
) -> None:
    """The clean-ups race the owner's watcher for the same containers: one the other side
    removed first is skipped (False), not an exception that stops the clean-up."""
    from endstate_harness.sandbox.docker.daemon import connect, remove_container

    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        client = connect()
        try:
            stale = client.containers.get(sb.container_id)
            fresh = client.containers.get(sb.container_id)
            assert remove_container(fresh) is True
            assert remove_container(stale) is False  # already gone: Docker's 404
            assert sb.container_id not in _labelled_ids()
        finally:
            client.close()


def test_sandboxes_run_in_parallel_threads(fixture_tree: Path, docker_image: str) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with DockerSandbox(fixture_tree, image=docker_image) as sb:
                sb.write_text("n.txt", str(n))
                results[n] = sb.run("sleep 0.5; cat n.txt").stdout
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {n: str(n) for n in range(3)}


def test_setsid_children_are_swept_too(fixture_tree: Path, docker_image: str) -> None:
    # setsid takes the child out of timeout(1)'s group; the sweep after the command (every
    # process but the keeper, process 1, and the runner's) still ends it, on timeout and on a
    # normal end.
    with DockerSandbox(fixture_tree, image=docker_image) as sb:
        sb.watchdog_grace_s = 2.0
        began = time.monotonic()
        result = sb.run("setsid sleep 60 & sleep 60", timeout_s=1)
        assert result.timed_out and time.monotonic() - began < 15
        assert sb.run("cat /proc/[0-9]*/comm").stdout.split().count("sleep") == 0
        assert sb.run("setsid sleep 60 & echo started").stdout == "started\n"
        assert sb.run("cat /proc/[0-9]*/comm").stdout.split().count("sleep") == 0


# ----------------------------------------------------------------------------- interrupts, health


def _containers_of_this_process() -> list[str]:
    client = docker.from_env()
    try:
        found = client.api.containers(
            all=True, filters={"label": [f"{LABEL}=1", f"{PID_LABEL}={os.getpid()}"]}
        )
        return [c["Id"] for c in found]
    finally:
        client.close()


def test_ctrl_c_right_after_the_create_call_leaves_no_container(
    fixture_tree: Path, docker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon has made the container, the SDK has not returned its id yet: the moment
    that used to leave a container in state "created" behind."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Python runs signal handlers only in the main thread")
    from docker.models.containers import ContainerCollection

    real_create = ContainerCollection.create
    made: list[str] = []

    def create_then_ctrl_c(self: ContainerCollection, *args: Any, **kwargs: Any) -> Any:
        ctr = real_create(self, *args, **kwargs)
        made.append(ctr.id or "")
        os.kill(os.getpid(), signal.SIGINT)
        end = time.monotonic() + 0.05
        while time.monotonic() < end:  # without the deferral KeyboardInterrupt lands here
            pass
        return ctr

    before = set(_containers_of_this_process())
    monkeypatch.setattr(ContainerCollection, "create", create_then_ctrl_c)
    sb = DockerSandbox(fixture_tree, image=docker_image, pull=False)
    with pytest.raises(KeyboardInterrupt):
        with sb:
            pass
    monkeypatch.undo()
    assert made, "the create call never ran"
    assert set(_containers_of_this_process()) == before
    assert sb._scratch is None and sb.container_id is None


def test_a_container_whose_id_was_never_recorded_is_removed_by_name(
    fixture_tree: Path, docker_image: str
) -> None:
    sb = DockerSandbox(fixture_tree, image=docker_image, pull=False)
    sb.setup()
    sb.start()
    cid = sb.container_id
    assert cid in _containers_of_this_process()
    sb.container_id = None  # as if the interrupt had come before the id was stored
    sb.close()
    assert cid not in _containers_of_this_process()
    assert sb.container_name is None


def test_a_container_killed_while_graded_is_a_failure_with_the_reason(
    fixture_tree: Path, docker_image: str
) -> None:
    from endstate_harness.graders import grade
    from endstate_harness.task import GraderSpec

    succeeds = GraderSpec(name="endstate.evals.graders:command_succeeds", args={"command": "true"})
    escapes = GraderSpec(
        name="endstate.evals.graders:files_unchanged", args={"paths": ["../../etc/passwd"]}
    )
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as sb:
        sb.check_health()
        assert grade([succeeds], sb).passed
        # On a healthy sandbox a path that leaves the tree is the task's failure, not an error.
        escaped = grade([escapes], sb)
        assert not escaped.passed and "PathEscapeError" in escaped.reason, escaped
        client = docker.from_env()
        try:
            client.api.kill(sb.container_id)
        finally:
            client.close()
        with pytest.raises(SandboxError, match="stopped"):
            sb.check_health()
        # The daemon still answers, so nothing but the code under test (which grading runs)
        # can have stopped it: the attempt fails with the reason instead of leaving the pass
        # rate as an "error" (issue #12, class 4).
        killed = grade([succeeds], sb)
        assert not killed.passed and "killed the sandbox" in killed.reason, killed
    assert sb.container_id is None


def test_a_grader_misusing_a_healthy_sandbox_is_a_failure(
    fixture_tree: Path, docker_image: str
) -> None:
    """SandboxError from a grader's own bug (a non-positive timeout) while the container is
    fine: the grader's fault, so an ordinary failure, never an unassessed task."""
    from endstate_harness.graders import grade
    from endstate_harness.task import GraderSpec

    misuse = GraderSpec(
        name="endstate.evals.graders:command_succeeds", args={"command": "true", "timeout_s": 0.0}
    )
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as sb:
        verdict = grade([misuse], sb)
    assert not verdict.passed and "timeout must be positive" in verdict.reason, verdict
