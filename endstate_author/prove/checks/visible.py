"""visible: the visible tests must fail on the untouched fixture (ES912).

The authoring guide's first rule is to ship the failing test. A task whose fixture tests
already pass, so that only the hidden holdout fails, gives the agent nothing to reproduce:
it is graded on a requirement it was never shown. The check grades the untouched fixture
*without* the holdout, looking only at the graders that run tests (``command_succeeds`` with
a test command this toolkit can read, ``tests_pass``, ``judged_tests`` with its visible
tests): when every one of them passes there, the visible tests are green on arrival.

A warning (an error under ``--strict``). Permissioning tasks are exempt (the right answer is
to change nothing); a task whose fixture has no test file the graders run is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.discovery import builtin_name, grader_command, test_files
from endstate_author.lint.context import TaskContext
from endstate_author.prove.grading import failing_detail, grade_end_state, zero_counters
from endstate_author.prove.model import CheckResult, Job, ProveContext, make_job
from endstate_harness.task import Task

GROUP = "visible"
NAME = "visible tests fail on the fixture"


def running_graders(task: Task) -> list[int]:
    """Indexes of the graders that run the fixture's own tests, by a command read exactly."""
    out = []
    for i, spec in enumerate(task.graders):
        args = spec.args or {}
        command = grader_command(spec.name, args)
        if command is None or not command.known:
            continue
        if builtin_name(spec.name) == "judged_tests" and args.get("visible", True) is False:
            continue
        out.append(i)
    return out


def _visible_test_files(task: Task, indexes: list[int]) -> list[str]:
    fixture = TaskContext(task.root).fixture
    files: list[str] = []
    for i in indexes:
        spec = task.graders[i]
        command = grader_command(spec.name, spec.args or {})
        if command is not None:
            files.extend(test_files(fixture, command))
    return files


def check_visible_fail(ctx: ProveContext, strict: bool) -> CheckResult:
    indexes = running_graders(ctx.task)
    counters, stop = zero_counters(ctx.task)
    graded = grade_end_state(
        ctx.task,
        ctx.spec,
        counters=counters,
        stop_reason=stop,
        search_paths=ctx.search_paths,
        holdout=False,
    )
    verdicts = [graded.per_grader[i] for i in indexes]
    if all(v.passed for v in verdicts):
        files = sorted(set(_visible_test_files(ctx.task, indexes)))
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        # the lead says "passes before any work" and the fix says what to ship: the detail
        # adds only which tests, and what it costs the agent
        return CheckResult(
            NAME,
            GROUP,
            "fail",
            code="ES912",
            severity="error" if strict else "warning",
            grader_index=indexes[0],
            detail=f"the visible tests ({shown}) already pass on the untouched fixture, so "
            "the agent has no failing test to reproduce",
        )
    failing = next(v for v in verdicts if not v.passed)
    reason = failing.reason
    for check in failing.checks:
        if not check.passed:
            reason = check.name
            break
    return CheckResult(NAME, GROUP, "pass", detail=reason or failing_detail(graded))


def jobs(task: Task, strict: bool) -> Iterator[Job]:
    if task.category == "permissioning":
        return
    indexes = running_graders(task)
    if indexes and _visible_test_files(task, indexes):
        yield make_job(GROUP, NAME, lambda ctx: check_visible_fail(ctx, strict))


def skipped(task: Task) -> list[CheckResult]:
    if task.category == "permissioning":
        return [CheckResult(NAME, GROUP, "skipped", detail="permissioning tasks are exempt")]
    indexes = running_graders(task)
    if not indexes:
        return [CheckResult(NAME, GROUP, "skipped", detail="no grader runs tests")]
    if not _visible_test_files(task, indexes):
        return [
            CheckResult(NAME, GROUP, "skipped", detail="the fixture has no test the graders run")
        ]
    return []
