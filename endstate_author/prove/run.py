"""Proving tasks: plan each task's checks, run them, repeat, cache, and report findings."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import endstate_author.interrupts as interrupts
import endstate_author.prove.preflight as preflight
import endstate_author.prove.variation as variation
from endstate_author.lint.run import cores, resolve_targets
from endstate_author.prove.checks import BY_NAME, CHECK_GROUPS
from endstate_author.prove.model import (
    DEFAULT_MUTANT_BUDGET,
    DEFAULT_MUTANTS,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    ProveOptions,
    TaskProof,
)
from endstate_author.prove.sandbox import prestart, prestart_seeds
from endstate_harness.graders import grader_search_paths
from endstate_harness.process import reaper
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import Task, TaskError, load_task


def plan_jobs(
    task: Task,
    only: Sequence[str],
    *,
    mutant_limit: int | None = DEFAULT_MUTANTS,
    strict: bool = False,
    sandbox_key: Sequence[str] = ("local",),
    use_cache: bool = True,
    mutant_budget: float = DEFAULT_MUTANT_BUDGET,
    workers: int = 2,
) -> Iterator[Job]:
    """Every check of a task, as independent units of work, group by group; ``workers``:
    how many run at once (the mutants are batched for them)."""
    plan = Plan(mutant_limit, strict, tuple(sandbox_key), use_cache, mutant_budget, workers)
    wanted = set(only or CHECK_GROUPS)
    # by name first: a group's module is imported only when it is wanted (``--only visible``
    # need not import the mutants' generator, the probes' catalogue...)
    for name in CHECK_GROUPS:
        if name in wanted:
            yield from BY_NAME[name].jobs(task, plan)


def skipped_notes(
    task: Task, only: Sequence[str], mutant_limit: int | None = DEFAULT_MUTANTS
) -> list[CheckResult]:
    """Why whole groups (or some of their checks) do not run for this task, listed after the
    checks that did, group by group."""
    plan = Plan(mutant_limit)
    wanted = set(only or CHECK_GROUPS)
    return [note for name in CHECK_GROUPS if name in wanted
            for note in BY_NAME[name].skipped(task, plan)]


def load_for_prove(root: Path) -> tuple[Task | None, str | None]:
    try:
        return load_task(root), None
    except TaskError as exc:
        return None, str(exc)


def run_jobs(
    ctx: ProveContext, jobs: Iterable[Job], pool: ThreadPoolExecutor | None
) -> list[CheckResult]:
    """Every job's result, in order. ``jobs`` may be planned as they are taken: with a pool,
    the first checks run while the later ones are still being planned (the mutants, whose
    generation parses the solution once per mutant, are planned last)."""
    if pool is None:
        return [fn(ctx) for _, _, fn in jobs]
    futures: list[Future[CheckResult]] = []
    try:
        for _, _, fn in jobs:
            futures.append(pool.submit(fn, ctx))
        return [f.result() for f in futures]
    except BaseException:
        # Ctrl-C / SIGTERM: checks not started yet must not run before the process may exit.
        for future in futures:
            future.cancel()
        raise


def default_jobs() -> int:
    return cores()


def _announced(job: Job, task_id: str, options: ProveOptions) -> Job:
    """``on_check`` as the check really starts (inside the cache: a hit never starts)."""
    group, name, fn = job
    on_check = options.on_check
    if on_check is None:
        return job

    def run(ctx: ProveContext) -> CheckResult:
        on_check(task_id, name)
        return fn(ctx)

    return group, name, run


def _reported(job: Job, task_id: str, options: ProveOptions) -> Job:
    """``on_check_done`` as the check ends, run or answered from the cache."""
    group, name, fn = job
    on_done = options.on_check_done
    if on_done is None:
        return job

    def run(ctx: ProveContext) -> CheckResult:
        result = fn(ctx)
        if result.outcome != "skipped":  # as the proof stamps it at the end: the stream's
            result.walls = ctx.spec.walls()  # record is the report's (prove.wire)
        if not interrupts.INTERRUPTED.is_set():  # a check stopped by the interrupt found nothing
            on_done(task_id, name, result)
        return result

    return group, name, run


def _merge_repeats(runs: list[list[CheckResult]],
                   specs: Sequence[SandboxChoice] = ()) -> list[CheckResult]:
    """One result per check; a check whose outcomes differ across repeats is ES909, naming
    each pass's hash seed and test order (``specs``, pass by pass) and the tests that
    flipped between the passes that disagree."""
    merged: list[CheckResult] = []
    for i, first in enumerate(runs[0]):
        outcomes = [run[i].outcome for run in runs if i < len(run)]
        decided = [o for o in outcomes if o in ("pass", "fail")]
        if len(set(decided)) > 1:
            merged.append(_disagreement(runs, i, outcomes, specs))
        else:
            worst = next((run[i] for run in runs if run[i].outcome != "pass"), first)
            merged.append(worst)
    return merged


def _disagreement(runs: list[list[CheckResult]], i: int, outcomes: Sequence[str],
                  specs: Sequence[SandboxChoice]) -> CheckResult:
    """ES909 for check ``i``, whose passes disagreed: a pass of each outcome named by its
    seed and order, and the tests whose outcomes differ between those two passes."""
    first = runs[0][i]
    tally = ", ".join(f"{o} {outcomes.count(o)}/{len(outcomes)}" for o in sorted(set(outcomes)))
    detail = f"disagreed with itself over {len(outcomes)} runs ({tally})"
    evidence = None
    one = next((n for n, o in enumerate(outcomes) if o == "pass"), None)
    two = next((n for n, o in enumerate(outcomes) if o == "fail"), None)
    if one is not None and two is not None and len(specs) == len(runs):
        a, b = runs[one][i], runs[two][i]
        flips = variation.flipped(_tested(a), _tested(b))
        detail += (f": passed under {variation.describe(specs[one])} (pass {one + 1}), failed "
                   f"under {variation.describe(specs[two])} (pass {two + 1})")
        if flips:
            detail += "; flipped: " + variation.flip_lines(flips)
        evidence = variation.evidence([specs[one], specs[two]], flips)
    return CheckResult(
        first.check, first.group, "fail",
        seconds=sum(run[i].seconds for run in runs) / len(runs),
        detail=detail, code="ES909", grader_index=first.grader_index, evidence=evidence,
    )


def _tested(result: CheckResult) -> dict[str, str]:
    """A check's per-test outcomes, from the evidence it kept (``test (file)`` → outcome)."""
    out: dict[str, str] = {}
    for test in result.tests or []:
        name = f"{str(test.get('id', '')).rsplit('.', 1)[-1]} ({test.get('file', '')})"
        out[name] = str(test.get("outcome", ""))
    return out


MOOT_WHEN_SOLUTION_FAILS = ("mutants", "defects")
"""Groups whose passes mean "a wrong solution fails the graders", which says nothing when
the reference solution fails them too."""


def _moot(checks: list[CheckResult]) -> list[CheckResult]:
    """With the solution failing (ES902), a killed mutant or a rejected defect is no evidence:
    shown as not judged (and left out of the mutation score), never as passed."""
    if not any(c.code == "ES902" and c.outcome == "fail" for c in checks):
        return checks
    return [
        replace(
            c,
            outcome="skipped",
            detail="not judged: the solution itself fails the graders (ES902), so a wrong "
            "solution failing them shows nothing",
        )
        if c.group in MOOT_WHEN_SOLUTION_FAILS and (
            c.outcome == "pass"  # a mutant sampled out because its line's first ones "died":
            or (c.outcome == "skipped" and c.detail.startswith("sampled out"))  # no evidence
        )  # (checks/mutants.py SAMPLED_OUT)
        else c
        for c in checks
    ]


def _stopped(root: Path, suspects: set[str], started: float) -> TaskProof | None:
    """The proof of a task lint rejects for a reason that keeps every check from running
    (one cause, one message: lint's finding, not one row per check); None otherwise."""
    if not suspects:
        return None
    # deferred: lint, which a task that nothing keeps from grading needs only at the end
    import endstate_author.prove.findings as findings

    stop = findings.stopped(root, suspects)
    if stop is not None:
        stop.seconds = time.perf_counter() - started
    return stop


def prove_task(
    root: Path,
    options: ProveOptions,
    pool: ThreadPoolExecutor | None = None,
    suite_root: Path | None = None,
) -> TaskProof:
    """Every check of one task folder (answered from the cache when nothing changed)."""
    started = time.perf_counter()
    task, error = load_for_prove(root)
    if task is None:
        # deferred: lint's context and rules, which a task that loads needs only at the end
        import endstate_author.prove.findings as findings

        return findings.load_failure(root, error or "")
    suite_root = suite_root or root.parent
    # before the cache: its key walks the task's trees, which a tree no sandbox can use
    # (too deep, say) must not reach
    stop = _stopped(root, preflight.tree_suspects(task), started)
    if stop is not None:
        return stop
    fingerprint = None
    if options.use_cache:
        # the cache's keys read the grader catalogue and the probe store, which --no-cache
        # never needs: deferred
        import endstate_author.prove.cache as cache

        fingerprint = cache.fingerprint(task, options)
        cached = cache.load(fingerprint)
        if cached is not None:
            cached.cached = True
            cached.checks = [replace(c, cached=True) for c in cached.checks]
            if options.on_check is not None:
                options.on_check(task.id, "answered from the cache")
            if options.on_check_done is not None:
                for check in cached.checks:
                    options.on_check_done(task.id, check.check, check)
            return cached
    search_paths = grader_search_paths(root, suite_root=suite_root)
    # after the cache: resolving the graders imports them, which a cached proof never needs
    stop = _stopped(root, preflight.grader_suspects(task, search_paths), started)
    if stop is not None:
        return stop
    prestart(options.sandbox, task, second=not options.only or "directions" in options.only)
    ctx = ProveContext(task, options.sandbox, search_paths, suite_root)
    planned = plan_jobs(
        task,
        options.only,
        mutant_limit=options.mutants,
        strict=options.strict,
        sandbox_key=(options.sandbox.kind, options.sandbox.image or "",
                     options.sandbox.walls()),
        use_cache=options.use_cache,
        mutant_budget=options.mutant_budget,
        workers=max(1, options.jobs) if pool is not None else 1,
    )
    jobs: Iterable[Job] = (_announced(job, task.id, options) for job in planned)
    if options.use_cache:
        # deferred: as the cache above
        import endstate_author.prove.checkcache as checkcache

        jobs = checkcache.cached_jobs(task, options, jobs)
    jobs = (_reported(job, task.id, options) for job in jobs)
    if options.repeat > 1:
        jobs = list(jobs)  # each repeat runs the same checks
    try:
        passes = [ctx if i == 0 else ctx.next_pass(i) for i in range(max(1, options.repeat))]
        if len(passes) > 1:
            prestart_seeds(options.sandbox, task, [p.spec for p in passes[1:]])
        runs = [run_jobs(one, jobs, pool) for one in passes]
    finally:
        reaper.drain()  # every check's trees are deleted before its proof is returned
    checks = (_moot(_merge_repeats(runs, [p.spec for p in passes]))
              if runs and runs[0] else [])
    searched = None
    if any(c.code == "ES911" and c.outcome == "fail" for c in checks):
        # deferred: the search (and Hypothesis) only for a task with a surviving mutant
        import endstate_author.prove.counterexample as counterexample

        searched = counterexample.settle(ctx, checks, strict=options.strict,
                                         seconds=options.counterexample_budget)
    walls = options.sandbox.walls()  # part of every cache key, so a cached check's too
    for check in checks:  # every check grades in a sandbox: say what walled it in
        if check.outcome != "skipped":
            check.walls = walls
    checks.extend(skipped_notes(task, options.only, options.mutants))
    proof = TaskProof(task.id, root, checks)
    # deferred: the score's, the messages' and lint's modules, imported while checks ran
    import endstate_author.prove.findings as findings

    findings.finish(proof, task, options.mutants, suite_root)
    if searched is not None and proof.mutation is not None:
        proof.mutation["counterexample_search"] = searched
    proof.seconds = time.perf_counter() - started
    # stored only when the task is still what it was at the start (no save meanwhile), and
    # whole: mutants a time budget left unrun run next time (the others answer at once)
    whole = not proof.unassessed and not any(c.unrun for c in checks)
    if fingerprint is not None and whole and cache.fingerprint(task, options) == fingerprint:
        cache.store(fingerprint, proof)
    return proof


def prove_paths(
    paths: Sequence[Path],
    options: ProveOptions,
    on_task: Callable[[TaskProof], None] | None = None,
) -> list[TaskProof]:
    """Prove every task under ``paths`` (task folders, suites or task.json files)."""
    targets = resolve_targets(paths)
    proofs: list[TaskProof] = []
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        try:
            for root, suite in targets:
                interrupts.check()
                try:
                    proof = prove_task(root, options, pool if options.jobs > 1 else None, suite)
                except Exception as exc:  # one task's own failure must not stop the others
                    if interrupts.INTERRUPTED.is_set():
                        raise
                    # deferred: as in prove_task
                    import endstate_author.prove.findings as findings

                    proof = findings.failed_proof(root, exc)
                proofs.append(proof)
                if on_task is not None:
                    on_task(proof)
        except BaseException:
            # Ctrl-C, SIGTERM (an editor's newer save): the checks still running end (the pool
            # waits for them, and they close their own sandboxes), but the run is over: what
            # they find is neither reported nor cached (an editor may kill their commands)
            interrupts.INTERRUPTED.set()
            raise
    return proofs
