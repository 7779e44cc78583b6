"""Grading one end state without an agent: the building block of every overlay check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.prove.model import Unassessed
from endstate_harness.graders import grade, reads_sealed_state_only, requirements_checks
from endstate_harness.graders.environment import environment_failure, program_probe
from endstate_harness.sandbox.base import SandboxError, TreeSandbox
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import Task
from endstate_harness.verdict import Verdict


@dataclass
class Graded:
    verdict: Verdict
    per_grader: list[Verdict]
    """One verdict per grader of the task, in its order (``until_rejected``: only those that
    ran, cheapest first)."""
    written: list[str] = field(default_factory=list)


def least_counters(task: Task) -> tuple[dict[str, int], str]:
    """Each counter at the least its bound asks for, and the stop reason asked for."""
    counters = {name: (b.min or 0) for name, b in task.requires.bounds().items()}
    return counters, task.requires.stop_reason or "end_turn"


def zero_counters(task: Task) -> tuple[dict[str, int], str]:
    return {}, task.requires.stop_reason or "end_turn"


def grade_end_state(
    task: Task,
    spec: SandboxChoice,
    *,
    overlays: Sequence[Path] = (),
    mutate: Callable[[Path], list[str]] | None = None,
    counters: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
    after_holdout: Callable[[Task, TreeSandbox], None] | None = None,
    search_paths: Sequence[Path] = (),
    holdout: bool = True,
    until_rejected: bool = False,
) -> Graded:
    """Build an end state without an agent, seal it, stage the holdout, grade, conjoin requires.

    ``overlays`` are copied onto the fixture as if the agent had written them; ``mutate`` edits
    the live tree (a probe) and returns the files it wrote; ``after_holdout`` stages more
    beside the holdout (the holdout sentinel); ``holdout=False`` grades without it (the
    visible tests alone, ES912). Raises :class:`Unassessed` when the sandbox
    cannot be made or used.

    ``until_rejected`` is for a check that asks only *whether* the end state is rejected (a
    probe, a mutant): the graders that read nothing but the sealed end state go
    first (:func:`~endstate_harness.graders.reads_sealed_state_only`: their verdict does not
    depend on when they run, and they start no process), the others keep the task's order, and
    grading stops at the first grader that fails. A path guard that already rejects a probe's
    edit of the tests then spares the test run. The answer is the one grading every grader
    gives, since a conjunction with one failed member fails; only a later grader's
    environment failure, which would have made the check unassessed, goes unseen (the
    directions checks grade every grader and report it).
    """
    sandbox = spec.make(task.fixture)
    try:
        try:
            sandbox.setup()
            sandbox.start()
            for overlay in overlays:
                sandbox.stage(overlay)
            written = mutate(sandbox.live) if mutate is not None else []
            sandbox.seal()
            if holdout and task.holdout is not None:
                sandbox.stage(task.holdout)
            if after_holdout is not None:
                after_holdout(task, sandbox)
        except SandboxError as exc:
            raise Unassessed(str(exc)) from exc
        except OSError as exc:
            raise Unassessed(f"the sandbox could not be prepared: {exc}") from exc
        requires = Verdict.from_checks(
            requirements_checks(task.requires, counters or {}, stop_reason)
        )
        graders = list(task.graders)
        if until_rejected:
            graders.sort(key=lambda g: not reads_sealed_state_only(g))  # stable
        per_grader: list[Verdict] = []
        probe = program_probe(sandbox)
        for grader in graders:
            if until_rejected and per_grader and not per_grader[-1].passed:
                break
            try:
                one = grade([grader], sandbox, search_paths=search_paths)
            except SandboxError as exc:
                raise Unassessed(f"sandbox error while grading: {exc}") from exc
            why = environment_failure(one, specs=[grader], probe=probe)
            if why is not None:
                raise Unassessed(why)
            per_grader.append(one)
        verdict = per_grader[0]
        for other in [*per_grader[1:], requires]:
            verdict = verdict.merged_with(other)
        return Graded(verdict, per_grader, written)
    finally:
        sandbox.close()


def failed_check(name: str, detail: str | None) -> str:
    """``failed: NAME (first line of its detail)`` — the outcome first (a check is named for
    what it expects, so its bare name reads like success), the detail whole, never cut."""
    lines = (detail or "").strip().splitlines()
    return f"failed: {name}" + (f" ({lines[0].strip()})" if lines else "")


def failing_detail(graded: Graded) -> str:
    parts = []
    if graded.verdict.reason and not graded.verdict.checks:
        parts.append(graded.verdict.reason)
    for check in graded.verdict.checks:
        if not check.passed:
            parts.append(failed_check(check.name, check.detail))
    for verdict in graded.per_grader:
        if not verdict.passed and not verdict.checks and verdict.reason:
            parts.append(verdict.reason)
    return "; ".join(dict.fromkeys(parts)) or graded.verdict.reason


def first_failing_grader(graded: Graded) -> int | None:
    for i, verdict in enumerate(graded.per_grader):
        if not verdict.passed:
            return i
    return None
