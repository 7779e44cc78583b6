"""Lint reads and walks each file of a task once, for every rule (issue 48, target 4).

The rules used to walk a parsed file each on their own (``ast.walk`` of every test, of every
statement, ``ast.dump`` of every compared operand) and to open a file of the task's trees
for each question asked of it (its text, its bytes, its encoding line): on a thousand-task
suite that cost several times the parse. Now the context keeps one read of each file and
one index of each parsed file (:class:`endstate_author.engine.astwalk.NodeIndex`), and the
rules read those. These tests lint the shipped tasks (copied) and hold lint to that: no
walk of :mod:`ast`'s own and no ``ast.dump`` in a rule, each parsed file walked once, each
file of a task's trees opened once. The findings themselves are held by tests/rules and by
tests/test_lint_lean_walk.py (every finding on a suite of standard-library tests)."""

from __future__ import annotations

import ast
import builtins
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import endstate_author.engine.context as context_module
from endstate_author.engine.astwalk import NodeIndex, preorder, walk_spans
from endstate_author.lint import run as lint

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = str(ROOT / "endstate_author" / "rules")
TREES = ("fixture", "holdout", "solution", "defects")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    out = tmp_path / "suite"
    shutil.copytree(ROOT / "tasks", out, symlinks=True)
    assert len(list(out.glob("*/task.json"))) >= 10
    return out


def _lint_in_process(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lint, "PARALLEL_MIN_TASKS", 1 << 30)  # every task here, watched
    lint.lint_paths([suite], isolated=True)


def test_no_rule_walks_a_tree_of_its_own_or_dumps_one(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    for name in ("walk", "iter_child_nodes", "dump"):
        original = getattr(ast, name)

        def watched(*args: Any, _original: Any = original, _name: str = name,
                    **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            if caller.startswith(RULES_DIR) or caller == context_module.__file__:
                calls[f"{_name} from {Path(caller).name}"] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(ast, name, watched)
    _lint_in_process(suite, monkeypatch)
    assert not calls, f"rules walked or dumped syntax trees themselves: {dict(calls)}"


def test_each_parsed_file_is_walked_once(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked: Counter[int] = Counter()

    def watched(module: ast.AST) -> tuple[list[ast.AST], list[int]]:
        if isinstance(module, ast.Module):
            walked[id(module)] += 1
        return walk_spans(module)

    kept: list[ast.AST] = []  # the modules stay alive, so no id is reused
    original = context_module.TaskContext.python_module

    def keep(self: context_module.TaskContext, name: str, rel: str) -> ast.Module | None:
        module = original(self, name, rel)
        if module is not None:
            kept.append(module)
        return module

    monkeypatch.setattr(context_module, "walk_spans", watched)
    monkeypatch.setattr(context_module.TaskContext, "python_module", keep)
    _lint_in_process(suite, monkeypatch)
    assert walked, "no file was walked: the suite exercises nothing"
    assert max(walked.values()) == 1, "a parsed file was walked more than once"


def test_each_file_of_a_task_is_opened_once(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: Counter[str] = Counter()
    original = builtins.open

    def watched(file: Any, *args: Any, **kwargs: Any) -> Any:
        path = str(file)
        if path.startswith(str(suite)):
            rel = Path(path).relative_to(suite).parts
            if len(rel) > 2 and rel[1] in TREES:
                opened[path] += 1
        return original(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", watched)
    _lint_in_process(suite, monkeypatch)
    assert opened, "no file of a task's trees was read: the suite exercises nothing"
    twice = {Path(p).relative_to(suite).as_posix(): n for p, n in opened.items() if n > 1}
    assert not twice, f"files read more than once: {dict(sorted(twice.items())[:10])}"


def test_the_index_lists_what_a_filter_of_the_walk_lists() -> None:
    source = (ROOT / "endstate_author" / "rules" / "es5_judge.py").read_text()
    module = ast.parse(source)
    nodes, starts = walk_spans(module)
    index = NodeIndex(nodes, starts)
    for kinds in [(ast.Call,), (ast.Import, ast.ImportFrom), (ast.Assign, ast.Call, ast.Assert),
                  (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef), (ast.Yield,)]:
        expected = [n for n in nodes if isinstance(n, kinds)]
        assert index.of(*kinds) == expected
        assert index.of(*kinds) is index.of(*kinds)  # made once
    assert index.preorder == preorder(nodes, starts)
    empty = NodeIndex([], [0])
    assert empty.of(ast.Call) == [] and empty.preorder == []


def test_es511s_comparison_says_what_comparing_dumps_says() -> None:
    """ES511 compares two operands without ``ast.dump``: on every pair of expressions of one
    class in this project's rules, it agrees with the dumps' comparison."""
    from endstate_author.rules.es5_tests import _same

    pairs = equal = 0
    for path in sorted((ROOT / "endstate_author" / "rules").glob("es*.py")):
        by_class: dict[type, list[ast.AST]] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.expr):
                by_class.setdefault(type(node), []).append(node)
        for group in by_class.values():
            for a in group[:40]:
                for b in group[:40]:
                    same = ast.dump(a) == ast.dump(b)
                    assert _same(a, b) == same, (ast.dump(a), ast.dump(b))
                    pairs, equal = pairs + 1, equal + same
    assert pairs > 10_000 and equal > 500
