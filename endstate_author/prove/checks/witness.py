"""witness: the holdout alone fails on the fixture (ES914); every test asserts (ES915).

Both read what ``judged_tests`` saw each test do; ES914 also reads a test command's verdict
with the visible test files removed. Refactor and permissioning tasks are exempt from ES914.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from endstate_author.engine.context import TaskContext
from endstate_author.engine.discovery import builtin_name, grader_command, test_files
from endstate_author.prove.evidence import (
    NOT_PASSING,
    PASSING,
    holdout_test_modules,
    listed,
    records,
    short_name,
    test_site,
    tests_json,
    witnessed,
)
from endstate_author.prove.grading import (
    Graded,
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
from endstate_harness.graders import pyast
from endstate_harness.task import Task
from endstate_harness.verdict import TestRecord

GROUP_NAME = "witness"
HOLDOUT_FAILS = "holdout fails on the fixture"
ASSERTS = "every test asserts"
EXEMPT = {
    "refactor": "refactor tasks are exempt (their holdout guards behaviour the fixture has)",
    "permissioning": "permissioning tasks are exempt (the right answer changes nothing)",
}


# --- ES914: the holdout alone on the untouched fixture --------------------------------------


def _commands(task: Task) -> list[int]:
    """``command_succeeds`` graders whose test command is read exactly."""
    out = []
    for i, spec in enumerate(task.graders):
        if builtin_name(spec.name) != "command_succeeds":
            continue
        command = grader_command(spec.name, spec.args or {})
        if command is not None and command.known:
            out.append(i)
    return out


def _discovered(task: Task, index: int) -> tuple[list[str], list[str]]:
    """(visible test files, holdout test files) that grader ``index``'s command runs."""
    ctx = TaskContext(task.root)
    fixture, holdout = ctx.tree("fixture"), ctx.tree("holdout")
    spec = task.graders[index]
    command = grader_command(spec.name, spec.args or {})
    if command is None:
        return [], []
    ran = test_files({**fixture, **holdout}, command)
    return [r for r in ran if r in fixture and r not in holdout], [r for r in ran if r in holdout]


def _fixture_without_visible(ctx: ProveContext, visible: list[str]) -> Graded:
    def remove(live: Path) -> list[str]:
        for rel in visible:
            (live / rel).unlink(missing_ok=True)
        return visible

    counters, stop = zero_counters(ctx.task)
    if not visible:  # nothing to leave out: the untouched fixture "fixture fails" grades
        return shared_end_state(ctx, counters=counters, stop_reason=stop)
    return grade_end_state(
        ctx.task, ctx.spec, counters=counters, stop_reason=stop, search_paths=ctx.search_paths,
        mutate=remove,
    )  # fmt: skip


def _reference(ctx: ProveContext) -> Graded:
    """The reference end state graded with the holdout: the solution (the untouched fixture
    for a permissioning task)."""
    task = ctx.task
    counters, stop = least_counters(task)
    overlays = [task.solution] if task.solution is not None else []
    # the grading "solution passes" (ES902) reads: one run answers both
    return shared_end_state(ctx, overlays=overlays, counters=counters, stop_reason=stop)


def _label(test: TestRecord) -> str:
    return f"{short_name(test.id)} ({test.file})" if test.file else short_name(test.id)


def check_holdout_fails(ctx: ProveContext) -> CheckResult:
    task = ctx.task
    commands = {i: _discovered(task, i) for i in _commands(task)}
    commands = {i: found for i, found in commands.items() if found[1]}
    visible = sorted({rel for found, _ in commands.values() for rel in found})
    graded = _fixture_without_visible(ctx, visible)
    verdicts: list[bool] = []  # per grader that can tell: does the holdout pass alone?
    passing: list[tuple[int, TestRecord]] = []
    for i in witnessed(graded):
        evidence = graded.per_grader[i].evidence
        assert evidence is not None
        own = [t for t in evidence.tests if t.source == "holdout" and t.outcome != "skipped"]
        if own:
            verdicts.append(not any(t.outcome in NOT_PASSING for t in own))
            passing.extend((i, t) for t in own if t.outcome in PASSING)
    for i in commands:
        verdicts.append(graded.per_grader[i].passed)
    if not verdicts:
        return CheckResult(
            HOLDOUT_FAILS, GROUP_NAME, "skipped",
            detail="no grader tells the holdout's tests apart (judged_tests) or runs them "
            "by a test command read exactly",
        )  # fmt: skip
    inert: list[str] = []
    if passing:
        on_solution = {
            (i, t.id) for i, t in records(_reference(ctx)) if t.outcome in PASSING
        }
        inert = [_label(t) for i, t in passing if (i, t.id) in on_solution]
    tests = tests_json(graded)
    if all(verdicts):
        modules = holdout_test_modules(task)
        where = next((t.file for _, t in passing), modules[0] if modules else None)
        detail = (
            "every holdout test passes on the untouched fixture, graded without the visible "
            "tests: the holdout adds nothing against an agent that special-cases the visible "
            "inputs"
        )
        if inert:
            detail += f"; inert (pass on the fixture and on the solution): {listed(inert)}"
        return CheckResult(
            HOLDOUT_FAILS, GROUP_NAME, "fail", code="ES914", detail=detail,
            path=f"holdout/{where}" if where else None, line=1 if where else None, tests=tests,
        )  # fmt: skip
    detail = "the holdout fails on the untouched fixture"
    if inert:
        detail += f"; inert (pass on the fixture and on the solution): {listed(inert)}"
    return CheckResult(HOLDOUT_FAILS, GROUP_NAME, "pass", detail=detail, tests=tests)


# --- ES915: tests that executed no assertion ------------------------------------------------


def _asserts(node: ast.AST) -> bool:
    """Whether a function's own code holds an assertion: ``assert``, an ``assert…``/``fail``
    call, or a ``raise``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assert | ast.Raise):
            return True
        if isinstance(inner, ast.Call):
            func = inner.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("assert") or name == "fail":
                return True
    return False


def _called(node: ast.AST) -> set[str]:
    """Names a function calls as ``name(...)`` or ``self.name(...)``/``cls.name(...)``."""
    out = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            func = inner.func
            if isinstance(func, ast.Name):
                out.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                out.add(func.attr)
    return out


@lru_cache(maxsize=256)
def _asserting(path: Path, mtime: float) -> frozenset[str]:
    """Functions of a test module that hold an assertion or call, within the module, one
    that does (by name, transitively)."""
    try:
        tree = pyast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    functions: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(node.name, []).append(node)
    yes = {name for name, defs in functions.items() if any(_asserts(d) for d in defs)}
    changed = True
    while changed:
        changed = False
        for name, defs in functions.items():
            if name not in yes and any(_called(d) & yes for d in defs):
                yes.add(name)
                changed = True
    return frozenset(yes)


def _meant_to_assert(task: Task, test: TestRecord) -> bool:
    site = test_site(task, test)
    if site is None:
        return False
    path = task.root / site.path
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    method = test.id.partition(" ")[0].rsplit(".", 1)[-1]
    return method in _asserting(path, mtime)


def check_every_test_asserts(ctx: ProveContext) -> CheckResult:
    task = ctx.task
    graded = _reference(ctx)
    counted = [(i, t) for i, t in records(graded) if t.assertions is not None]
    if not counted:
        return CheckResult(
            ASSERTS, GROUP_NAME, "skipped", detail="no grader counted the tests' assertions"
        )
    idle = [
        t for _, t in counted
        if t.outcome == "passed" and t.assertions == 0 and _meant_to_assert(task, t)
    ]  # fmt: skip
    tests = tests_json(graded)
    where = "on the solution" if task.solution is not None else "on the untouched fixture"
    if idle:
        sites = [test_site(task, t) for t in idle]
        labels = [
            f"{short_name(t.id)} ({s.path}:{s.line})" if s and s.line else _label(t)
            for t, s in zip(idle, sites, strict=True)
        ]
        first = sites[0]
        return CheckResult(
            ASSERTS, GROUP_NAME, "fail", code="ES915",
            detail=f"{len(idle)} test(s) passed {where} having executed no assertion: "
            f"{listed(labels)}; such a test passes whatever the code does",
            path=first.path if first else None, line=first.line if first else None,
            tests=tests,
        )  # fmt: skip
    least = min(t.assertions or 0 for _, t in counted)
    return CheckResult(
        ASSERTS, GROUP_NAME, "pass",
        detail=f"{len(counted)} test(s) ran {where}, each asserting (fewest: {least})",
        tests=tests,
    )  # fmt: skip


# --- the group ---------------------------------------------------------------------------


def _judged(task: Task) -> bool:
    return any(builtin_name(s.name) == "judged_tests" for s in task.graders)


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category not in EXEMPT and holdout_test_modules(task):
        yield make_job(GROUP_NAME, HOLDOUT_FAILS, check_holdout_fails)
    if _judged(task) and (task.solution is not None or task.category == "permissioning"):
        yield make_job(GROUP_NAME, ASSERTS, check_every_test_asserts)


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    why: dict[str, str] = {}
    if task.category in EXEMPT:
        why[HOLDOUT_FAILS] = EXEMPT[task.category]
    elif not holdout_test_modules(task):
        why[HOLDOUT_FAILS] = "holdout/ holds no Python test module"
    if not _judged(task):
        why[ASSERTS] = "only judged_tests counts each test's assertions"
    return [CheckResult(name, GROUP_NAME, "skipped", detail=text) for name, text in why.items()]


GROUP = CheckGroup(
    name=GROUP_NAME,
    codes=("ES914", "ES915"),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="the holdout fails on the fixture by itself; every test executes an assertion",
)
