"""oracle: the reference solution, written by a scripted agent through the real runner (ES907)."""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.prove.harness import (
    failed_detail,
    informed_steps,
    oracle_steps,
    run_scripted,
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


INFORMED = "oracle that reads first"
INFORMED_CATEGORIES = ("cost",)
"""Categories whose ceilings (``requires.steps.max``, a token bound) a real agent's reading
turn counts against. Not compaction: its oracle reads the fixture until the window compacts,
and how many reads that takes is the oracle's choice, not the task's bound, so a reading
turn that leaves one read fewer (and no compaction) would be an error no agent meets."""


def check_informed_oracle(ctx: ProveContext) -> CheckResult:
    """The solution written after a turn that reads the files it changes: a bound only the
    blind oracle (write without reading) meets fails every real agent (ES907)."""
    steps = informed_steps(ctx.task)
    if not steps:
        return CheckResult(INFORMED, "oracle", "skipped",
                           detail="the solution changes no fixture file: nothing to read first")
    result = run_scripted(ctx, steps)
    if result.passed:
        return CheckResult(INFORMED, "oracle", "pass")
    return CheckResult(
        INFORMED, "oracle", "fail", code="ES907",
        detail="the solution, written after one turn that reads the files it changes (as "
        f"every real agent must), fails: {failed_detail(result)}",
    )


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category not in GUARDED_CATEGORIES:
        yield make_job("oracle", CHECK, check_oracle)
    if task.category in INFORMED_CATEGORIES and task.solution is not None:
        yield make_job("oracle", INFORMED, check_informed_oracle)


GROUP = CheckGroup(
    name="oracle",
    codes=("ES907",),
    # the runner's context budget and token counts include the prompt
    inputs=(*GRADING_INPUTS, "prompt.md", "oracle.json"),
    jobs=jobs,
    summary="a scripted agent writes the solution through the full runner and passes, also "
    "after a turn that reads the files it changes (cost tasks)",
)
