"""Red team, issue 42 class 1: the host acts on the sandbox's files while sandboxed code runs.

The code under test leaves a process behind that swaps the live tree's names between a folder
and a link to a host folder, as fast as it can (``renameat2(RENAME_EXCHANGE)``): a host that
read or wrote the tree while it ran could follow a link swapped in between two of its steps
and read host files into the sealed end state (``read``: a folder standing for the task's
holdout) or write end-state files where the link leads (``write``: the swapper links only
once the holdout shows up, i.e. in the copies the host rewrites for grading). The process
tries to survive its command each way the old design let it:

* ``forge``: it names itself the keeper in ``/tmp/.endstate-keeper`` (a file every command
  can write) next to the real keeper's pid;
* ``unlink``: it removes that file (without it, nothing was swept);
* ``wrapper``: it kills the shell that sweeps after the command (same uid: it may);
* ``exec``: the same, in a sandbox whose commands are execs (no runner).

Every case shows: the process does not outlive its command (its heartbeat in the tree stops),
the sealed end state holds nothing of the host folders, and the host wrote nothing outside
its scratch folders (the host folders, the fixture and the holdout are unchanged). The local
sandbox behind walls is held to the same (its PID namespace dies with each command); without
walls a ``setsid`` escape is a documented limit and is not tested here.

A last layer is shown on its own: a process no sweep can end (started as root from outside,
as only a failure could leave one) is frozen with the container while the host reads, and
every process a sweep spares cannot be traced (so none can be made to act for a command).
"""

from __future__ import annotations

import ctypes
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker import runner as docker_runner
from endstate_harness.sandbox.docker.container import DockerSandbox
from endstate_harness.sandbox.local import LocalSandbox
from tests.conftest import require_walls
from tests.reliability.conftest import tree_digest

SWAPPER = r'''
import ctypes, os, sys, time
mode, race, secret, decoy = sys.argv[1:5]
KEEPER = "/tmp/.endstate-keeper"
libc = ctypes.CDLL(None, use_errno=True)
os.umask(0)  # whoever it runs as, the host can remove what it makes
if mode == "forge":
    try:
        with open(KEEPER) as f:
            real = f.read().split()
    except OSError:
        real = []
    with open(KEEPER, "w") as f:  # the real keeper stays spared, and so does this process
        f.write(" ".join([*real[:1], str(os.getpid())]) + "\n")
elif mode == "unlink":
    try:
        os.unlink(KEEPER)
    except OSError:
        pass


def quiet(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass


def exchange(a, b):
    libc.renameat2(-100, a.encode(), -100, b.encode(), 2)  # AT_FDCWD, RENAME_EXCHANGE


if race == "read":
    quiet(os.makedirs, "pkg/r")
    with open("pkg/r/own.txt", "w") as f:
        f.write("the agent's\n")
    quiet(os.symlink, secret, "pkg/r_alt")
open(".ready", "w").close()
n = 0
while True:
    n += 1
    if race == "read":
        exchange("pkg/r", "pkg/r_alt")
    elif race == "pyc":  # bytecode the seal's cache deletion would have removed
        quiet(os.makedirs, "pkg/__pycache__")
        try:
            with open(f"pkg/__pycache__/calc.cpython-3{n % 20}.pyc", "wb") as f:
                f.write(b"stale")
        except OSError:
            pass
    elif os.path.exists("hidden_marker.txt"):  # a grading copy the host wrote: links now
        quiet(os.symlink, decoy, "pkg/w_alt")
        exchange("pkg/w", "pkg/w_alt")
    else:
        time.sleep(0.0005)
    if n % 50 == 0:
        try:
            with open(".beat.tmp", "w") as f:
                f.write(str(n))
            os.replace(".beat.tmp", ".beat")
        except OSError:
            pass
'''

LAUNCH = (
    "setsid python3 swapper.py {mode} {race} {secret} {decoy} >/dev/null 2>&1 </dev/null & "
    "n=0; while [ ! -e .ready ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; "
    "echo launched"
)
WARM_LAUNCH = (
    "python3 -c 'import os, subprocess, time; subprocess.Popen([\"setsid\", \"python3\", "
    "\"swapper.py\", \"forge\", \"{race}\", \"{secret}\", \"{decoy}\"], "
    "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "[time.sleep(0.01) for _ in range(1000) if not os.path.exists(\".ready\")]; "
    "print(\"launched\")'"
)
"""A Python run the sandbox forks from its warm interpreter (a run the runner or the local
zygote starts, not the shell wrapper), which forges the keeper file too."""
KILL_WRAPPER = "; w=$(cut -d' ' -f4 /proc/$PPID/stat); kill -9 $w; sleep 1"
"""The command's shell's parent is timeout(1), whose parent is the wrapper that sweeps."""


class Scene:
    """The host folders a link can lead to, the task's fixture and holdout, all outside any
    scratch folder; and their digests, taken before anything runs."""

    def __init__(self, root: Path) -> None:
        self.marker = f"HOLDOUT-SECRET-{uuid.uuid4().hex}"
        self.secret = root / "holdout-like"
        self.secret.mkdir(parents=True)
        (self.secret / "answer.py").write_text(f"EXPECTED = {self.marker!r}\n")
        self.decoy = root / "decoy"
        self.decoy.mkdir()
        (self.decoy / "keep.txt").write_text("the user's\n")
        self.fixture = root / "fixture"
        (self.fixture / "pkg" / "w").mkdir(parents=True)
        (self.fixture / "pkg" / "__init__.py").write_text("")
        (self.fixture / "pkg" / "w" / "end.py").write_text("WRITTEN_BY_THE_HOST = 1\n")
        self.holdout = root / "holdout"
        self.holdout.mkdir()
        (self.holdout / "hidden_marker.txt").write_text("grading copy\n")
        self.before = self.digests()

    def digests(self) -> dict[str, str]:
        return {p.name: tree_digest(p)
                for p in (self.secret, self.decoy, self.fixture, self.holdout)}


def _beats(box: TreeSandbox) -> list[str]:
    """The swapper's heartbeat, read twice 0.5 s apart (equal: it no longer runs)."""
    out = []
    for _ in range(2):
        try:
            out.append((box.live / ".beat").read_text())
        except OSError:
            out.append("")
        time.sleep(0.5)
    return out


def _attack(box: TreeSandbox, scene: Scene, mode: str, race: str) -> None:
    """Launch the swapper as the agent's command would, then seal, stage the holdout and run
    three grading commands (three rewrites of the tree), checking each promise."""
    box.write_text("swapper.py", SWAPPER)
    command = (WARM_LAUNCH if mode == "warm" else LAUNCH).format(
        mode=mode if mode in ("forge", "unlink") else "none", race=race, secret=scene.secret,
        decoy=scene.decoy)
    if mode in ("wrapper", "exec"):
        command += KILL_WRAPPER
    launched = box.run(command, timeout_s=30)
    assert "launched" in launched.stdout or mode in ("wrapper", "exec"), launched
    assert (box.live / ".ready").exists(), f"the swapper never started: {launched}"
    first, second = _beats(box)
    assert first == second, f"{mode}/{race}: the process outlived its command ({first}, {second})"
    box.seal()
    snapshot = box.sealed_snapshot()
    assert snapshot is not None
    for rel, entry in snapshot.entries.items():
        assert scene.marker.encode() not in entry.data, f"host file read into the end state: {rel}"
        assert "answer.py" not in rel, f"host folder listed into the end state: {rel}"
    assert not any(scene.marker in text for text in box.end_state_files().values())
    box.stage(scene.holdout)
    for _ in range(3):
        box.run("ls pkg >/dev/null; sleep 0.2", timeout_s=30)
    assert scene.digests() == scene.before, "the host wrote outside its scratch folders"


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path / "scene")


@pytest.fixture
def no_runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(docker_runner.RUNNER_ENV, "0")
    yield


# ------------------------------------------------------------------------------------- Docker

@pytest.mark.docker
@pytest.mark.parametrize("race", ["read", "write"])
@pytest.mark.parametrize("mode", ["forge", "unlink", "wrapper", "warm"])
def test_docker_nothing_outlives_a_command_and_the_host_acts_on_a_still_tree(
    scene: Scene, docker_image: str, mode: str, race: str
) -> None:
    with DockerSandbox(scene.fixture, image=docker_image, pull=False) as box:
        assert box._runner is not None, "the runner started (the default)"
        _attack(box, scene, mode, race)
        left = box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout
        assert "swapper.py" not in left


@pytest.mark.docker
@pytest.mark.parametrize("race", ["read", "write"])
def test_docker_without_a_runner_too(
    scene: Scene, docker_image: str, no_runner: None, race: str
) -> None:
    with DockerSandbox(scene.fixture, image=docker_image, pull=False) as box:
        assert box._runner is None
        _attack(box, scene, "exec", race)
        assert "swapper.py" not in box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout


def _start_outside(box: DockerSandbox, scene: Scene, race: str, user: str) -> None:
    """Start the swapper in the container from outside (a docker exec of the test's own)."""
    assert box.container_id is not None
    client = docker.from_env()
    try:
        exec_id = client.api.exec_create(
            box.container_id,
            ["python3", "swapper.py", "none", race, str(scene.secret), str(scene.decoy)],
            user=user, workdir="/work")["Id"]
        client.api.exec_start(exec_id, detach=True)
    finally:
        client.close()
    deadline = time.monotonic() + 20
    while not (box.live / ".beat").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    first, second = _beats(box)
    assert first != second, "the swapper runs (the premise of this test)"


@pytest.mark.docker
def test_docker_a_process_that_got_past_the_sweeps_is_ended_before_the_host_reads(
    scene: Scene, docker_image: str
) -> None:
    """However one got there (only a failure of a command's sweep could leave one; the test
    starts it from outside), a process of the sandbox's uid still running when the host
    seals is ended first: it writes bytecode as fast as it can, and none reaches the end
    state between the seal's deletion of compiled files and its read."""
    with DockerSandbox(scene.fixture, image=docker_image, pull=False) as box:
        assert box._runner is not None
        box.write_text("swapper.py", SWAPPER)
        _start_outside(box, scene, "pyc", f"{os.getuid()}:{os.getgid()}")
        box.seal()
        snapshot = box.sealed_snapshot()
        assert snapshot is not None
        pycs = [rel for rel in snapshot.entries if rel.endswith(".pyc")]
        assert not pycs, f"written after the seal deleted bytecode: {pycs}"
        assert box._runner is not None, "ended by the runner, which is still there"
        assert "swapper.py" not in box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout


@pytest.mark.docker
def test_docker_a_process_no_sweep_can_end_is_frozen_while_the_host_reads(
    scene: Scene, docker_image: str
) -> None:
    """Processes of another uid (no command can start one: no-new-privileges, no
    capabilities; the test starts them from outside) survive every kill of the container's
    uid. The host still reads a still tree: the container is frozen while it does, so one
    that writes bytecode as fast as it can gets none into the end state between the seal's
    deletion of compiled files and its read (nor a link swapped into a folder it reads)."""
    with DockerSandbox(scene.fixture, image=docker_image, pull=False) as box:
        box.write_text("swapper.py", SWAPPER)
        for folder in (box.live, box.live / "pkg"):
            folder.chmod(0o777)  # so that the other uid (no capabilities) may write there
        other = "65534:65534" if os.getuid() == 0 else "0:0"
        _start_outside(box, scene, "read", other)
        _start_outside(box, scene, "pyc", other)
        box.seal()
        snapshot = box.sealed_snapshot()
        assert snapshot is not None
        for rel, entry in snapshot.entries.items():
            assert scene.marker.encode() not in entry.data, f"host file in the end state: {rel}"
            assert "answer.py" not in rel, f"host folder listed into the end state: {rel}"
            assert not rel.endswith(".pyc"), f"written after the seal deleted bytecode: {rel}"
        box.stage(scene.holdout)
        box.run("true", timeout_s=30)
        assert scene.digests() == scene.before, "the host wrote outside its scratch folders"


@pytest.mark.docker
def test_docker_no_process_a_sweep_spares_can_be_traced(
    scene: Scene, docker_image: str
) -> None:
    """What a sweep spares (process 1, the runner, its zygotes) could otherwise be made to act
    for the code under test, spared: none can be traced by it."""
    with DockerSandbox(scene.fixture, image=docker_image, pull=False) as box:
        assert box._runner is not None
        zygote = int(box.run("python3 -c 'import os; print(os.getppid())'").stdout)
        for pid in (1, box._runner.pid, zygote):
            attach = box.run(
                "python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
                f"rc = libc.ptrace(16, {pid}, 0, 0); print(rc, ctypes.get_errno())'")
            assert attach.stdout.split() == ["-1", "1"], f"PTRACE_ATTACH to {pid}: {attach}"
        # and no file of the container names anything spared
        forged = box.run("echo 1 $$ > /tmp/.endstate-keeper; setsid sleep 300 >/dev/null 2>&1 &"
                         " echo started")
        assert forged.stdout == "started\n"
        assert "sleep" not in box.run("cat /proc/[0-9]*/comm").stdout.split()


# -------------------------------------------------------------------------------------- local

@pytest.mark.parametrize("race", ["read", "write"])
@pytest.mark.parametrize("mode", ["forge", "warm"])
def test_local_behind_walls_nothing_outlives_a_command(
    scene: Scene, mode: str, race: str
) -> None:
    """Each command's PID namespace dies with it (fresh or forked warm): nothing to forge."""
    require_walls()
    assert hasattr(ctypes.CDLL(None), "renameat2")
    with LocalSandbox(scene.fixture, walls=True) as box:
        _attack(box, scene, mode, race)
