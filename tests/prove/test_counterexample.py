"""The counterexample search (issue 44): a surviving mutant is an error (ES911) only with a
call on which it and the solution differ; without one it is a warning (ES916).

The differential test runs the real search (both sides in the local sandbox, through the
shipped caller program) on every shipped task with hand-made mutants: one equivalent by
construction (a constant appended that nothing reads) must never get a counterexample; one
that is not (the solution's changed module reverted to the fixture's, on a task that is not
a refactor) must get one whenever the tests make a call the search can read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from endstate_author.prove.calls import Call, calls_in_tests, package_modules
from endstate_author.prove.counterexample import Counterexample, search_all
from endstate_author.prove.model import ProveContext
from endstate_author.prove.mutation import Mutant
from endstate_harness.graders import grader_search_paths
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import load_task
from tests.rules.conftest import TaskBuilder, good

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for p in (ROOT / "tasks").iterdir() if (p / "task.json").is_file())


def _context(root: Path) -> ProveContext:
    task = load_task(root)
    return ProveContext(task, SandboxChoice("local", grading=True),
                        grader_search_paths(root, suite_root=root.parent), root.parent)


def _changed_python(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "solution").rglob("*.py")):
        rel = path.relative_to(root / "solution").as_posix()
        fixture = root / "fixture" / rel
        if not fixture.is_file() or fixture.read_bytes() != path.read_bytes():
            out.append(rel)
    return out


@pytest.mark.parametrize("root", SHIPPED, ids=[p.name for p in SHIPPED])
def test_the_search_never_tells_an_equivalent_mutant_and_tells_a_reverted_module(
    root: Path,
) -> None:
    task = load_task(root)
    if task.solution is None:
        pytest.skip(f"{root.name}: no solution/ (a permissioning task has no mutants)")
    changed = _changed_python(root)
    assert changed, root.name
    rel = changed[0]
    solution = (root / "solution" / rel).read_bytes()
    equivalent = Mutant("m0000e001", "hand-made", rel, 1, "a constant appended",
                        solution + b"\n\n_ENDSTATE_NOTHING_READS_THIS = 0\n")
    mutants = [equivalent]
    fixture = root / "fixture" / rel
    reverted = None
    if task.category != "refactor":
        reverted = Mutant("m0000e002", "hand-made", rel, 1, "the module reverted",
                          fixture.read_bytes() if fixture.is_file() else None)
        mutants.append(reverted)
    found = search_all(_context(root), mutants, seconds=120)
    assert found[equivalent.id].found is None, found[equivalent.id]
    assert found[equivalent.id].reached
    if reverted is None:
        return
    tests = sorted((root / "holdout").rglob("*.py")) + sorted((root / "fixture").rglob("test*.py"))
    modules = package_modules([root / "fixture", root / "solution"])
    seeds = [c for c in calls_in_tests(tests, modules)
             if c.module.replace(".", "/") in (rel.removesuffix(".py"),
                                               rel.removesuffix("/__init__.py"))]
    if not seeds:
        pytest.skip(f"{root.name}: the tests make no call into {rel} the search can read")
    result = found[reverted.id]
    assert result.found is not None, (root.name, result)
    assert result.found.solution != result.found.mutant


def _weak_chunker(build: TaskBuilder) -> Path:
    """The chunker whose holdout checks only a single short list: most mutants survive."""
    holdout = {"tests/test_holdout_chunk.py": (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_single(self):\n        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n"
    )}
    solution = {"chunker/core.py": (
        "def chunk(items, size):\n"
        "    if size < 1:\n"
        "        raise ValueError('size must be positive')\n"
        "    return [items[i:i + size] for i in range(0, len(items), size)]\n"
    )}
    return build(good(), holdout=holdout, solution=solution)


def test_a_survivor_with_a_counterexample_is_es911_with_its_call_and_assertion(
    tmp_path: Path,
) -> None:
    task = _weak_chunker(TaskBuilder(tmp_path / "suite"))
    rc, data = _prove(task, tmp_path)
    checks = [c for c in data["tasks"][0]["checks"] if c.get("counterexample")]
    assert checks, data["diagnostics"]
    for check in checks:
        example = check["counterexample"]
        assert example["solution"] != example["mutant"]
        assert example["call"].startswith("chunk(")
    found = [d for d in data["diagnostics"] if d["code"] == "ES911"]
    assert found and all("yet `chunk(" in d["message"] for d in found), found
    assert rc == 1
    # the ready assertion is Python a test can hold, and it passes on the solution
    assertions = [c["counterexample"]["assertion"] for c in checks
                  if c["counterexample"]["assertion"]]
    assert assertions
    sys.path.insert(0, str(task / "solution"))
    try:
        import unittest

        from chunker.core import chunk

        case = unittest.TestCase()
        for text in assertions:
            exec(text, {"self": case, "chunk": chunk, "ValueError": ValueError})
    finally:
        sys.path.remove(str(task / "solution"))
        sys.modules.pop("chunker.core", None)
        sys.modules.pop("chunker", None)


def test_a_survivor_no_call_tells_apart_is_es916_a_warning(tmp_path: Path) -> None:
    """A branch no caller can reach: `strict` is always False, so a mutant of the ragged
    check (`<` → `<=`, the message) changes no call's outcome."""
    build = TaskBuilder(tmp_path / "suite")
    solution = {"chunker/core.py": (
        "def _pieces(items, size, strict=False):\n"
        "    out = [items[i:i + size] for i in range(0, len(items), size)]\n"
        "    if strict and out and len(out[-1]) < size:\n"
        "        raise ValueError('ragged')\n"
        "    return out\n\n\n"
        "def chunk(items, size):\n"
        "    return _pieces(items, size, strict=False)\n"
    )}
    task = build(good(), solution=solution)
    rc, data = _prove(task, tmp_path)
    es916 = [d for d in data["diagnostics"] if d["code"] == "ES916"]
    assert any(d["line"] == 3 for d in es916), data["diagnostics"]
    assert all(d["severity"] == "warning" for d in es916)
    assert not [d for d in data["diagnostics"] if d["code"] == "ES911" and d["line"] == 3]
    assert rc in (0, 1)  # 1 only for an ES911 elsewhere, with its evidence


def test_the_ready_assertion_of_each_outcome_shape() -> None:
    call = Call("pkg", "units_of", ("length",))
    value = Counterexample(call, {"value": ["list", [["str", "m"], ["str", "km"]]]},
                          {"value": ["list", []]})
    assert value.words() == "`units_of('length')`: the solution returns ['m', 'km'], the " \
        "mutant returns []"
    assert value.assertion() == "self.assertEqual(units_of('length'), ['m', 'km'])"
    raises = Counterexample(call, {"raises": "ValueError"}, {"value": ["NoneType", None]})
    assert raises.assertion() == "with self.assertRaises(ValueError):\n    units_of('length')"
    typed = Counterexample(call, {"value": ["int", 2]}, {"value": ["float", "2.0"]})
    assert typed.assertion() == ("self.assertEqual(units_of('length'), 2)\n"
                                 "self.assertIs(type(units_of('length')), int)")
    obj = Counterexample(call, {"value": ["pkg.Page", "Page(n=1)"]}, {"value": ["pkg.Page",
                                                                             "Page(n=2)"]})
    assert obj.assertion() is None and "returns Page(n=1)" in obj.words()


def _prove(task: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local", "--only",
         "mutants", "-o", "json", str(task)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)
