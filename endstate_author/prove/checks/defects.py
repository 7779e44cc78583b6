"""defects: each declared wrong solution in ``defects/<name>/`` must fail (ES910).

A defect is a mistake the author expects the graders to catch; each is graded like the
solution (holdout staged, counters at the least their bounds ask for) in its own job.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from endstate_author.prove.evidence import tests_json
from endstate_author.prove.grading import failing_detail, grade_end_state, least_counters
from endstate_author.prove.model import (
    GRADING_INPUTS,
    Check,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    make_job,
)
from endstate_harness.task import Task


def defect_check(name: str, folder: Path) -> Check:
    def check(ctx: ProveContext) -> CheckResult:
        counters, stop = least_counters(ctx.task)
        graded = grade_end_state(
            ctx.task,
            ctx.spec,
            overlays=[folder],
            counters=counters,
            stop_reason=stop,
            search_paths=ctx.search_paths,
        )
        label = f"defect {name} fails"
        if graded.verdict.passed:
            return CheckResult(
                label,
                "defects",
                "fail",
                code="ES910",
                detail=f"defects/{name}/ passes every grader",
                tests=tests_json(graded),
            )
        return CheckResult(
            label, "defects", "pass", detail=failing_detail(graded), tests=tests_json(graded)
        )

    return check


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    for name, folder in task.defects.items():
        yield make_job("defects", f"defect {name} fails", defect_check(name, folder))


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.defects:
        return []
    return [CheckResult("defects", "defects", "skipped", detail="no defects/")]


GROUP = CheckGroup(
    name="defects",
    codes=("ES910",),
    inputs=(*GRADING_INPUTS, "defects"),
    jobs=jobs,
    skipped=skipped,
    summary="every declared defect overlay fails",
)
