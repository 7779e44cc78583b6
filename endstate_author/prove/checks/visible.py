"""visible: the visible tests must fail on the untouched fixture (ES912)."""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.engine.context import TaskContext
from endstate_author.engine.discovery import builtin_name, grader_command, test_files
from endstate_author.prove.evidence import tests_json
from endstate_author.prove.grading import (
    failed_check,
    failing_detail,
    grade_end_state,
    zero_counters,
)
from endstate_author.prove.model import CheckGroup, CheckResult, Job, Plan, ProveContext, make_job
from endstate_harness.task import Task

GROUP_NAME = "visible"
NAME = "visible tests fail on the fixture"
EXEMPT = {
    "permissioning": "permissioning tasks are exempt",
    "refactor": "refactor tasks are exempt (their visible tests pass on the fixture by design)",
}


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
            GROUP_NAME,
            "fail",
            code="ES912",
            severity="error" if strict else "warning",
            grader_index=indexes[0],
            detail=f"the visible tests ({shown}) already pass on the untouched fixture, so "
            "the agent has no failing test to reproduce",
            tests=tests_json(graded),
        )
    failing = next(v for v in verdicts if not v.passed)
    # the failing check's outcome (its detail), never its name: a check is named for what
    # it expects, so "all tests passed" would read as the opposite of what happened
    reason = failing.reason
    for check in failing.checks:
        if not check.passed:
            reason = failed_check(check.name, check.detail)
            break
    return CheckResult(NAME, GROUP_NAME, "pass", detail=reason or failing_detail(graded),
                       tests=tests_json(graded))


def jobs(task: Task, plan: Plan) -> Iterator[Job]:
    if task.category in EXEMPT:
        return
    indexes = running_graders(task)
    if indexes and _visible_test_files(task, indexes):
        yield make_job(GROUP_NAME, NAME, lambda ctx: check_visible_fail(ctx, plan.strict))


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category in EXEMPT:
        return [CheckResult(NAME, GROUP_NAME, "skipped", detail=EXEMPT[task.category])]
    indexes = running_graders(task)
    if not indexes:
        return [CheckResult(NAME, GROUP_NAME, "skipped", detail="no grader runs tests")]
    if not _visible_test_files(task, indexes):
        return [
            CheckResult(
                NAME, GROUP_NAME, "skipped", detail="the fixture has no test the graders run"
            )
        ]
    return []


GROUP = CheckGroup(
    name=GROUP_NAME,
    codes=("ES912",),
    # the untouched fixture, without the holdout and the solution
    inputs=("task.json", "fixture", "graders"),
    jobs=jobs,
    skipped=skipped,
    summary="the fixture's own tests, run alone, fail on the untouched fixture",
)
