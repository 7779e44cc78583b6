"""Where a Python syntax tree can be mutated, as edits of its source text."""

from __future__ import annotations

import ast
import copy
import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

from endstate_author.prove.mutation_equivalents import Callees, asserts_itself, empty_literal
from endstate_harness.graders import pyast

_CMP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}  # fmt: skip
_BIN: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.FloorDiv,
    ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.LShift: ast.RShift,
    ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}  # fmt: skip
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.And: "and", ast.Or: "or", ast.Not: "not", ast.USub: "-",
    ast.UAdd: "+", ast.Invert: "~",
}  # fmt: skip
_REMOVABLE = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Assert,
    ast.Delete, ast.Break, ast.Continue,
)  # fmt: skip

_SYMMETRIC = frozenset({"min", "max", "hypot", "gcd", "lcm", "isclose"})
"""Calls whose first two arguments commute: swapping them is an equivalent mutant."""

Edit = tuple[int, int, str]
"""(start byte, end byte, new text) in the file's UTF-8 bytes."""

Siblings = Callable[[ast.AST], list[str]]
"""The source texts that could stand for a constant reference in its place (``Mode.FAST``
for ``Mode.SLOW``); [] for a node that is no constant reference."""

_LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}
)
CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
"""A name written as a constant (``MAX_SIZE``, ``HALF_UP``)."""


class Source:
    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.starts = [0]
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.data[start:end].decode("utf-8")

    def indent(self, node: ast.AST) -> str:
        start = self.starts[node.lineno - 1]  # type: ignore[attr-defined]
        return self.data[start : self.offset(node.lineno, node.col_offset)].decode()  # type: ignore[attr-defined]

    def apply(self, edits: list[Edit]) -> bytes:
        out = self.data
        for start, end, new in sorted(edits, reverse=True):
            out = out[:start] + new.encode("utf-8") + out[end:]
        return out


def _replaced(node: ast.AST, **fields: object) -> ast.AST:
    clone = copy.copy(node)
    for key, value in fields.items():
        setattr(clone, key, value)
    return clone


def docstrings(tree: ast.AST) -> set[int]:
    """Nodes no mutant may touch: string statements (docstrings, attribute docs) and type
    annotations, which change no behaviour a grader can see."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        annotations: list[ast.AST | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            annotations.append(node)
        for annotation in annotations:
            if annotation is not None:
                ids.update(id(inner) for inner in ast.walk(annotation))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0]))
                ids.add(id(body[0].value))
    return ids


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def is_log_call(node: ast.AST) -> bool:
    """``logger.info(...)``, ``logging.warning(...)``, ``self.log.error(...)``,
    ``warnings.warn(...)``: calls whose strings are messages for people."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = _dotted(node.func.value).lower()
    if node.func.attr == "warn" and receiver == "warnings":
        return True
    return node.func.attr in _LOG_METHODS and "log" in receiver


def _is_all(stmt: ast.AST) -> bool:
    """A statement that defines or extends ``__all__``."""
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend"):
            targets = [func.value]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def quiet(tree: ast.AST) -> tuple[set[int], set[int]]:
    """(nodes no mutant touches at all, message strings) of a module.

    An exception's message (the strings given to the exception a ``raise`` builds), a log
    call's message (and the log call itself: removing it changes only what a person reads),
    and ``__all__`` (which only ``import *`` reads) change nothing a grader should check:
    their mutants were reported as survivors on sound tasks."""
    untouched: set[int] = set()
    messages: set[int] = set()
    for node in ast.walk(tree):
        if _is_all(node) or is_log_call(node):
            untouched.update(id(inner) for inner in ast.walk(node))
        elif isinstance(node, ast.Expr) and is_log_call(node.value):
            untouched.add(id(node))
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call = node.exc
            untouched.add(id(call))  # its arguments are not dropped or swapped either
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                for inner in ast.walk(arg):
                    if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                        messages.add(id(inner))
    for node in ast.walk(tree):  # a log call's strings are messages too (for normalising)
        if is_log_call(node):
            messages.update(
                id(inner) for inner in ast.walk(node)
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str)
            )  # fmt: skip
    return untouched, messages


def normalise_quiet(tree: ast.Module) -> None:
    """Blank what :func:`quiet` leaves alone, in place, so two trees that differ only there
    compare equal (a hunk that only edits a message or ``__all__`` is no mutant)."""
    untouched, messages = quiet(tree)
    for node in ast.walk(tree):
        if id(node) in messages and isinstance(node, ast.Constant):
            node.value = ""
        elif _is_all(node) and id(node) in untouched:
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                node.value = ast.Constant(None)
            elif isinstance(node, ast.Expr):
                node.value = ast.Constant(None)


def _constant_swaps(node: ast.Constant) -> list[tuple[str, str]]:
    """(new source, description) for a constant."""
    value = node.value
    if isinstance(value, bool):
        return [(repr(not value), f"`{value}` → `{not value}`")]
    if isinstance(value, int):
        if value in (0, 1):
            return [(repr(1 - value), f"`{value}` → `{1 - value}`")]
        return [(repr(value + 1), f"`{value}` → `{value + 1}`"),
                (repr(value - 1), f"`{value}` → `{value - 1}`")]  # fmt: skip
    if isinstance(value, float):
        return [(repr(value + 1), f"`{value!r}` → `{value + 1!r}`")]
    if isinstance(value, str):
        if value:
            return [('""', f'`{_short(repr(value))}` → `""`')]
        return [('"mutant"', '`""` → `"mutant"`')]
    return []


def _short(text: str, width: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def node_mutations(
    node: ast.AST,
    src: Source,
    parents: dict[int, ast.AST],
    skip: set[int],
    siblings: Siblings | None = None,
    callees: Callees | None = None,
) -> Iterator[tuple[str, str, list[Edit]]]:
    """(kind, description, edits) for one node; ``callees`` resolves a call's parameter
    defaults (an argument dropped that is its default is no mutant)."""
    start_end = src.span(node) if hasattr(node, "end_lineno") else None
    if isinstance(node, ast.Compare) and start_end:
        for i, op in enumerate(node.ops):
            new_op = _CMP.get(type(op))
            if new_op is None:
                continue
            ops = list(node.ops)
            ops[i] = new_op()
            text = "(" + ast.unparse(_replaced(node, ops=ops)) + ")"
            yield ("comparison", f"`{_SYMBOL[type(op)]}` → `{_SYMBOL[new_op]}`",
                   [(*start_end, text)])  # fmt: skip
    elif isinstance(node, ast.BinOp) and start_end:
        new_bin = _BIN.get(type(node.op))
        if new_bin is not None:
            text = "(" + ast.unparse(_replaced(node, op=new_bin())) + ")"
            yield ("arithmetic", f"`{_SYMBOL[type(node.op)]}` → `{_SYMBOL[new_bin]}`",
                   [(*start_end, text)])  # fmt: skip
    elif isinstance(node, ast.AugAssign) and start_end:
        new_bin = _BIN.get(type(node.op))
        if new_bin is not None:
            text = ast.unparse(_replaced(node, op=new_bin()))
            yield ("arithmetic", f"`{_SYMBOL[type(node.op)]}=` → `{_SYMBOL[new_bin]}=`",
                   [(*start_end, text)])  # fmt: skip
    elif isinstance(node, ast.BoolOp) and start_end:
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        text = "(" + ast.unparse(_replaced(node, op=other)) + ")"
        yield ("boolean", f"`{_SYMBOL[type(node.op)]}` → `{_SYMBOL[type(other)]}`",
               [(*start_end, text)])  # fmt: skip
    elif isinstance(node, ast.UnaryOp) and start_end and not isinstance(node.op, ast.UAdd):
        operand = src.segment(node.operand)
        number = node.operand.value if isinstance(node.operand, ast.Constant) else None
        if isinstance(node.op, ast.USub) and type(number) in (int, float):
            for text, description in _constant_swaps(ast.Constant(-number)):  # type: ignore[operator]
                yield "constant", description, [(*start_end, f"({text})")]
        else:
            yield ("unary", f"`{_SYMBOL[type(node.op)]}` removed",
                   [(*start_end, f"({operand})")])  # fmt: skip
    elif isinstance(node, ast.Constant) and start_end and id(node) not in skip:
        parent = parents.get(id(node))
        if isinstance(parent, (ast.JoinedStr, ast.FormattedValue)):
            return
        if isinstance(parent, ast.UnaryOp):
            return  # -1 is mutated as one number by the unary rule's sibling below
        for text, description in _constant_swaps(node):
            yield "constant", description, [(*start_end, text)]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and start_end:
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and (
            not node.elts or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
        ):
            return
        if isinstance(node, ast.Dict) and not node.keys:
            return
        if isinstance(parents.get(id(node)), ast.Subscript):
            return
        empty = {ast.List: "[]", ast.Tuple: "()", ast.Set: "set()", ast.Dict: "{}"}[type(node)]
        yield "collection", f"`{_short(src.segment(node))}` → `{empty}`", [(*start_end, empty)]
    if isinstance(node, ast.Return) and node.value is not None and start_end:
        value = node.value
        if not (isinstance(value, ast.Constant) and value.value is None):
            yield ("return-none", f"`return {_short(src.segment(value))}` → `return None`",
                   [(*src.span(value), "None")])  # fmt: skip
    if (isinstance(node, _REMOVABLE) and start_end and id(node) not in skip
            and not asserts_itself(node)):
        yield ("remove-statement", f"`{_short(src.segment(node))}` removed",
               [(*start_end, "pass")])  # fmt: skip
    if isinstance(node, ast.If) and node.orelse and start_end:
        swapped = ast.If(test=node.test, body=node.orelse, orelse=node.body)
        indent = src.indent(node)
        text = ast.unparse(swapped).replace("\n", "\n" + indent)
        yield "swap-if-else", "the `if` and `else` branches swapped", [(*start_end, text)]
    if (
        isinstance(node, ast.Call)
        and len(node.args) >= 2
        and not (isinstance(node.func, ast.Name) and node.func.id in _SYMMETRIC)
    ):
        first, second = node.args[0], node.args[1]
        if not any(isinstance(a, ast.Starred) or empty_literal(a) for a in (first, second)):
            a, b = src.segment(first), src.segment(second)
            if a != b:
                yield ("swap-args", f"arguments `{_short(a, 20)}` and `{_short(b, 20)}` swapped",
                       [(*src.span(first), b), (*src.span(second), a)])  # fmt: skip
    if isinstance(node, ast.Call) and start_end:
        yield from _call_mutations(node, src, start_end, callees)
    if siblings is not None and start_end and isinstance(getattr(node, "ctx", None), ast.Load):
        own = src.segment(node)
        for sibling in siblings(node):
            yield "sibling-constant", f"`{own}` → `{sibling}`", [(*start_end, sibling)]


_LAST_DEFAULTS = {"int": 10, "enumerate": 0, "sum": 0}
"""Builtins whose last positional argument, at this value, is what they do without it."""


def _default_like(value: ast.AST, call: ast.Call | None = None) -> bool:
    """An argument that is almost surely what the callee does without it (``None``,
    ``False``, ``"utf-8"``, ``int(s, 10)``): removing it is an equivalent mutant, not a
    mistake."""
    if not isinstance(value, ast.Constant):
        return False
    if value.value is None or value.value is False:
        return True
    if call is not None and isinstance(call.func, ast.Name) and len(call.args) == 2:
        known = _LAST_DEFAULTS.get(call.func.id)
        if known is not None and value.value == known and type(value.value) is int:
            return True
    return isinstance(value.value, str) and value.value.lower().replace("_", "-") in (
        "utf-8", "utf8"
    )


def _call_mutations(
    node: ast.Call, src: Source, start_end: tuple[int, int], callees: Callees | None = None
) -> Iterator[tuple[str, str, list[Edit]]]:
    """A keyword argument removed (the callee's default stands), the last positional argument
    dropped (the optional argument one forgets): the call written again without it. Not
    where the argument is the very literal the callee defaults it to."""
    for keyword in node.keywords:
        if keyword.arg is None or _default_like(keyword.value):
            continue  # **kwargs is not one keyword; a default-like value changes nothing
        if callees is not None and callees.default_argument(node, keyword.value):
            continue
        kept = [k for k in node.keywords if k is not keyword]
        yield ("remove-keyword", f"keyword argument `{keyword.arg}=` removed",
               [(*start_end, ast.unparse(_replaced(node, keywords=kept)))])  # fmt: skip
    if node.args and not isinstance(node.args[-1], ast.Starred):
        last = node.args[-1]
        if not _default_like(last, node) and not (
            callees is not None and callees.default_argument(node, last)
        ):
            yield ("drop-argument", f"argument `{_short(src.segment(last), 20)}` dropped",
                   [(*start_end, ast.unparse(_replaced(node, args=node.args[:-1])))])  # fmt: skip


def node_path(
    node: ast.AST, parents: dict[int, ast.AST], steps: dict[int, tuple[str, int | None]]
) -> list[tuple[str, int | None]]:
    """The fields (and list indexes) leading from the module to ``node``."""
    out = []
    while id(node) in steps:
        out.append(steps[id(node)])
        node = parents[id(node)]
    out.reverse()
    return out


def unchanged_tree(
    mutated: ast.Module,
    path: list[tuple[str, int | None]],
    node_dump: str,
    tree: ast.Module,
    original: list[str],
) -> bool:
    """Whether the mutated module's syntax tree is the original's (the edit changed only
    spelling, as swapping two equal arguments does).

    A mutation edits the text of one node. Its subtree, found by the same path in the
    mutated tree, almost always differs, which settles it cheaply: a tree whose subtree
    differs (or whose path leads nowhere) differs. Only when that subtree is the same are
    the whole modules compared, as before.
    """
    here: Any = mutated
    for field, index in path:
        here = getattr(here, field, None)
        if index is not None:
            here = here[index] if isinstance(here, list) and index < len(here) else None
        if here is None:
            return False
    if not isinstance(here, ast.AST) or ast.dump(here) != node_dump:
        return False
    if not original:
        original.append(ast.dump(tree))
    return ast.dump(mutated) == original[0]


WHOLE_MODULE = False
"""Parse every mutant's whole module (the reference :func:`mutated_statement` is held to in
``tests/prove/test_mutation_statement.py``), not just the statement it edits."""


@dataclasses.dataclass
class Statements:
    """A module's top-level statements, each parsed alone from a mutant's text (a mutant
    edits one node, so only the statement holding it can change).

    Why: every candidate mutant is parsed to drop the ones that do not parse or change
    nothing, and prove plans the mutants before the first one runs; parsing the whole module
    for each took most of that planning (add-markdown-table-alignment: 100 parses of a
    68-line module, 0.14 s of 0.19 s)."""

    tree: ast.Module
    src: Source
    _dumps: dict[int, str] = dataclasses.field(default_factory=dict)

    def span(self, index: int) -> tuple[int, int]:
        """Bytes of top-level statement ``index``: from the start of its first line (its
        first decorator's) to its end (not what follows it on that line)."""
        stmt = self.tree.body[index]
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        end = self.src.offset(stmt.end_lineno, stmt.end_col_offset)  # type: ignore[arg-type]
        return self.src.starts[first - 1], end

    def dump(self, index: int) -> str:
        if index not in self._dumps:
            alone = ast.Module(body=[self.tree.body[index]], type_ignores=[])
            self._dumps[index] = ast.dump(alone)
        return self._dumps[index]


def mutated_statement(
    statements: Statements, path: list[tuple[str, int | None]], edits: list[Edit],
    content: bytes, node_dump: str,
) -> bool | None:
    """Whether the mutant ``content`` (``edits`` applied) parses and changes the syntax tree:
    True keep it, False drop it, None when this cannot say without the whole module (the
    node is not inside a top-level statement, or an edit reaches outside it).

    The statement's mutated text is parsed alone. At the top level nothing before or after
    it changes how it parses (no indentation, no open bracket carries over a complete
    statement), and a syntax tree's dump has no positions, so its dump against the original
    statement's says what the whole module's would."""
    if WHOLE_MODULE or not path or path[0][0] != "body" or path[0][1] is None:
        return None
    index = path[0][1]
    start, end = statements.span(index)
    grown = 0
    for first, last, new in edits:
        if first < start or last > end:
            return None
        grown += len(new.encode("utf-8")) - (last - first)
    try:
        alone = pyast.parse(content[start : end + grown])
    except (SyntaxError, ValueError):
        return False
    at: list[tuple[str, int | None]] = [("body", 0), *path[1:]]
    return not unchanged_tree(alone, at, node_dump, statements.tree, [statements.dump(index)])
