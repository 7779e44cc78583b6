"""The files of a task that its tests reach: the modules they import, what those modules
import in turn (a package's ``__init__`` re-exporting a submodule), and the data files that
code names — read statically, never imported.

Why: a test that says ``from mdtable import render`` exercises ``mdtable/render.py`` whether
or not the test names that file, and a converter that opens ``rates.json`` makes every test
of the converter a test of that table. A rule asking "does anything grade this file?"
(ES603) must count both, or it warns on sound tasks.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable

from endstate_author.engine.context import TaskContext
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR

CODE_TREES = (FIXTURE_DIR, SOLUTION_DIR)
"""Where the code under test lives: the fixture, and the solution laid over it (the code the
tests execute in a graded end state)."""


def _module_files(ctx: TaskContext) -> dict[str, str]:
    """dotted module name -> rel of its file in the fixture or the solution."""
    out: dict[str, str] = {}
    for tree in CODE_TREES:
        for rel in ctx.files(tree):
            if not rel.endswith(".py"):
                continue
            parts = rel[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                out.setdefault(".".join(parts), rel)
    return out


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> Iterable[str]:
    """Every module name an import statement may load (each parent package too)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = package.split(".") if package else []
            keep = len(parts) - (node.level - 1)
            if keep < 0:
                return
            base = ".".join([*parts[:keep], *([base] if base else [])])
        names = [base] + [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    for name in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            yield ".".join(parts[:end])


def reached_files(ctx: TaskContext, tests: Iterable[tuple[str, str]]) -> set[str]:
    """Fixture/solution rels that the test modules ``tests`` ((tree, rel) pairs) reach: the
    modules they import, transitively, and every file of the fixture or solution whose
    name (``rates.json``, ``data/rates.json``) a reached module writes."""
    modules = _module_files(ctx)
    seen: set[str] = set()
    queue: list[tuple[str, str, str]] = []  # (tree, rel, its package)
    for tree, rel in tests:
        if rel.endswith(".py"):
            queue.append((tree, rel, posixpath.dirname(rel).replace("/", ".")))
    while queue:
        tree, rel, package = queue.pop()
        for node in ctx.python_imports(tree, rel):
            for name in _imported(node, package):
                target = modules.get(name)
                if target is None or target in seen:
                    continue
                seen.add(target)
                is_init = target.endswith("/__init__.py")
                own = name if is_init else name.rpartition(".")[0]
                for code_tree in CODE_TREES:
                    if target in ctx.files(code_tree):
                        queue.append((code_tree, target, own))
    return seen | _named_data(ctx, seen)


def _named_data(ctx: TaskContext, code: set[str]) -> set[str]:
    """Files of the fixture or solution that the reached modules ``code`` name in a string."""
    texts = [ctx.read_tree_text(tree, rel) or "" for rel in code for tree in CODE_TREES
             if rel in ctx.files(tree)]
    found: set[str] = set()
    for tree in CODE_TREES:
        for rel in ctx.files(tree):
            if rel in code or rel.endswith(".py"):
                continue
            base = posixpath.basename(rel)
            if any(base in text for text in texts):
                found.add(rel)
    return found


def tests_of(ctx: TaskContext, fixture_tests: Iterable[str]) -> list[tuple[str, str]]:
    """(tree, rel) of the holdout's Python files and ``fixture_tests``."""
    out = [(HOLDOUT_DIR, rel) for rel in sorted(ctx.files(HOLDOUT_DIR)) if rel.endswith(".py")]
    out += [(FIXTURE_DIR, rel) for rel in fixture_tests if rel.endswith(".py")]
    return out
