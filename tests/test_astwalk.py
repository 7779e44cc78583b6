"""The list walks lint shares between rules visit exactly what :mod:`ast`'s walks visit."""

from __future__ import annotations

import ast
from pathlib import Path

from endstate_author.astwalk import preorder, walk, walk_spans

ROOT = Path(__file__).resolve().parent.parent


class _Order(ast.NodeVisitor):
    def __init__(self) -> None:
        self.seen: list[ast.AST] = []

    def generic_visit(self, node: ast.AST) -> None:
        self.seen.append(node)
        super().generic_visit(node)


def test_walks_match_ast_on_this_projects_own_source_and_the_shipped_tasks() -> None:
    files = sorted(ROOT.glob("endstate_author/**/*.py")) + sorted(ROOT.glob("tasks/**/*.py"))
    assert len(files) > 50
    for path in files:
        module = ast.parse(path.read_text(encoding="utf-8"))
        assert walk(module) == list(ast.walk(module)), path
        order = _Order()
        order.visit(module)
        assert preorder(*walk_spans(module)) == order.seen, path
