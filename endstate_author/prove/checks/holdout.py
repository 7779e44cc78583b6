"""holdout: a failing sentinel staged beside the holdout must make the solution fail (ES903).

Held-out tests the test command never discovers stop nothing. The check stages one
always-failing test, with the holdout, into every folder of the holdout that holds Python
files and grades the solution: if every grader still passes, the holdout is never run.
"""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.prove.grading import grade_end_state, least_counters
from endstate_author.prove.model import (
    GRADING_INPUTS,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    make_job,
)
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.task import Task

SENTINEL_NAME = "test_endstate_sentinel.py"
SENTINEL_SOURCE = '''import unittest


class EndstateSentinelTest(unittest.TestCase):
    """Written by `endstate-author prove`: if the graders pass with this test staged,
    the holdout is never run."""

    def test_sentinel_must_fail(self):
        self.fail("endstate-author prove: holdout sentinel")
'''


def stage_sentinel(task: Task, sandbox: TreeSandbox) -> None:
    """A failing test beside every folder of the holdout that holds Python test files.

    Staged like the holdout itself (after the seal, only staged trees reach the graders), from
    a folder in the sandbox's scratch, which is removed with the sandbox.
    """
    assert task.holdout is not None
    folders = set()
    for path in task.holdout.rglob("*.py"):
        if path.is_file() and not path.is_symlink():
            folders.add(path.parent.relative_to(task.holdout))
    staged = sandbox.scratch / "endstate-sentinel"
    for folder in sorted(folders):
        target = staged / folder / SENTINEL_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(SENTINEL_SOURCE, encoding="utf-8")
    sandbox.stage(staged)


def check_holdout_sentinel(ctx: ProveContext) -> CheckResult:
    task = ctx.task
    if task.holdout is None:
        return CheckResult("holdout sentinel", "holdout", "skipped", detail="no holdout/")
    if not any(p.is_file() for p in task.holdout.rglob("*.py")):
        return CheckResult(
            "holdout sentinel",
            "holdout",
            "skipped",
            detail="holdout/ holds no Python test file to stand beside",
        )
    if task.solution is None:
        return CheckResult("holdout sentinel", "holdout", "skipped", detail="no solution/")
    counters, stop = least_counters(task)
    graded = grade_end_state(
        task,
        ctx.spec,
        overlays=[task.solution],
        counters=counters,
        stop_reason=stop,
        after_holdout=stage_sentinel,
        search_paths=ctx.search_paths,
    )
    if graded.verdict.passed:
        return CheckResult(
            "holdout sentinel",
            "holdout",
            "fail",
            code="ES903",
            detail=f"an always-failing {SENTINEL_NAME} staged beside the holdout's tests left "
            "every grader passing: the test command never runs the holdout",
        )
    return CheckResult("holdout sentinel", "holdout", "pass")


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category != "permissioning":
        yield make_job("holdout", "holdout sentinel", check_holdout_sentinel)


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category != "permissioning":
        return []
    return [
        CheckResult(
            "holdout sentinel",
            "holdout",
            "skipped",
            detail="a permissioning task has no solution to stage it with",
        )
    ]


GROUP = CheckGroup(
    name="holdout",
    codes=("ES903",),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="a failing sentinel staged with the holdout makes the solution fail",
)
