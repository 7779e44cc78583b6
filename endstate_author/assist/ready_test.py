""""Add this check to the holdout": a finding's ready assertion as a test method of a holdout
test file the author picks.

A surviving mutant with a counterexample (prove's ES911) carries the call on which it and the
solution differ, and an assertion holding the solution's outcome. This turns that assertion
into an edit, one per holdout test file: a method appended to the file's last
``unittest.TestCase`` class (a new class when it has none), and the imports the assertion
needs — the called name from its module, an exception class from its own — added only where
the file does not bind that name already. Which findings qualify is read from what the
finding carries (its ``counterexample``), never from its code, so the editor holds no rule
codes of its own. Nothing is written here: the editor offers the edit, the author applies it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from endstate_author.assist.actions import Action
from endstate_author.assist.vocabulary import MAX_DOCUMENT_BYTES
from endstate_author.engine.diagnostics import Diagnostic, TextEdit
from endstate_harness.graders import pyast
from endstate_harness.layout import HOLDOUT_DIR

_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLASS = "HoldoutCounterexampleTest"

Reader = Callable[[Path], bytes | None]


def _read_disk(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_DOCUMENT_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def holdout_test_files(root: Path) -> list[Path]:
    """The holdout's test files (regular files, never through a link), in path order."""
    holdout = root / HOLDOUT_DIR
    if holdout.is_symlink() or not holdout.is_dir():
        return []
    out = []
    for path in sorted(holdout.rglob("*.py")):
        rel = path.relative_to(holdout)
        linked = any((holdout / Path(*rel.parts[: i + 1])).is_symlink()
                     for i in range(len(rel.parts)))
        if _TEST_FILE.match(path.name) and not linked and path.is_file():
            out.append(path)
    return out


def ready_tests(root: Path, diagnostics: list[Diagnostic],
                open_text: Reader | None = None) -> list[Action]:
    """For each finding carrying a ready assertion, one action per holdout test file of the
    task at ``root`` ("add this check to the holdout: tests/test_x.py"). ``open_text`` gives
    an open file's unsaved text (None for a file not open: it is read from the disk)."""

    def read(path: Path) -> bytes | None:
        found = open_text(path) if open_text is not None else None
        return found if found is not None else _read_disk(path)

    out = []
    files = holdout_test_files(root)
    for diag in diagnostics:
        example = dict(diag.counterexample or {})
        assertion = example.get("assertion")
        if not isinstance(assertion, str) or not assertion.strip():
            continue
        if not isinstance(example.get("module"), str):
            example.update(_imported_by_tests(root, example, read))
        for path in files:
            data = read(path)
            if data is None:
                continue
            edits = appended(path, data, example)
            if edits is None:
                continue
            rel = path.relative_to(root).as_posix()
            out.append(Action(f"Add this check to the holdout: {rel}", "quickfix", edits,
                              diagnostics=(diag,)))
    return out


def _called_head(example: dict[str, Any]) -> str | None:
    """The name a test calls first in the shown call: ``units_of`` in ``units_of('m')``,
    ``Page`` in ``Page(3).last()``."""
    try:
        node = pyast.expression(str(example.get("call") or "")).body
    except (SyntaxError, ValueError):
        return None
    while isinstance(node, ast.Call | ast.Attribute):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _imported_by_tests(root: Path, example: dict[str, Any], read: Reader) -> dict[str, str]:
    """Where the task's own tests import the called name from (``{"module", "name"}``), for
    a finding that does not say; {} when none does."""
    head = _called_head(example)
    if head is None:
        return {}
    fixture = root / "fixture"
    tests = holdout_test_files(root) + sorted(
        p for p in fixture.rglob("*.py") if _TEST_FILE.match(p.name) and not p.is_symlink()
    ) if fixture.is_dir() and not fixture.is_symlink() else holdout_test_files(root)
    for path in tests:
        data = read(path)
        try:
            tree = pyast.parse(data or b"")
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and any(
                    (a.asname or a.name) == head and a.name == head for a in node.names):
                return {"module": node.module, "name": head}
    return {}


def needed_imports(example: dict[str, Any]) -> list[tuple[str, str]]:
    """(module, name) pairs the assertion needs: the called name (the class, for a method
    of an instance) and a raised exception's class unless it is a builtin."""
    wanted: list[tuple[str, str]] = []
    module, name = example.get("module"), example.get("name")
    if isinstance(module, str) and isinstance(name, str) and name:
        head = name.split(".", 1)[0]
        if _NAME.match(head) and all(_NAME.match(p) for p in module.split(".")):
            wanted.append((module, head))
    raised = (example.get("solution") or {}).get("raises")
    if isinstance(raised, str) and "." in raised:
        owner, _, kind = raised.rpartition(".")
        if owner != "builtins" and _NAME.match(kind) and all(
                _NAME.match(p) for p in owner.split(".")):
            wanted.append((owner, kind))
    return wanted


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level (imports, defs, classes, assignments)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".", 1)[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    for found in re.finditer(rb"\n", data):
        starts.append(found.end())
    return starts


def _line_end(data: bytes, starts: list[int], line: int) -> int:
    """The byte offset of the end of ``line`` (1-based), before its newline."""
    end = starts[line] - 1 if line < len(starts) else len(data)
    if end > 0 and data[end - 1 : end] == b"\r":
        end -= 1
    return end


def _is_test_case(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if isinstance(name, str) and name.endswith("TestCase"):
            return True
    return False


def _method_names(node: ast.ClassDef) -> set[str]:
    return {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _method_name(example: dict[str, Any], taken: set[str]) -> str:
    mutant = example.get("mutant_id")
    called = str(example.get("name") or "").split(".")[-1]
    stem = "test_tells_" + (mutant if isinstance(mutant, str) and _NAME.match(mutant)
                            else called if _NAME.match(called) else "the_mutant")
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}_{n}", n + 1
    return name


def _method(example: dict[str, Any], name: str, indent: str, step: str) -> Iterator[str]:
    yield f"{indent}def {name}(self):"
    mutant = example.get("mutant_id")
    if isinstance(mutant, str) and _NAME.match(mutant):
        yield f"{indent}{step}# the call on which mutant {mutant} and the solution differ"
    for part in str(example["assertion"]).splitlines():
        yield f"{indent}{step}{part}" if part.strip() else ""


def appended(path: Path, data: bytes, example: dict[str, Any]) -> tuple[TextEdit, ...] | None:
    """The edits adding the ready test to the file ``path`` holding ``data``; None when the
    file is no Python this can place a test in exactly (it does not parse)."""
    try:
        text = data.decode("utf-8")
        tree = pyast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None
    newline = "\r\n" if b"\r\n" in data else "\n"
    starts = _line_starts(data)
    bound = _bound_names(tree)
    imports = [(m, n) for m, n in needed_imports(example) if n not in bound]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and _is_test_case(n)]
    edits: list[TextEdit] = []
    if classes:
        owner = classes[-1]
        first = owner.body[0]
        indent = " " * first.col_offset
        step = " " * max(4, first.col_offset - owner.col_offset)
        lines = _method(example, _method_name(example, _method_names(owner)), indent, step)
        at = _line_end(data, starts, owner.end_lineno or owner.lineno)
        body = newline.join(lines)
        edits.append(TextEdit(path, at, at, f"{newline}{newline}{body}"))
    else:
        if "unittest" not in bound:
            imports.insert(0, ("", "unittest"))
        lines = _method(example, _method_name(example, set()), "    ", "    ")
        body = newline.join([f"class {_CLASS}(unittest.TestCase):", *lines])
        lead = "" if not data or data.endswith(b"\n") else newline
        gap = newline * 2 if data.strip() or imports else ""
        edits.append(TextEdit(path, len(data), len(data), f"{lead}{gap}{body}{newline}"))
    if imports:
        statements = [f"import {n}" if not m else f"from {m} import {n}" for m, n in imports]
        placed = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        if placed:
            at = _line_end(data, starts, placed[-1].end_lineno or placed[-1].lineno)
            edits.insert(0, TextEdit(path, at, at, "".join(newline + s for s in statements)))
        else:
            at = _after_docstring(tree, data, starts)
            lead = newline if at == len(data) and data and not data.endswith(b"\n") else ""
            edits.insert(0, TextEdit(path, at, at,
                                     lead + "".join(s + newline for s in statements)))
    if len(edits) == 2 and edits[0].start == edits[1].start:  # one insertion, in order
        edits = [TextEdit(path, edits[0].start, edits[0].end,
                          edits[0].new_text + edits[1].new_text)]
    return tuple(edits)


def _after_docstring(tree: ast.Module, data: bytes, starts: list[int]) -> int:
    """Where a first import goes: after the module's docstring, else at the top."""
    first = tree.body[0] if tree.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        line = first.end_lineno or first.lineno
        return starts[line] if line < len(starts) else len(data)
    return 0
