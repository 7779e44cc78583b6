"""prove's progress on stderr: streamed through a pipe as each task ends, silenced by --quiet.

Two shipped tasks are proved (directions and holdout only, local sandbox, no cache), reading
stderr line by line as the process writes it: the first task's line must arrive while the
second task is still being proved, not when the process ends. The second task is a copy whose
holdout test sleeps 0.3 s at import, so that it takes long enough to tell the two apart however
fast prove becomes (the warm runner made the plain copy take 0.1 s). About 5 s.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from endstate_author.cli.progress import LiveProgress, task_line
from endstate_author.prove.model import CheckResult, TaskProof

ROOT = Path(__file__).resolve().parents[2]
TASKS = [ROOT / "tasks" / "fix-semver-precedence", ROOT / "tasks" / "add-temperature-units"]
LINE = re.compile(
    r"^proved (\S+): (ok|FINDINGS|NOT PROVED): (\d+) passed, (\d+) failed, .*\((.+)s\)$"
)


def _slow_copy(tmp_path: Path, task: Path) -> Path:
    """``task`` copied under tmp_path, its holdout test slowed down by 0.3 s per run."""
    copy = tmp_path / "suite" / task.name
    if not copy.exists():
        shutil.copytree(task, copy)
        test = copy / "holdout" / "tests" / "test_holdout_temperature.py"
        test.write_text("import time\ntime.sleep(0.3)\n" + test.read_text())
    return copy


def _prove(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": ""}
    args = ["--sandbox", "local", "--only", "directions", "--only", "holdout", "-j", "1"]
    tasks = [TASKS[0], _slow_copy(tmp_path, TASKS[1])]
    return subprocess.Popen(
        [sys.executable, "-m", "endstate_author", "prove", *map(str, tasks), *args, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_task_line_arrives_before_the_next_task_ends(tmp_path: Path) -> None:
    proc = _prove(tmp_path, "--no-cache")
    assert proc.stderr is not None
    arrivals: list[tuple[float, re.Match[str]]] = []
    for raw in proc.stderr:
        found = LINE.match(raw.rstrip("\n"))
        if found:
            arrivals.append((time.monotonic(), found))
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert [m.group(1) for _, m in arrivals] == [t.name for t in TASKS]
    (first_at, _), (second_at, second) = arrivals
    second_took = float(second.group(5))
    assert second_took > 0.2
    # buffered to the end, both lines would arrive together; streamed, the second task's
    # own proving time lies between them
    assert second_at - first_at >= 0.5 * second_took, (first_at, second_at, second_took)
    assert "fix-semver-precedence" in out  # the results themselves are on stdout


def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    proc = _prove(tmp_path, "--quiet")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "proved " not in err
    assert "2 task(s)" in out


def test_task_line_counts_outcomes_and_says_cached() -> None:
    proof = TaskProof(
        "t", Path("t"), [CheckResult("a", "g", "pass"), CheckResult("b", "g", "fail")]
    )
    proof.seconds = 2.25
    assert task_line(proof) == (
        "proved t: FINDINGS: 1 passed, 1 failed, 0 unassessed, 0 skipped (2.2s)"
    )
    proof.cached = True
    assert task_line(proof).endswith("(cached)")


def test_live_display_names_running_checks_and_moves_per_check() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    live = LiveProgress(2, console)
    live.check_started("task-a", "probe early-exit")
    live.check_started("task-a", "fixture fails")
    text = str(live())
    assert "task-a: 0 check(s) ended" in text and "running probe early-exit" in text
    live.check_done("task-a", "fixture fails", CheckResult("fixture fails", "d", "pass"))
    text = str(live())
    assert "task-a: 1 check(s) ended" in text and "fixture fails" not in text
    live.task_done(TaskProof("task-a", Path("a"), [CheckResult("x", "d", "pass")]))
    assert "proving: 1/2 task(s) done" in str(live())
    assert "proved task-a: ok" in out.getvalue()
