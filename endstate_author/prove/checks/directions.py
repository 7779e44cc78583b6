"""directions: the graders fail on the untouched fixture (ES901) and pass on the solution
(ES902).
"""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.prove.evidence import tests_json
from endstate_author.prove.grading import (
    failing_detail,
    first_failing_grader,
    least_counters,
    shared_end_state,
    zero_counters,
)
from endstate_author.prove.model import (
    GRADING_INPUTS,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    make_job,
)
from endstate_harness.task import Task


def check_fixture_fails(ctx: ProveContext) -> CheckResult:
    counters, stop = zero_counters(ctx.task)
    graded = shared_end_state(ctx, counters=counters, stop_reason=stop)
    if graded.verdict.passed:
        return CheckResult(
            "fixture fails",
            "directions",
            "fail",
            code="ES901",
            detail="every check passed on the untouched fixture with every counter at zero",
            tests=tests_json(graded),
        )
    return CheckResult(
        "fixture fails", "directions", "pass", detail=failing_detail(graded),
        tests=tests_json(graded),
    )


def check_solution_passes(ctx: ProveContext) -> CheckResult:
    solution = ctx.task.solution
    if solution is None:
        return CheckResult(
            "solution passes",
            "directions",
            "fail",
            code="ES902",
            detail="the task has no solution/ to prove the graders with",
        )
    counters, stop = least_counters(ctx.task)
    graded = shared_end_state(ctx, overlays=[solution], counters=counters, stop_reason=stop)
    if graded.verdict.passed:
        return CheckResult("solution passes", "directions", "pass", tests=tests_json(graded))
    return CheckResult(
        "solution passes",
        "directions",
        "fail",
        code="ES902",
        detail=failing_detail(graded),
        grader_index=first_failing_grader(graded),
        tests=tests_json(graded),
    )


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    yield make_job("directions", "fixture fails", check_fixture_fails)
    if task.category != "permissioning":
        yield make_job("directions", "solution passes", check_solution_passes)


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category != "permissioning":
        return []
    return [
        CheckResult(
            "solution passes",
            "directions",
            "skipped",
            detail="a permissioning task has no solution direction",
        )
    ]


GROUP = CheckGroup(
    name="directions",
    codes=("ES901", "ES902"),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="the graders fail on the untouched fixture and pass on the solution",
)
