"""oracle: the reference solution, written by a scripted agent through the real runner (ES907)."""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.prove.harness import failed_detail, oracle_steps, run_scripted
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

CHECK = "oracle through the harness"
GUARDED_CATEGORIES = ("compaction", "permissioning", "recovery")
"""Categories whose guard check already runs the oracle through the harness."""


def check_oracle(ctx: ProveContext) -> CheckResult:
    steps = oracle_steps(ctx.task)
    if not steps:
        return CheckResult(
            CHECK,
            "oracle",
            "skipped",
            detail="no oracle.json and no solution/ to derive one from",
        )
    result = run_scripted(ctx, steps)
    if result.passed:
        return CheckResult(CHECK, "oracle", "pass")
    return CheckResult(CHECK, "oracle", "fail", detail=failed_detail(result), code="ES907")


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category not in GUARDED_CATEGORIES:
        yield make_job("oracle", CHECK, check_oracle)


GROUP = CheckGroup(
    name="oracle",
    codes=("ES907",),
    # the runner's context budget and token counts include the prompt
    inputs=(*GRADING_INPUTS, "prompt.md", "oracle.json"),
    jobs=jobs,
    summary="a scripted agent writes the solution through the full runner and passes",
)
