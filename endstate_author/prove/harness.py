"""The adapter between prove and the real runner: a scripted agent through the full harness."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from endstate_author.prove.grading import failed_check
from endstate_author.prove.model import ProveContext, Unassessed
from endstate_harness.task import Task

if TYPE_CHECKING:
    from endstate_harness.runner import TaskResult

Step = list[dict[str, Any]]


def run_scripted(ctx: ProveContext, steps: list[Step], **kwargs: Any) -> TaskResult:
    """One run of the task with ``steps`` as the agent; ``kwargs`` go to the runner (a policy,
    a budget override, ``resume``)."""
    # deferred: the runner and the agent loop (~20 ms) only when an oracle or guard check runs
    from endstate_harness.agent.providers import ScriptedProvider
    from endstate_harness.runner import run_task  # deferred, as above

    result = run_task(
        ctx.task,
        provider_factory=lambda _t: ScriptedProvider(steps, model="oracle"),
        sandbox=ctx.spec,
        suite_root=ctx.suite_root,
        **kwargs,
    )
    if result.error:
        raise Unassessed(result.error)
    return result


def failed_detail(result: TaskResult) -> str:
    """The failing checks of a run, one line each, for a result's detail."""
    failing = [c for c in result.checks if not c.passed]
    parts = [failed_check(c.name, c.detail) for c in failing]
    return "; ".join(parts) or result.reason or "failed"


def _oracle() -> Any:
    # deferred: the oracle builder imports the agent's providers, as run_scripted does
    from endstate_harness.agent import oracle

    return oracle


def oracle_steps(task: Task) -> list[Step]:
    """oracle.json's steps, else steps that write solution/ (empty when there is neither)."""
    try:
        oracle = _oracle()
        return oracle.task_oracle_steps(task)  # type: ignore[no-any-return]
    except _oracle().OracleError as exc:
        raise Unassessed(str(exc)) from exc


def solution_steps(task: Task) -> list[Step]:
    """Steps that write solution/ over the fixture (empty when there is no solution/)."""
    if task.solution is None:
        return []
    try:
        oracle = _oracle()
        return oracle.solution_oracle(task.fixture, task.solution)  # type: ignore[no-any-return]
    except _oracle().OracleError as exc:
        raise Unassessed(str(exc)) from exc


def informed_steps(task: Task) -> list[Step]:
    """The solution written as an agent that sees before it writes would: one turn reading
    every fixture file the solution changes, then one turn writing them all. Empty when the
    solution changes no file the fixture has (nothing to read: the blind oracle is that
    agent already).

    Why: the solution oracle reads and writes a file in the same turn, so its write never
    depended on what it read; a bound it meets (``requires.steps.max``, a token ceiling)
    may leave no room for the turn every real agent spends reading first."""
    steps = solution_steps(task)
    reads = [call for step in steps for call in step if call["tool"] == "read"]
    if not reads:
        return []
    writes = [call for step in steps for call in step if call["tool"] != "read"]
    return [reads, writes]


def _fixture_reads(task: Task) -> list[str]:
    files = []
    for path in sorted(task.fixture.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(task.fixture).as_posix()
            if "__pycache__" not in rel and path.stat().st_size <= 256 * 1024:
                files.append(rel)
    return files


def reading_steps(task: Task, count: int) -> list[Step]:
    """``count`` steps that each read one of the fixture's files (round robin)."""
    files = _fixture_reads(task)
    if not files or count <= 0:
        return []
    return [[{"tool": "read", "args": {"path": files[i % len(files)]}}] for i in range(count)]
