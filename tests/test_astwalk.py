"""The list walks lint shares between rules visit exactly what :mod:`ast`'s walks visit, less
the expression contexts (``Load``, ``Store``, ``Del``), in the same orders."""

from __future__ import annotations

import ast
from pathlib import Path

from endstate_author.engine.astwalk import EXPR_CONTEXTS, child_nodes, preorder, walk, walk_spans

ROOT = Path(__file__).resolve().parent.parent

EVERY_KIND = '''
from __future__ import annotations
import os.path as p, sys
from . import sibling
global_name: int = 1
type_alias = list[int]
@decorator(arg=1)
async def f(a, /, b: int = 2, *args, c, d=3, **kw) -> "str":
    global g
    x = [i async for i in aiter() if i]
    y = {k: v for k, v in kw.items()}
    z = {e for e in args}
    w = (q for q in x)
    del x[0], y
    async with open(a) as h, ctx() as (m, n):
        await h.read()
    async for s in stream():
        yield s
    try:
        raise ValueError("no") from None
    except (TypeError, ValueError) as err:
        pass
    else:
        ...
    finally:
        return f"{a!r:>{b}} {c}"
try:
    pass
except* OSError:
    pass
class C(Base, metaclass=Meta):
    """doc"""
    attr: list[int] = []
    def m(self):
        nonlocal_holder = lambda *a, **k: (yield)
        def inner():
            nonlocal nonlocal_holder
        self.attr[1:2:3] += [not a for a in range(3)]
        assert self, "msg"
        while True:
            break
        for i, *rest in enumerate("ab"):
            continue
        print(i if i else -i, i @ i, i ** 2, i // 1, ~i, +i, i << 1 | 2 & 3 ^ 4 >> 5)
        return a < b <= c != d is not e in f not in g and h or i
match command:
    case [1, 2, *others] if others:
        pass
    case {"k": v, **rest}:
        pass
    case Point(x=0, y=yy) | Point(1, 2) as point:
        pass
    case None | True | -1 | 1 + 2j | "s" | b"b" | _:
        pass
'''


class _Order(ast.NodeVisitor):
    def __init__(self) -> None:
        self.seen: list[ast.AST] = []

    def generic_visit(self, node: ast.AST) -> None:
        self.seen.append(node)
        super().generic_visit(node)


def _sources() -> list[tuple[str, str]]:
    files = sorted(ROOT.glob("endstate_author/**/*.py")) + sorted(ROOT.glob("tasks/**/*.py"))
    assert len(files) > 50
    return [("every kind of node", EVERY_KIND)] + [
        (str(path), path.read_text(encoding="utf-8")) for path in files
    ]


def _without_contexts(nodes: list[ast.AST]) -> list[ast.AST]:
    return [n for n in nodes if not isinstance(n, EXPR_CONTEXTS)]


def test_walks_match_ast_on_this_projects_own_source_and_the_shipped_tasks() -> None:
    for where, text in _sources():
        module = ast.parse(text)
        assert walk(module) == _without_contexts(list(ast.walk(module))), where
        order = _Order()
        order.visit(module)
        assert preorder(*walk_spans(module)) == _without_contexts(order.seen), where


def test_children_match_iter_child_nodes_for_every_node() -> None:
    for where, text in _sources()[:40]:
        for node in ast.walk(ast.parse(text)):
            expected = _without_contexts(list(ast.iter_child_nodes(node)))
            assert child_nodes(node) == expected, (where, ast.dump(node)[:80])


def test_no_walk_lists_an_expression_context() -> None:
    nodes = walk(ast.parse(EVERY_KIND))
    assert not [n for n in nodes if isinstance(n, EXPR_CONTEXTS)]
    kinds = {type(n).__name__ for n in nodes}
    # the walk still reaches what sits below a context-bearing node, and the operators
    assert {"Name", "Starred", "Subscript", "Slice", "MatchAs", "MatchStar", "Lt", "Not",
            "TryStar", "JoinedStr", "FormattedValue", "alias", "keyword"} <= kinds
