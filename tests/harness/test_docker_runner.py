"""The runner inside a Docker sandbox (``docker_runner``), against a real daemon.

What it must keep: every command gives what an exec of its own gives (a differential over
commands that exercise exit codes, signals, timeouts, leftovers and the warm start); nothing
a command does can reach the runner or its zygotes (not traceable, no socket left to connect
to); and a runner that is gone, or never starts, leaves a sandbox that still works by execs.

Skipped, with the reason printed, when no daemon answers (``docker_image`` in conftest).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_harness.sandbox.docker import runner as docker_runner
from endstate_harness.sandbox.docker import runner_socket as docker_runner_socket
from endstate_harness.sandbox.docker.container import DockerSandbox
from endstate_harness.sandbox.docker.pool import ContainerPool, PooledDockerSandbox

pytestmark = pytest.mark.docker

# Each exercises one thing an exec's result shows: output, codes, the shell's epilogue, the
# environment, what a fresh interpreter sees, a timeout, and what a command leaves behind.
COMMANDS = [
    "echo out; echo err >&2; exit 3",
    "env | sort | grep -v '^HOSTNAME='",
    "python3 -c pass",
    "python3 -c 'import sys; print(sys.argv, sys.orig_argv, sys.path[0], sys.flags.no_site)'",
    "python3 -c 'import os; print(os.getcwd(), sorted(os.environ))'",
    "python3 -c 'import sys; sys.exit(7)'",
    "python3 -c 'raise ValueError(42)'",
    "python3 -c 'import os; os.kill(os.getpid(), 9)'",
    "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'",
    "python3 -c 'import sys; print(sorted(m for m in sys.modules if \"ctypes\" in m))'",
    "python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))'",  # dumpable
    "python3 -m unittest test_one",
    "env -i PATH=/usr/bin:/bin PYTHONHASHSEED=0 python3 -c 'import os; print(dict(os.environ))'",
    "python3 -c 'import time; time.sleep(30)'",
    "sleep 30",
    "sleep 300 & echo started",
    "setsid sleep 300 & echo escaped",
    "for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p; echo; done | grep -c '^sleep 300'",
]


def _results(fixture: Path, image: str, monkeypatch: pytest.MonkeyPatch,
             agent: bool) -> list[tuple[int, str, str, bool]]:
    monkeypatch.setenv(docker_runner.RUNNER_ENV, "1" if agent else "0")
    out = []
    with DockerSandbox(fixture, image=image, pull=False) as box:
        assert (box._runner is not None) is agent
        for command in COMMANDS:
            limit = 2 if "30" in command else 20
            r = box.run(command, timeout_s=limit)
            out.append((r.exit_code, r.stdout, r.stderr, r.timed_out))
    return out


def test_every_command_gives_what_an_exec_of_its_own_gives(
    fixture_tree: Path, docker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (fixture_tree / "test_one.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertEqual(1, 1)\n")
    by_runner = _results(fixture_tree, docker_image, monkeypatch, agent=True)
    by_exec = _results(fixture_tree, docker_image, monkeypatch, agent=False)
    for command, a, b in zip(COMMANDS, by_runner, by_exec, strict=True):
        if command.startswith("python3 -m unittest"):  # the time it took differs
            a = (a[0], a[1], re.sub(r"in [0-9.]+s", "in Ts", a[2]), a[3])
            b = (b[0], b[1], re.sub(r"in [0-9.]+s", "in Ts", b[2]), b[3])
        assert a == b, f"{command!r}: runner {a!r} != exec {b!r}"
    assert by_runner[7][2] == "Killed\n", "the shell's line after a death by SIGKILL"
    assert by_runner[13][3] and by_runner[14][3], "timeouts are timeouts"
    assert by_runner[-1][1] == "0\n", "nothing a command started outlives it"


def test_python_runs_are_forked_from_a_warm_interpreter(
    fixture_tree: Path, docker_image: str
) -> None:
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        assert box._runner is not None
        first = box.run("python3 -c 'import os; print(os.getppid())'")
        second = box.run("python3 -c 'import os; print(os.getppid())'")
        zygote = int(first.stdout)
        assert zygote == int(second.stdout), "both forked by the same zygote"
        assert zygote != box._runner.pid
        parent = box.run(f"tr '\\0' ' ' < /proc/{zygote}/cmdline").stdout
        assert "private" in parent, parent


def test_neither_the_runner_nor_its_zygotes_can_be_traced_or_read(
    fixture_tree: Path, docker_image: str
) -> None:
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        assert box._runner is not None
        zygote = int(box.run("python3 -c 'import os; print(os.getppid())'").stdout)
        for pid in (box._runner.pid, zygote):
            read = box.run(f"cat /proc/{pid}/environ /proc/{pid}/mem")
            assert read.exit_code != 0 and "PATH=" not in read.stdout
            attach = box.run(
                "python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
                f"rc = libc.ptrace(16, {pid}, 0, 0); print(rc, ctypes.get_errno())'")
            rc, errno = attach.stdout.split()
            assert rc == "-1" and errno == "1", f"PTRACE_ATTACH to {pid}: {attach.stdout}"


def test_no_socket_is_left_for_a_command_to_reach(
    fixture_tree: Path, docker_image: str
) -> None:
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        assert box._runner is not None and box._runner._conn is not None, "the socket is used"
        assert box.run(f"ls -A {docker_runner_socket.SOCKET_MOUNT}").stdout == ""
        assert not (box.scratch / "runner").exists(), "withdrawn right after the runner came"


def test_a_command_that_kills_the_runner_leaves_a_sandbox_that_works_by_execs(
    fixture_tree: Path, docker_image: str
) -> None:
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        assert box._runner is not None
        box.run(f"kill -9 {box._runner.pid}")
        after = box.run("echo still here; python3 -c 'print(6 * 7)'")
        assert (after.exit_code, after.stdout) == (0, "still here\n42\n")
        assert box._runner is None
        box.check_health()


def test_without_python_in_the_image_every_command_is_an_exec(
    fixture_tree: Path, docker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(docker_runner, "PYTHON", "no-such-python3")
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        assert box._runner is None
        assert not (box.scratch / "runner").exists(), "the socket offered is withdrawn"
        assert box.run("echo fine").stdout == "fine\n"


def test_a_channel_through_the_runner_talks_and_closing_it_stops_everything(
    fixture_tree: Path, docker_image: str
) -> None:
    source = ("import subprocess, sys\nsubprocess.Popen(['sleep', '300'])\n"
              "for line in sys.stdin:\n    print(line.upper(), end='', flush=True)\n"
              "import time\ntime.sleep(300)\n")
    with DockerSandbox(fixture_tree, image=docker_image, pull=False) as box:
        box.seal()
        channel = box.open_channel(["python3", "-c", source], timeout_s=60)
        chunks = channel.chunks()
        channel.send(b"hello\n")
        assert next(chunks) == b"HELLO\n"
        began = time.monotonic()
        channel.close()  # the process never ends by itself: it is killed, with its child
        assert time.monotonic() - began < 3
        left = box.run("for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p; echo; done")
        lines = left.stdout.splitlines()
        assert not [x for x in lines if x.startswith(("sleep 300", "python3 -c import"))]


@pytest.fixture
def pool() -> Iterator[ContainerPool]:
    pool = ContainerPool(idle_s=30)
    yield pool
    pool.close()


def test_a_reused_container_keeps_its_runner_and_zygotes_but_nothing_a_check_left(
    fixture_tree: Path, docker_image: str, pool: ContainerPool
) -> None:
    with PooledDockerSandbox(fixture_tree, image=docker_image, pull=False, pool=pool) as first:
        assert first._runner is not None
        runner = first._runner.pid
        zygote = first.run("python3 -c 'import os; print(os.getppid())'").stdout
        first.run("echo left > /tmp/left; setsid sleep 300 > /dev/null 2>&1 < /dev/null &")
    with PooledDockerSandbox(fixture_tree, image=docker_image, pull=False, pool=pool) as second:
        assert pool.reused == 1 and second._runner is not None
        assert second._runner.pid == runner
        assert second.run("python3 -c 'import os; print(os.getppid())'").stdout == zygote
        assert second.run("ls -A /tmp").stdout.split() == []
        left = second.run("for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p; echo; done")
        assert not [x for x in left.stdout.splitlines() if x.startswith("sleep 300")]
