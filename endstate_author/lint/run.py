"""The linter: every static rule over task folders, with exact positions."""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from endstate_author.engine.config import Config, discover, load_file
from endstate_author.engine.diagnostics import Diagnostic, escaped
from endstate_harness.layout import FIXTURE_DIR, TASK_FILE, find_task_dirs

if TYPE_CHECKING:
    from endstate_author.engine.context import TaskContext
    from endstate_author.lint.cache import LintCache
    from endstate_author.rules.registry import Rule

NEEDS_OBJECT = ("ES1", "ES2", "ES3", "ES5")
"""Families that read the manifest's content: they run only when task.json is an object."""

NEEDS_FIXTURE = (
    "ES310", "ES312", "ES405", "ES406", "ES407", "ES408", "ES409", "ES412", "ES413", "ES415",
    "ES501", "ES502", "ES503", "ES504", "ES506", "ES507", "ES601", "ES602", "ES603",
)  # fmt: skip
"""Rules that read the fixture's content: with no fixture/ they would report what is missing
from an empty tree (a pinned test "not in the fixture", a tests folder "without
__init__.py"), follow-ons of the one cause ES401 reports. They run once fixture/ exists."""

MAX_FINDINGS_PER_RULE = 200
"""Per rule and task: a hostile or generated task.json with 20,000 broken graders gets the
first 200 findings and one saying how many more there are, not a flood that stalls an editor."""

PARALLEL_MIN_TASKS = 48
"""Suites at least this large are linted by a pool of forked workers, one per core."""


class UsageError(ValueError):
    """A path or option the user gave cannot be used (exit 2)."""


@dataclass
class LintResult:
    """Findings (sorted), how many tasks, and the contexts made in this process: of the tasks
    linted here and of the suites whose suite-wide rules ran (none for a cache's answer)."""

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
    # the rules import the task model, the catalogue and the harness's graders (~0.3 s),
    # which a lint answered wholly from the cache never needs: deferred
    from endstate_author.rules.registry import RULES

    return [r for code, r in sorted(RULES.items()) if r.scope == scope and r.func is not None]


def _hint(code: str) -> str:
    """The fix a finding of ``code`` prints (its rule's, as ``rule CODE`` says it)."""
    # deferred: as in _rules, whose import has already loaded it when a rule has run
    from endstate_author.rules.registry import fix_line

    return fix_line(code)


def _crash(rule: Rule, ctx_file: Path, exc: BaseException) -> Diagnostic:
    import traceback  # deferred: only a crashing rule needs it, and it costs a few ms

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
    has_fixture = ctx.has_dir(FIXTURE_DIR)
    for rule in _rules("task"):
        if not config.enabled(rule.code, task_name):
            continue
        if rule.code.startswith(NEEDS_OBJECT) and not is_object:
            continue
        if rule.code in NEEDS_FIXTURE and not has_fixture:
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
        hint = _hint(rule.code) if found else ""
        for diag in found:
            diag.rule = rule.code
            diag.message = escaped(diag.message)  # a name that is not UTF-8, one way
            diag.hint = _hint(diag.code) if diag.code != rule.code else hint
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
        hint = _hint(rule.code) if found else ""
        for diag in found:
            diag.rule = rule.code
            diag.message = escaped(diag.message)  # a name that is not UTF-8, one way
            diag.hint = _hint(diag.code) if diag.code != rule.code else hint
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
    from endstate_author.engine.context import TaskContext  # deferred with the rules (see _rules)

    config = config if config is not None else _safe_discover(root)
    ctx = TaskContext(root, suite_root=suite_root, config=config, text=text)
    found = run_rules(ctx, config)
    return sorted(found, key=Diagnostic.sort_key)


def _safe_discover(root: Path) -> Config:
    try:
        return discover(root)
    except Exception:
        return Config()


def resolve_targets(
    paths: Iterable[Path], find: Callable[[Path], list[Path]] = find_task_dirs
) -> list[tuple[Path, Path]]:
    """(task folder, suite root) for each task named by ``paths``.

    A path is a task folder, a suite folder (every task.json below it, as ``find`` lists
    them) or a task.json.
    """
    targets: list[tuple[Path, Path, str | None]] = []  # the real path when known already
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{path}: no such file or folder")
        if path.name == TASK_FILE:
            # a task.json that is a folder names its task all the same: ES001 there, as when
            # the task or its suite is named
            targets.append((path.parent, path.parent.parent, None))
        elif path.is_dir():
            if (path / TASK_FILE).exists() or (path / TASK_FILE).is_symlink():
                targets.append((path, path.parent, None))
            else:
                # found without following a link: each lies below the suite's real folder
                real, cut = str(path.resolve()), len(str(path))
                targets.extend((d, path, real + str(d)[cut:]) for d in find(path))
        else:
            raise UsageError(f"{path}: not a task folder, a suite folder or a task.json")
    seen: set[str] = set()
    unique = []
    for task, suite, real_task in targets:
        key = real_task or str(task.resolve())
        if key not in seen:
            seen.add(key)
            unique.append((task, suite))
    return unique


@contextmanager
def _collections_paused() -> Iterator[None]:
    """Python's cycle collector off while linting, as it was afterwards.

    Why: lint keeps every task's syntax trees (the suite-wide rules read them all) while it
    parses the next task's, and each parse allocates thousands of nodes, so the collector
    ran over an ever larger heap, again and again, to find almost nothing: a 300-task suite
    linted in one process (one core, or fewer tasks than are spread over forked workers)
    took 7.7 s, 4.2 s without it, using 4 MB more at its peak (117 → 121 MB). The rules'
    garbage is reclaimed by reference counting; the few cycles they leave wait for the next
    collection after the lint. Forked workers inherit the pause."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@_collections_paused()
def lint_paths(
    paths: Sequence[Path],
    *,
    config_file: Path | None = None,
    isolated: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    cache: LintCache | None = None,
) -> LintResult:
    """Lint every task named by ``paths`` (raises UsageError / ConfigError for bad input).

    With a ``cache``, a task (and a suite's suite-wide rules) whose inputs are unchanged
    answers from it, and every other is linted and stored.

    The collector of reference cycles is paused meanwhile (:func:`_collections_paused`)."""
    targets = resolve_targets(paths, cache.find_tasks if cache is not None else find_task_dirs)
    result = LintResult(tasks=len(targets))
    jobs = _jobs(targets, config_file=config_file, isolated=isolated, select=select, ignore=ignore)
    keys: list[str | None] = []
    found: dict[int, list[Diagnostic]] = {}
    if cache is not None:
        cache.prefetch(jobs)
    for i, (task, suite, config) in enumerate(jobs):
        key, hit = cache.lookup(task, suite, config) if cache is not None else (None, None)
        keys.append(key)
        if hit is not None:
            found[i] = hit
    suites: dict[Path, list[int]] = {}
    real: dict[Path, Path] = {}
    for i, (_task, suite, _config) in enumerate(jobs):
        if suite not in real:
            real[suite] = suite.resolve()
        suites.setdefault(real[suite], []).append(i)
    suite_found: dict[Path, list[Diagnostic]] = {}
    for suite_key_path, members in suites.items():
        hit = None
        if cache is not None:
            first = jobs[members[0]]
            hit = cache.lookup_suite(first[1], first[2], (keys[i] for i in members))[1]
        if hit is not None:
            suite_found[suite_key_path] = hit
    contexts: dict[int, TaskContext] = {}
    pending = [i for i in range(len(jobs)) if i not in found]
    if pending:
        if len(pending) >= PARALLEL_MIN_TASKS and cores() > 1:
            linted = _lint_parallel([jobs[i] for i in pending])
        else:
            linted = [run_rules(_context(jobs, i, contexts), jobs[i][2]) for i in pending]
        for i, diags in zip(pending, linted, strict=True):
            found[i] = diags
            key = keys[i]
            if cache is None or key is None:
                continue
            # stored only if the task did not change while it was linted: the findings
            # must be those of the content the key names
            if cache.task_key(*jobs[i]) == key:
                cache.store(*jobs[i], key, diags)
            else:
                keys[i] = None
    for i in range(len(jobs)):
        result.diagnostics.extend(found[i])
    for suite_key_path, members in suites.items():
        if suite_key_path in suite_found:
            result.diagnostics.extend(suite_found[suite_key_path])
            continue
        group = [_context(jobs, i, contexts) for i in members]
        diags = run_suite_rules(group, group[0].config)
        result.diagnostics.extend(diags)
        first = jobs[members[0]]
        skey = cache.suite_key(first[1], first[2], (keys[i] for i in members)) if cache else None
        if cache is not None and skey is not None:
            cache.store_suite(first[1], first[2], skey, diags)
    if cache is not None:
        cache.flush()
    result.contexts = [contexts[i] for i in sorted(contexts)]
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result


def _jobs(
    targets: list[tuple[Path, Path]],
    *,
    config_file: Path | None,
    isolated: bool,
    select: Sequence[str],
    ignore: Sequence[str],
) -> list[tuple[Path, Path, Config]]:
    """(task, suite, config) for each target, the configuration of each suite read once."""
    configs: dict[Path, Config] = {}
    real: dict[Path, Path] = {}
    fixed_config: Config | None = None
    if isolated:
        fixed_config = Config()
    elif config_file is not None:
        fixed_config = load_file(config_file)
    jobs: list[tuple[Path, Path, Config]] = []
    adjusted: set[int] = set()
    for task, suite in targets:
        if fixed_config is not None:
            config = fixed_config
        else:
            if suite not in real:
                real[suite] = suite.resolve()
            key = real[suite]
            if key not in configs:
                configs[key] = discover(suite)
            config = configs[key]
        if id(config) not in adjusted:  # once per config, however many tasks share it
            adjusted.add(id(config))
            if select:
                config.select = [s.upper() for s in select]
            if ignore:
                config.ignore = [*config.ignore, *(i.upper() for i in ignore)]
        jobs.append((task, suite, config))
    return jobs


def _context(
    jobs: list[tuple[Path, Path, Config]], i: int, contexts: dict[int, TaskContext]
) -> TaskContext:
    """The context of job ``i``, made once (task rules and suite rules share it)."""
    from endstate_author.engine.context import TaskContext  # deferred with the rules (see _rules)

    if i not in contexts:
        task, suite, config = jobs[i]
        contexts[i] = TaskContext(task, suite_root=suite, config=config)
    return contexts[i]


def cores() -> int:
    """CPUs this process may use (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _lint_chunk(chunk: list[tuple[Path, Path, Config]]) -> list[list[Diagnostic]]:
    """Each task's findings, in the order of ``chunk``."""
    from endstate_author.engine.context import TaskContext  # deferred with the rules (see _rules)

    return [
        run_rules(TaskContext(task, suite_root=suite, config=config), config)
        for task, suite, config in chunk
    ]


def _lint_parallel(jobs: list[tuple[Path, Path, Config]]) -> list[list[Diagnostic]]:
    """Lint tasks in forked workers (the rules are pure functions of the files)."""
    # the process pool costs ~18 ms to import, and only a large suite forks (never the
    # language server): deferred to keep start-up short
    import multiprocessing  # deferred, as above
    from concurrent.futures import ProcessPoolExecutor  # deferred, as above

    workers = min(cores(), 8)
    size = max(8, len(jobs) // (workers * 4))
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return [found for done in pool.map(_lint_chunk, chunks) for found in done]
    except (OSError, RuntimeError, ValueError):
        return _lint_chunk(jobs)  # no fork here (or it failed): the same work, in-process
