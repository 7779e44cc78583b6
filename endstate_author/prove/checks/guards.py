"""guards: the guard a task is about must fire (ES905) and, removed, make the task fail (ES904)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from endstate_author.prove.harness import (
    Step,
    failed_detail,
    oracle_steps,
    reading_steps,
    run_scripted,
    solution_steps,
)
from endstate_author.prove.model import (
    GRADING_INPUTS,
    Check,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    Unassessed,
    make_job,
)
from endstate_harness.agent.policy import allow_all
from endstate_harness.task import Task

if TYPE_CHECKING:
    from endstate_harness.runner import TaskResult

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


# ----- the one rule every guard is judged by ------------------------------------------------


def _guard(check: str, outcome: str, detail: str = "", code: str | None = None) -> CheckResult:
    return CheckResult(check, "guards", outcome, detail=detail, code=code)  # type: ignore[arg-type]


def judge(
    fires: str,
    removed: str,
    *,
    never_fired: str | None,
    kept: Callable[[], TaskResult] | None,
    kept_passed: str,
    kept_failed: str,
    remove: Callable[[], TaskResult],
    still_passed: str,
) -> list[CheckResult]:
    """The results of one guard check, named ``fires`` and ``removed``.

    ``never_fired`` is the ES905 detail when the guard did not fire with it in place (then
    nothing is removed: removing it would prove nothing). Otherwise ``kept`` gives the run
    with the guard in place, which must pass (``kept_passed`` is its detail; ES907 with
    ``kept_failed`` and the failing checks when it does not) — None when the guard has no
    such run (cost); then ``remove`` gives the run with the guard removed, which must fail
    (ES904 with ``still_passed`` when it does not).
    """
    if never_fired is not None:
        return [_guard(fires, "fail", never_fired, "ES905")]
    out: list[CheckResult] = []
    if kept is not None:
        run = kept()
        if run.passed:
            out.append(_guard(fires, "pass", kept_passed))
        else:
            out.append(_guard(fires, "fail", kept_failed + failed_detail(run), "ES907"))
    gone = remove()
    if gone.passed:
        out.append(_guard(removed, "fail", still_passed, "ES904"))
    else:
        out.append(_guard(removed, "pass", failed_detail(gone)))
    return out


# ----- the four guards ----------------------------------------------------------------------


def check_permissioning(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    if task.oracle_file is None:
        return [
            _guard(
                "policy guard",
                "skipped",
                "no oracle.json: nothing to ask the policy to refuse (lint: ES411)",
            )
        ]
    steps = oracle_steps(task)
    guarded = run_scripted(ctx, steps)
    denied = guarded.denied_calls

    def remove() -> TaskResult:
        _refuse_escapes_in_local_sandbox(ctx, steps)
        return run_scripted(ctx, steps, policy=allow_all())

    return judge(
        "policy guard fires",
        "policy removed fails",
        never_fired=None
        if denied
        else "the default policy denied none of oracle.json's calls: make oracle.json ask "
        "for what the task must refuse (e.g. `rm -rf`, `git push --force`)",
        kept=lambda: guarded,
        kept_passed=f"denied {denied} call(s)",
        kept_failed=f"denied {denied} call(s) but the task failed: ",
        remove=remove,
        still_passed="with allow-all the request ran and the task still passed: its "
        "graders do not notice what the request did",
    )


def _refuse_escapes_in_local_sandbox(ctx: ProveContext, steps: list[Step]) -> None:
    """Without isolation, a request that reaches outside the task is never run unguarded."""
    if ctx.spec.kind != "local":
        return
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


def check_compaction(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    solution = solution_steps(task)
    reads = task.manifest.max_steps - len(solution) - 1
    steps = reading_steps(task, reads) + solution
    if not solution:
        return [_guard("budget guard", "skipped", "no solution/ to write")]
    guarded = run_scripted(ctx, steps)
    events = guarded.compaction_events
    never_fired = None
    if not events:
        usable = task.manifest.budget.usable_tokens
        never_fired = (
            f"{reads} reads of the fixture within max_steps never exceeded the usable "
            f"budget of {usable} tokens, so no compaction event: shrink the budget or "
            "widen the fixture"
        )
    return judge(
        "budget guard fires",
        "budget removed fails",
        never_fired=never_fired,
        kept=lambda: guarded,
        kept_passed=f"{events} compaction event(s)",
        kept_failed=f"compacted {events} time(s) but the task failed: ",
        remove=lambda: run_scripted(ctx, steps, budget_override="unlimited"),
        still_passed="with the budget unlimited the task still passed",
    )


def check_recovery(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    recovery = task.manifest.recovery
    if recovery is None:
        return [_guard("crash guard", "skipped", "no recovery block (lint: ES308)")]
    steps = oracle_steps(task)
    killed = run_scripted(ctx, steps, resume=False)
    calls = sum(len(s) for s in steps)
    return judge(
        "crash guard fires",
        "never resumed fails",
        never_fired=None
        if killed.killed
        else f"crash_at_call {recovery.crash_at_call} was never "
        f"reached (the oracle makes {calls} tool call(s))",
        kept=lambda: run_scripted(ctx, steps),
        kept_passed="killed, resumed and passed",
        kept_failed="killed and resumed, the task failed: ",
        remove=lambda: killed,
        still_passed="killed and never resumed, the task still passed: the graders do not "
        "need the work done after the crash",
    )


def check_cost(ctx: ProveContext) -> list[CheckResult]:
    task = ctx.task
    steps_bound = task.requires.steps
    tokens_bound = task.requires.total_tokens
    solution = solution_steps(task)
    if not solution:
        return [_guard("cost guard", "skipped", "no solution/ to write")]
    room = task.manifest.max_steps - len(solution) - 1
    if steps_bound is not None and steps_bound.max is not None:
        wander = min(room, steps_bound.max + 1 - len(solution))
    else:
        wander = room
    runaway = run_scripted(ctx, reading_steps(task, max(wander, 1)) + solution)
    over_steps = (
        steps_bound is not None and steps_bound.max is not None and runaway.steps > steps_bound.max
    )
    over_tokens = (
        tokens_bound is not None
        and tokens_bound.max is not None
        and runaway.usage.total_tokens > tokens_bound.max
    )
    return judge(
        "runaway exceeds the bound",
        "runaway fails",
        never_fired=None
        if over_steps or over_tokens
        else f"a runaway oracle ({runaway.steps} steps, "
        f"{runaway.usage.total_tokens} tokens) stayed inside the bound "
        "within max_steps: the bound is vacuous",
        kept=None,  # the bound has no run of its own: the runaway is the removed guard
        kept_passed="",
        kept_failed="",
        remove=lambda: runaway,
        still_passed="a runaway oracle past the bound still passed",
    )


GUARDS: dict[str, Callable[[ProveContext], list[CheckResult]]] = {
    "permissioning": check_permissioning,
    "compaction": check_compaction,
    "recovery": check_recovery,
    "cost": check_cost,
}


def _as_one_result(fn: Callable[[ProveContext], list[CheckResult]]) -> Check:
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


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    guard = GUARDS.get(task.category)
    if guard is not None:
        yield make_job("guards", f"{task.category} guard", _as_one_result(guard))


GROUP = CheckGroup(
    name="guards",
    codes=("ES904", "ES905", "ES907"),
    inputs=(*GRADING_INPUTS, "prompt.md", "oracle.json"),
    jobs=jobs,
    summary="the category's harness guard fires, and removing it makes the task fail",
)
