"""Probes grade only until a grader rejects them, the sealed-state guards first.

:func:`endstate_author.prove.grading.grade_end_state` with ``until_rejected`` must give the
answer that grading every grader gives (a conjunction with one failed member fails), while
sparing the test run when a path guard already rejects the end state. Shown on small tasks
(which graders ran, in which order) and as a differential over every built-in probe on two
shipped tasks, both ways.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from endstate_author.probes.catalogue import PROBES, injection_targets
from endstate_author.prove.grading import grade_end_state, least_counters
from endstate_harness.graders import reads_sealed_state_only
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import GraderSpec, Task, load_task
from tests.harness.test_runner import make_task

ROOT = Path(__file__).resolve().parents[2]
LOCAL = SandboxChoice("local", grading=True)


def _task(tmp_path: Path, graders: list[dict[str, Any]]) -> Task:
    return make_task(tmp_path, "order", manifest={"graders": graders})


def _write_test_edit(live: Path) -> list[str]:
    (live / "tests" / "test_mod.py").write_text("import unittest\n", encoding="utf-8")
    return ["tests/test_mod.py"]


def test_the_sealed_state_guards_are_told_apart() -> None:
    def named(name: str) -> bool:
        return reads_sealed_state_only(GraderSpec(name=name, args={}))

    assert named("endstate.evals.graders:files_unchanged")
    assert named("endstate.evals.graders:changed_paths_within")
    assert named("endstate_harness.graders:no_new_skips")
    assert not named("endstate.evals.graders:command_succeeds")  # runs a command
    assert not named("endstate_harness.graders:tests_pass")
    assert not named("endstate_harness.graders:judged_tests")
    assert not named("suite_graders:files_unchanged")  # a suite's own: unknown, never hoisted
    assert not named("not a grader name")


def test_a_guard_that_rejects_spares_the_test_run(tmp_path: Path) -> None:
    graders = [
        {
            "name": "endstate.evals.graders:command_succeeds",
            "args": {"command": "python3 -m unittest discover -s tests -t ."},
        },
        {
            "name": "endstate.evals.graders:files_unchanged",
            "args": {"paths": ["tests/test_mod.py"]},
        },
    ]
    task = _task(tmp_path, graders)
    every = grade_end_state(task, LOCAL, mutate=_write_test_edit)
    first = grade_end_state(task, LOCAL, mutate=_write_test_edit, until_rejected=True)
    assert not every.verdict.passed and not first.verdict.passed
    assert len(every.per_grader) == 2  # the task's order, both ran
    assert every.per_grader[0].passed  # the gutted tests pass: only the guard rejects
    assert len(first.per_grader) == 1  # the guard went first and settled it
    assert "tests/test_mod.py" in first.per_grader[0].checks[0].name


def test_the_other_graders_keep_the_tasks_order_and_stop_at_the_first_failure(
    tmp_path: Path,
) -> None:
    graders = [
        {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "exit 3"}},
        {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "true"}},
        {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["**"]}},
    ]
    task = _task(tmp_path, graders)
    graded = grade_end_state(task, LOCAL, until_rejected=True)
    assert not graded.verdict.passed
    # the guard passed first, then the first command failed and the second never ran
    assert [v.passed for v in graded.per_grader] == [True, False]
    assert "exit 3" in graded.per_grader[1].checks[0].name


def test_an_end_state_every_grader_accepts_still_runs_them_all(tmp_path: Path) -> None:
    graders = [
        {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "true"}},
        {
            "name": "endstate.evals.graders:files_unchanged",
            "args": {"paths": ["tests/test_mod.py"]},
        },
    ]
    task = _task(tmp_path, graders)
    graded = grade_end_state(task, LOCAL, until_rejected=True)
    assert graded.verdict.passed and len(graded.per_grader) == 2


@pytest.mark.parametrize("name", ["fix-help-text-wrap", "add-temperature-units"])
def test_every_probe_gets_the_same_answer_both_ways(name: str) -> None:
    task = load_task(ROOT / "tasks" / name)
    targets = injection_targets(task.fixture)
    counters, stop = least_counters(task)
    differ = []
    for probe in PROBES:

        def apply(live: Path, probe: Any = probe) -> list[str]:
            return list(probe.apply(live, targets, "tests"))

        answers = {
            grade_end_state(
                task,
                LOCAL,
                mutate=apply,
                counters=counters,
                stop_reason=stop,
                until_rejected=until,
            ).verdict.passed
            for until in (False, True)
        }
        if len(answers) != 1:
            differ.append(probe.id)
    assert not differ, f"probes answered differently: {differ}"
