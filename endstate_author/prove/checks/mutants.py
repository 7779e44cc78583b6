"""mutants: wrong solutions nobody declared must fail the graders too (ES911)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import endstate_author.prove.cache as cache
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
from endstate_author.prove.mutant_batch import (
    MutantBatch,
    batches,
    survivor_detail,
    timed_out,
)
from endstate_author.prove.mutation import Mutant, MutantSet, generate, leaders_and_followers
from endstate_harness.task import Task

GROUP_NAME = "mutants"


def mutant_set(task: Task) -> MutantSet | None:
    if task.solution is None or task.category == "permissioning":
        return None
    return generate(task.fixture, task.solution)


def _applier(task: Task, mutant: Mutant) -> Callable[[Path], list[str]]:
    """Lays the mutant over the live tree (after solution/ was staged)."""

    def apply(live: Path) -> list[str]:
        target = live / mutant.path
        data = mutant.file_bytes(task.fixture)
        if data is not None:
            target.write_bytes(data)
        else:
            target.unlink(missing_ok=True)
        return [mutant.path]

    return apply


class Budget:
    """A task's mutant time budget: its clock starts when its first mutant starts."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._started: float | None = None
        self._lock = threading.Lock()

    def spent(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if self._started is None:
                self._started = now
            return now - self._started >= self.seconds


NOT_RUN = "not run: the task's mutant time budget ({:g} s, --mutant-budget) was spent"
SAMPLED_OUT = "sampled out"
"""How a follower's skipped result starts when its line's first mutants were all killed."""

Outcome = tuple[str, str]


class Fates:
    """Each mutant's outcome, graded once however many checks ask for it: its own, and those
    of the mutants that follow it on its line (which run only if it was not killed).

    A mutant is graded under its own lock, so a follower that asks for a leader another
    worker is grading waits for that grading rather than repeating it."""

    def __init__(self, base_key: str, use_cache: bool, budget: Budget | None,
                 grouped: dict[str, MutantBatch]) -> None:
        self.base_key = base_key
        self.use_cache = use_cache
        self.budget = budget
        self.grouped = grouped
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._known: dict[str, Outcome | None] = {}

    def of(self, ctx: ProveContext, mutant: Mutant) -> Outcome | None:
        """``("pass", detail)`` killed, ``("fail", detail)`` survived, None: left unrun by
        the time budget."""
        with self._lock:
            lock = self._locks.setdefault(mutant.id, threading.Lock())
        with lock:
            if mutant.id not in self._known:
                self._known[mutant.id] = self._grade(ctx, mutant)
            return self._known[mutant.id]

    def _grade(self, ctx: ProveContext, mutant: Mutant) -> Outcome | None:
        # --no-cache neither reads nor writes (as the task's own cache): 93 small files
        # written and renamed cost add-markdown-table-alignment's prove ~0.1 s of a slow disk
        key = (cache.mutant_key(self.base_key, mutant.id, mutant.content)
               if self.use_cache else None)
        known = cache.load_mutant(key) if key is not None else None
        if known is not None:
            return known
        if self.budget is not None and self.budget.spent():
            return None
        assert ctx.task.solution is not None
        batch = self.grouped.get(mutant.id)
        batched = batch.outcome(ctx, mutant) if batch is not None else None
        if batched is not None:  # judged in its batch; one it could not judge is graded here
            if key is not None:
                cache.store_mutant(key, *batched)
            return batched
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
            outcome, detail = "fail", survivor_detail(mutant)
        else:
            outcome, detail = "pass", f"{mutant.description}: {failing_detail(graded)}"
        if key is not None:
            cache.store_mutant(key, outcome, detail)
        return outcome, detail


class Followers:
    """The mutants that follow their line's first ones, batched once their leaders' fates
    are known: only the followers whose line kept a leader alive are graded, in as many
    batches as those few make (none when every line's leaders were killed)."""

    def __init__(self, task: Task, follows: dict[str, tuple[Mutant, ...]],
                 candidates: list[Mutant], fates: Fates, workers: int) -> None:
        self.task = task
        self.follows = follows
        self.candidates = candidates
        self.fates = fates
        self.workers = workers
        self._lock = threading.Lock()
        self._done = False

    def sampled_out(self, ctx: ProveContext, mutant: Mutant) -> list[Mutant] | None:
        """Its line's leaders when every one was killed (so it is not run), else None."""
        leaders = self.follows[mutant.id]
        fates = [self.fates.of(ctx, m) for m in leaders]
        if all(f is not None and f[0] == "pass" for f in fates):
            return list(leaders)
        return None

    def prepare(self, ctx: ProveContext) -> None:
        """Batch the followers that will run (first call only; the others wait for it)."""
        with self._lock:
            if self._done:
                return
            self._done = True
            needed = [m for m in self.candidates if self.sampled_out(ctx, m) is None]
            self.fates.grouped.update(batches(self.task, needed, _applier, self.workers))


def mutant_check(
    mutant: Mutant, base_key: str, use_cache: bool = True, budget: Budget | None = None,
    batch: MutantBatch | None = None, fates: Fates | None = None,
    followers: Followers | None = None,
) -> Check:
    label = f"mutant {mutant.id} fails"
    where = f"solution/{mutant.path}"
    if fates is None:
        fates = Fates(base_key, use_cache, budget, {mutant.id: batch} if batch else {})

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
        if followers is not None and mutant.id in followers.follows:
            leaders = followers.sampled_out(ctx, mutant)
            if leaders is not None:
                return CheckResult(
                    label, GROUP_NAME, "skipped", path=where, line=mutant.line,
                    detail=f"{SAMPLED_OUT}: {mutant.description}; line {mutant.line}'s first "
                    f"{len(leaders)} mutants were all killed ("
                    + ", ".join(m.id for m in leaders) + ")",
                )  # fmt: skip
            followers.prepare(ctx)
        graded = fates.of(ctx, mutant)
        if graded is None:  # only the time budget leaves a mutant unrun
            seconds = fates.budget.seconds if fates.budget is not None else 0.0
            return CheckResult(
                label, GROUP_NAME, "skipped", detail=NOT_RUN.format(seconds),
                path=where, line=mutant.line, unrun=True,
            )  # fmt: skip
        return result(*graded)

    return check


def jobs(task: Task, plan: Plan) -> Iterator[Job]:
    """One job per mutant run; ``use_cache=False`` (``--no-cache``) grades every one anew.

    Each line's first mutants (:func:`leaders_and_followers`) come first; the others follow
    and run only where one of their line's first ones was not killed."""
    found = mutant_set(task)
    if found is None:
        return
    chosen, _ = found.selected(plan.mutant_limit)
    if not chosen:
        return
    base_key = cache.mutant_base(task, plan.sandbox_key)
    budget = Budget(plan.mutant_budget)

    def unknown(mutants: list[Mutant]) -> list[Mutant]:
        return [m for m in mutants if not plan.use_cache
                or cache.load_mutant(cache.mutant_key(base_key, m.id, m.content)) is None]

    leaders, follows = leaders_and_followers(chosen)
    grouped = batches(task, unknown(leaders), _applier, plan.workers)
    fates = Fates(base_key, plan.use_cache, budget, grouped)
    rest = [m for m in chosen if m.id in follows]
    followers = Followers(task, follows, unknown(rest), fates, plan.workers)
    for mutant in [*leaders, *rest]:
        check = mutant_check(mutant, base_key, plan.use_cache, budget, fates=fates,
                             followers=followers)
        yield make_job(GROUP_NAME, f"mutant {mutant.id} fails", check)


def skipped(task: Task, plan: Plan) -> list[CheckResult]:
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
    left = found.left_out(plan.mutant_limit)
    if left:
        notes.append(
            CheckResult(
                "mutants over --mutants",
                GROUP_NAME,
                "skipped",
                detail=f"{len(left)} not run (--mutants {plan.mutant_limit}): "
                + ", ".join(m.id for m in left),
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
    """A task's mutation score: ``killed`` of ``run`` mutants failed the graders.

    It is the task's score only when ``complete`` (no live mutant left unrun, by a count or
    by the time budget); otherwise it is a sample's, reported as ``sample_score`` and never
    as ``score``."""

    generated: int
    run: int
    killed: int
    survived: int
    unassessed: int
    equivalent: int
    not_run: int
    over_budget: int = 0
    """Of ``not_run``: the mutants the time budget left unrun (the rest: ``--mutants``)."""
    sampled_out: int = 0
    """Not run by design: their line's first mutants were all killed. Neither survivors nor
    ``not_run`` (the score stays complete: every line was tried)."""
    timed_out: int = 0
    """Of ``killed``: the mutants cut at their time bound (``mutant_batch.TIME_BOUND``)."""

    @property
    def complete(self) -> bool:
        return self.not_run == 0

    def to_json(self) -> dict[str, int | float | bool | None]:
        ratio = round(self.killed / self.run, 3) if self.run else None
        return {
            "generated": self.generated,
            "run": self.run,
            "killed": self.killed,
            "survived": self.survived,
            "unassessed": self.unassessed,
            "equivalent": self.equivalent,
            "not_run": self.not_run,
            "over_budget": self.over_budget,
            "sampled_out": self.sampled_out,
            "timed_out": self.timed_out,
            "complete": self.complete,
            "score": ratio if self.complete else None,
            "sample_score": None if self.complete else ratio,
        }


def score(task: Task, limit: int | None, checks: Sequence[CheckResult]) -> Score | None:
    """The score of the mutant checks that ran (None when the task has no mutants, or when
    none was asked for: ``--only visible`` does not pay for generating them)."""
    mine = [c for c in checks if c.group == GROUP_NAME and c.check.startswith("mutant m")]
    over = [c for c in mine if c.unrun]
    ran = [c for c in mine if c.outcome != "skipped"]
    sampled = [c for c in mine if c.outcome == "skipped" and c.detail.startswith(SAMPLED_OUT)]
    if not ran and not over:
        return None
    found = mutant_set(task)
    if found is None or not found.mutants:
        return None
    _, over_count = found.selected(limit)
    return Score(
        generated=len(found.mutants),
        run=len(ran),
        killed=sum(c.outcome == "pass" for c in ran),
        survived=sum(c.outcome == "fail" for c in ran),
        unassessed=sum(c.outcome == "unassessed" for c in ran),
        equivalent=len(found.equivalent),
        not_run=over_count + len(over),
        over_budget=len(over),
        sampled_out=len(sampled),
        timed_out=sum(c.outcome == "pass" and timed_out(c.detail) for c in ran),
    )


GROUP = CheckGroup(
    name=GROUP_NAME,
    codes=("ES911",),
    inputs=GRADING_INPUTS,
    jobs=jobs,
    skipped=skipped,
    summary="generated wrong solutions (partial solutions, operator mutants) fail",
)
