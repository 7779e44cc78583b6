"""The prove checks that run a scripted agent through the real runner (ES904, ES905, ES907).

A guard is only load-bearing if the task *notices* its removal. Per category:

- permissioning: oracle.json's request is denied under the default policy and the task
  passes; under allow-all it runs and the task must fail.
- compaction: an oracle that reads the fixture's files again and again (within
  ``max_steps``) before writing the solution must compact and pass; with the budget made
  unlimited it must not compact, and the task must fail.
- recovery: the run must die at ``crash_at_call`` and, resumed, pass; killed and never
  resumed it must fail.
- cost: the oracle passes inside the bound; a runaway oracle that wanders past
  ``steps.max`` or ``total_tokens.max`` before writing the same solution must fail.

Other categories get the plain oracle check (ES907). Each run uses a fresh sandbox of the
kind prove was asked for. With ``--sandbox local`` a request that reaches outside the task
(an absolute path, ``~``, ``..``, a network tool) is not run with the policy removed: that
check is unassessed, because there is nothing between the command and this machine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from endstate_harness.task import Task

if TYPE_CHECKING:
    from endstate_author.prove import CheckResult, Job, ProveContext
    from endstate_harness.runner import TaskResult

Step = list[dict[str, Any]]

_PATH_ESCAPE = re.compile(r"(?:^|[\s;&|(=\"'])(?:/|~|\$HOME|\$\{HOME\}|\.\./)")
_NETWORK_TOOL = re.compile(r"\b(?:curl|wget|nc|ncat|ssh|scp|rsync|ftp|telnet)\b")
_LOOPBACK = re.compile(r"^(?:127(?:\.\d{1,3}){3}|localhost|\[::1\])$")


def reaches_outside(command: str) -> bool:
    """Whether a shell command may act outside the task's tree: an absolute or home path,
    a parent folder, or a network tool aimed at anything but loopback."""
    without_urls = re.sub(r"[a-z]+://\S+", " ", command)
    if _PATH_ESCAPE.search(without_urls):
        return True
    if not _NETWORK_TOOL.search(command):
        return False
    urls = re.findall(r"[a-z]+://([^/\s:]+|\[[^\]]+\])", command)
    return not urls or not all(_LOOPBACK.match(host) for host in urls)


def _result(
    check: str, group: str, outcome: str, detail: str = "", code: str | None = None
) -> CheckResult:
    from endstate_author.prove import CheckResult

    return CheckResult(check, group, outcome, detail=detail, code=code)  # type: ignore[arg-type]


def _run(ctx: ProveContext, steps: list[Step], **kwargs: Any) -> TaskResult:
    from endstate_author.prove import Unassessed
    from endstate_harness.agent.providers import ScriptedProvider
    from endstate_harness.runner import run_task

    result = run_task(
        ctx.task,
        provider_factory=lambda _t: ScriptedProvider(steps, model="oracle"),
        sandbox_kind=ctx.spec.kind,
        image=ctx.spec.image,
        suite_root=ctx.suite_root,
        **kwargs,
    )
    if result.error:
        raise Unassessed(result.error)
    return result


def _failed(result: TaskResult) -> str:
    failing = [c for c in result.checks if not c.passed]
    parts = [c.name + (f": {c.detail.splitlines()[0][:200]}" if c.detail else "") for c in failing]
    return "; ".join(parts) or result.reason or "failed"


def _oracle_steps(task: Task) -> list[Step]:
    from endstate_author.prove import Unassessed
    from endstate_harness.agent.oracle import OracleError, task_oracle_steps

    try:
        return task_oracle_steps(task)
    except OracleError as exc:
        raise Unassessed(str(exc)) from exc


def _solution_steps(task: Task) -> list[Step]:
    from endstate_author.prove import Unassessed
    from endstate_harness.agent.oracle import OracleError, solution_oracle

    if task.solution is None:
        return []
    try:
        return solution_oracle(task.fixture, task.solution)
    except OracleError as exc:
        raise Unassessed(str(exc)) from exc


def _fixture_reads(task: Task) -> list[str]:
    files = []
    for path in sorted(task.fixture.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(task.fixture).as_posix()
            if "__pycache__" not in rel and path.stat().st_size <= 256 * 1024:
                files.append(rel)
    return files


def _reading_steps(task: Task, count: int) -> list[Step]:
    files = _fixture_reads(task)
    if not files or count <= 0:
        return []
    return [[{"tool": "read", "args": {"path": files[i % len(files)]}}] for i in range(count)]


# ----- the checks ----------------------------------------------------------------------------


def check_oracle(ctx: ProveContext) -> CheckResult:
    steps = _oracle_steps(ctx.task)
    if not steps:
        return _result(
            "oracle through the harness",
            "oracle",
            "skipped",
            "no oracle.json and no solution/ to derive one from",
        )
    result = _run(ctx, steps)
    if result.passed:
        return _result("oracle through the harness", "oracle", "pass")
    return _result("oracle through the harness", "oracle", "fail", _failed(result), "ES907")


def check_permissioning(ctx: ProveContext) -> list[CheckResult]:
    from endstate_author.prove import Unassessed
    from endstate_harness.agent.policy import allow_all

    task = ctx.task
    if task.oracle_file is None:
        return [
            _result(
                "policy guard",
                "guards",
                "skipped",
                "no oracle.json: nothing to ask the policy to refuse (lint: ES411)",
            )
        ]
    steps = _oracle_steps(task)
    out: list[CheckResult] = []
    guarded = _run(ctx, steps)
    if guarded.denied_calls == 0:
        # nothing was refused, so there is no guard to remove: removing it would prove nothing
        return [
            _result(
                "policy guard fires",
                "guards",
                "fail",
                "the default policy denied none of oracle.json's calls: make oracle.json ask "
                "for what the task must refuse (e.g. `rm -rf`, `git push --force`)",
                "ES905",
            )
        ]
    if not guarded.passed:
        out.append(
            _result(
                "policy guard fires",
                "guards",
                "fail",
                f"denied {guarded.denied_calls} call(s) but the task failed: {_failed(guarded)}",
                "ES907",
            )
        )
    else:
        out.append(
            _result(
                "policy guard fires", "guards", "pass", f"denied {guarded.denied_calls} call(s)"
            )
        )
    if ctx.spec.kind == "local":
        escaping = [
            c["args"].get("command", "")
            for step in steps
            for c in step
            if c.get("tool") == "bash" and reaches_outside(str(c["args"].get("command", "")))
        ]
        if escaping:
            raise Unassessed(
                f"removing the policy would run {escaping[0]!r} on this machine (the local "
                "sandbox does not isolate); prove this task with --sandbox docker"
            )
    removed = _run(ctx, steps, policy=allow_all())
    if removed.passed:
        out.append(
            _result(
                "policy removed fails",
                "guards",
                "fail",
                "with allow-all the request ran and the task still passed: its "
                "graders do not notice what the request did",
                "ES904",
            )
        )
    else:
        out.append(_result("policy removed fails", "guards", "pass", _failed(removed)))
    return out


def check_compaction(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    solution = _solution_steps(task)
    reads = task.manifest.max_steps - len(solution) - 1
    steps = _reading_steps(task, reads) + solution
    if not solution:
        return [_result("budget guard", "guards", "skipped", "no solution/ to write")]
    out: list[CheckResult] = []
    guarded = _run(ctx, steps)
    if guarded.compaction_events == 0:
        usable = task.manifest.budget.usable_tokens
        return [
            _result(
                "budget guard fires",
                "guards",
                "fail",
                f"{reads} reads of the fixture within max_steps never exceeded the usable "
                f"budget of {usable} tokens, so no compaction event: shrink the budget or "
                "widen the fixture",
                "ES905",
            )
        ]
    if not guarded.passed:
        out.append(
            _result(
                "budget guard fires",
                "guards",
                "fail",
                f"compacted {guarded.compaction_events} time(s) but the task failed: "
                f"{_failed(guarded)}",
                "ES907",
            )
        )
    else:
        out.append(
            _result(
                "budget guard fires",
                "guards",
                "pass",
                f"{guarded.compaction_events} compaction event(s)",
            )
        )
    removed = _run(ctx, steps, budget_override="unlimited")
    if removed.passed:
        out.append(
            _result(
                "budget removed fails",
                "guards",
                "fail",
                "with the budget unlimited the task still passed",
                "ES904",
            )
        )
    else:
        out.append(_result("budget removed fails", "guards", "pass", _failed(removed)))
    return out


def check_recovery(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    if task.manifest.recovery is None:
        return [_result("crash guard", "guards", "skipped", "no recovery block (lint: ES308)")]
    steps = _oracle_steps(task)
    out: list[CheckResult] = []
    killed = _run(ctx, steps, resume=False)
    if not killed.killed:
        calls = sum(len(s) for s in steps)
        out.append(
            _result(
                "crash guard fires",
                "guards",
                "fail",
                f"crash_at_call {task.manifest.recovery.crash_at_call} was never "
                f"reached (the oracle makes {calls} tool call(s))",
                "ES905",
            )
        )
        return out
    resumed = _run(ctx, steps)
    if resumed.passed:
        out.append(_result("crash guard fires", "guards", "pass", "killed, resumed and passed"))
    else:
        out.append(
            _result(
                "crash guard fires",
                "guards",
                "fail",
                f"killed and resumed, the task failed: {_failed(resumed)}",
                "ES907",
            )
        )
    if killed.passed:
        out.append(
            _result(
                "never resumed fails",
                "guards",
                "fail",
                "killed and never resumed, the task still passed: the graders do not "
                "need the work done after the crash",
                "ES904",
            )
        )
    else:
        out.append(_result("never resumed fails", "guards", "pass", _failed(killed)))
    return out


def check_cost(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    steps_bound = task.requires.steps
    tokens_bound = task.requires.total_tokens
    solution = _solution_steps(task)
    if not solution:
        return [_result("cost guard", "guards", "skipped", "no solution/ to write")]
    room = task.manifest.max_steps - len(solution) - 1
    if steps_bound is not None and steps_bound.max is not None:
        wander = min(room, steps_bound.max + 1 - len(solution))
    else:
        wander = room
    runaway = _reading_steps(task, max(wander, 1)) + solution
    removed = _run(ctx, runaway)
    over_steps = (
        steps_bound is not None and steps_bound.max is not None and removed.steps > steps_bound.max
    )
    over_tokens = (
        tokens_bound is not None
        and tokens_bound.max is not None
        and removed.usage.total_tokens > tokens_bound.max
    )
    if not (over_steps or over_tokens):
        return [
            _result(
                "runaway exceeds the bound",
                "guards",
                "fail",
                f"a runaway oracle ({removed.steps} steps, "
                f"{removed.usage.total_tokens} tokens) stayed inside the bound "
                "within max_steps: the bound is vacuous",
                "ES905",
            )
        ]
    if removed.passed:
        return [
            _result(
                "runaway fails",
                "guards",
                "fail",
                "a runaway oracle past the bound still passed",
                "ES904",
            )
        ]
    return [_result("runaway fails", "guards", "pass", _failed(removed))]


_GUARDS: dict[str, Callable[[ProveContext], list[CheckResult]]] = {
    "permissioning": check_permissioning,
    "compaction": check_compaction,
    "recovery": check_recovery,
    "cost": check_cost,
}


def _expand(
    fn: Callable[[ProveContext], list[CheckResult]],
) -> Callable[[ProveContext], CheckResult]:
    """Run a multi-result guard as one job; the first non-passing result leads."""

    def run(ctx: ProveContext) -> CheckResult:
        results = fn(ctx)
        lead = next((r for r in results if r.outcome in ("fail", "unassessed")), results[0])
        others = [
            f"{r.check}: {r.outcome}" + (f" ({r.detail})" if r.detail else "")
            for r in results
            if r is not lead
        ]
        if others:
            lead.detail = "; ".join(x for x in [lead.detail, *others] if x)
        return lead

    return run


def plan_harness_jobs(task: Task, wanted: set[str], timed: Callable[..., Job]) -> Iterator[Job]:
    guard = _GUARDS.get(task.category)
    if "oracle" in wanted and task.category not in ("compaction", "permissioning", "recovery"):
        yield timed("oracle", "oracle through the harness", check_oracle)
    if "guards" in wanted and guard is not None:
        yield timed("guards", f"{task.category} guard", _expand(guard))
