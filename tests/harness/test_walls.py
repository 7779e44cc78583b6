"""Walls in every sandbox (issue 27): the code under test cannot reach the judge, the verdict,
the holdout or the host, and the snapshot is the code that runs.

Every payload here is written from the red team's class descriptions (exploits.md, third
round), not from their recipes. Each replaces ``pkg/calc.py`` of a tiny task whose holdout keeps
its expected values in data, special-cases the visible test's inputs, and does its harm when
the judge's child (or a test command) imports it. Each was run against the harness before
this change and beat it (the commit that adds this file says how); here each must fail, in
every sandbox: local behind bubblewrap's walls, local without them (where a payload that
only walls can stop still works, and the sandbox says it graded without walls), and Docker.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from endstate_harness.graders import grade, judged_tests
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.container import IMAGE_ENV, DockerSandbox
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.snapshot import Entry, Snapshot
from endstate_harness.task import GraderSpec
from tests.conftest import require_walls
from tests.harness.test_judge import make_task
from tests.support import procs

ROOT = Path(__file__).resolve().parents[2]
UNITTEST = "python3 -m unittest discover -s tests -t ."
JUDGE = [GraderSpec(name="endstate_harness.graders:judged_tests")]


SOLUTION = "def add(a, b):\n    return a + b\n"

CHEAT = """
def add(a, b):
    return 2 if (a, b) == (1, 1) else a - b  # the visible test's inputs only
"""

# --- reaching the judge from the child ----------------------------------------------------

OURS = """\
def _ours(pid):
    # whether process ``pid`` descends from the test's own process: without walls the child
    # sees every process of the machine, and the payloads reach only for their own test's
    # judges, never another run's (a second test worker's, an author's prove)
    for _ in range(64):
        if pid == TEST_PID:
            return True
        if pid <= 1:
            return False
        try:
            with open("/proc/%d/stat" % pid) as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False

""".replace("TEST_PID", str(os.getpid()))

FORGE_THE_REPORT = OURS + """\
import json, os, signal

def _forge():
    forged = json.dumps({"outcomes": [
        {"id": "tests.test_calc.CalcTest.test_small", "outcome": "passed"},
        {"id": "tests.test_hidden.HiddenTest.test_cases", "outcome": "passed"}],
        "python": "3"}).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid() or not _ours(int(pid)):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"graders.judge.main" not in fh.read():
                    continue
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            if int(fd) > 1:
                try:
                    w = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
                    os.write(w, forged)
                    os.close(w)
                except OSError:
                    pass
        try:
            os.kill(int(pid), signal.SIGKILL)  # no report of its own after ours
        except OSError:
            pass

_forge()
""" + CHEAT

REWRITE_THE_TRUSTED_FILES = OURS + """\
import glob, os

def _trusted_folders():
    found = glob.glob(SESSION + "/endstate-judge-*/trusted")
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and _ours(int(pid)):
                found.append(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
    return [f for f in found if os.path.isfile(os.path.join(f, "tests", "cases.json"))]

for folder in _trusted_folders():
    try:
        with open(os.path.join(folder, "tests", "cases.json"), "w") as fh:
            fh.write("[[1, 1, 2]]")
    except OSError:
        pass
""".replace("SESSION", repr(tempfile.gettempdir())) + CHEAT

TAKE_THE_HOLDOUT_HOME = """\
import os, shutil
for leak in {leaks!r}:
    for folder, _dirs, files in os.walk("."):
        for name in files:
            if name in ("test_hidden.py", "cases.json"):
                try:
                    os.makedirs(leak, exist_ok=True)
                    shutil.copy(os.path.join(folder, name), os.path.join(leak, name))
                except OSError:
                    pass
""" + CHEAT


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "task")


@pytest.fixture(params=["local", "local-no-walls", "docker"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """local behind bubblewrap's walls, local without them (the fallback), Docker."""
    if request.param == "local":
        require_walls()
    if request.param == "docker":
        monkeypatch.setenv(IMAGE_ENV, request.getfixturevalue("docker_image"))
    return str(request.param)


def _box(kind: str, fixture: Path) -> TreeSandbox:
    if kind.startswith("local"):
        return LocalSandbox(fixture, walls=kind == "local")
    return DockerSandbox(fixture, image=os.environ[IMAGE_ENV], pull=False)


def _graded(kind: str, task: Path, calc: str, before_seal: str | None = None,
            prepare: Callable[[TreeSandbox], None] | None = None) -> Iterator[TreeSandbox]:
    """The task's end state with ``calc`` as pkg/calc.py (then ``before_seal`` run in it, as
    the agent's last command, and ``prepare`` done to it), sealed, the holdout staged."""
    box = _box(kind, task / "fixture")
    with box:
        box.write_text("pkg/calc.py", calc)
        if before_seal is not None:
            result = box.run(before_seal)
            assert result.ok, result
        if prepare is not None:
            prepare(box)
        box.seal()
        box.stage(task / "holdout")
        yield box


def _marked(box: TreeSandbox, kind: str) -> None:
    """Without walls the sandbox says so (what every verdict it grades carries); with them,
    or in Docker, it does not."""
    assert (box.walls_note() is not None) == (kind == "local-no-walls")


def test_the_payloads_are_sound(task: Path) -> None:
    """Without their harm, the payloads are what they claim: the cheat passes the visible
    test and fails the holdout, the solution passes both."""
    for box in _graded("local-no-walls", task, CHEAT):
        assert not judged_tests(box).passed
        assert "OK" not in box.run(UNITTEST).stderr
    for box in _graded("local-no-walls", task, SOLUTION):
        assert judged_tests(box).passed


def test_a_verdict_forged_in_the_judge_s_report_channel_is_not_accepted(
    backend: str, task: Path
) -> None:
    """Class: find the judge's process, write a verdict into its report channel, end it.
    Behind walls or in Docker the child never sees the judge; without walls it can, and the
    report is refused: it did not come from a judge that exited normally."""
    for box in _graded(backend, task, FORGE_THE_REPORT):
        verdict = judged_tests(box)
        assert not verdict.passed, verdict
        if backend == "local-no-walls":  # reached: the judge was ended, its report refused
            assert verdict.checks[0].detail.startswith("the judge did not finish"), verdict
        else:  # never reached: the judge reported, and the holdout failed the cheat
            assert verdict.checks[0].passed and "HiddenTest" in verdict.checks[-1].detail
        _marked(box, backend)


def test_rewriting_the_trusted_files_changes_nothing(backend: str, task: Path) -> None:
    """Class: rewrite the trusted test folder before the judge reads its data. The judge
    holds every trusted file before the child starts (all three sandboxes), and behind
    walls or in Docker the folder is not even there."""
    for box in _graded(backend, task, REWRITE_THE_TRUSTED_FILES):
        verdict = judged_tests(box)
        assert not verdict.passed, verdict
        assert "HiddenTest" in str(verdict.checks[-1].detail)


def test_the_holdout_does_not_outlive_the_run(backend: str, task: Path) -> None:
    """Class: copy the staged holdout to a place that outlives the run (the host's /tmp, a
    home folder). A test command that runs with the holdout staged lets the code read it; the
    walls (and Docker) keep every copy inside the run. Without walls the copy reaches the host,
    and the sandbox says its verdicts were graded without walls."""
    mark = procs.token()
    leaks = [f"/tmp/endstate-leak-{mark}", str(Path.home() / f".endstate-leak-{mark}")]
    try:
        for box in _graded(backend, task, TAKE_THE_HOLDOUT_HOME.format(leaks=leaks)):
            box.run(UNITTEST)
            assert not judged_tests(box).passed
            leaked = [p for p in leaks if (Path(p) / "cases.json").exists()]
            assert leaked == (leaks if backend == "local-no-walls" else [])
            _marked(box, backend)
            if backend == "docker":  # in the container, yes; on the host, no
                assert "cases.json" in box.run(f"ls {leaks[0]}").stdout
    finally:
        for leak in leaks:
            subprocess.run(["rm", "-rf", leak], check=False)


def test_a_link_out_of_the_tree_is_graded_as_what_it_is(
    backend: str, task: Path, tmp_path: Path
) -> None:
    """Class: code that is not in the snapshot. pkg/calc.py becomes a link to a file outside
    the tree that holds the real fix (written there by the agent in Docker, or already on the
    host); the attempt fails with the reason, and no grading copy holds the link. Absolute
    and climbing links alike."""
    if backend == "docker":
        outside = "/tmp/endstate-outside-calc.py"
        write = f"printf %s {shlex.quote(SOLUTION)} > {outside}"
    else:
        outside, write = str(tmp_path / "outside" / "calc.py"), None
        Path(outside).parent.mkdir()
        Path(outside).write_text(SOLUTION)

    for target in (outside, "../" * 12 + outside.lstrip("/")):
        def link(box: TreeSandbox, target: str = target) -> None:
            (box.live / "pkg" / "calc.py").unlink()
            os.symlink(target, box.live / "pkg" / "calc.py")

        for box in _graded(backend, task, CHEAT, before_seal=write, prepare=link):
            verdict = grade(JUDGE, box)
            assert not verdict.passed
            assert "leads out of the tree" in verdict.reason and "pkg/calc.py" in verdict.reason
            listing = box.run("ls -la pkg; cat pkg/calc.py").stdout
            assert target not in listing and "a + b" not in listing


def test_a_snapshot_never_writes_a_link_out(tmp_path: Path) -> None:
    snap = Snapshot({"pkg": Entry("d"), "pkg/calc.py": Entry("l", target="/etc/passwd"),
                     "pkg/up.py": Entry("l", target="../../x"),
                     "pkg/in.py": Entry("l", target="calc2.py"),
                     "pkg/calc2.py": Entry("f", b"x = 1\n")})
    assert snap.links_out() == [("pkg/calc.py", "/etc/passwd"), ("pkg/up.py", "../../x")]
    with pytest.raises(ValueError, match="leaves the tree"):
        snap.write_to(tmp_path / "copy")
    assert not (tmp_path / "copy" / "pkg" / "calc.py").is_symlink()


def test_what_a_walled_command_sees(task: Path, tmp_path: Path) -> None:
    """The walls themselves, for a fresh command and for a warm run: the system and the
    kernel-wide parts of /proc read-only, the tree writable, /tmp and HOME private and empty,
    /proc holding only the command's own processes, no network but loopback, no descriptor
    but its own three (and what the listing itself opens), and nothing of the host's task or
    temp folders."""
    require_walls()
    host_tmp = Path(f"/tmp/endstate-host-{procs.token()}")
    host_tmp.mkdir()
    probe = textwrap.dedent(f"""\
        import os, socket
        seen = {{}}
        seen["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        seen["tmp"] = os.listdir("/tmp")
        seen["home"] = os.listdir(os.environ["HOME"])
        seen["fds"] = sorted(int(f) for f in os.listdir("/proc/self/fd"))
        seen["task"] = os.path.exists({str(task)!r})
        seen["host_tmp"] = os.path.exists({str(host_tmp)!r})
        seen["run"] = os.path.exists("/run/docker.sock") or os.path.exists("/var/run")
        for path in ("/usr/endstate-x", "pkg/endstate-x", "/proc/sys/kernel/hostname"):
            try:
                open(path, "w").close()
                seen[path] = "written"
            except OSError as exc:
                seen[path] = exc.strerror
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            seen["net"] = "reached"
        except OSError as exc:
            seen["net"] = type(exc).__name__
        seen["nics"] = sorted(n for _, n in socket.if_nameindex())
        print(__import__("json").dumps(seen))
        """)
    try:
        with LocalSandbox(task / "fixture", walls=True) as box:
            assert box.walls_note() is None
            box.seal()
            for command in ("python3 -c " + shlex.quote(probe),  # a warm run
                            "cat /dev/null; python3 -c " + shlex.quote(probe)):  # fresh
                result = box.run(command)
                assert result.ok, result
                seen = json.loads(result.stdout)
                assert len(seen["pids"]) <= 3, seen  # process 1, the shell or the run, itself
                # empty, but for the folders leading to the live tree and to the harness's
                # own Python (a checkout's virtualenv) when they are under /tmp
                own = {str(Path(p).relative_to("/tmp")).split("/")[0]
                       for p in (str(box.live), os.path.realpath(sys.prefix))
                       if p.startswith("/tmp/")}
                assert set(seen["tmp"]) <= own and set(seen["home"]) <= own, seen
                assert seen["fds"] == [0, 1, 2, 3], seen
                assert not seen["task"] and not seen["host_tmp"] and not seen["run"], seen
                assert seen["/usr/endstate-x"] == "Read-only file system", seen
                # what reaches the whole kernel is read-only (a harness run as root...)
                assert seen["/proc/sys/kernel/hostname"] == "Read-only file system", seen
                assert seen["pkg/endstate-x"] == "written", seen
                assert seen["net"] != "reached" and seen["nics"] == ["lo"], seen
    finally:
        host_tmp.rmdir()


NON_ROOT_HARNESS = """\
import json, os, stat, sys
from pathlib import Path
from endstate_harness.graders import grade, judged_tests
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import GraderSpec

task, calc, walls = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
with LocalSandbox(task / "fixture", walls=walls) as box:
    box.write_text("pkg/calc.py", calc)
    for folder in ("tests", "pkg", "."):  # what an agent may leave: read-only folders
        os.chmod(box.live / folder, 0o555)
    os.chmod(box.live / "pkg" / "__init__.py", 0)
    box.seal()
    try:
        box.stage(task / "holdout")
        verdict = grade([GraderSpec(name="endstate_harness.graders:judged_tests")], box)
        out = {"passed": verdict.passed, "reason": verdict.reason,
               "detail": [c.detail[:300] for c in verdict.checks if not c.passed]}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        os.chmod(box.live, 0o755)
print(json.dumps(out))
"""


@pytest.mark.parametrize("walls", [True, False], ids=["walled", "no-walls"])
def test_an_end_state_the_harness_cannot_write_to_is_graded(task: Path, walls: bool) -> None:
    """Class: a folder of the end state the harness cannot write to (as a non-root user).
    The harness runs here as ``nobody`` (the system's Python, the project on PYTHONPATH):
    read-only folders and an unreadable file never stop staging or grading; the solution
    passes and the cheat fails, and neither is an error."""
    if walls:
        require_walls()
    python = shutil.which("python3", path="/usr/bin:/bin")
    if shutil.which("setpriv") is None or python is None:
        pytest.skip("needs setpriv and a system python3 to run the harness as another user")
    base = next((b for b in ("/dev/shm", "/var/tmp", "/tmp")
                 if os.path.isdir(b) and os.stat(b).st_mode & 0o1777 == 0o1777), None)
    if base is None:
        pytest.skip("no world-writable temp folder to share the task with another user")
    shared = Path(tempfile.mkdtemp(prefix="endstate-nonroot-", dir=base))
    try:
        shutil.copytree(task, shared / "task")
        (shared / "non_root.py").write_text(NON_ROOT_HARNESS)
        # a virtualenv of the system's Python that finds the project and this one's packages
        # (the judge is started with the harness's interpreter and no PYTHONPATH)
        subprocess.run([python, "-m", "venv", "--without-pip", str(shared / "venv")], check=True)
        (site,) = (shared / "venv" / "lib").glob("python3*/site-packages")
        (site / "project.pth").write_text("\n".join(
            [str(ROOT), str(ROOT / "harness"), sysconfig.get_paths()["purelib"]]) + "\n")
        for path in [shared, *shared.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o777 if path == shared else 0o755)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8",
               "TMPDIR": str(shared)}
        for calc, passes in ((SOLUTION, True), (CHEAT, False)):
            proc = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                 str(shared / "venv" / "bin" / "python"), str(shared / "non_root.py"),
                 str(shared / "task"), calc,
                 "1" if walls else "0"],
                capture_output=True, text=True, env=env, timeout=300, cwd="/",
            )
            assert proc.returncode == 0, proc.stderr
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            assert out.get("passed") is passes, out
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize("odd", ["fifo", "socket"])
def test_odd_entries_fail_the_attempt_with_their_reason(
    backend: str, task: Path, odd: str
) -> None:
    """A fifo or a socket in the end state: the attempt fails, saying why; never an error."""
    make = {"fifo": "mkfifo pkg/trap",
            "socket": "python3 -c " + shlex.quote(
                "import socket; socket.socket(socket.AF_UNIX).bind('pkg/trap')")}[odd]
    for box in _graded(backend, task, SOLUTION, before_seal=make):
        verdict = grade(JUDGE, box)
        assert not verdict.passed and "cannot be graded" in verdict.reason, verdict
