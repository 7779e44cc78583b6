"""The linter: every static rule over task folders, with exact positions.

``lint_paths`` is what the CLI runs; ``lint_task`` is what the language server runs on an
unsaved buffer (``text=``). Both return plain :class:`Diagnostic` lists; formatting is
``endstate_author.formats``. A rule that raises becomes one ES000 finding naming the rule,
and the other rules still run — a crash must never look like a clean task.
"""

from __future__ import annotations

import itertools
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.config import Config, discover, load_file
from endstate_author.context import TaskContext
from endstate_author.diagnostics import Diagnostic
from endstate_author.rules.registry import RULES, Rule, load_all
from endstate_harness.task import TASK_FILE, find_task_dirs

NEEDS_OBJECT = ("ES1", "ES2", "ES3", "ES5")
"""Families that read the manifest's content: they run only when task.json is an object."""

MAX_FINDINGS_PER_RULE = 200
"""Per rule and task: a hostile or generated task.json with 20,000 broken graders gets the
first 200 findings and one saying how many more there are, not a flood that stalls an editor."""

PARALLEL_MIN_TASKS = 48
"""Suites at least this large are linted by a pool of forked workers, one per core."""


class UsageError(ValueError):
    """A path or option the user gave cannot be used (exit 2)."""


@dataclass
class LintResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    tasks: int = 0
    contexts: list[TaskContext] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity == "warning" for d in self.diagnostics)


def _rules(scope: str) -> list[Rule]:
    load_all()
    return [r for code, r in sorted(RULES.items()) if r.scope == scope and r.func is not None]


def _crash(rule: Rule, ctx_file: Path, exc: BaseException) -> Diagnostic:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return Diagnostic(
        code="ES000",
        severity="error",
        message=f"rule {rule.code} ({rule.name}) crashed: {type(exc).__name__}: {exc}{where}; "
        "its findings are missing, the other rules ran",
        file=ctx_file,
        rule=rule.code,
    )


def run_rules(ctx: TaskContext, config: Config) -> list[Diagnostic]:
    """Every enabled task-scope rule on one task."""
    out: list[Diagnostic] = []
    task_name = ctx.root.name
    is_object = ctx.is_object
    for rule in _rules("task"):
        if not config.enabled(rule.code, task_name):
            continue
        if rule.code.startswith(NEEDS_OBJECT) and not is_object:
            continue
        try:
            assert rule.func is not None
            found = list(itertools.islice(rule.func(ctx), MAX_FINDINGS_PER_RULE + 1))
        except RecursionError as exc:
            out.append(_crash(rule, ctx.manifest_path, exc))
            continue
        except Exception as exc:
            out.append(_crash(rule, ctx.manifest_path, exc))
            continue
        if len(found) > MAX_FINDINGS_PER_RULE:
            found = found[:MAX_FINDINGS_PER_RULE]
            last = found[-1]
            found.append(
                ctx.at_file(
                    last.code,
                    f"{rule.code} stopped after {MAX_FINDINGS_PER_RULE} findings in this task; "
                    "fix these and lint again to see the rest",
                    last.file,
                    severity=last.severity,
                )
            )
        for diag in found:
            diag.rule = rule.code
            if config.enabled(diag.code, task_name):
                out.append(config.apply(diag))
    return out


def run_suite_rules(contexts: Sequence[TaskContext], config: Config) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for rule in _rules("suite"):
        if not config.enabled(rule.code):
            continue
        try:
            assert rule.func is not None
            found = list(rule.func(list(contexts)))
        except Exception as exc:
            out.append(_crash(rule, contexts[0].manifest_path, exc))
            continue
        for diag in found:
            diag.rule = rule.code
            if config.enabled(diag.code, diag.file.parent.name):
                out.append(config.apply(diag))
    return out


def lint_task(
    root: Path,
    *,
    text: bytes | None = None,
    suite_root: Path | None = None,
    config: Config | None = None,
) -> list[Diagnostic]:
    """Lint one task folder; ``text`` overrides task.json's content (an unsaved buffer)."""
    config = config if config is not None else _safe_discover(root)
    ctx = TaskContext(root, suite_root=suite_root, config=config, text=text)
    found = run_rules(ctx, config)
    return sorted(found, key=Diagnostic.sort_key)


def _safe_discover(root: Path) -> Config:
    try:
        return discover(root)
    except Exception:
        return Config()


def resolve_targets(paths: Iterable[Path]) -> list[tuple[Path, Path]]:
    """(task folder, suite root) for each task named by ``paths``.

    A path is a task folder, a suite folder (every task.json below it) or a task.json.
    """
    targets: list[tuple[Path, Path]] = []
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{path}: no such file or folder")
        if path.name == TASK_FILE and not path.is_dir():
            targets.append((path.parent, path.parent.parent))
        elif path.is_dir():
            if (path / TASK_FILE).exists():
                targets.append((path, path.parent))
            else:
                targets.extend((d, path) for d in find_task_dirs(path))
        else:
            raise UsageError(f"{path}: not a task folder, a suite folder or a task.json")
    seen: set[Path] = set()
    unique = []
    for task, suite in targets:
        key = task.resolve()
        if key not in seen:
            seen.add(key)
            unique.append((task, suite))
    return unique


def lint_paths(
    paths: Sequence[Path],
    *,
    config_file: Path | None = None,
    isolated: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> LintResult:
    """Lint every task named by ``paths`` (raises UsageError / ConfigError for bad input)."""
    targets = resolve_targets(paths)
    result = LintResult(tasks=len(targets))
    configs: dict[Path, Config] = {}
    by_suite: dict[Path, list[TaskContext]] = {}
    fixed_config: Config | None = None
    if isolated:
        fixed_config = Config()
    elif config_file is not None:
        fixed_config = load_file(config_file)
    jobs: list[tuple[Path, Path, Config]] = []
    for task, suite in targets:
        if fixed_config is not None:
            config = fixed_config
        else:
            key = suite.resolve()
            if key not in configs:
                configs[key] = discover(suite)
            config = configs[key]
        if select:
            config.select = [s.upper() for s in select]
        if ignore:
            config.ignore = [*config.ignore, *(i.upper() for i in ignore)]
        ctx = TaskContext(task, suite_root=suite, config=config)
        result.contexts.append(ctx)
        jobs.append((task, suite, config))
        by_suite.setdefault(suite.resolve(), []).append(ctx)
    if len(jobs) >= PARALLEL_MIN_TASKS and cores() > 1:
        result.diagnostics.extend(_lint_parallel(jobs))
    else:
        for ctx in result.contexts:
            result.diagnostics.extend(run_rules(ctx, ctx.config))
    for contexts in by_suite.values():
        result.diagnostics.extend(run_suite_rules(contexts, contexts[0].config))
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result


def cores() -> int:
    """CPUs this process may use (its affinity, not the machine's count)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _lint_chunk(chunk: list[tuple[Path, Path, Config]]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for task, suite, config in chunk:
        out.extend(run_rules(TaskContext(task, suite_root=suite, config=config), config))
    return out


def _lint_parallel(jobs: list[tuple[Path, Path, Config]]) -> list[Diagnostic]:
    """Lint tasks in forked workers (the rules are pure functions of the files)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    load_all()
    workers = min(cores(), 8)
    size = max(8, len(jobs) // (workers * 4))
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return [d for found in pool.map(_lint_chunk, chunks) for d in found]
    except (OSError, RuntimeError, ValueError):
        return _lint_chunk(jobs)  # no fork here (or it failed): the same work, in-process
