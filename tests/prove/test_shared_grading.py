"""Checks that grade the same end state alike read one grading per pass (``Shared``).

ES902 ("solution passes") and ES915 ("every test asserts") both grade the solution with the
least counters; ES901 ("fixture fails") and ES914's fixture run are the same grading when no
test command has visible tests to leave out (``judged_tests`` tells the holdout's tests apart
by itself). A prove runs each such grading once per pass, and ``--repeat``
regrades in every pass (ES909 must see a flaky test), each pass under its own hash seed; the
solution's second grading, under another seed, is the one grading more. Counted by wrapping the real
``grade_end_state`` in a prove of a real task in the local sandbox, in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from endstate_author.prove.model import Shared
from endstate_author.prove.variation import seed_of
from tests.support.tasks import GUIDE_GRADERS, TaskBuilder, good

JUDGED = [
    {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}},
    {"name": "endstate.evals.graders:no_new_skips"},
    {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["chunker/*.py"]}},
]

PROGRAM = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from endstate_author.prove import ProveOptions, prove_task
    from endstate_author.prove import grading
    from endstate_author.prove.checks import directions, witness
    from endstate_harness.sandbox.choice import SandboxChoice

    real = grading.grade_end_state
    calls = []

    def counted(task, spec, **kw):
        seed = f" seed {spec.hash_seed}" if spec.hash_seed else ""
        calls.append(("solution" if kw.get("overlays") else "fixture") + seed)
        return real(task, spec, **kw)

    # every way a grading of these groups starts: shared, or a check's own (the solution's
    # second grading, under another hash seed: ES909)
    grading.grade_end_state = witness.grade_end_state = directions.grade_end_state = counted
    proof = prove_task(Path(sys.argv[1]), ProveOptions(
        sandbox=SandboxChoice("local", grading=True), use_cache=False, jobs=2,
        repeat=int(sys.argv[2]), only=("directions", "witness")))
    print(json.dumps({
        "checks": {c.check: [c.outcome, c.code, c.detail] for c in proof.checks},
        "calls": sorted(calls),
    }))
""")


def _prove(task: Path, repeat: int, tmp_path: Path) -> dict:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(task), str(repeat)],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def judged_task(tmp_path: Path) -> Path:
    """The guide's task graded by ``judged_tests``, its visible test in the fixture."""
    return TaskBuilder(tmp_path / "suite")(good(graders=JUDGED))


def test_each_end_state_is_graded_once_per_pass(judged_task: Path, tmp_path: Path) -> None:
    report = _prove(judged_task, 1, tmp_path)
    checks = report["checks"]
    assert checks["fixture fails"][0] == "pass", checks
    assert checks["solution passes"][0] == "pass", checks
    # ES915 read the solution's grading: its tests ran and each asserted
    assert checks["every test asserts"][0] == "pass", checks
    assert "on the solution" in checks["every test asserts"][2], checks
    # ES914 read the fixture's grading: the holdout fails on it
    assert checks["holdout fails on the fixture"][0] == "pass", checks
    assert report["calls"] == ["fixture", "solution", f"solution seed {seed_of(1)}"], report


def test_repeat_grades_again_in_every_pass(judged_task: Path, tmp_path: Path) -> None:
    report = _prove(judged_task, 2, tmp_path)
    assert report["calls"] == sorted([
        "fixture", f"fixture seed {seed_of(2)}", "solution", f"solution seed {seed_of(1)}",
        f"solution seed {seed_of(2)}", f"solution seed {seed_of(3)}",
    ]), report
    assert {c[0] for c in report["checks"].values()} == {"pass"}, report


def test_a_test_command_keeps_the_fixture_runs_apart(tmp_path: Path) -> None:
    """A test command runs the visible test with the holdout's: ES914 grades the fixture
    without it, a grading of its own."""
    task = TaskBuilder(tmp_path / "suite")(good(graders=GUIDE_GRADERS))
    report = _prove(task, 1, tmp_path)
    assert report["checks"]["holdout fails on the fixture"][0] == "pass", report
    assert report["calls"] == ["fixture", "fixture", "solution",
                               f"solution seed {seed_of(1)}"], report


def test_shared_computes_a_key_once_for_callers_at_the_same_time() -> None:
    shared = Shared()
    started = threading.Event()
    runs: list[int] = []

    def slow() -> object:
        runs.append(1)
        started.set()
        time.sleep(0.2)
        return object()

    results: list[object] = []
    first = threading.Thread(target=lambda: results.append(shared.get("k", slow)))
    first.start()
    started.wait(5)
    second = shared.get("k", slow)  # asked while the first computes: waits for its answer
    first.join(5)
    assert runs == [1]
    assert results == [second]
    assert shared.get("other", lambda: 7) == 7


def test_shared_keeps_nothing_of_a_computation_that_raised() -> None:
    shared = Shared()

    def fails() -> object:
        raise RuntimeError("the sandbox could not be made")

    with pytest.raises(RuntimeError):
        shared.get("k", fails)
    assert shared.get("k", lambda: "graded") == "graded"
