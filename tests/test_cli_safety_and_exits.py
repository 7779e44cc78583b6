"""What lint and prove print and how they exit, at the edges: links, empty input, mixed outcomes.

- no output format reads through a link or outside the task to show a snippet: a secret
  planted behind a fixture symlink never appears, in any format;
- a folder with no task.json is a usage error (exit 2) for lint and prove alike;
- prove exits 1 when checks failed even if others could not run, and its summary counts both
  and never claims "0 task(s) with findings" while checks were unassessed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.cli.cmd_prove import exit_code, summary_line
from endstate_author.engine.diagnostics import read_source_lines
from endstate_author.prove.model import CheckResult, TaskProof
from tests.support.tasks import FIXTURE, TaskBuilder, good

ROOT = Path(__file__).resolve().parent.parent
SECRET = "TOPSECRET-d41d8cd98f00b204"
FORMATS = ("text", "json", "sarif", "github")


def cli(*args: str, cwd: Path, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    if cache is not None:
        env["ENDSTATE_AUTHOR_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "endstate_author", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=env,
    )


# ----- never read through a link ------------------------------------------------------------


@pytest.fixture
def linked_suite(tmp_path: Path) -> Path:
    """A suite whose task links, in several ways, to a secret outside it."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"{SECRET}-line-1\n{SECRET}-line-2\n")
    root = TaskBuilder(tmp_path / "suite")()
    (root / "fixture" / "leak.txt").symlink_to(secret)
    (root / "fixture" / "tests" / "test_leak.py").symlink_to(secret)
    (root / "fixture" / "linked_dir").symlink_to(secret.parent, target_is_directory=True)
    (root / "holdout" / "tests").mkdir(parents=True, exist_ok=True)
    (root / "holdout" / "tests" / "test_leak.py").symlink_to(secret)
    return tmp_path


@pytest.mark.parametrize("output_format", FORMATS)
def test_a_secret_behind_a_link_never_appears(linked_suite: Path, output_format: str) -> None:
    proc = cli("lint", "suite", "--isolated", "-o", output_format, cwd=linked_suite)
    assert proc.returncode == 1, proc.stderr
    assert "ES410" in proc.stdout  # the links are reported...
    assert SECRET not in proc.stdout + proc.stderr  # ...and never read


def test_snippets_still_show_for_regular_files(linked_suite: Path) -> None:
    proc = cli("lint", "suite", "--isolated", cwd=linked_suite)
    assert '│       "name": "endstate.evals.graders:command_succeeds"' in proc.stdout, proc.stdout


def test_the_snippet_reader_refuses_links_fifos_and_linked_folders(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    task = tmp_path / "task"
    (task / "fixture").mkdir(parents=True)
    (task / "task.json").write_text('{"id": "t"}\n')
    (task / "fixture" / "ok.py").write_text("x = 1\n")
    (task / "fixture" / "link.py").symlink_to(secret)
    (task / "fixture" / "dir").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(task / "fixture" / "pipe")
    assert read_source_lines(task / "fixture" / "ok.py") == ["x = 1"]
    assert read_source_lines(task / "task.json") == ['{"id": "t"}']
    assert read_source_lines(task / "fixture" / "link.py") is None
    assert read_source_lines(task / "fixture" / "dir" / "secret.txt") is None
    assert read_source_lines(task / "fixture" / "pipe") is None  # and it did not hang
    # a task reached through a link above it is the author's own layout: still shown
    (tmp_path / "alias").symlink_to(task, target_is_directory=True)
    assert read_source_lines(tmp_path / "alias" / "fixture" / "ok.py") == ["x = 1"]


# ----- empty input ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["lint", "prove"])
def test_a_folder_with_no_task_is_a_usage_error(tmp_path: Path, command: str) -> None:
    (tmp_path / "empty").mkdir()
    args = ["--sandbox", "local"] if command == "prove" else []
    for output in ("text", "json"):
        proc = cli(command, "empty", *args, "-o", output, cwd=tmp_path, cache=tmp_path / "c")
        assert proc.returncode == 2, (command, output, proc.stdout, proc.stderr)
        assert "no task.json found under empty" in proc.stderr
        assert proc.stdout == ""


# ----- prove: failures beside unassessed checks ----------------------------------------------


def _proof(task_id: str, *outcomes: str) -> TaskProof:
    checks = [CheckResult(f"check {i}", "directions", o) for i, o in enumerate(outcomes)]  # type: ignore[arg-type]
    return TaskProof(task_id, Path(task_id), checks)


def test_prove_exit_code_and_summary() -> None:
    clean = [_proof("a", "pass", "pass", "skipped")]
    assert exit_code(clean) == 0
    assert summary_line(clean).endswith("; no findings")

    mixed = [_proof("a", "pass", "fail"), _proof("b", "unassessed", "unassessed", "pass")]
    assert exit_code(mixed) == 1  # the failures are findings
    line = summary_line(mixed)
    assert "1 failed, 2 unassessed" in line and "1 task(s) with findings" in line
    assert "2 check(s) could not run (ES908)" in line

    unassessed = [_proof("a", "pass", "unassessed"), _proof("b", "pass")]
    assert exit_code(unassessed) == 2
    line = summary_line(unassessed)
    assert "0 task(s) with findings" not in line and "no findings" not in line
    assert "1 check(s) could not run (ES908), so 1 task(s) are not proved" in line


def test_prove_end_to_end_with_a_failure_and_an_unassessed_check(tmp_path: Path) -> None:
    """One task whose solution does not fix the bug (ES902, a failure) and one whose grader
    runs a program this machine lacks (ES908): exit 1, and the summary says both."""
    builder = TaskBuilder(tmp_path / "suite")
    unchanged = {"chunker/core.py": FIXTURE["chunker/core.py"]}  # a "solution" fixing nothing
    builder(good(id="unfixed"), name="unfixed", solution=unchanged)
    missing = {
        "name": "endstate.evals.graders:command_succeeds",
        "args": {"command": "endstate-no-such-tool --check"},
    }
    builder(good(id="no-tool", graders=[missing]), name="no-tool")
    proc = cli(
        "prove",
        "suite",
        "--sandbox",
        "local",
        "--only",
        "directions",
        cwd=tmp_path,
        cache=tmp_path / "cache",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ES902" in proc.stdout and "ES908" in proc.stdout
    assert "`endstate-no-such-tool` is not installed" in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]
    assert "1 task(s) with findings" in summary, summary
    assert "check(s) could not run (ES908)" in summary, summary
    data = json.loads(
        cli(
            "prove",
            "suite",
            "--sandbox",
            "local",
            "--only",
            "directions",
            "-o",
            "json",
            cwd=tmp_path,
            cache=tmp_path / "cache",
        ).stdout
    )
    assert {d["code"] for d in data["diagnostics"]} >= {"ES902", "ES908"}


# ----- the quick exit (cli.run) ---------------------------------------------------------------


def test_the_quick_exit_flushes_everything_and_keeps_the_status(tmp_path: Path) -> None:
    """`python -m endstate_author` ends with os._exit after the exit handlers: a long report
    through a pipe still arrives whole, the status is the command's, and nothing the command
    made (sandboxes, zygotes' folders, the prove scratch) is left in its temp folder."""
    suite = tmp_path / "suite"
    build = TaskBuilder(suite)
    for i in range(40):
        build({**good(), "id": f"task-{i:02d}", "max_steps": 0})  # a finding in each
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(temp),
           "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}  # fmt: skip
    lint = subprocess.run(
        [sys.executable, "-m", "endstate_author", "lint", str(suite), "--no-cache", "-o", "json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert lint.returncode == 1, lint.stderr
    report = json.loads(lint.stdout)  # whole: the last bytes were flushed before the exit
    assert len({d["file"] for d in report}) == 40
    task = ROOT / "tasks" / "fix-help-text-wrap"
    prove = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", str(task), "--only", "visible",
         "--sandbox", "local", "--no-cache"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert prove.returncode == 0, prove.stderr
    assert "1 passed" in prove.stdout + prove.stderr
    assert list(temp.iterdir()) == []  # the exit handlers ran: every scratch folder is gone
    usage = subprocess.run(
        [sys.executable, "-m", "endstate_author", "lint", str(tmp_path / "missing")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert usage.returncode == 2 and "no such file or folder" in usage.stderr


def test_a_daemon_thread_failing_during_the_exit_handlers_prints_nothing() -> None:
    """A reader thread whose stream an exit handler closes (a container's exec stream, under
    SIGTERM) fails while the program exits: that is no traceback for the user. A
    non-daemon thread's failure while the command runs is still reported."""
    script = (
        "import atexit, sys, threading, time\n"
        "import endstate_author.cli as cli\n"
        "closed = threading.Event()\n"
        "def reader():\n"
        "    closed.wait()\n"
        "    raise AttributeError(\"'NoneType' object has no attribute 'recv_into'\")\n"
        "def command():\n"
        "    threading.Thread(target=reader, daemon=True).start()\n"
        "    atexit.register(lambda: (closed.set(), time.sleep(0.3)))\n"
        "    raise SystemExit(143)\n"
        "cli.main = command\n"
        "cli.run()\n"
    )
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert quiet.returncode == 143 and "Traceback" not in quiet.stderr, quiet.stderr
    during = script.replace(
        "def command():\n",
        "def command():\n"
        "    failing = threading.Thread(target=lambda: 1 / 0)\n"
        "    failing.start(); failing.join()\n",
    )
    loud = subprocess.run([sys.executable, "-c", during], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    # a thread's failure while the command runs is reported; the hook comes with the exit
    assert "ZeroDivisionError" in loud.stderr and "recv_into" not in loud.stderr
