"""Proving tasks: plan each task's checks, run them, repeat, cache, and report findings.

The checks themselves live in :mod:`endstate_author.prove.checks`; this module decides
which run for a task (``--only``, the category), runs them in parallel on a shared pool
(every check has its own sandbox), merges ``--repeat`` runs (ES909 for a check that
disagrees with itself), turns non-passing results into ES9 diagnostics at the grader they
name, and answers an unchanged task from :mod:`endstate_author.prove.cache`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from endstate_author import interrupts
from endstate_author.config import discover
from endstate_author.diagnostics import Diagnostic
from endstate_author.lint.context import TaskContext
from endstate_author.lint.run import cores, lint_paths, resolve_targets
from endstate_author.prove import cache, checkcache, messages
from endstate_author.prove.checks import defects, directions, holdout, mutants, probes, visible
from endstate_author.prove.model import (
    CHECK_GROUPS,
    DEFAULT_MUTANTS,
    CheckResult,
    Job,
    ProveContext,
    ProveOptions,
    TaskProof,
)
from endstate_author.prove.sandbox import prestart
from endstate_author.rules.es3_assertions import verdict_in_process
from endstate_author.rules.es4_directory import unusable_entry
from endstate_harness.graders import grader_search_paths
from endstate_harness.process import reaper
from endstate_harness.task import Task, TaskError, load_task


def plan_jobs(
    task: Task,
    only: Sequence[str],
    *,
    mutant_limit: int = DEFAULT_MUTANTS,
    strict: bool = False,
    sandbox_key: Sequence[str] = ("local",),
    use_cache: bool = True,
) -> Iterator[Job]:
    """Every check of a task, as independent units of work."""
    wanted = set(only or CHECK_GROUPS)
    if "directions" in wanted:
        yield from directions.jobs(task)
    if "holdout" in wanted:
        yield from holdout.jobs(task)
    if "defects" in wanted:
        yield from defects.jobs(task)
    if "oracle" in wanted or "guards" in wanted:
        # The agent loop and the runner take ~0.13 s to import, which a prove answered from
        # the cache (or asked for other groups) must not pay: deferred until these are planned
        from endstate_author.prove.checks import guards, oracle

        if "oracle" in wanted:
            yield from oracle.jobs(task)
        if "guards" in wanted:
            yield from guards.jobs(task)
    if "probes" in wanted:
        yield from probes.jobs(task)
    if "visible" in wanted:
        yield from visible.jobs(task, strict)
    if "mutants" in wanted:
        yield from mutants.jobs(task, mutant_limit, sandbox_key, use_cache)


def skipped_notes(
    task: Task, only: Sequence[str], mutant_limit: int = DEFAULT_MUTANTS
) -> list[CheckResult]:
    """Why whole groups do not run for this task, listed after the checks that did."""
    wanted = set(only or CHECK_GROUPS)
    notes = []
    # this order is part of the output (tables, JSON): directions, probes, holdout, defects
    for group, module in (
        ("directions", directions),
        ("probes", probes),
        ("holdout", holdout),
        ("defects", defects),
    ):
        if group in wanted:
            notes.extend(module.skipped(task))
    if "visible" in wanted:
        notes.extend(visible.skipped(task))
    if "mutants" in wanted:
        notes.extend(mutants.skipped(task, mutant_limit))
    return notes


def load_for_prove(root: Path) -> tuple[Task | None, str | None]:
    try:
        return load_task(root), None
    except TaskError as exc:
        return None, str(exc)


def run_jobs(
    ctx: ProveContext, jobs: list[Job], pool: ThreadPoolExecutor | None
) -> list[CheckResult]:
    if pool is None:
        return [fn(ctx) for _, _, fn in jobs]
    futures = [pool.submit(fn, ctx) for _, _, fn in jobs]
    try:
        return [f.result() for f in futures]
    except BaseException:
        # Ctrl-C / SIGTERM: checks not started yet must not run before the process may exit.
        for future in futures:
            future.cancel()
        raise


def default_jobs() -> int:
    return cores()


def static_warnings(root: Path, suite_root: Path) -> list[Diagnostic]:
    """Lint findings that bear on what a proof means, repeated beside its checks.

    ES311: a task whose test verdict is decided in the agent's process proves clean against
    the probes prove knows, yet a payload aimed at the runner could still pass it; the proof
    says so (a warning, not a failed check), as lint does. ES414: an entry of the task's
    trees no sandbox can use (a fifo, a name that is not UTF-8 or is too long), which is why
    checks of it could not run. The suite's configuration applies.
    """
    config = discover(suite_root)
    ctx = TaskContext(root, suite_root=suite_root, config=config)
    return [
        config.apply(d)
        for d in [*verdict_in_process(ctx), *unusable_entry(ctx)]
        if config.enabled(d.code, root.name)
    ]


def _load_failure(task_root: Path, result: CheckResult) -> Diagnostic:
    """A task that does not load, reported where lint finds its first error (the bad key,
    the trailing comma), not at the graders array it may not even have."""
    text = messages.message("ES908", [result])
    try:
        found = lint_paths([task_root], isolated=True).diagnostics
    except Exception:  # lint's own usage errors: fall back to the manifest's graders
        found = []
    # the file, manifest and grader-entry codes (ES0–ES2) are what stops a task loading
    loading = [d for d in found if d.severity == "error" and d.code < "ES3"]
    first = min(loading, key=lambda d: (d.code, d.line, d.column), default=None)
    if first is None:
        return messages.diagnostic_at(task_root, "ES908", text, None)
    return replace(first, code="ES908", message=text, fix=None, rule="", related=[])


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
        if not interrupts.INTERRUPTED.is_set():  # a check stopped by the interrupt found nothing
            on_done(task_id, name, result)
        return result

    return group, name, run


def _merge_repeats(runs: list[list[CheckResult]]) -> list[CheckResult]:
    """One result per check; a check whose outcomes differ across repeats is ES909."""
    merged: list[CheckResult] = []
    for i, first in enumerate(runs[0]):
        outcomes = [run[i].outcome for run in runs if i < len(run)]
        decided = [o for o in outcomes if o in ("pass", "fail")]
        if len(set(decided)) > 1:
            tally = ", ".join(
                f"{o} {outcomes.count(o)}/{len(outcomes)}" for o in sorted(set(outcomes))
            )
            merged.append(
                CheckResult(
                    first.check,
                    first.group,
                    "fail",
                    seconds=sum(run[i].seconds for run in runs) / len(runs),
                    detail=f"disagreed with itself over {len(outcomes)} runs ({tally})",
                    code="ES909",
                    grader_index=first.grader_index,
                )
            )
        else:
            worst = next((run[i] for run in runs if run[i].outcome != "pass"), first)
            merged.append(worst)
    return merged


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
        proof = TaskProof(root.name, root)
        result = CheckResult(
            "load",
            "directions",
            "unassessed",
            code="ES908",
            detail=f"the task does not load, so nothing was proved: {error} "
            "(run `endstate-author lint` for the exact positions)",
        )
        proof.checks.append(result)
        proof.diagnostics.append(_load_failure(root, result))
        return proof
    fingerprint = cache.fingerprint(task, options)
    if options.use_cache:
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
    prestart(options.sandbox, task)
    suite_root = suite_root or root.parent
    ctx = ProveContext(
        task, options.sandbox, grader_search_paths(root, suite_root=suite_root), suite_root
    )
    planned = list(
        plan_jobs(
            task,
            options.only,
            mutant_limit=options.mutants,
            strict=options.strict,
            sandbox_key=(options.sandbox.kind, options.sandbox.image or "",
                         options.sandbox.walls()),
            use_cache=options.use_cache,
        )
    )
    announced = [_announced(job, task.id, options) for job in planned]
    jobs = [
        _reported(job, task.id, options)
        for job in checkcache.cached_jobs(task, options, announced)
    ]
    try:
        runs = [run_jobs(ctx, jobs, pool) for _ in range(max(1, options.repeat))]
    finally:
        reaper.drain()  # every check's trees are deleted before its proof is returned
    checks = _merge_repeats(runs) if runs and runs[0] else []
    walls = options.sandbox.walls()  # part of every cache key, so a cached check's too
    for check in checks:  # every check grades in a sandbox: say what walled it in
        if check.outcome != "skipped":
            check.walls = walls
    checks.extend(skipped_notes(task, options.only, options.mutants))
    proof = TaskProof(task.id, root, checks)
    mutation = mutants.score(task, options.mutants, checks)
    proof.mutation = mutation.to_json() if mutation is not None else None
    proof.diagnostics = messages.diagnostics(root, checks)
    proof.diagnostics.extend(static_warnings(root, suite_root))
    proof.seconds = time.perf_counter() - started
    # stored only when the task is still what it was at the start (no save meanwhile)
    if options.use_cache and not proof.unassessed and cache.fingerprint(task, options) == (
        fingerprint
    ):
        cache.store(fingerprint, proof)
    return proof


def _failed_proof(root: Path, exc: Exception) -> TaskProof:
    """A task whose proving failed inside prove itself: unassessed (ES908), with the error,
    beside the static findings that may say why (an entry no sandbox can use, ES414)."""
    why = f"{type(exc).__name__}: {exc}".encode("utf-8", "surrogateescape").decode(
        "utf-8", "backslashreplace")
    result = CheckResult(
        "prove", "directions", "unassessed", code="ES908",
        detail=f"proving this task failed in prove itself, so nothing was proved: {why} "
        "(please report it)",
    )
    proof = TaskProof(root.name, root, [result])
    proof.diagnostics.append(messages.diagnostic_at(
        root, "ES908", messages.message("ES908", [result]), None))
    try:
        proof.diagnostics.extend(static_warnings(root, root.parent))
    except Exception:  # the static findings are a courtesy here, not a second failure
        pass
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
                    proof = _failed_proof(root, exc)
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
