"""A mutant's statement parsed alone decides what parsing its whole module decided: the same
mutants, in the same order, with the same ids (``mutation_edits.mutated_statement``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from endstate_author.prove import mutation, mutation_edits
from endstate_author.prove.mutation import generate, operator_mutants

ROOT = Path(__file__).resolve().parents[2]

EDGES = '''\
"""A module of the shapes a statement's span must get right."""
import functools

LIMIT = 3; OTHER = LIMIT + 1  # two statements on one line
PAIR = (1,
        2 * LIMIT)


@functools.lru_cache(maxsize=None)
@staticmethod
def decorated(a, b):
    if a > b and not b:
        return a - b
    return a + b  # a comment after the statement


class Box:
    size = LIMIT * 2

    def grow(self, by=1):
        self.size += by
        return [x for x in range(self.size) if x % 2 == 0]


if LIMIT >= 2:
    MODE = "wide"
else:
    MODE = "narrow"

for _i in range(LIMIT):
    OTHER -= 1
pick = lambda xs: xs[0] if xs else None  # noqa: E731
assert LIMIT != 0, "never"
'''


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], list[object]]:
    lines = set(range(1, text.count("\n") + 2))
    alone = operator_mutants("edges.py", text, lines)
    monkeypatch.setattr(mutation_edits, "WHOLE_MODULE", True)
    whole = operator_mutants("edges.py", text, lines)
    return alone, whole


def test_a_module_of_every_shape_gets_the_same_mutants(monkeypatch: pytest.MonkeyPatch) -> None:
    alone, whole = _both(EDGES, monkeypatch)
    assert len(whole) > 40  # the module is mutated all over, so the comparison means something
    assert alone == whole


def test_an_edit_that_does_not_parse_is_dropped_and_one_outside_is_left_to_the_module() -> None:
    src = mutation_edits.Source(EDGES)
    tree = ast.parse(EDGES)
    statements = mutation_edits.Statements(tree, src)
    index = next(i for i, s in enumerate(tree.body) if isinstance(s, ast.FunctionDef))
    start, end = statements.span(index)  # its span starts at the first decorator
    assert src.data[start:end].startswith(b"@functools.lru_cache")
    assert src.data[start:end].endswith(b"return a + b")  # not the comment after it
    broken = src.apply([(start, start + 1, "(")])
    path: list[tuple[str, int | None]] = [("body", index)]
    dump = ast.dump(tree.body[index])
    assert mutation_edits.mutated_statement(statements, path, [(start, start + 1, "(")],
                                            broken, dump) is False
    outside = [(0, 1, "x")]  # an edit before the statement: only the whole module can say
    assert mutation_edits.mutated_statement(statements, path, outside, broken, dump) is None


@pytest.mark.parametrize("task", sorted(p.parent.name for p in (ROOT / "tasks").glob("*/solution")))
def test_every_shipped_task_gets_the_same_mutants(
    task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ROOT / "tasks" / task
    mutation._file_mutants.cache_clear()
    alone = generate(root / "fixture", root / "solution").mutants
    monkeypatch.setattr(mutation_edits, "WHOLE_MODULE", True)
    mutation._file_mutants.cache_clear()
    whole = generate(root / "fixture", root / "solution").mutants
    mutation._file_mutants.cache_clear()
    assert alone == whole
