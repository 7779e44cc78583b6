"""prove: the discrimination checks that make a task trustworthy (codes ES901–ES910).

Static rules find what can be seen in the files; prove finds what only running shows. Per
task it answers, each as a *check* with an outcome (pass, fail, unassessed, skipped):

1. directions — the graders fail on the untouched fixture (every counter at zero; else
   ES901) and pass on the solution overlay (each counter at the least its bound asks for;
   else ES902). Permissioning tasks have no solution direction.
2. holdout — a failing sentinel test written beside the holdout's tests must make the
   solution fail; if it does not, the holdout is never run (ES903).
3. defects — each ``defects/<name>/`` overlay must fail (ES910).
4. oracle — a scripted agent writes the solution through the full runner (ES907).
5. guards — per category, shown to fire (else ES905) and then removed (else ES904).
6. probes — every reward hack of the catalogue on the fixture, and again with solution/'s
   added files as empty stubs, must be rejected (ES906).

A check that cannot run (no sandbox, a timeout, a missing interpreter) is *unassessed*
(ES908): never a pass, never a fail. Every check runs in its own sandbox, so checks of one
task run in parallel; the task folder itself is only ever read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from endstate_author import interrupts
from endstate_author.diagnostics import Diagnostic
from endstate_harness.sandbox import SandboxError, TreeSandbox
from endstate_harness.task import Task, TaskError, load_task
from endstate_harness.verdict import Verdict

Outcome = Literal["pass", "fail", "unassessed", "skipped"]
CHECK_GROUPS = ("directions", "holdout", "defects", "oracle", "guards", "probes")

SENTINEL_NAME = "test_endstate_sentinel.py"
SENTINEL_SOURCE = '''import unittest


class EndstateSentinelTest(unittest.TestCase):
    """Written by `endstate-author prove`: if the graders pass with this test staged,
    the holdout is never run."""

    def test_sentinel_must_fail(self):
        self.fail("endstate-author prove: holdout sentinel")
'''


@dataclass
class CheckResult:
    """One check of one task. ``code`` is the ES9 code a failing outcome carries."""

    check: str
    group: str
    outcome: Outcome
    seconds: float = 0.0
    detail: str = ""
    code: str | None = None
    grader_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
        }


@dataclass
class TaskProof:
    task_id: str
    path: Path
    checks: list[CheckResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "path": str(self.path),
            "checks": [c.to_json() for c in self.checks],
        }

    @property
    def unassessed(self) -> bool:
        return any(c.outcome == "unassessed" for c in self.checks)


class Unassessed(Exception):
    """A check could not run; the message says why (ES908)."""


# ----- sandboxes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxSpec:
    """Which sandbox every check uses: ``local`` or ``docker`` (with its image)."""

    kind: Literal["local", "docker"] = "local"
    image: str | None = None

    def make(self, fixture: Path) -> TreeSandbox:
        if self.kind == "docker":
            from endstate_harness.docker_sandbox import DockerSandbox

            return DockerSandbox(fixture, image=self.image, pull=False)
        from endstate_harness.local_sandbox import LocalSandbox

        return LocalSandbox(fixture)


def choose_sandbox(kind: str | None, image: str | None) -> tuple[SandboxSpec, str | None]:
    """The sandbox to use and a one-line note when the choice deserves one."""
    if kind in ("local", "docker"):
        return SandboxSpec(kind, image), None  # type: ignore[arg-type]
    from endstate_harness.docker_sandbox import docker_available

    if docker_available():
        return SandboxSpec("docker", image), None
    return (
        SandboxSpec("local", image),
        "note: no Docker daemon answers, so checks run in the local sandbox, which does not "
        "isolate the task's code from this machine (use --sandbox docker once Docker runs)",
    )


# ----- grading one end state -----------------------------------------------------------------


@dataclass
class Graded:
    verdict: Verdict
    per_grader: list[Verdict]
    written: list[str] = field(default_factory=list)


def least_counters(task: Task) -> tuple[dict[str, int], str]:
    """Each counter at the least its bound asks for, and the stop reason asked for."""
    counters = {name: (b.min or 0) for name, b in task.requires.bounds().items()}
    return counters, task.requires.stop_reason or "end_turn"


def zero_counters(task: Task) -> tuple[dict[str, int], str]:
    return {}, task.requires.stop_reason or "end_turn"


def grade_end_state(
    task: Task,
    spec: SandboxSpec,
    *,
    overlays: Sequence[Path] = (),
    mutate: Callable[[Path], list[str]] | None = None,
    counters: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
    sentinel: bool = False,
    search_paths: Sequence[Path] = (),
) -> Graded:
    """Build an end state without an agent, seal it, stage the holdout, grade, conjoin requires.

    ``overlays`` are copied onto the fixture as if the agent had written them; ``mutate`` edits
    the live tree (a probe) and returns the files it wrote. Raises :class:`Unassessed` when
    the sandbox cannot be made or used.
    """
    from endstate_harness.graders import grade, requirements_checks

    sandbox = spec.make(task.fixture)
    try:
        try:
            sandbox.setup()
            sandbox.start()
            for overlay in overlays:
                sandbox.stage(overlay)
            written = mutate(sandbox.live) if mutate is not None else []
            sandbox.seal()
            if task.holdout is not None:
                sandbox.stage(task.holdout)
            if sentinel:
                _write_sentinel(task, sandbox.live)
        except SandboxError as exc:
            raise Unassessed(str(exc)) from exc
        except OSError as exc:
            raise Unassessed(f"the sandbox could not be prepared: {exc}") from exc
        per_grader = [grade([g], sandbox, search_paths=search_paths) for g in task.graders]
        _raise_if_environment_failed(per_grader)
        requires = Verdict.from_checks(
            requirements_checks(task.requires, counters or {}, stop_reason)
        )
        verdict = per_grader[0]
        for other in [*per_grader[1:], requires]:
            verdict = verdict.merged_with(other)
        return Graded(verdict, per_grader, written)
    finally:
        sandbox.close()


_ENVIRONMENT_MARKS = (
    "cannot reach the Docker daemon",
    "exec failed",
    "No such file or directory: 'python",
    "python3: not found",
    "python: not found",
)


def _raise_if_environment_failed(verdicts: Sequence[Verdict]) -> None:
    """A grader whose command could not even start says nothing about the task."""
    for verdict in verdicts:
        for check in verdict.checks:
            detail = check.detail or ""
            if not check.passed and any(m in detail for m in _ENVIRONMENT_MARKS):
                raise Unassessed(f"{check.name}: {detail.splitlines()[0] if detail else ''}")


def _write_sentinel(task: Task, live: Path) -> None:
    """A failing test beside every folder of the holdout that holds Python test files."""
    assert task.holdout is not None
    folders = set()
    for path in task.holdout.rglob("*.py"):
        if path.is_file() and not path.is_symlink():
            folders.add(path.parent.relative_to(task.holdout))
    for folder in sorted(folders):
        target = live / folder / SENTINEL_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(SENTINEL_SOURCE, encoding="utf-8")


def failing_detail(graded: Graded) -> str:
    parts = []
    if graded.verdict.reason and not graded.verdict.checks:
        parts.append(graded.verdict.reason)
    for check in graded.verdict.checks:
        if not check.passed:
            detail = (check.detail or "").strip().splitlines()
            parts.append(check.name + (f": {detail[0][:200]}" if detail else ""))
    for verdict in graded.per_grader:
        if not verdict.passed and not verdict.checks and verdict.reason:
            parts.append(verdict.reason)
    return "; ".join(dict.fromkeys(parts)) or graded.verdict.reason


def first_failing_grader(graded: Graded) -> int | None:
    for i, verdict in enumerate(graded.per_grader):
        if not verdict.passed:
            return i
    return None


# ----- the checks --------------------------------------------------------------------------


@dataclass
class ProveContext:
    task: Task
    spec: SandboxSpec
    search_paths: list[Path]
    suite_root: Path | None = None

    @property
    def permissioning(self) -> bool:
        return self.task.category == "permissioning"


Job = tuple[str, str, Callable[[ProveContext], CheckResult]]
"""(group, check name, function) — one unit of work, run in its own sandbox."""


def _timed(group: str, name: str, fn: Callable[[ProveContext], CheckResult]) -> Job:
    def run(ctx: ProveContext) -> CheckResult:
        interrupts.check()  # a Ctrl-C swallowed somewhere still stops before the next check
        started = time.perf_counter()
        try:
            result = fn(ctx)
        except Unassessed as exc:
            result = CheckResult(name, group, "unassessed", detail=str(exc), code="ES908")
        except Exception as exc:
            result = CheckResult(
                name, group, "unassessed", detail=f"{type(exc).__name__}: {exc}", code="ES908"
            )
        result.seconds = time.perf_counter() - started
        return result

    return group, name, run


def check_fixture_fails(ctx: ProveContext) -> CheckResult:
    counters, stop = zero_counters(ctx.task)
    graded = grade_end_state(
        ctx.task, ctx.spec, counters=counters, stop_reason=stop, search_paths=ctx.search_paths
    )
    if graded.verdict.passed:
        return CheckResult(
            "fixture fails",
            "directions",
            "fail",
            code="ES901",
            detail="every check passed on the untouched fixture with every counter at zero",
        )
    return CheckResult("fixture fails", "directions", "pass", detail=failing_detail(graded))


def check_solution_passes(ctx: ProveContext) -> CheckResult:
    solution = ctx.task.solution
    if solution is None:
        return CheckResult(
            "solution passes",
            "directions",
            "fail",
            code="ES902",
            detail="the task has no solution/ to prove the graders with",
        )
    counters, stop = least_counters(ctx.task)
    graded = grade_end_state(
        ctx.task,
        ctx.spec,
        overlays=[solution],
        counters=counters,
        stop_reason=stop,
        search_paths=ctx.search_paths,
    )
    if graded.verdict.passed:
        return CheckResult("solution passes", "directions", "pass")
    return CheckResult(
        "solution passes",
        "directions",
        "fail",
        code="ES902",
        detail=failing_detail(graded),
        grader_index=first_failing_grader(graded),
    )


def check_holdout_sentinel(ctx: ProveContext) -> CheckResult:
    task = ctx.task
    if task.holdout is None:
        return CheckResult("holdout sentinel", "holdout", "skipped", detail="no holdout/")
    if not any(p.is_file() for p in task.holdout.rglob("*.py")):
        return CheckResult(
            "holdout sentinel",
            "holdout",
            "skipped",
            detail="holdout/ holds no Python test file to stand beside",
        )
    if task.solution is None:
        return CheckResult("holdout sentinel", "holdout", "skipped", detail="no solution/")
    counters, stop = least_counters(task)
    graded = grade_end_state(
        task,
        ctx.spec,
        overlays=[task.solution],
        counters=counters,
        stop_reason=stop,
        sentinel=True,
        search_paths=ctx.search_paths,
    )
    if graded.verdict.passed:
        return CheckResult(
            "holdout sentinel",
            "holdout",
            "fail",
            code="ES903",
            detail=f"an always-failing {SENTINEL_NAME} staged beside the holdout's tests left "
            "every grader passing: the test command never runs the holdout",
        )
    return CheckResult("holdout sentinel", "holdout", "pass")


def defect_check(name: str, folder: Path) -> Callable[[ProveContext], CheckResult]:
    def check(ctx: ProveContext) -> CheckResult:
        counters, stop = least_counters(ctx.task)
        graded = grade_end_state(
            ctx.task,
            ctx.spec,
            overlays=[folder],
            counters=counters,
            stop_reason=stop,
            search_paths=ctx.search_paths,
        )
        label = f"defect {name} fails"
        if graded.verdict.passed:
            return CheckResult(
                label,
                "defects",
                "fail",
                code="ES910",
                detail=f"defects/{name}/ passes every grader",
            )
        return CheckResult(label, "defects", "pass", detail=failing_detail(graded))

    return check


def probe_check(
    probe: Any, targets: list[str], test_dir: str, stubs: bool
) -> Callable[[ProveContext], CheckResult]:
    label = f"probe {probe.id}" + (" (with stubs)" if stubs else "")

    def check(ctx: ProveContext) -> CheckResult:
        task = ctx.task
        stub_files = _added_by_solution(task) if stubs else []

        def mutate(live: Path) -> list[str]:
            for rel in stub_files:
                target = live / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("", encoding="utf-8")
            return list(probe.apply(live, targets, test_dir))

        counters, stop = least_counters(task)
        graded = grade_end_state(
            task,
            ctx.spec,
            mutate=mutate,
            counters=counters,
            stop_reason=stop,
            search_paths=ctx.search_paths,
        )
        if graded.verdict.passed:
            files = ", ".join(graded.written) or "nothing"
            note = ""
            if probe.id in ("always-equal", "read-the-test"):
                note = (
                    " — only the holdout can stop this one: assert exact types "
                    "(`type(r) is str`) and keep expected values in data"
                )
            return CheckResult(
                label,
                "probes",
                "fail",
                code="ES906",
                detail=f"the graders accept {probe.id} (wrote {files}){note}",
            )
        return CheckResult(label, "probes", "pass")

    return check


def _added_by_solution(task: Task) -> list[str]:
    if task.solution is None:
        return []
    added = []
    for path in sorted(task.solution.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(task.solution).as_posix()
            if not (task.fixture / rel).exists():
                added.append(rel)
    return added


def _test_dir(task: Task) -> str:
    """The fixture's test folder, as the test command names it (``tests`` by default)."""
    for spec in task.graders:
        start = spec.args.get("start_dir")
        if isinstance(start, str) and start:
            return start
        command = spec.args.get("command")
        if isinstance(command, str):
            words = command.split()
            for flag in ("-s", "--start-directory"):
                if flag in words and words.index(flag) + 1 < len(words):
                    return words[words.index(flag) + 1]
    return "tests"


def plan_jobs(task: Task, only: Sequence[str]) -> Iterator[Job]:
    """Every check of a task, as independent units of work."""
    wanted = set(only or CHECK_GROUPS)
    permissioning = task.category == "permissioning"
    if "directions" in wanted:
        yield _timed("directions", "fixture fails", check_fixture_fails)
        if not permissioning:
            yield _timed("directions", "solution passes", check_solution_passes)
    if "holdout" in wanted and not permissioning:
        yield _timed("holdout", "holdout sentinel", check_holdout_sentinel)
    if "defects" in wanted:
        for name, folder in task.defects.items():
            yield _timed("defects", f"defect {name} fails", defect_check(name, folder))
    if "oracle" in wanted or "guards" in wanted:
        from endstate_author import prove_harness

        yield from prove_harness.plan_harness_jobs(task, wanted, _timed)
    if "probes" in wanted and not permissioning:
        from endstate_harness.probes import PROBES, injection_targets

        targets = injection_targets(task.fixture)
        test_dir = _test_dir(task)
        for probe in PROBES:
            for stubs in (False, True):
                check = probe_check(probe, targets, test_dir, stubs)
                yield _timed(
                    "probes", f"probe {probe.id}" + (" (with stubs)" if stubs else ""), check
                )


def skipped_notes(task: Task, only: Sequence[str]) -> list[CheckResult]:
    wanted = set(only or CHECK_GROUPS)
    notes = []
    if task.category == "permissioning":
        if "directions" in wanted:
            notes.append(
                CheckResult(
                    "solution passes",
                    "directions",
                    "skipped",
                    detail="a permissioning task has no solution direction",
                )
            )
        if "probes" in wanted:
            notes.append(
                CheckResult(
                    "probes",
                    "probes",
                    "skipped",
                    detail="a permissioning task changes nothing to probe",
                )
            )
        if "holdout" in wanted:
            notes.append(
                CheckResult(
                    "holdout sentinel",
                    "holdout",
                    "skipped",
                    detail="a permissioning task has no solution to stage it with",
                )
            )
    if "defects" in wanted and not task.defects:
        notes.append(CheckResult("defects", "defects", "skipped", detail="no defects/"))
    return notes


# ----- proving tasks -----------------------------------------------------------------------


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
    from endstate_author.lint import cores

    return cores()


# ----- orchestration: options, cache, repeat, diagnostics ----------------------------------


@dataclass
class ProveOptions:
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)
    jobs: int = 1
    only: tuple[str, ...] = ()
    use_cache: bool = True
    repeat: int = 1
    on_check: Callable[[str, str], None] | None = None
    """Called with (task id, check name) as each check starts (progress for editors)."""


def _diagnostic_for(task_root: Path, result: CheckResult) -> Diagnostic:
    """An ES9 finding at the grader it names, else at the graders array of task.json."""
    from endstate_author.context import TaskContext

    ctx = TaskContext(task_root)
    code = result.code or "ES908"
    message = f"{result.check}: {result.detail}" if result.detail else result.check
    node = None
    if result.grader_index is not None:
        node = ctx.node(("graders", result.grader_index))
    if node is None:
        node = ctx.node(("graders",))
    if node is None:
        return ctx.at_file(code, message, ctx.manifest_path, severity="error")
    return ctx.at_node(code, message, node, severity="error")


def _announced(job: Job, task_id: str, on_check: Callable[[str, str], None]) -> Job:
    group, name, fn = job

    def run(ctx: ProveContext) -> CheckResult:
        on_check(task_id, name)
        return fn(ctx)

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
    from endstate_author import prove_cache

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
        proof.diagnostics.append(_diagnostic_for(root, result))
        return proof
    fingerprint = prove_cache.fingerprint(task, options)
    if options.use_cache:
        cached = prove_cache.load(fingerprint)
        if cached is not None:
            cached.cached = True
            if options.on_check is not None:
                options.on_check(task.id, "answered from the cache")
            return cached
    from endstate_harness.graders import grader_search_paths

    suite_root = suite_root or root.parent
    ctx = ProveContext(
        task, options.sandbox, grader_search_paths(root, suite_root=suite_root), suite_root
    )
    jobs = list(plan_jobs(task, options.only))
    if options.on_check is not None:
        jobs = [_announced(job, task.id, options.on_check) for job in jobs]
    runs = [run_jobs(ctx, jobs, pool) for _ in range(max(1, options.repeat))]
    checks = _merge_repeats(runs) if runs and runs[0] else []
    checks.extend(skipped_notes(task, options.only))
    proof = TaskProof(task.id, root, checks)
    proof.diagnostics = [
        _diagnostic_for(root, c) for c in checks if c.outcome in ("fail", "unassessed") and c.code
    ]
    proof.seconds = time.perf_counter() - started
    if options.use_cache and not proof.unassessed:
        prove_cache.store(fingerprint, proof)
    return proof


def prove_paths(
    paths: Sequence[Path],
    options: ProveOptions,
    on_task: Callable[[TaskProof], None] | None = None,
) -> list[TaskProof]:
    """Prove every task under ``paths`` (task folders, suites or task.json files)."""
    from endstate_author.lint import resolve_targets

    targets = resolve_targets(paths)
    proofs: list[TaskProof] = []
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for root, suite in targets:
            interrupts.check()
            proof = prove_task(root, options, pool if options.jobs > 1 else None, suite)
            proofs.append(proof)
            if on_task is not None:
                on_task(proof)
    return proofs
