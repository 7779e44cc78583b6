"""Running tasks: sandbox, loop, seal, holdout, grade, requires (task-format.md §5). A harness
failure is an *error*, kept out of the pass rate; what the agent's code caused is a
*failure*.
"""

from __future__ import annotations

import atexit
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from endstate_harness.agent.loop import (
    DEFAULT_SYSTEM_PROMPT,
    AgentLoop,
    RunResult,
    summarise,
)
from endstate_harness.agent.messages import Usage
from endstate_harness.agent.policy import Policy
from endstate_harness.agent.providers import Provider
from endstate_harness.agent.recovery import CrashPlan, KilledRun
from endstate_harness.agent.session import SessionStore
from endstate_harness.agent.tools import DEFAULT_BASH_TIMEOUT_S
from endstate_harness.agent.window import ContextManager, unlimited
from endstate_harness.fdtree import remove_tree
from endstate_harness.graders import grade, grader_search_paths, requirements_checks
from endstate_harness.graders.environment import environment_failure, program_probe
from endstate_harness.process.cleanup import at_exit_section
from endstate_harness.sandbox.base import (
    OPEN_SANDBOXES,
    SandboxDied,
    SandboxError,
    TreeSandbox,
    defer_signals,
)
from endstate_harness.sandbox.choice import SandboxMaker
from endstate_harness.task import Budget, StopReason, Task
from endstate_harness.verdict import Check, Verdict

ProviderFactory = Callable[[Task], Provider]
BudgetOverride = Budget | Literal["unlimited"] | None


class TaskResult(BaseModel):
    """Everything recorded about one run of one task (one line of results.json)."""

    task_id: str
    category: str
    passed: bool
    error: str = ""
    """Non-empty for a harness error: unassessed, not a failure."""
    attempt: int = 0
    reason: str = ""
    checks: list[Check] = Field(default_factory=list)
    stop_reason: StopReason = "error"
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    usage_estimated: bool = False
    compaction_events: int = 0
    denied_calls: int = 0
    unsettled_calls: int = 0
    tool_calls: int = 0
    latencies_s: list[float] = Field(default_factory=list)
    wall_clock_s: float = 0.0
    tree_hash: str = ""
    model: str = ""
    sandbox: str = ""
    walls: str = ""
    """What walled the agent's code in: ``docker``, ``bubblewrap`` or ``none`` (the local
    sandbox where bubblewrap cannot start: graded without walls); "" when no sandbox started."""
    timed_out: bool = False
    killed: bool = False
    session_id: str = ""
    node: str = ""
    """The cluster node that ran it (a distributed executor); empty when run here."""

    @property
    def verdict(self) -> Verdict:
        return Verdict(passed=self.passed, reason=self.reason, checks=self.checks)


class SuiteResult(BaseModel):
    """A suite run: results in task order (then attempt order), whatever finished first."""

    started_at: str = ""
    duration_s: float = 0.0
    provider: str = ""
    model: str = ""
    sandbox: str = ""
    walls: str = ""
    """The sandbox's walls, as its header says (``local (no walls: …)``, say)."""
    repeat: int = 1
    results: list[TaskResult] = Field(default_factory=list)

    @property
    def verdict_vector(self) -> tuple[tuple[str, int, bool], ...]:
        """(task id, attempt, passed): the value two runs of a suite are compared by."""
        return tuple((r.task_id, r.attempt, r.passed) for r in self.results)


def context_for(task: Task, budget_override: BudgetOverride) -> ContextManager:
    if budget_override == "unlimited":
        return unlimited()
    if isinstance(budget_override, Budget):
        return ContextManager(budget_override)
    return ContextManager(task.manifest.budget)


def run_task(
    task: Task,
    *,
    provider_factory: ProviderFactory,
    sandbox: SandboxMaker,
    policy: Policy | None = None,
    budget_override: BudgetOverride = None,
    resume: bool = True,
    crash: CrashPlan | Literal["task"] | None = "task",
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    tool_timeout_s: float = DEFAULT_BASH_TIMEOUT_S,
    suite_root: Path | None = None,
    grader_paths: Sequence[Path] = (),
    session_store: SessionStore | None = None,
    cancel: threading.Event | None = None,
    attempt: int = 0,
) -> TaskResult:
    """Run one task end to end and grade it. Never raises for a harness failure.

    Args:
        provider_factory: builds a fresh provider for this task (one per task, no sharing).
        sandbox: where the task runs: a :class:`~endstate_harness.sandbox.choice.SandboxChoice`
            (``resolve_sandbox`` makes the one every command uses), or any object with a
            ``label`` and a ``make(fixture)`` (tests, custom backends).
        policy: the permission policy (default: task-format.md §5); ``allow_all()`` removes it.
        budget_override: ``"unlimited"`` removes the context budget; a Budget replaces it.
        resume: after a crash-injected kill, resume with a fresh loop (False: grade the
            killed run as it stands, the recovery guard removed).
        crash: ``"task"`` uses the task's ``recovery``; a CrashPlan or None overrides it.
        suite_root, grader_paths: where the suite's own grader modules are looked up (after
            the task's folder, before the project root; task-format.md §7).
        session_store: where sessions go (a temporary store, deleted after, when None).
        cancel: set it to stop the loop at its next step (Ctrl-C in a suite run).

    Raises:
        KeyboardInterrupt: passed through after the sandbox is closed.
    """
    started = time.monotonic()
    sandbox_name = sandbox.label
    maker = sandbox

    walled: list[str] = [""]  # filled in once the sandbox has started

    def errored(message: str, run: RunResult | None = None) -> TaskResult:
        result = _result(task, run, attempt, sandbox_name, started)
        result.walls = walled[0]
        result.passed = False
        result.error = message
        result.reason = message
        return result

    def failed(message: str, run: RunResult | None = None) -> TaskResult:
        result = _result(task, run, attempt, sandbox_name, started)
        result.walls = walled[0]
        result.passed = False
        result.reason = message
        return result

    # One task's harness failure (an exception from a grader, a sandbox that cannot be closed,
    # a tree the harness cannot walk) is that task's "errored" verdict: raised, it would end
    # the whole suite with no results. The ExitStack has closed the sandbox and removed the
    # task's folders before the exception arrives here.
    try:
        with ExitStack() as stack:
            if session_store is None:
                session_store = SessionStore(_temporary_folder(stack) / "sessions.sqlite3",
                                             durable=False)  # deleted when the run ends
                stack.callback(session_store.close)  # before its folder goes
            try:
                provider = provider_factory(task)
            except Exception as exc:
                return errored(f"provider could not be built: {exc}")
            try:
                box = maker.make(task.fixture)
                stack.enter_context(box)
            except SandboxError as exc:
                return errored(f"sandbox error: {exc}")
            except Exception as exc:
                return errored(f"sandbox error: {type(exc).__name__}: {exc}")
            walled[0] = box.walls()
            try:
                run = _drive(
                    task,
                    box,
                    provider,
                    session_store,
                    policy=policy,
                    context=context_for(task, budget_override),
                    resume=resume,
                    crash=CrashPlan.from_recovery(task.manifest.recovery)
                    if crash == "task" and task.manifest.recovery is not None
                    else (crash if isinstance(crash, CrashPlan) else None),
                    system_prompt=system_prompt,
                    tool_timeout_s=tool_timeout_s,
                    cancel=cancel,
                )
            except SandboxError as exc:
                if _died(box):
                    return failed(f"the agent's code killed the sandbox: {exc}")
                return errored(f"sandbox error during the run: {exc}")
            except Exception as exc:
                return errored(f"harness error during the run: {type(exc).__name__}: {exc}")
            if run.error:
                return errored(f"provider error: {run.error}", run)
            try:
                box.check_health()
            except SandboxDied as exc:  # the agent's code killed its own sandbox: its failure
                return failed(f"the agent's code killed the sandbox: {exc}", run)
            except SandboxError as exc:
                return errored(f"sandbox error during the run: {exc}", run)
            try:
                end_hash = box.seal()
                if task.holdout is not None:
                    box.stage(task.holdout)
            except Exception as exc:
                return errored(f"sandbox error while sealing: {exc}", run)
            search = grader_search_paths(task.root, suite_root=suite_root,
                                         grader_paths=grader_paths)
            try:
                # Raises when the sandbox died under the graders (their failing verdict would
                # describe the dead container, not the end state).
                verdict = grade(task.graders, box, search_paths=search)
            except SandboxError as exc:
                return errored(f"sandbox error while grading: {exc}", run)
            # A grader that could not load, a program the image lacks: the environment's failure
            # (one rule with prove, endstate_harness.graders.environment), not the task's.
            why = environment_failure(verdict, specs=task.graders, probe=program_probe(box))
            if why is not None:
                result = errored(f"environment error while grading: {why}", run)
                result.checks = verdict.checks
                return result
            required = requirements_checks(task.requires, run.counters(), run.stop_reason)
            if required:
                verdict = verdict.merged_with(Verdict.from_checks(required))
            result = _result(task, run, attempt, sandbox_name, started)
            result.walls = walled[0]
            result.passed = verdict.passed
            result.reason = verdict.reason
            result.checks = verdict.checks
            result.tree_hash = end_hash
            return result
    except Exception as exc:
        return errored(f"harness error: {type(exc).__name__}: {exc}")
    raise AssertionError("unreachable")  # pragma: no cover - ExitStack does not swallow


def _died(sandbox: TreeSandbox) -> bool:
    """Whether the sandbox died while its machinery still answers (see :class:`SandboxDied`)."""
    try:
        sandbox.check_health()
    except SandboxDied:
        return True
    except SandboxError:
        return False
    return False


def _temporary_folder(stack: ExitStack) -> Path:
    """A temporary folder removed when ``stack`` closes.

    Not ``TemporaryDirectory``: it makes its folder before it can be entered, and forgets it
    before deleting it, so a Ctrl-C landing in either gap (eval runs tasks in the main thread,
    where the exception is raised) leaks it. Here making and registering the folder is one
    step, and so is deleting it, with signals deferred.
    """
    with defer_signals():
        folder = Path(tempfile.mkdtemp(prefix="endstate-sessions-"))
        _TEMP_FOLDERS.add(folder)
        stack.callback(_remove_folder, folder)
    return folder


_TEMP_FOLDERS: set[Path] = set()
"""Session folders not yet removed; swept at exit in case an interrupt beat the ExitStack."""


def _remove_folder(folder: Path) -> None:
    with defer_signals():
        remove_tree(folder)
        _TEMP_FOLDERS.discard(folder)


@atexit.register
def _sweep_temp_folders() -> None:
    with at_exit_section():
        for folder in list(_TEMP_FOLDERS):
            try:
                _remove_folder(folder)
            except OSError:  # at exit, one folder must not keep the others
                pass


def _drive(
    task: Task,
    sandbox: TreeSandbox,
    provider: Provider,
    store: SessionStore,
    *,
    policy: Policy | None,
    context: ContextManager,
    resume: bool,
    crash: CrashPlan | None,
    system_prompt: str | None,
    tool_timeout_s: float,
    cancel: threading.Event | None,
) -> RunResult:
    """The loop, killed and resumed with a fresh loop over the reloaded session if asked."""
    session = store.create(model=provider.model, workdir=str(sandbox.live), title=task.id)
    deadline = time.monotonic() + task.manifest.timeout_s

    def loop_over(session_: Any, crash_: CrashPlan | None, context_: ContextManager) -> AgentLoop:
        return AgentLoop(
            provider,
            sandbox,
            session_,
            policy=policy,
            context=context_,
            max_steps=task.manifest.max_steps,
            deadline=deadline,
            tool_timeout_s=tool_timeout_s,
            system_prompt=system_prompt,
            crash=crash_,
            cancel=cancel,
        )

    try:
        return loop_over(session, crash, context).start(task.prompt)
    except KilledRun:
        pass
    # Only what the store committed survives the "death": reload it from disk.
    reloaded = store.load(session.id)
    if not resume:
        return summarise(reloaded, "tool_use", killed=True)
    # A fresh context manager too: its memory died with the process (its past events are
    # in the session, which is where the counters come from).
    fresh_context = ContextManager(context.budget)
    return loop_over(reloaded, None, fresh_context).resume()


def _result(
    task: Task, run: RunResult | None, attempt: int, sandbox: str, started: float
) -> TaskResult:
    result = TaskResult(
        task_id=task.id,
        category=task.category,
        passed=False,
        attempt=attempt,
        sandbox=sandbox,
        wall_clock_s=round(time.monotonic() - started, 3),
    )
    if run is not None:
        result.stop_reason = run.stop_reason
        result.steps = run.steps
        result.usage = run.usage
        result.usage_estimated = run.usage_estimated
        result.compaction_events = len(run.compaction_events)
        result.denied_calls = run.denied_calls
        result.unsettled_calls = run.unsettled_calls
        result.tool_calls = run.tool_calls
        result.latencies_s = run.latencies_s
        result.model = run.model
        result.timed_out = run.timed_out
        result.killed = run.killed
        result.session_id = run.session_id
    return result


def run_suite(
    tasks: Sequence[Task],
    *,
    jobs: int = 1,
    repeat: int = 1,
    session_store_path: Path | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
    provider_name: str = "",
    **task_kwargs: Any,
) -> SuiteResult:
    """Run every task ``repeat`` times, ``jobs`` at a time; results in stable task order.

    Ctrl-C cancels what has not started, stops the running loops at their next step,
    closes every open sandbox (containers removed) and re-raises.
    """
    if jobs < 1 or repeat < 1:
        raise ValueError("jobs and repeat must be at least 1")
    started = time.monotonic()
    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cancel = threading.Event()
    work = [(task, attempt) for task in tasks for attempt in range(repeat)]
    with ExitStack() as stack:
        durable = session_store_path is not None  # a temporary one is deleted at the end
        if session_store_path is None:
            session_store_path = _temporary_folder(stack) / "sessions.sqlite3"
        store = SessionStore(session_store_path, durable=durable)
        stack.callback(store.close)  # before a temporary store's folder goes

        def one(item: tuple[Task, int]) -> TaskResult:
            task, attempt = item
            result = run_task(
                task, session_store=store, cancel=cancel, attempt=attempt, **task_kwargs
            )
            if on_result is not None:
                on_result(result)
            return result

        if jobs == 1:
            try:
                results = [one(item) for item in work]
            except KeyboardInterrupt:
                cancel.set()
                raise
        else:
            pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="endstate-task")
            futures: list[Future[TaskResult]] = [pool.submit(one, item) for item in work]
            try:
                results = [f.result() for f in futures]
            except BaseException:
                cancel.set()
                pool.shutdown(wait=False, cancel_futures=True)
                OPEN_SANDBOXES.close_all()
                pool.shutdown(wait=True)
                raise
            pool.shutdown(wait=True)
    maker = task_kwargs.get("sandbox")
    return SuiteResult(
        started_at=started_at,
        duration_s=round(time.monotonic() - started, 3),
        provider=provider_name,
        model=next((r.model for r in results if r.model), ""),
        sandbox=maker.label if maker is not None else "",
        walls=walls_header(maker),
        repeat=repeat,
        results=results,
    )


def walls_header(maker: Any) -> str:
    """What the sandbox's header says of its walls ("" for a maker that does not say)."""
    header = getattr(maker, "header", None)
    return str(header()).removeprefix("sandbox: ") if callable(header) else ""
