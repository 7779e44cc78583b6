"""Mutants graded in batches: one sandbox, one judge and one child for up to four dozen mutants.

Why: a mutant differs from the solution in one file, yet graded alone it costs a sandbox, a
judge process, a child process and the package's import, about a bare test run each; a task
with ninety mutants then costs ninety test runs. In a batch the judge runs the trusted tests
once per mutant, each time against a process the child forks after writing the mutant's
file, putting back what the tests left before the next
(:func:`~endstate_harness.graders.judge.grader.judge_variants`), so no mutant sees what
another left in memory, and the sandbox, the judge's start and the trusted files are paid
once.

What stays exact: the graders that read only the sealed end state (path guards, structure)
grade each mutant's end state first, read from the batch sandbox's sealed snapshot with the
mutant's file in it (:func:`~endstate_harness.sandbox.variant.variant_of`: what sealing the
mutant's own tree gives, without copying one; a mutant that adds or removes a file gets its
own tree, as before). The batch decides a mutant both ways: failed by a grader (killed), or
passed by every grader, the task's requirements included (a survivor, ES911, with the words
the unbatched path uses). A survivor used to be graded again alone, as a safeguard; that
doubled the cost of exactly the mutants an author needs to see (a weakly tested task has
dozens) and never changed an outcome: ``tests/prove/test_mutant_batch.py`` holds every
outcome batched to the one graded alone, on tasks with survivors. A mutant the batch could
not judge (it stopped after a hung or crashed variant, the environment failed, the file is
not text) is graded alone.

A task batches when its one test-running grader is this library's ``judged_tests`` and every
other grader reads the sealed state only; any other task grades each mutant alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from endstate_author.engine.discovery.grader_names import HARNESS_MODULE, split_grader
from endstate_author.prove.grading import (
    Graded,
    failing_detail,
    grade_end_state,
    grade_with,
    least_counters,
)
from endstate_author.prove.model import ProveContext, Unassessed
from endstate_author.prove.mutation import Mutant
from endstate_harness.errors import SandboxError
from endstate_harness.graders import reads_sealed_state_only, requirements_checks
from endstate_harness.graders.environment import ProgramProbe, environment_failure, program_probe
from endstate_harness.graders.judge.grader import TIMED_OUT, judge_variants
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.variant import variant_of
from endstate_harness.task import GraderSpec, Task
from endstate_harness.verdict import Verdict

BATCH_SIZE = 48
"""Most mutants in one batch. A batch's start (its sandbox, the judge's and the child's
start, the child's warm-up) costs about what two mutants do, so fewer batches are cheaper as
long as every worker has one: :func:`batch_count` makes as many as the workers, or a multiple
of them, and never more than one per two mutants. Measured side by side on
add-markdown-table-alignment (93 mutants, 2 workers): 2 batches of 46-47 took its prove
1.63-1.65 s against 1.76-1.84 s for 4 of 23-24."""


def batch_count(mutants: int, workers: int) -> int:
    """How many batches ``mutants`` mutants make for ``workers`` workers: the fewest whole
    multiple of the workers with at most :data:`BATCH_SIZE` in each (a number of batches
    the workers do not divide leaves the last ones running on fewer workers while the rest
    wait), at most one per two mutants, at least one."""
    workers = max(1, workers)
    rounds = -(-mutants // (BATCH_SIZE * workers))
    return max(1, min(rounds * workers, mutants // 2))


TIME_BOUND = (4.0, 0.1)
"""A mutant's time bound in its batch: (factor, floor in seconds). A mutant whose tests run
past ``max(4 × the solution's own run, 0.1 s)`` is cut and counted killed, "timed out", as
mutation testers do (a mutant that never ends used to cost the 30 s call limit, and the
task's mutant budget then left others unrun). The solution's run is measured in the same
judge, beside the mutant (once a mutant is first cut, and again before each cut that counts),
and timed exactly as a mutant's run is, so a busy machine slows the bound with the run it
bounds. A cut counts only when two runs of the mutant were cut, each beside its own
measurement (``judge.main._bounded`` says why): a mutant that loops costs two or three bounds.
The floor is what a small suite's bound is (a one-test suite took 26-44 ms in a batch, and
count-business-days' 8 tests 42-170 ms, under loads of 5-11 on 2 shared cores), and sits well
above a scheduler's time slice, so a survivor is not cut for a moment off the CPU."""

OFF_ENV = "ENDSTATE_MUTANT_BATCH"
"""``ENDSTATE_MUTANT_BATCH=0`` grades every mutant alone (the benchmarks' comparison)."""


def _is_harness_judge(spec: GraderSpec) -> bool:
    """This library's own ``judged_tests`` (a vendored copy may be older: graded alone)."""
    return split_grader(spec.name) == (HARNESS_MODULE, "judged_tests")


def batch_grader(task: Task) -> GraderSpec | None:
    """The task's test grader when its mutants can be batched (see the module docstring)."""
    judges = [g for g in task.graders if _is_harness_judge(g)]
    others = [g for g in task.graders if not _is_harness_judge(g)]
    if len(judges) != 1 or not all(reads_sealed_state_only(g) for g in others):
        return None
    return judges[0]


def _text_of(task: Task, mutant: Mutant) -> tuple[bool, str | None]:
    """The mutant's file as a variant names it: (batchable, text or None for no file)."""
    data = mutant.file_bytes(task.fixture)
    if data is None:
        return True, None
    try:
        return True, data.decode("utf-8")
    except UnicodeDecodeError:
        return False, None


Outcome = tuple[str, str]
"""``("pass", detail)`` for a mutant the batch killed, ``("fail", detail)`` for one that passed
every grader in it (a survivor, ES911); a mutant the batch could not judge has none and is
graded alone."""


class MutantBatch:
    """Some mutants of one task, graded together the first time any of them is asked for."""

    def __init__(self, members: list[Mutant], grader: GraderSpec,
                 apply: Callable[[Task, Mutant], Callable[[Path], list[str]]]) -> None:
        self.members = members
        self.grader = grader
        self.apply = apply
        self._lock = threading.Lock()
        self._outcomes: dict[str, Outcome] | None = None

    def outcome(self, ctx: ProveContext, mutant: Mutant) -> Outcome | None:
        """``mutant``'s outcome in the batch; None: grade it alone."""
        with self._lock:
            if self._outcomes is None:
                try:
                    self._outcomes = self._grade(ctx)
                except (Unassessed, SandboxError, OSError):
                    self._outcomes = {}  # each graded alone, which says what went wrong
        return self._outcomes.get(mutant.id)

    def _grade(self, ctx: ProveContext) -> dict[str, Outcome]:
        task = ctx.task
        counters, stop = least_counters(task)
        requires = Verdict.from_checks(requirements_checks(task.requires, counters, stop))
        sealed = [g for g in task.graders if g is not self.grader]
        outcomes: dict[str, Outcome] = {}
        left: list[tuple[Mutant, str | None, list[Verdict]]] = []
        sandbox = _solved_sandbox(ctx)
        try:
            probe = program_probe(sandbox)
            for mutant in self.members:
                batchable, text = _text_of(task, mutant)
                if not batchable:
                    continue
                before: list[Verdict] = []
                if sealed:  # path guards and structure, on the mutant's end state: no process
                    graded = self._sealed(ctx, sandbox, mutant, sealed, probe, requires)
                    if not graded.verdict.passed:
                        outcomes[mutant.id] = ("pass", f"{mutant.description}: "
                                                       f"{failing_detail(graded)}")
                        continue
                    before = graded.per_grader
                left.append((mutant, text, before))
            if left:
                outcomes.update(self._judged(sandbox, left, requires, probe))
        finally:
            sandbox.close()
        return outcomes

    def _sealed(self, ctx: ProveContext, sandbox: TreeSandbox, mutant: Mutant,
                sealed: list[GraderSpec], probe: ProgramProbe, requires: Verdict) -> Graded:
        """The graders that read only the sealed state, on the mutant's end state: the batch
        sandbox's sealed snapshot with the mutant's file in it (:func:`variant_of`), or, when
        that cannot stand for it (a file the mutant adds or removes), a tree of its own."""
        task = ctx.task
        data = mutant.file_bytes(task.fixture)
        view = variant_of(sandbox, {mutant.path: data}) if data is not None else None
        if view is None:
            counters, stop = least_counters(task)
            return grade_end_state(
                task, ctx.spec, overlays=[task.solution] if task.solution else [],
                mutate=self.apply(task, mutant), counters=counters, stop_reason=stop,
                search_paths=ctx.search_paths, until_rejected=True, graders=sealed,
            )
        return grade_with(view, sealed, requires, probe, search_paths=ctx.search_paths,
                          until_rejected=True)

    def _judged(self, sandbox: TreeSandbox, left: list[tuple[Mutant, str | None, list[Verdict]]],
                requires: Verdict, probe: ProgramProbe) -> dict[str, Outcome]:
        """The test grader on every mutant left, in one judge: the outcome of each it
        judged (one whose judging failed for the environment's sake has none)."""
        variants = [{m.path: text} for m, text, _ in left]
        try:
            verdicts = judge_variants(sandbox, variants, TIME_BOUND, **self.grader.args)
        except TypeError:  # arguments judged_tests does not take: each graded alone
            return {}
        if len(verdicts) < len(variants):
            sandbox.check_health()  # the environment itself failed: raises, all alone
        out: dict[str, Outcome] = {}
        for (mutant, _text, before), verdict in zip(left, verdicts, strict=False):
            if verdict.passed and requires.passed:  # every grader passed it
                out[mutant.id] = ("fail", survivor_detail(mutant))
                continue
            cut = [c for c in verdict.checks if c.name.endswith(f": {TIMED_OUT}")]
            if cut and not cut[0].passed:  # killed by its time bound, twice over
                out[mutant.id] = ("pass", f"{mutant.description}: {cut[0].detail}")
                continue
            if verdict.passed or environment_failure(verdict, specs=[self.grader], probe=probe):
                continue  # not judged here: graded alone
            merged = verdict
            for other in [*before, requires]:
                merged = merged.merged_with(other)
            graded = Graded(merged, [*before, verdict])
            out[mutant.id] = ("pass", f"{mutant.description}: {failing_detail(graded)}")
        return out


TIMED_OUT_WORDS = ": killed: timed out: "
"""How a killed mutant's detail says its time bound cut it (the judge's words, after the
mutant's description)."""


def timed_out(detail: str) -> bool:
    """Whether a killed mutant's detail says it was cut at its time bound."""
    return TIMED_OUT_WORDS in detail


def survivor_detail(mutant: Mutant) -> str:
    """What ES911 says of a mutant that passes every grader (batched or alone, the same)."""
    where = f"solution/{mutant.path}"
    return (f"{where}:{mutant.line}: {mutant.description} passes every grader "
            f"(mutant {mutant.id}: make a holdout test fail on it, or mark it "
            f"`# endstate: equivalent {mutant.id} <reason>` if no behaviour changed)")


def _solved_sandbox(ctx: ProveContext) -> TreeSandbox:
    """The task's solved end state, sealed, with the holdout staged: the batch's sandbox."""
    task = ctx.task
    sandbox = ctx.spec.make(task.fixture)
    try:
        sandbox.setup()
        sandbox.start()
        if task.solution is not None:
            sandbox.stage(task.solution)
        sandbox.seal()
        if task.holdout is not None:
            sandbox.stage(task.holdout)
    except (SandboxError, OSError) as exc:
        sandbox.close()
        raise Unassessed(str(exc)) from exc
    except BaseException:
        sandbox.close()
        raise
    return sandbox


def batches(task: Task, mutants: list[Mutant],
            apply: Callable[[Task, Mutant], Callable[[Path], list[str]]], workers: int = 2,
            ) -> dict[str, MutantBatch]:
    """Mutant id → its batch, for the mutants that batch (none when the task does not), in
    :func:`batch_count` batches for ``workers`` checks at once.

    Batch ``k`` takes every ``n``-th mutant from the ``k``-th, so that consecutive mutant
    checks belong to different batches and the workers grade several batches at once."""
    grader = batch_grader(task)
    if grader is None or len(mutants) < 2 or os.environ.get(OFF_ENV) == "0":
        return {}
    count = batch_count(len(mutants), workers)
    out: dict[str, MutantBatch] = {}
    for k in range(count):
        members = mutants[k::count]
        batch = MutantBatch(members, grader, apply)
        out.update((m.id, batch) for m in members)
    return out
