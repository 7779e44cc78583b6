"""ES911 (mutants of the solution) and ES912 (visible tests green on the fixture).

The generator is tested on its own (fast, no sandbox); the checks through the real CLI in the
local sandbox, on the chunker task of ``test_prove.py`` with one thing changed each.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.prove.mutation import generate
from tests.prove.test_prove import STRICT_HOLDOUT, codes, manifest, outcomes, prove
from tests.rules.conftest import FIXTURE, TaskBuilder

GUARDED = (
    "def chunk(items, size):\n"
    "    if size <= 0:\n"
    '        raise ValueError("size must be positive")\n'
    "    return [items[i:i + size] for i in range(0, len(items), size)]\n"
)
"""The solution plus a guard the holdout never exercises: its `<=` → `<` mutant survives."""

SIZE_ZERO_HOLDOUT = {
    **STRICT_HOLDOUT,
    "tests/test_holdout_size.py": (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class SizeTest(unittest.TestCase):\n"
        "    def test_zero(self):\n"
        "        with self.assertRaisesRegex(ValueError, 'positive'):\n"
        "            chunk([1], 0)\n"
        "    def test_negative(self):\n"
        "        with self.assertRaisesRegex(ValueError, 'positive'):\n"
        "            chunk([1], -1)\n"
    ),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_a_mutation_that_changes_only_spelling_is_no_mutant(tmp_path: Path) -> None:
    """Swapping `x` and `(x)` respells the call without changing its syntax tree: dropped.
    A swap that changes the tree is kept (the cheap subtree comparison and the whole-module
    one must agree)."""
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    _write(fixture, {"m.py": "def f(x, y):\n    return 0\n"})
    _write(solution, {"m.py": "def f(x, y):\n    return g(x, (x)) + g(x, y)\n"})
    swaps = [m for m in generate(fixture, solution).mutants if m.kind == "swap-args"]
    assert [m.description for m in swaps] == ["arguments `x` and `y` swapped"]
    assert swaps[0].content is not None and b"g(x, (x)) + g(y, x)" in swaps[0].content


def test_the_mutants_of_a_file_are_remembered_by_content(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    _write(fixture, {"m.py": "def f(a):\n    return a\n"})
    _write(solution, {"m.py": "def f(a):\n    return a + 1\n"})
    first = generate(fixture, solution).mutants
    assert generate(fixture, solution).mutants == first  # asked again: the same answer
    _write(solution, {"m.py": "def f(a):\n    return a - 1\n"})  # an edit is seen at once
    again = generate(fixture, solution).mutants
    assert again != first and any(b"a + 1" in (m.content or b"") for m in again)


def test_generator_kinds_ids_and_markers(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    _write(fixture, {"pkg/m.py": "def f(a, b):\n    return a / b\n", "README.md": "x\n"})
    body = (
        "def f(a, b):\n"
        "    if a > b and not b:\n"
        "        return pow(a, b) / 2\n"
        "    else:\n"
        "        a += 1\n"
        "    return [a, b]\n"
    )
    _write(solution, {"pkg/m.py": body, "pkg/new.py": "X = 0\n", "README.md": "x\n"})
    found = generate(fixture, solution)
    kinds = {m.kind for m in found.mutants}
    assert kinds >= {
        "revert-hunk", "drop-file", "comparison", "boolean", "unary", "arithmetic",
        "constant", "collection", "return-none", "remove-statement", "swap-if-else",
        "swap-args",
    }  # fmt: skip
    assert not any(m.path == "README.md" for m in found.mutants)  # unchanged: no mutant
    div = next(m for m in found.mutants if m.description == "`/` → `//`")
    assert div.line == 3 and div.content is not None and b"pow(a, b) // 2" in div.content
    # ids do not move with the lines, and a marker with a reason silences one
    shifted = "# a comment\n" + body.replace(
        "/ 2\n", f"/ 2  # endstate: equivalent {div.id} halves are whole here\n"
    )
    _write(solution, {"pkg/m.py": shifted})
    again = generate(fixture, solution)
    moved = next(m for m in again.mutants if m.description == "`/` → `//`")
    assert moved.id == div.id and moved.line == 4
    assert again.equivalent == {div.id: "halves are whole here"}
    assert div.id not in {m.id for m in again.selected(1000)[0]}
    _write(solution, {"pkg/m.py": body + f"# endstate: equivalent {div.id}\n"})
    assert generate(fixture, solution).equivalent == {}  # no reason: not silenced
    chosen, left = generate(fixture, solution).selected(3)
    assert len(chosen) == 3 and left > 0 and chosen[0].partial


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_es911_untested_guard_survives_and_is_reported(tmp_path: Path, cache: Path) -> None:
    build = TaskBuilder(tmp_path / "suite")
    task = build(manifest(), holdout=STRICT_HOLDOUT, solution={"chunker/core.py": GUARDED})
    rc, data, _ = prove(str(task), "--only", "mutants", "--mutants", "40", cache=cache)
    assert rc == 1 and codes(data) == ["ES911"]
    hits = [d for d in data["diagnostics"] if d["code"] == "ES911"]
    assert {d["file"].endswith("solution/chunker/core.py") for d in hits} == {True}
    survivor = next(d for d in hits if "`<=` → `<`" in d["message"])
    assert survivor["line"] == 2 and survivor["severity"] == "error"
    score = data["tasks"][0]["mutation_score"]
    assert score["survived"] == len(hits) and score["killed"] + score["survived"] == score["run"]
    assert len(list((cache / "mutants").glob("*.json"))) == score["run"]  # one verdict each
    # the near-miss: a holdout that exercises the guard kills every mutant of it
    strong = build(manifest(), name="strong", holdout=SIZE_ZERO_HOLDOUT,
                   solution={"chunker/core.py": GUARDED})  # fmt: skip
    rc, data, _ = prove(str(strong), "--only", "mutants", "--mutants", "40", cache=cache)
    survivors = [d["message"] for d in data["diagnostics"]]
    assert not any("`<=` → `<`" in m for m in survivors), survivors
    # marking the survivor equivalent silences it by id, and text output prints the score
    mid = re.search(r"\bm[0-9a-f]{8}\b", survivor["message"]).group(0)  # type: ignore[union-attr]
    marked = GUARDED.replace("<= 0:", f"<= 0:  # endstate: equivalent {mid} a reason")
    (task / "solution/chunker/core.py").write_text(marked)
    rc, data, _ = prove(str(task), "--only", "mutants", "--mutants", "40", cache=cache)
    assert not any(mid in d["message"] for d in data["diagnostics"])
    assert outcomes(data)[f"mutant {mid} fails"] == "skipped"
    assert data["tasks"][0]["mutation_score"]["equivalent"] == 1


def test_mutation_score_in_sarif_and_github(tmp_path: Path, cache: Path) -> None:
    task = TaskBuilder(tmp_path / "suite")(manifest(), holdout=STRICT_HOLDOUT)
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    base = [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local",
            "--only", "mutants", "--mutants", "3", str(task)]  # fmt: skip
    sarif = subprocess.run([*base, "-o", "sarif"], capture_output=True, text=True, env=env)
    properties = json.loads(sarif.stdout)["runs"][0]["properties"]
    assert properties["sandbox"]["kind"] == "local"  # where the checks ran
    scores = properties["mutationScores"]
    assert scores["fix-chunk-off-by-one"]["run"] == 3
    github = subprocess.run([*base, "-o", "github"], capture_output=True, text=True, env=env)
    assert "::notice title=mutation score fix-chunk-off-by-one::mutation score" in github.stdout
    text = subprocess.run([*base, "-o", "text"], capture_output=True, text=True, env=env)
    assert "fix-chunk-off-by-one: mutation score 3/3 killed" in text.stdout


def test_es912_visible_tests_green_on_fixture(tmp_path: Path, cache: Path) -> None:
    build = TaskBuilder(tmp_path / "suite")
    passing_visible = {
        **FIXTURE,
        "tests/test_chunk.py": (
            "import unittest\n\nfrom chunker import chunk\n\n\n"
            "class ChunkTest(unittest.TestCase):\n"
            "    def test_even(self):\n"
            "        self.assertEqual(chunk([1, 2], 2), [[1, 2]])\n"
        ),
    }
    task = build(manifest(), holdout=STRICT_HOLDOUT, fixture=passing_visible)
    rc, data, _ = prove(str(task), "--only", "visible", cache=cache)
    assert rc == 0 and codes(data) == ["ES912"]  # a warning: exit 0
    assert data["diagnostics"][0]["severity"] == "warning"
    said = data["diagnostics"][0]["message"]
    assert said.startswith(
        "passes before any work: the visible tests (tests/test_chunk.py) "
        "already pass on the untouched fixture, so the agent has no failing test to reproduce. "
        "Fix: "
    ), said
    # each thing said once: the outcome, which tests, the fix
    assert said.count("already pass") == 1 and said.count("fixture/") == 1, said
    rc, data, _ = prove(str(task), "--only", "visible", "--strict", cache=cache)
    assert rc == 1 and data["diagnostics"][0]["severity"] == "error"
    # near-miss: the guide's fixture ships the failing test
    sound = build(manifest(), name="sound", holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(sound), "--only", "visible", cache=cache)
    assert rc == 0 and codes(data) == []
    assert outcomes(data)["visible tests fail on the fixture"] == "pass"
