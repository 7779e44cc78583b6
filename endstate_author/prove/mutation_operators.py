"""The operators mutation testing tools have that the first ones here lacked (issue 44, item 5).

Side by side with mutmut and cosmic-ray, four sorts of gap on lines endstate's solutions
change were left untested while every mutant prove made died: a call's value replaced by
None, an arithmetic or bitwise operator replaced by any other (``w - 1`` → ``w ^ 1`` differs
only for even widths), an integer bound in a comparison moved the other way (``amount < 0``
→ ``amount < -1``), and an equality relaxed to an order (``==`` → ``<=``).

They make many mutants (a binary operator has eleven others), so a line's mutants take turns
by kind (:func:`endstate_author.prove.mutation.line_order`) and a line whose first ones are
all killed runs no more of them (:mod:`endstate_author.prove.checks.mutants`): the new kinds
cost little where a line is tested well, and run in full where it is not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from endstate_author.prove.mutation_edits import _BIN, _SYMBOL, Edit, Source, _replaced, _short
from endstate_author.prove.mutation_equivalents import Callees

NEW_KINDS = ("call-none", "arithmetic-other", "comparison-relax", "comparison-shift")
"""The kinds this module makes."""

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)

_IDENTITY = {0: ({ast.Add, ast.Sub}, {ast.BitOr, ast.BitXor, ast.LShift, ast.RShift}),
             1: ({ast.Mult, ast.Pow},)}  # fmt: skip
"""For a right operand of 0 or 1, the operators that each give the left operand back:
replacing one by another of the same set is no change."""

_RELAXED: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Eq: (ast.LtE, ast.GtE), ast.NotEq: (ast.Lt, ast.Gt),
}  # fmt: skip
"""``==`` relaxed to an order (one side of equal also passes), ``!=`` to a strict one (one
side of different no longer passes)."""

_DEREFERENCED = (ast.Attribute, ast.Subscript, ast.Starred, ast.Await, ast.withitem,
                 ast.For, ast.AsyncFor, ast.comprehension, ast.Return, ast.Expr)
"""Parents in which a call's value replaced by None either only crashes at once (``None.x``,
``for x in None``: any test reaching the line sees it, which says nothing of a check) or is
no mutant of the value (a statement's value is unused; ``return f()`` → ``return None`` is
``return-none``'s)."""


def _family(op: type[ast.operator]) -> tuple[type[ast.operator], ...]:
    """The operators one can stand for another: arithmetic and bitwise alike, as the gap
    that showed them missing was ``w - 1`` for ``w ^ 1`` (the same for odd widths only)."""
    both = _ARITHMETIC + _BITWISE
    return both if op in both else ()


def _sequence_like(node: ast.AST) -> bool:
    """An operand that makes ``+``, ``*`` or ``%`` a concatenation, repetition or format:
    any other operator is a type error any test reaching the line sees."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    return isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp, ast.Dict,
                             ast.Set))


def _identical(op: type[ast.operator], other: type[ast.operator], right: ast.AST) -> bool:
    if not isinstance(right, ast.Constant) or type(right.value) is not int:
        return False
    return any(op in group and other in group for group in _IDENTITY.get(right.value, ()))


def other_operators(
    node: ast.BinOp | ast.AugAssign, right: ast.AST, left: ast.AST | None
) -> list[type[ast.operator]]:
    """The operators of ``node``'s kind it is not, and not its classic replacement (made
    already), nor one that is surely no change."""
    op = type(node.op)
    if left is not None and (_sequence_like(left) or _sequence_like(right)):
        return []
    if left is None and _sequence_like(right):
        return []
    classic = _BIN.get(op)
    return [o for o in _family(op) if o is not op and o is not classic
            and not _identical(op, o, right)]


def _in_decorator_or_base(node: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True  # a decorator, a base class or a keyword of a class statement
    return False


def more_mutations(
    node: ast.AST, src: Source, parents: dict[int, ast.AST], callees: Callees | None = None
) -> Iterator[tuple[str, str, list[Edit]]]:
    """(kind, description, edits) of the newer operators for one node."""
    if not hasattr(node, "end_lineno"):
        return
    span = src.span(node)
    parent = parents.get(id(node))
    if isinstance(node, ast.BinOp):
        for other in other_operators(node, node.right, node.left):
            text = "(" + ast.unparse(_replaced(node, op=other())) + ")"
            yield ("arithmetic-other", f"`{_SYMBOL[type(node.op)]}` → `{_SYMBOL[other]}`",
                   [(*span, text)])  # fmt: skip
    elif isinstance(node, ast.AugAssign):
        for other in other_operators(node, node.value, None):
            text = ast.unparse(_replaced(node, op=other()))
            yield ("arithmetic-other", f"`{_SYMBOL[type(node.op)]}=` → `{_SYMBOL[other]}=`",
                   [(*span, text)])  # fmt: skip
    elif isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if any(isinstance(s, ast.Constant) and (
                    s.value is None or isinstance(s.value, (bool, str, bytes)))
                   for s in (sides[i], sides[i + 1])):
                # an order against None or a bool is a type error or no change; against a
                # word it is no mistake anyone makes, and among a few known words often no
                # change (``how >= "right"`` for how in left, right, center)
                continue
            for relaxed in _RELAXED.get(type(op), ()):
                ops = list(node.ops)
                ops[i] = relaxed()
                text = "(" + ast.unparse(_replaced(node, ops=ops)) + ")"
                yield ("comparison-relax", f"`{_SYMBOL[type(op)]}` → `{_SYMBOL[relaxed]}`",
                       [(*span, text)])  # fmt: skip
    elif isinstance(node, ast.Constant) and isinstance(parent, ast.Compare):
        # the constant mutants move 0 and 1 one way only (to 1 and 0); a bound moves both
        if type(node.value) is int and node.value in (0, 1):
            moved = node.value - 1 if node.value == 0 else node.value + 1
            yield ("comparison-shift", f"`{node.value}` → `{moved}` (the bound moved)",
                   [(*span, f"({moved})" if moved < 0 else str(moved))])
    elif isinstance(node, ast.Call):
        if isinstance(parent, _DEREFERENCED) or _in_decorator_or_base(node, parent):
            return
        if isinstance(parent, ast.Call) and parent.func is node:
            return  # ``f()(x)`` → ``None(x)``: only a crash
        if isinstance(parent, ast.keyword) and parent.arg is None:
            return  # ``f(**g())`` → ``f(**None)``: the same
        if callees is not None and callees.returns_none(node):
            return  # its value is None already
        yield ("call-none", f"`{_short(src.segment(node))}` → `None`", [(*span, "None")])
