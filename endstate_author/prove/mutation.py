"""Wrong solutions nobody wrote: mutants of the reference solution, aimed at what it changes.

A task's graders are proven against the defects its author declared; the mistakes nobody
thought of go unproven. This module *generates* them, only where the solution differs from
the fixture (a mutant of code the task never asks to touch says nothing about the task):

- partial solutions — each hunk of a changed file's diff reverted alone, and each file the
  solution adds left out alone;
- operator mutants on the lines the solution changes or adds (``ast``-based): comparison,
  arithmetic (``/`` → ``//`` included), boolean and unary operators, constants (0 ↔ 1, ±1,
  empty string / collection, ``True`` ↔ ``False``), ``return x`` → ``return None``, a removed
  statement, a swapped ``if``/``else``, a call's first two arguments swapped.

Every mutant has a stable id (``m`` and eight hex digits) computed from the file, the kind of
mutation and the mutated code's syntax tree — never from line numbers — so it survives edits
elsewhere and the comment that marks it equivalent::

    total = price * qty  # endstate: equivalent m1a2b3c4d qty is always 1 here

A marker ``# endstate: equivalent <id> <reason>`` anywhere in the same solution file (the
mutated line is the natural place) silences that mutant; a marker without a reason does not.
Only text is produced here; :mod:`endstate_author.prove.checks.mutants` grades it.
"""

from __future__ import annotations

import ast
import copy
import difflib
import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from endstate_harness import pyast

PRUNED = frozenset(
    {".git", ".hg", ".svn", ".endstate", "__pycache__", ".pytest_cache", ".mypy_cache",
     ".ruff_cache", ".venv", "node_modules"}
)  # fmt: skip
"""Names the sandbox never copies (task format §1): a solution file under one is no change."""

EQUIVALENT = re.compile(r"#\s*endstate:\s*equivalent\s+(m[0-9a-f]{8})\b[ \t:,-]*(\S[^\n]*)?")

PARTIAL_KINDS = frozenset({"revert-hunk", "drop-file"})


@dataclass(frozen=True)
class Mutant:
    """One wrong solution: the solution with ``path`` replaced by ``content`` (None: the
    file is left out, so the fixture's version, or nothing, stands)."""

    id: str
    kind: str
    path: str
    line: int
    description: str
    content: bytes | None

    @property
    def partial(self) -> bool:
        return self.kind in PARTIAL_KINDS


@dataclass
class MutantSet:
    """Every mutant of a task's solution, the ones marked equivalent (id → reason), and the
    markers that name no mutant generated (stale, or mistyped)."""

    mutants: list[Mutant]
    equivalent: dict[str, str]
    unknown_markers: list[tuple[str, int, str]]

    def selected(self, limit: int) -> tuple[list[Mutant], int]:
        """The mutants to run under ``--mutants limit`` and how many were left out.

        Equivalent ones are never run. Partial solutions come first (they are the likeliest
        real mistakes), then operator mutants in id order — a stable, evenly spread sample.
        """
        live = [m for m in self.mutants if m.id not in self.equivalent]
        partial = [m for m in live if m.partial]
        operators = sorted((m for m in live if not m.partial), key=lambda m: m.id)
        chosen = (partial + operators)[: max(0, limit)]
        return chosen, len(live) - len(chosen)


def _stable_id(*parts: str) -> str:
    return "m" + hashlib.sha1("\0".join(parts).encode()).hexdigest()[:8]


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in PRUNED for part in rel.parts) or path.is_symlink() or not path.is_file():
            continue
        yield rel.as_posix(), path


def _text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def generate(fixture: Path, solution: Path) -> MutantSet:
    """Every mutant of ``solution`` (an overlay) against ``fixture``, deduplicated."""
    mutants: list[Mutant] = []
    markers: dict[str, str] = {}
    marker_lines: list[tuple[str, int, str]] = []
    for rel, path in _files(solution):
        after = _text(path)
        if after is None:
            continue
        for lineno, line in enumerate(after.splitlines(), 1):
            for match in EQUIVALENT.finditer(line):
                marker_lines.append((rel, lineno, match.group(1)))
                if match.group(2):
                    markers[match.group(1)] = match.group(2).strip()
        before_path = fixture / rel
        if not before_path.is_file() or before_path.is_symlink():
            mutants.extend(_file_mutants(rel, None, after))
        else:
            before = _text(before_path)
            if before is None or before == after:
                continue
            mutants.extend(_file_mutants(rel, before, after))
    seen: set[bytes | None] = set()
    unique: list[Mutant] = []
    ids: set[str] = set()
    for m in mutants:
        key = m.path.encode() + b"\0" + (m.content if m.content is not None else b"\0drop")
        if key in seen or m.id in ids:
            continue
        seen.add(key)
        ids.add(m.id)
        unique.append(m)
    unknown = [(rel, line, mid) for rel, line, mid in marker_lines if mid not in ids]
    equivalent = {mid: why for mid, why in markers.items() if mid in ids}
    return MutantSet(unique, equivalent, unknown)


@functools.lru_cache(maxsize=256)
def _file_mutants(rel: str, before: str | None, after: str) -> tuple[Mutant, ...]:
    """The mutants of one file the solution adds (``before`` None) or changes.

    Memoised by content: one prove asks three times (to plan the checks, for the notes on the
    ones skipped, for the score), and the language server on every save, while parsing every
    mutant to drop the ones that change nothing costs tens of milliseconds a file.
    """
    out: list[Mutant] = []
    if before is None:
        out.append(
            Mutant(_stable_id(rel, "drop-file"), "drop-file", rel, 1,
                   f"{rel} left out (the solution adds it)", None)
        )  # fmt: skip
        changed = set(range(1, after.count("\n") + 2))
    else:
        hunks, changed = _hunks(rel, before, after)
        out.extend(hunks)
    if rel.endswith(".py"):
        out.extend(operator_mutants(rel, after, changed))
    return tuple(out)


def _hunks(rel: str, before: str, after: str) -> tuple[list[Mutant], set[int]]:
    """Each hunk of the diff reverted alone, and the solution's changed line numbers."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[Mutant] = []
    changed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed.update(range(j1 + 1, j2 + 1))
        reverted = "".join(new[:j1] + old[i1:i2] + new[j2:])
        if rel.endswith(".py") and _same_code(reverted, after):
            continue  # a docstring or comment hunk: reverting it changes no behaviour
        line = min(j1 + 1, max(1, len(new)))
        span = f"line {j1 + 1}" if j2 - j1 <= 1 else f"lines {j1 + 1}-{j2}"
        what = {"insert": "added", "delete": "removed", "replace": "changed"}[tag]
        if tag == "delete":
            span = f"after line {j1}" if j1 else "at the top"
        out.append(
            Mutant(
                _stable_id(rel, "revert-hunk", "".join(old[i1:i2]), "".join(new[j1:j2])),
                "revert-hunk",
                rel,
                line,
                f"the hunk the solution {what} at {span} reverted",
                reverted.encode(),
            )
        )
    return out, changed


def _code_dump(text: str) -> str | None:
    """The syntax tree without string statements (docstrings), or None if it does not parse."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                s for s in body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]  # fmt: skip
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


def _same_code(a: str, b: str) -> bool:
    dump = _code_dump(a)
    return dump is not None and dump == _code_dump(b)


# --- operator mutants -------------------------------------------------------------------

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


class _Source:
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


def _docstrings(tree: ast.AST) -> set[int]:
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


def _node_mutations(
    node: ast.AST, src: _Source, parents: dict[int, ast.AST], skip: set[int]
) -> Iterator[tuple[str, str, list[Edit]]]:
    """(kind, description, edits) for one node."""
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
    if isinstance(node, _REMOVABLE) and start_end and id(node) not in skip:
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
        if not any(isinstance(a, ast.Starred) for a in (first, second)):
            a, b = src.segment(first), src.segment(second)
            if a != b:
                yield ("swap-args", f"arguments `{_short(a, 20)}` and `{_short(b, 20)}` swapped",
                       [(*src.span(first), b), (*src.span(second), a)])  # fmt: skip


def _path(
    node: ast.AST, parents: dict[int, ast.AST], steps: dict[int, tuple[str, int | None]]
) -> list[tuple[str, int | None]]:
    """The fields (and list indexes) leading from the module to ``node``."""
    out = []
    while id(node) in steps:
        out.append(steps[id(node)])
        node = parents[id(node)]
    out.reverse()
    return out


def _unchanged(
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


def operator_mutants(rel: str, text: str, changed: set[int]) -> list[Mutant]:
    """Operator, constant and statement mutants of the nodes that start on ``changed`` lines."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return []
    src = _Source(text)
    parents: dict[int, ast.AST] = {}
    steps: dict[int, tuple[str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                parents[id(value)], steps[id(value)] = parent, (field, None)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        parents[id(item)], steps[id(item)] = parent, (field, i)
    skip = _docstrings(tree)
    out: list[Mutant] = []
    occurrences: dict[str, int] = {}
    original: list[str] = []  # the whole module's dump, made only if ever needed
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None or line not in changed or id(node) in skip:
            continue
        node_dump = ast.dump(node)
        path = _path(node, parents, steps)
        for kind, description, edits in _node_mutations(node, src, parents, skip):
            content = src.apply(edits)
            try:
                mutated = pyast.parse(content)
            except (SyntaxError, ValueError):
                continue
            if _unchanged(mutated, path, node_dump, tree, original):
                continue
            key = "\0".join((rel, kind, description, node_dump))
            occurrences[key] = occurrences.get(key, 0) + 1
            mid = _stable_id(key, str(occurrences[key]))
            out.append(Mutant(mid, kind, rel, line, description, content))
    return out
