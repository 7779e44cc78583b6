"""directions: the graders fail on the untouched fixture (ES901) and pass on the solution
(ES902), and their verdict on the solution is the same under another hash seed with the tests
in another order (ES909: :mod:`endstate_author.prove.variation` says why).
"""

from __future__ import annotations

from collections.abc import Iterator

import endstate_author.prove.variation as variation
from endstate_author.prove.evidence import TestSite, records, short_name, test_site, tests_json
from endstate_author.prove.grading import (
    Graded,
    failing_detail,
    first_failing_grader,
    grade_end_state,
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
from endstate_harness.verdict import TestRecord


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


SEEDED = "same verdict under another hash seed and test order"


def _label(index: int, test: TestRecord) -> str:
    label = f"{short_name(test.id)} ({test.file})" if test.file else short_name(test.id)
    return f"{label} [grader {index}]" if index else label


def outcomes(graded: Graded) -> dict[str, str]:
    """What each test did (``test (file)`` → outcome), from the graders that report tests; a
    grader that reports none counts as one test, its verdict (``grader N``)."""
    found = {_label(i, test): test.outcome for i, test in records(graded)}
    for i, verdict in enumerate(graded.per_grader):
        if verdict.evidence is None:
            found[f"grader {i}"] = "passed" if verdict.passed else "failed"
    return found


def _site(task: Task, gradings: list[Graded], flips: dict[str, tuple[str, str]]
          ) -> TestSite | None:
    """Where the first flipped test is defined, when a grading reported where."""
    for graded in gradings:
        for i, test in records(graded):
            if _label(i, test) in flips:
                site = test_site(task, test)
                if site is not None and (task.root / site.path).is_file():
                    return site
    return None


def check_same_under_other_seed(ctx: ProveContext) -> CheckResult:
    """The solution graded once more, under another hash seed with the tests in another
    order, against the grading ES902 reads (shared: one grading more, not two)."""
    solution = ctx.task.solution
    if solution is None:
        return CheckResult(SEEDED, "directions", "skipped", detail="no solution/")
    counters, stop = least_counters(ctx.task)
    first = shared_end_state(ctx, overlays=[solution], counters=counters, stop_reason=stop)
    spec = variation.other(ctx.spec, ctx.pass_index)
    second = grade_end_state(
        ctx.task, spec, overlays=[solution], counters=counters, stop_reason=stop,
        search_paths=ctx.search_paths,
    )  # fmt: skip
    flips = variation.flipped(outcomes(first), outcomes(second))
    both = f"{variation.describe(ctx.spec)} and {variation.describe(spec)}"
    if first.verdict.passed == second.verdict.passed and not flips:
        return CheckResult(SEEDED, "directions", "pass",
                           detail=f"the solution's grading is the same under {both}")
    verdicts = (f"{'passed' if first.verdict.passed else 'failed'} under "
                f"{variation.describe(ctx.spec)}, {'passed' if second.verdict.passed else 'failed'}"
                f" under {variation.describe(spec)}")
    detail = f"the solution's grading {verdicts}"
    if flips:
        detail += f"; flipped (first → second): {variation.flip_lines(flips)}"
    detail += (": a verdict that depends on set or dict iteration order, or on which test ran "
               "first, is luck a real agent's run need not share (expect a sorted list or a "
               "set; give each test the state it needs)")
    site = _site(ctx.task, [first, second], flips)
    return CheckResult(
        SEEDED, "directions", "fail", code="ES909", detail=detail,
        grader_index=first_failing_grader(second) if site is None else None,
        path=site.path if site else None, line=(site.line or 1) if site else None,
        tests=tests_json(second),
        evidence=variation.evidence([ctx.spec, spec], flips),
    )


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    yield make_job("directions", "fixture fails", check_fixture_fails)
    if task.category != "permissioning":
        yield make_job("directions", "solution passes", check_solution_passes)
        yield make_job("directions", SEEDED, check_same_under_other_seed)


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
    codes=("ES901", "ES902", "ES909"),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="the graders fail on the untouched fixture and pass on the solution, alike "
    "under another hash seed and test order",
)
