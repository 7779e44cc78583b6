"""Lint's shared walks leave out the expression contexts (``endstate_author.engine.astwalk``): every
rule must find exactly what it found with ast's full walk.

The tasks are made here from the running Python's own standard library: each holds one
module as the code under test (the solution changes a comment), its test module from
``test/`` as the holdout and another as the visible tests, so ES508's operand scanner, ES312,
ES408 and ES601 read thousands of real test lines, with annotations, nested scopes and
imports of every shape. Then the suite is linted twice, with the lean walks and with ones that
list the contexts as ast.walk does, and the findings compared.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

import endstate_author.engine.context as context_module
import endstate_author.rules.es4_directory as es4
import endstate_author.rules.judge_operands as operands
import endstate_author.rules.judge_package as package
from endstate_author.lint.run import lint_paths

LIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
MODULES = 40


def _full_walk_spans(module: ast.AST) -> tuple[list[ast.AST], list[int]]:
    """The walk as it was: ast.iter_child_nodes, contexts included."""
    out, starts, i = [module], [], 0
    while i < len(out):
        starts.append(len(out))
        out.extend(ast.iter_child_nodes(out[i]))
        i += 1
    starts.append(len(out))
    return out, starts


def _stdlib_suite(root: Path) -> int:
    tests = sorted((LIB / "test").glob("test_*.py"))
    pairs = [(t, LIB / f"{t.stem[5:]}.py") for t in tests if (LIB / f"{t.stem[5:]}.py").is_file()]
    for n, (test, module) in enumerate(pairs[:MODULES]):
        name = module.stem
        task = root / f"std-{name}"
        files = {
            f"fixture/{name}.py": module.read_text(errors="replace"),
            f"solution/{name}.py": module.read_text(errors="replace") + "\n# solved\n",
            f"holdout/tests/test_h_{name}.py": test.read_text(errors="replace"),
            f"fixture/tests/test_v_{name}.py": tests[(n * 7) % len(tests)].read_text(
                errors="replace"),
            "fixture/tests/__init__.py": "",
            "prompt.md": f"Fix `{name}`.\n",
        }
        for rel, text in files.items():
            (task / rel).parent.mkdir(parents=True, exist_ok=True)
            (task / rel).write_text(text)
        manifest = {
            "id": task.name,
            "graders": [
                {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}},
                {"name": "endstate.evals.graders:files_unchanged",
                 "args": {"paths": [f"tests/test_v_{name}.py"]}},
            ],
        }
        (task / "task.json").write_text(json.dumps(manifest, indent=2))
    return min(len(pairs), MODULES)


def _findings(suite: Path) -> list[tuple[object, ...]]:
    return [(d.code, str(d.file), d.line, d.column, d.end_line, d.end_column, d.message)
            for d in lint_paths([suite], isolated=True).diagnostics]


def test_every_finding_is_the_one_the_full_walk_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (LIB / "test").is_dir():
        pytest.skip(f"this Python has no test package under {LIB} to make the suite from")
    made = _stdlib_suite(tmp_path / "suite")
    assert made >= 20, f"only {made} standard modules with tests under {LIB}"
    lean = _findings(tmp_path / "suite")
    monkeypatch.setattr(context_module, "walk_spans", _full_walk_spans)
    monkeypatch.setattr(operands, "walk_spans", _full_walk_spans)
    monkeypatch.setattr(package, "child_nodes", lambda n: list(ast.iter_child_nodes(n)))
    monkeypatch.setattr(es4, "child_nodes", lambda n: list(ast.iter_child_nodes(n)))
    full = _findings(tmp_path / "suite")
    assert lean == full
    codes = {f[0] for f in lean}
    # the suite exercises the rules that read the walks, or the comparison says nothing
    assert {"ES508", "ES408"} <= codes, codes
    assert sum(f[0] == "ES508" for f in lean) > 50
