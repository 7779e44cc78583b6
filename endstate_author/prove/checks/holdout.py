"""holdout: every holdout test module runs on the solution, and the verdict depends on it (ES903).

Each module is staged with a failing sentinel appended to its own text (a sentinel beside it
proves only itself); the judge's evidence says which sentinels ran, other graders are asked
module by module. A module never run, or skipped whole, is named; so is one the judge loads
(its sentinel ran) but whose own tests number zero, which the sentinel alone cannot show.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

from endstate_author.prove.evidence import (
    NOT_PASSING,
    holdout_test_modules,
    is_judge,
    listed,
    opaque,
    records,
    tests_json,
)
from endstate_author.prove.grading import Graded, grade_end_state, least_counters
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

NAME = "holdout sentinel"
SENTINEL_CLASS = "EndstateHoldoutSentinel"
SENTINEL_SOURCE = '''

import unittest as _endstate_unittest


class {cls}(_endstate_unittest.TestCase):
    """Appended by `endstate-author prove` to a copy of this file: if the graders pass with
    it, this file is never run."""

    def test_endstate_sentinel(self):
        self.fail("endstate-author prove: holdout sentinel of {rel}")
'''


def sentinel_class(rel: str) -> str:
    """The sentinel's class name in one module (unique per module)."""
    return SENTINEL_CLASS + "_" + re.sub(r"\W", "_", rel.removesuffix(".py"))


def stager(modules: list[str]) -> Callable[[Task, TreeSandbox], None]:
    """Stages a copy of each of ``modules`` (holdout-relative) with its sentinel appended.

    Staged like the holdout itself (after the seal, only staged trees reach the graders), from
    a folder in the sandbox's scratch, which is removed with the sandbox."""

    def stage(task: Task, sandbox: TreeSandbox) -> None:
        assert task.holdout is not None
        staged = sandbox.scratch / "endstate-sentinel"
        for rel in modules:
            text = (task.holdout / rel).read_text(encoding="utf-8", errors="replace")
            target = staged / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(
                text.rstrip("\n")
                + "\n"
                + SENTINEL_SOURCE.format(cls=sentinel_class(rel), rel=rel),
                encoding="utf-8",
            )
        sandbox.stage(staged)

    return stage


def _grade(ctx: ProveContext, modules: list[str], until_rejected: bool = False) -> Graded:
    assert ctx.task.solution is not None
    counters, stop = least_counters(ctx.task)
    return grade_end_state(
        ctx.task,
        ctx.spec,
        overlays=[ctx.task.solution],
        counters=counters,
        stop_reason=stop,
        after_holdout=stager(modules),
        search_paths=ctx.search_paths,
        until_rejected=until_rejected,
    )


def _why_not_run(task: Task, rel: str) -> str:
    """What the judges' own arguments say about a holdout module they never ran."""
    reasons = []
    for i, spec in enumerate(task.graders):
        if not is_judge(task, i):
            continue
        args = spec.args or {}
        start = str(args.get("start_dir", "tests")).strip("/")
        pattern = str(args.get("pattern", "test*.py"))
        path = PurePosixPath(rel)
        if start not in ("", ".") and PurePosixPath(start) not in path.parents:
            reasons.append(f"it is outside start_dir {start}/ of grader {i}")
        elif not path.match(pattern):
            reasons.append(f"its name does not match pattern {pattern!r} of grader {i}")
    return "; ".join(reasons) or "no grader runs it"


def check_holdout_sentinel(ctx: ProveContext) -> CheckResult:
    task = ctx.task
    if task.holdout is None:
        return CheckResult(NAME, "holdout", "skipped", detail="no holdout/")
    modules = holdout_test_modules(task)
    if not modules:
        return CheckResult(
            NAME, "holdout", "skipped", detail="holdout/ holds no Python test module to prove"
        )
    if task.solution is None:
        return CheckResult(NAME, "holdout", "skipped", detail="no solution/")
    graded = _grade(ctx, modules)
    fired: set[str] = set()
    witnessed: set[str] = set()  # modules a grader with per-test evidence ran the sentinel of
    own: dict[str, list[str]] = {}  # module -> outcomes of its own tests (sentinel aside)
    skips: dict[str, str] = {}
    for _i, test in records(graded):
        if test.source != "holdout" or test.file not in modules:
            continue
        if sentinel_class(test.file) in test.id:
            witnessed.add(test.file)
            if test.outcome in NOT_PASSING:
                fired.add(test.file)
            continue
        own.setdefault(test.file, []).append(test.outcome)
        if test.outcome == "skipped" and test.message:
            skips.setdefault(test.file, test.message)
    # a module whose own tests a judge ran is proven by that alone (its sentinel may be left
    # out by a load_tests of its own)
    fired.update(m for m, seen in own.items() if any(o != "skipped" for o in seen))
    unproven = [m for m in modules if m not in fired]
    hidden = opaque(task, graded)
    if unproven and any(not graded.per_grader[i].passed for i in hidden):
        if len(modules) == 1:
            fired.update(unproven)  # its sentinel is the only one staged
        else:
            for rel in unproven:  # which of them the opaque graders ran: one at a time
                if not _grade(ctx, [rel], until_rejected=True).verdict.passed:
                    fired.add(rel)
    problems: dict[str, str] = {}
    for rel in modules:
        outcomes = own.get(rel, [])
        if outcomes and all(o == "skipped" for o in outcomes):  # at import, or each test
            why = skips.get(rel, "")
            problems[rel] = f"every test of holdout/{rel} was skipped on the grading Python" + (
                f" ({why})" if why else ""
            )
        elif rel not in fired:
            problems[rel] = f"holdout/{rel} never runs ({_why_not_run(task, rel)})"
        elif rel in witnessed and not outcomes:
            # loaded (its sentinel ran, as the runner saw it) yet not one test of its own was
            # collected: each test it seems to hold is something the runner does not run
            problems[rel] = (
                f"holdout/{rel} is loaded but contributes no test of its own on the grading "
                "Python (a runner collects only TestCase methods: module-level test "
                "functions, a class not derived from TestCase, or tests generated from an "
                "empty table give none)"
            )
    tests = tests_json(graded)
    if problems:
        return CheckResult(
            NAME,
            "holdout",
            "fail",
            code="ES903",
            detail=listed(list(problems.values()), sep="; ")
            + ": a holdout file that contributes no test on the solution stops nothing",
            path=f"holdout/{next(iter(problems))}",
            line=1,
            tests=tests,
        )
    return CheckResult(
        NAME,
        "holdout",
        "pass",
        detail=f"each of {len(modules)} holdout test module(s) runs tests of its own and "
        "fails the graders with its sentinel",
        tests=tests,
    )


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category != "permissioning":
        yield make_job("holdout", NAME, check_holdout_sentinel)


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category != "permissioning":
        return []
    return [
        CheckResult(
            NAME,
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
    summary="every holdout test module runs on the solution, proven by a sentinel in it",
)
