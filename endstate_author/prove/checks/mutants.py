"""mutants: wrong solutions nobody declared must fail the graders too (ES911)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from endstate_author.prove import cache
from endstate_author.prove.grading import failing_detail, grade_end_state, least_counters
from endstate_author.prove.model import (
    GRADING_INPUTS,
    Check,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    make_job,
)
from endstate_author.prove.mutation import Mutant, MutantSet, generate
from endstate_harness.task import Task

GROUP_NAME = "mutants"


def mutant_set(task: Task) -> MutantSet | None:
    if task.solution is None or task.category == "permissioning":
        return None
    return generate(task.fixture, task.solution)


def _applier(task: Task, mutant: Mutant) -> Callable[[Path], list[str]]:
    """Lays the mutant over the live tree (after solution/ was staged)."""
    fixture_file = task.fixture / mutant.path

    def apply(live: Path) -> list[str]:
        target = live / mutant.path
        if mutant.content is not None:
            target.write_bytes(mutant.content)
        elif fixture_file.is_file():
            target.write_bytes(fixture_file.read_bytes())
        else:
            target.unlink(missing_ok=True)
        return [mutant.path]

    return apply


def mutant_check(mutant: Mutant, base_key: str, use_cache: bool = True) -> Check:
    label = f"mutant {mutant.id} fails"
    where = f"solution/{mutant.path}"

    def result(outcome: str, detail: str) -> CheckResult:
        survived = outcome == "fail"
        return CheckResult(
            label,
            GROUP_NAME,
            "fail" if survived else "pass",
            detail=detail,
            code="ES911" if survived else None,
            path=where,
            line=mutant.line,
        )

    def check(ctx: ProveContext) -> CheckResult:
        key = cache.mutant_key(base_key, mutant.id, mutant.content)
        known = cache.load_mutant(key) if use_cache else None
        if known is not None:
            return result(*known)
        assert ctx.task.solution is not None
        counters, stop = least_counters(ctx.task)
        graded = grade_end_state(
            ctx.task,
            ctx.spec,
            overlays=[ctx.task.solution],
            mutate=_applier(ctx.task, mutant),
            counters=counters,
            stop_reason=stop,
            search_paths=ctx.search_paths,
            until_rejected=True,  # killed is killed: the first grader that fails says it
        )
        if graded.verdict.passed:
            outcome, detail = (
                "fail",
                f"{where}:{mutant.line}: {mutant.description} passes every grader "
                f"(mutant {mutant.id}: make a holdout test fail on it, or mark it "
                f"`# endstate: equivalent {mutant.id} <reason>` if no behaviour changed)",
            )
        else:
            outcome, detail = "pass", f"{mutant.description}: {failing_detail(graded)}"
        cache.store_mutant(key, outcome, detail)
        return result(outcome, detail)

    return check


def jobs(task: Task, plan: Plan) -> Iterator[Job]:
    """One job per mutant run; ``use_cache=False`` (``--no-cache``) grades every one anew."""
    found = mutant_set(task)
    if found is None:
        return
    chosen, _ = found.selected(plan.mutant_limit)
    if not chosen:
        return
    base_key = cache.mutant_base(task, plan.sandbox_key)
    for mutant in chosen:
        check = mutant_check(mutant, base_key, plan.use_cache)
        yield make_job(GROUP_NAME, f"mutant {mutant.id} fails", check)


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category == "permissioning":
        return [
            CheckResult(
                "mutants", GROUP_NAME, "skipped", detail="a permissioning task has no solution"
            )
        ]
    found = mutant_set(task)
    if found is None:
        return [CheckResult("mutants", GROUP_NAME, "skipped", detail="no solution/")]
    notes = []
    if not found.mutants:
        notes.append(
            CheckResult(
                "mutants",
                GROUP_NAME,
                "skipped",
                detail="the solution changes no text file, so no mutant",
            )
        )
    for mid, why in sorted(found.equivalent.items()):
        notes.append(CheckResult(f"mutant {mid} fails", GROUP_NAME, "skipped",
                                 detail=f"marked equivalent: {why}"))  # fmt: skip
    for rel, line, mid in found.unknown_markers:
        notes.append(
            CheckResult(
                f"marker {mid}",
                GROUP_NAME,
                "skipped",
                detail=f"solution/{rel}:{line} marks {mid} equivalent, but no such mutant is "
                "generated any more (remove the stale marker)",
            )
        )
    return notes


@dataclass
class Score:
    """A task's mutation score: ``killed`` of ``run`` mutants failed the graders."""

    generated: int
    run: int
    killed: int
    survived: int
    unassessed: int
    equivalent: int
    not_run: int

    def to_json(self) -> dict[str, int | float | None]:
        return {
            "generated": self.generated,
            "run": self.run,
            "killed": self.killed,
            "survived": self.survived,
            "unassessed": self.unassessed,
            "equivalent": self.equivalent,
            "not_run": self.not_run,
            "score": round(self.killed / self.run, 3) if self.run else None,
        }


def score(task: Task, limit: int, checks: Sequence[CheckResult]) -> Score | None:
    """The score of the mutant checks that ran (None when the task has no mutants)."""
    found = mutant_set(task)
    if found is None or not found.mutants:
        return None
    ran = [c for c in checks if c.group == GROUP_NAME and c.outcome != "skipped"]
    if not ran:
        return None
    _, not_run = found.selected(limit)
    return Score(
        generated=len(found.mutants),
        run=len(ran),
        killed=sum(c.outcome == "pass" for c in ran),
        survived=sum(c.outcome == "fail" for c in ran),
        unassessed=sum(c.outcome == "unassessed" for c in ran),
        equivalent=len(found.equivalent),
        not_run=not_run,
    )


GROUP = CheckGroup(
    name=GROUP_NAME,
    codes=("ES911",),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="generated wrong solutions (partial solutions, operator mutants) fail",
)
