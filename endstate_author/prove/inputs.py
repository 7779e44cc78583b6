"""Every input a proof reads beyond the toolkit and its options, named without this machine's
paths: what the prove cache keys on, what a cluster node's unit carries, and what the node
checks its copy against.

Why one list: the cache key, the archive a Ray node receives and the node's check must agree
on what a proof reads, or one path answers (and caches) what another would not. A proof reads
the task's parts (:data:`endstate_author.taskhash.TASK_PARTS`), the suite grader modules its
graders name and every suite module those import, the suite's saved probes (``probes/``,
replayed on every task beside them) and the suite's configuration (which findings it
reports, at what severity).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from endstate_author.engine.catalogue import Catalogue
from endstate_author.engine.config import Config, ConfigError, discover
from endstate_author.probes.store import PROBES_DIR
from endstate_author.taskhash import TASK_PARTS, feed_tree
from endstate_harness.graders import grader_search_paths, pyast
from endstate_harness.task import Task

MAX_MODULES = 200
"""Suite modules followed through imports at most (a suite's helpers, not a library)."""


def grader_modules(task: Task) -> list[tuple[str, Path]]:
    """(label, file) of every suite module a proof of ``task`` imports: the grader modules its
    graders name, the ``__init__.py`` of each package they sit in, and the suite modules they
    import in turn. The label is the module's path below the folder it is imported from
    (``task:`` for the task's own folder): the same on every machine, and where
    :mod:`endstate_author.executors.archive` puts it for a node."""
    try:
        catalogue = Catalogue.for_task(task.root, task.root.parent, Config())
    except Exception:
        return []
    roots = grader_search_paths(task.root, suite_root=task.root.parent)
    found: dict[str, Path] = {}
    todo: list[Path] = []
    for spec in task.graders:
        try:
            info = catalogue.resolve(spec.name)
        except Exception:
            info = None
        if info is not None and info.file is not None and not info.builtin:
            todo.append(Path(info.file).resolve())
    while todo and len(found) < MAX_MODULES:
        module = todo.pop()
        placed = _place(module, roots, task.root.resolve())
        if placed is None or placed[0] in found:
            continue  # an installed package's module (the toolkit's version keys it)
        label, base, rel = placed
        found[label] = module
        for parent in rel.parents:  # the packages it sits in run their __init__.py
            init = base / parent / "__init__.py"
            if parent != Path(".") and init.is_file():
                todo.append(init.resolve())
        todo.extend(_imports(module, rel, roots))
    return sorted(found.items())


def _place(module: Path, roots: list[Path], task_root: Path) -> tuple[str, Path, Path] | None:
    base = next((r for r in roots if module.is_relative_to(r)), None)
    if base is None:
        return None
    rel = module.relative_to(base)
    return ("task:" if base == task_root else "") + rel.as_posix(), base, rel


def _imports(module: Path, rel: Path, roots: list[Path]) -> list[Path]:
    """The suite modules ``module`` imports (found in ``roots``, as its import would be)."""
    try:
        tree = pyast.parse(module.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []  # the proof fails on it the same way wherever it runs
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            stem = node.module or ""
            names.append((stem, node.level))
            names.extend((f"{stem}.{a.name}" if stem else a.name, node.level) for a in node.names)
    package = list(rel.parent.parts)
    out: list[Path] = []
    for name, level in names:
        if level:
            if level - 1 > len(package):
                continue
            parts = package[: len(package) - (level - 1)] + [p for p in name.split(".") if p]
            bases = [next((r for r in roots if module.is_relative_to(r)), roots[0])]
        else:
            parts, bases = name.split("."), roots
        for base in bases:
            hit = _module_file(base, parts)
            if hit is not None:
                out.append(hit)
                break
    return out


def _module_file(base: Path, parts: list[str]) -> Path | None:
    if not parts:
        return None
    leaf = base.joinpath(*parts)
    for candidate in (leaf.with_name(leaf.name + ".py"), leaf / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def config_key(suite_root: Path) -> str:
    """The suite's configuration as a proof reads it (the parsed ``[tool.endstate-author]``
    table, not the file's place or its other content): the same wherever the suite is."""
    try:
        config = discover(suite_root)
    except ConfigError:
        return "unreadable"  # the proof fails on it (never stored); any one key will do
    base = config.source.parent if config.source is not None else suite_root

    def rel(path: Path) -> str:
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            return str(path)

    return json.dumps(
        [config.select, config.ignore, config.severity, config.per_task_ignores,
         [rel(p) for p in config.grader_paths]],
        sort_keys=True,
    )


def read_inputs(task: Task) -> dict[str, str]:
    """Every input a proof of ``task`` reads, label -> digest. Labels and digests hold no
    path of this machine, so a node's copy of the task gives the same ones when, and only
    when, it carries the same inputs."""
    out: dict[str, str] = {}

    def put(label: str, path: Path) -> None:
        digest = hashlib.sha256()
        feed_tree(digest, path, label)
        out[label] = digest.hexdigest()

    for part in TASK_PARTS:
        put(part, task.root / part)
    for label, module in grader_modules(task):
        put(f"module:{label}", module)
    put("suite-probes", task.root.parent / PROBES_DIR)
    out["config"] = hashlib.sha256(config_key(task.root.parent).encode()).hexdigest()
    return out
