"""The data prove passes around: a check's result, a task's proof, the options, a job.

Every other module of prove depends on these types and on nothing else of prove (but
:mod:`~endstate_author.prove.variation`, which imports none of prove), so the checks, the
cache and the orchestration can each import them without importing one another.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import endstate_author.interrupts as interrupts
import endstate_author.prove.variation as variation
from endstate_author import __version__
from endstate_author.engine.diagnostics import Diagnostic
from endstate_harness.sandbox.choice import DEFAULT_KIND, SandboxChoice, resolve_sandbox
from endstate_harness.task import Task

Outcome = Literal["pass", "fail", "unassessed", "skipped"]
GRADING_INPUTS = ("task.json", "fixture", "holdout", "solution", "graders")
"""The parts of a task folder every grading reads ("graders": the suite's grader modules the
task names); a check group's ``inputs`` start from these (see the per-check cache)."""
DEFAULT_MUTANTS: int | None = None
"""``--mutants`` default: no count bound, every mutant of the solution's changed lines runs
(within :data:`DEFAULT_MUTANT_BUDGET`)."""
DEFAULT_MUTANT_BUDGET = 60.0
DEFAULT_COUNTEREXAMPLE_BUDGET = 30.0
"""Seconds per task for the counterexample search of surviving mutants (ES911/ES916)."""
"""``--mutant-budget`` default, seconds per task: mutants cost tens of milliseconds each in
the local sandbox, so a task's every mutant fits; what a budget leaves unrun is named and its
score is not the task's."""


@dataclass
class CheckResult:
    """One check of one task. ``code`` is the ES9 code a failing outcome carries. What
    crosses a process or a file as JSON is :mod:`endstate_author.prove.wire`'s record."""

    check: str
    group: str
    outcome: Outcome
    seconds: float = 0.0
    detail: str = ""
    code: str | None = None
    grader_index: int | None = None
    severity: Literal["error", "warning"] = "error"
    """What a failing outcome is: ES912 is a warning unless ``--strict``."""
    path: str | None = None
    """A file of the task folder the finding is about (a mutant's solution file), else None:
    the finding sits at the grader it names."""
    line: int | None = None
    cached: bool = field(default=False, compare=False)
    """Answered from a prove cache, not run this time (what editors count as "re-run")."""
    tests: list[dict[str, Any]] | None = None
    """The witness's per-test evidence of the grading this check made (each test a grader
    reported: grader index, file, id, source, outcome, assertions, message, line), when a
    grader reported it."""
    unrun: bool = False
    """Left unrun by a bound (the mutant time budget): no result, never cached."""
    walls: str = ""
    """What walled the code it ran in: ``docker``, ``bubblewrap``, ``none`` (graded without
    walls: the local sandbox where bubblewrap cannot start); "" when it ran none."""
    counterexample: dict[str, Any] | None = None
    """A surviving mutant's evidence (ES911): the call on which it and the solution differ,
    both outcomes and a ready assertion (:mod:`endstate_author.prove.counterexample`)."""
    evidence: dict[str, Any] | None = None
    """A flaky check's evidence (ES909): each grading's hash seed and test order, and each
    flipped test's outcome in each (:mod:`endstate_author.prove.variation`)."""


@dataclass
class TaskProof:
    task_id: str
    path: Path
    checks: list[CheckResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    mutation: dict[str, Any] | None = None
    """The mutation score (:class:`endstate_author.prove.checks.mutants.Score` as JSON), when
    mutants ran."""
    node: str = ""
    """The cluster node that proved it (``--executor ray``); empty when proved here."""

    @property
    def walls(self) -> str:
        """``none`` when any of its checks ran without walls, else what walled them in."""
        kinds = {c.walls for c in self.checks if c.walls}
        return "none" if "none" in kinds else (kinds.pop() if len(kinds) == 1 else "")

    @property
    def unassessed(self) -> bool:
        return any(c.outcome == "unassessed" for c in self.checks)


class Unassessed(Exception):
    """A check could not run; the message says why (ES908)."""


class Shared:
    """What several checks of one pass over a task's checks compute alike, computed once.

    Why: ES902 ("solution passes") and ES915 ("every test asserts") both read the solution's
    end state graded with the least counters, and ES901 ("fixture fails") and ES914's fixture
    run are the same grading when no test command has visible tests to leave out (as with
    ``judged_tests``, which tells the holdout's tests apart by itself): each such grading is a
    sandbox, a judge, a child and a whole test run (about a bare test run, measured), paid
    twice for the same answer. A key is computed by the first check that asks for it; another
    that asks meanwhile waits for that answer rather than starting the same work. A
    computation that raises keeps nothing (the next check to ask computes it again), so an
    unassessed grading is never handed on. ``--repeat`` runs each pass with a new one
    (:meth:`ProveContext.next_pass`): a repeat regrades, as it must to see a flaky test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key not in self._values:
                self._values[key] = compute()
            return self._values[key]


@dataclass
class ProveContext:
    """What every check of one task reads: the task, the sandbox and the grader paths, and
    the gradings its checks share (:class:`Shared`)."""

    task: Task
    spec: SandboxChoice
    search_paths: list[Path]
    suite_root: Path | None = None
    shared: Shared = field(default_factory=Shared, repr=False, compare=False)
    pass_index: int = 0
    """Which pass of ``--repeat`` this is (0: the first, under the sandbox as chosen)."""

    def next_pass(self, index: int | None = None) -> ProveContext:
        """The same context with nothing shared yet: pass ``index`` of ``--repeat`` (the next
        one by default), under its own hash seed and test order
        (:func:`endstate_author.prove.variation.for_pass`: a repeat varies what a real run
        varies, or it repeats the same luck)."""
        index = self.pass_index + 1 if index is None else index
        base = self.spec if self.pass_index == 0 else self.spec.varied(0, "")
        return replace(self, shared=Shared(), pass_index=index,
                       spec=variation.for_pass(base, index))

    @property
    def permissioning(self) -> bool:
        return self.task.category == "permissioning"


def decided_sandbox() -> SandboxChoice:
    """The library's default sandbox: the one decision every command makes when nothing is
    said (``auto``: Docker when a Docker run can start, else local), for grading. Asked when
    a :class:`ProveOptions` is made without a sandbox, as the CLI asks before its first task."""
    return resolve_sandbox(DEFAULT_KIND, version=__version__).for_grading()


@dataclass
class ProveOptions:
    sandbox: SandboxChoice = field(default_factory=decided_sandbox)
    """Where every check runs (:func:`decided_sandbox` unless given)."""
    jobs: int = 1
    only: tuple[str, ...] = ()
    use_cache: bool = True
    repeat: int = 1
    mutants: int | None = DEFAULT_MUTANTS
    """At most this many mutants per task (ES911); 0 runs none, None every one."""
    mutant_budget: float = DEFAULT_MUTANT_BUDGET
    """Seconds a task's mutants may take (ES911): those not started by then are named as
    not run, and the task's mutation score is then unknown."""
    strict: bool = False
    """Warnings (ES912) count as errors."""
    counterexample_budget: float = DEFAULT_COUNTEREXAMPLE_BUDGET
    """Seconds a task's search for calls that tell its surviving mutants from the solution
    may take (ES911 with the call found, else ES916); 0 searches none."""
    on_check: Callable[[str, str], None] | None = None
    """Called with (task id, check name) as each check starts running (progress for editors;
    a check answered from the cache never starts)."""
    on_check_done: Callable[[str, str, CheckResult], None] | None = None
    """Called with (task id, check name, result) as each check ends, also when the cache
    answered it (``result.cached``): live progress, and the results an editor streams."""


Check = Callable[[ProveContext], CheckResult]
"""A check: one task's context in, one result out."""

Job = tuple[str, str, Check]
"""(group, check name, function) — one unit of work, run in its own sandbox."""


def make_job(group: str, name: str, fn: Check) -> Job:
    """A check as a job: timed, stopped by a pending Ctrl-C, and unassessed (ES908) — never
    a pass or a fail — when it cannot run."""

    def run(ctx: ProveContext) -> CheckResult:
        interrupts.check()  # a Ctrl-C swallowed somewhere still stops before the next check
        started = time.perf_counter()
        try:
            result = fn(ctx)
        except Unassessed as exc:
            result = CheckResult(name, group, "unassessed", detail=str(exc), code="ES908")
        except Exception as exc:
            result = CheckResult(
                name, group, "unassessed", detail=f"{type(exc).__name__}: {exc}", code="ES908"
            )
        result.seconds = time.perf_counter() - started
        return result

    return group, name, run


@dataclass(frozen=True)
class Plan:
    """What planning a task's checks reads besides the task: the options that decide which
    checks run and how."""

    mutant_limit: int | None = DEFAULT_MUTANTS
    strict: bool = False
    sandbox_key: tuple[str, ...] = ("local",)
    use_cache: bool = True
    mutant_budget: float = DEFAULT_MUTANT_BUDGET
    workers: int = 2
    """Checks run at once (``--jobs``): how many batches the mutants make."""


def _nothing_skipped(_task: Task, _plan: Plan) -> list[CheckResult]:
    return []


@dataclass(frozen=True)
class CheckGroup:
    """One group of checks, as its module declares it (``GROUP`` at the module's end).

    The planner runs ``jobs``, the skip notes come from ``skipped``, the per-check cache keys
    a check by ``inputs`` (the parts of the task folder it reads), ``--only`` offers ``name``,
    and ``codes`` are the findings its checks can carry (documented in the rule docs)."""

    name: str
    codes: tuple[str, ...]
    inputs: tuple[str, ...]
    jobs: Callable[[Task, Plan], Iterator[Job]]
    skipped: Callable[[Task, Plan], list[CheckResult]] = _nothing_skipped
    summary: str = ""
