"""Every syntax tree the host builds goes through ``endstate_harness.graders.pyast``.

CPython 3.11 before 3.11.8 shares the AST constructor's depth counter between threads
(gh-106905): a tree built by one thread while another builds one can make either raise
``SystemError: AST constructor recursion depth mismatch``. prove grades in threads, and a fresh
clone's CI met exactly that: "judged_tests raised SystemError" on a solution, from the judge's
evidence parsing the tests without the lock. So the packages are read here, and a call of
``ast.parse``, ``ast.literal_eval`` or ``compile(..., PyCF_ONLY_AST)`` is allowed only where
no other thread of the process can be building a tree at the same time (listed, with why)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness/endstate_harness", "endstate_author", "lsp/endstate_lsp")
ALLOWED = {
    "harness/endstate_harness/graders/pyast.py": "the one place: a lock and retries",
    "harness/endstate_harness/graders/unittest_grader.py":
        "vendored self-contained (no harness import): its own parse retries on the error",
    "harness/endstate_harness/graders/judge/witness.py": "runs in the judge's process alone",
    "endstate_author/vendoring/render.py": "the vendor command, one thread, before any grading",
}
ALLOWED_FOLDERS = {
    "harness/endstate_harness/inside/": "shipped as text into a sandbox's own processes",
}


def _tree_builders(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "ast" and func.attr in ("parse", "literal_eval")):
            lines.append(node.lineno)
        elif (isinstance(func, ast.Name) and func.id == "compile"
              and "PyCF_ONLY_AST" in ast.dump(node)):
            lines.append(node.lineno)
    return lines


def test_every_host_syntax_tree_is_built_through_pyast() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ALLOWED or any(rel.startswith(f) for f in ALLOWED_FOLDERS):
                continue
            found += [f"{rel}:{line}" for line in _tree_builders(ast.parse(path.read_bytes()))]
    assert not found, (
        "build syntax trees with endstate_harness.graders.pyast (parse, expression, "
        f"literal_eval), not ast directly: {found}")


def test_the_check_finds_a_direct_parse() -> None:
    sample = "import ast\nx = ast.parse('1')\ny = ast.literal_eval('2')\n"
    assert _tree_builders(ast.parse(sample)) == [2, 3]
