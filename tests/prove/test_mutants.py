"""ES911 (mutants of the solution) and ES912 (visible tests green on the fixture).

The generator is tested on its own (fast, no sandbox); the checks through the real CLI in the
local sandbox, on the chunker task of ``test_prove.py`` with one thing changed each.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.prove.mutation import generate, leader_count
from tests.prove.test_prove import STRICT_HOLDOUT, codes, manifest, outcomes, prove
from tests.rules.conftest import FIXTURE, TaskBuilder, good

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
    # a survivor is an error only with a call that tells it apart (the guard's raise removed:
    # chunk([1], -1) raises on the solution, returns [] on the mutant); `<=` → `<` raises
    # ValueError at size 0 either way (range()'s own), so no call tells it apart: ES916
    assert rc == 1 and codes(data) == ["ES911", "ES916"]
    hits = [d for d in data["diagnostics"] if d["code"] in ("ES911", "ES916")]
    assert {d["file"].endswith("solution/chunker/core.py") for d in hits} == {True}
    assert all("yet `chunk(" in d["message"] for d in hits if d["code"] == "ES911")
    survivor = next(d for d in hits if "`<=` → `<`" in d["message"])
    assert survivor["line"] == 2 and survivor["severity"] == "warning"
    assert survivor["code"] == "ES916" and "tried" in survivor["message"]
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
    sample = properties["mutationScores"]["fix-chunk-off-by-one"]
    assert sample["run"] == 3 and sample["not_run"] > 0
    # three of many is a sample: its ratio is never the task's score
    assert sample["score"] is None and sample["sample_score"] == 1.0
    github = subprocess.run([*base, "-o", "github"], capture_output=True, text=True, env=env)
    assert "::notice title=mutation score fix-chunk-off-by-one::mutation score" in github.stdout
    text = subprocess.run([*base, "-o", "text"], capture_output=True, text=True, env=env)
    assert "fix-chunk-off-by-one: mutation score unknown: only 3 of" in text.stdout
    assert "over --mutants" in text.stdout and "3/3" not in text.stdout
    every = [a for a in base if a not in ("--mutants", "3")]
    text = subprocess.run([*every, "-o", "text"], capture_output=True, text=True, env=env)
    found = re.search(r"fix-chunk-off-by-one: mutation score (\d+)/(\d+) killed", text.stdout)
    assert found and found[1] == found[2] and int(found[2]) > 3, text.stdout


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


# ----- issue #29: mutants that reach real mistakes, and none that only change words ----------


def test_new_operators_keyword_argument_and_sibling_constant(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    _write(fixture, {
        "pkg/__init__.py": "",
        "pkg/config.py": "LIMIT = 3\nDEFAULT_LIMIT = 10\nMAX_LIMIT = 100\nNAME = 'x'\n",
        "pkg/modes.py": (
            "import enum\n\n\nclass Mode(enum.Enum):\n    FAST = 1\n    SAFE = 2\n"
            "    SLOW = 3\n"
        ),
        "pkg/core.py": "def top(scores):\n    return scores\n",
    })  # fmt: skip
    _write(solution, {"pkg/core.py": (
        "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal\n\n"
        "from pkg import config\nfrom pkg.modes import Mode\n\n\n"
        "def top(scores, mode=Mode.SAFE):\n"
        "    ranked = sorted(scores, key=abs, reverse=True)\n"
        "    rounded = [Decimal(s).quantize(Decimal('1'), rounding=ROUND_HALF_UP)\n"
        "               for s in ranked]\n"
        "    return rounded[: config.DEFAULT_LIMIT], round(1.25, 1), Decimal(0).max(1, None)\n"
    )})  # fmt: skip
    found = {(m.kind, m.description) for m in generate(fixture, solution).mutants}
    assert ("remove-keyword", "keyword argument `reverse=` removed") in found
    assert ("remove-keyword", "keyword argument `key=` removed") in found
    assert ("drop-argument", "argument `1` dropped") in found  # round(1.25, 1) -> round(1.25)
    assert ("drop-argument", "argument `None` dropped") not in found  # the default anyway
    # siblings: of the same module (read from the tree), of the same enum, of one import line
    assert ("sibling-constant", "`config.DEFAULT_LIMIT` → `config.LIMIT`") in found
    assert ("sibling-constant", "`config.DEFAULT_LIMIT` → `config.MAX_LIMIT`") in found
    assert ("sibling-constant", "`config.DEFAULT_LIMIT` → `config.NAME`") not in found  # a str
    assert ("sibling-constant", "`Mode.SAFE` → `Mode.FAST`") in found
    assert ("sibling-constant", "`Mode.SAFE` → `Mode.SLOW`") in found
    assert ("sibling-constant", "`ROUND_HALF_UP` → `ROUND_HALF_EVEN`") in found


def test_messages_and_all_are_left_alone(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    base = "import logging\n\nlog = logging.getLogger(__name__)\n__all__ = ['f']\n\n\n"
    _write(fixture, {"m.py": base + "def f(x):\n    return x\n"})
    _write(solution, {"m.py": base.replace("['f']", "['f', 'g']") + (
        "def f(x):\n"
        "    if x < 0:\n"
        "        raise ValueError(f'negative: {x}', 'see the docs')\n"
        "    log.info('checked %s', x + 1)\n"
        "    return x\n\n\n"
        "def g():\n    return 1\n"
    )})  # fmt: skip
    mutants = generate(fixture, solution).mutants
    texts = [m.description for m in mutants]
    assert "`x < 0` → `x <= 0`" not in texts  # sanity: the comparison is `<` → `<=`
    assert any(m.kind == "comparison" for m in mutants)  # behaviour is still mutated
    assert not any("see the docs" in t or "checked" in t or "'g'" in t for t in texts), texts
    assert not any(m.kind == "arithmetic" and m.line == 10 for m in mutants)  # in the log call
    assert not any("log.info" in t for t in texts)  # the log call is not removed either
    # the hunk that only adds 'g' to __all__ reverted: no behaviour a grader should see
    hunks = [m for m in mutants if m.kind == "revert-hunk"]
    assert all(b"__all__ = ['f']" not in (m.content or b"") for m in hunks), hunks


def test_a_marker_inside_the_hunk_it_marks_keeps_its_id(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    _write(fixture, {"m.py": "def f(a):\n    return a\n"})
    body = "def f(a):\n    b = a * 2\n    return b + 0\n"
    _write(solution, {"m.py": body})
    before = {m.description: m.id for m in generate(fixture, solution).mutants}
    hunk = next(i for d, i in before.items() if d.startswith("the hunk"))
    # the marker on its own line inside the hunk, and one at the end of a hunk's line
    marked = body.replace(
        "    b = a * 2\n", f"    # endstate: equivalent {hunk} the caller never looks\n"
        "    b = a * 2  # endstate: equivalent m00000000 stale on purpose\n",
    )
    _write(solution, {"m.py": marked})
    again = generate(fixture, solution)
    assert {m.description: m.id for m in again.mutants} == before
    assert again.equivalent == {hunk: "the caller never looks"}
    assert [mid for _, _, mid in again.unknown_markers] == ["m00000000"]
    reverted = next(m for m in again.mutants if m.id == hunk)
    assert reverted.line == 3 and reverted.content == b"def f(a):\n    return a\n"  # its code line


def test_every_mutant_by_default_within_a_time_budget(tmp_path: Path, cache: Path) -> None:
    wide = {"chunker/core.py": GUARDED.replace(
        "    return [", "    if size > 1000:\n        size = 1000\n    return ["
    )}  # fmt: skip
    task = TaskBuilder(tmp_path / "suite")(manifest(), holdout=SIZE_ZERO_HOLDOUT, solution=wide)
    rc, data, _ = prove(str(task), "--only", "mutants", "--mutant-budget", "0", cache=cache)
    assert rc == 0  # nothing ran, so nothing failed (and nothing was proved)
    score = data["tasks"][0]["mutation_score"]
    assert score["run"] == 0 and score["not_run"] == score["over_budget"] == score["generated"]
    assert score["score"] is None and score["complete"] is False
    unrun = [c for c in data["tasks"][0]["checks"] if c["outcome"] == "skipped"
             and "time budget" in c["detail"]]  # fmt: skip
    assert len(unrun) == score["generated"]  # each named
    # nothing was cached as a result: the next prove, with the default budget, runs them all
    _rc, data, _ = prove(str(task), "--only", "mutants", cache=cache)
    score = data["tasks"][0]["mutation_score"]
    # every line tried: each mutant run, or sampled out because its line's first ones died
    assert score["complete"] and score["run"] + score["sampled_out"] == score["generated"]
    assert score["run"] > 12  # the old default
    assert score["score"] == round(score["killed"] / score["run"], 3)


def test_a_line_whose_first_mutants_die_is_sampled_and_a_weak_one_runs_whole(
    tmp_path: Path, cache: Path
) -> None:
    """The line the holdout checks kills its first mutants, so its others are sampled out
    (skipped, naming the first ones, never survivors); the line no test reaches keeps a
    survivor among its first ones, so every one of its mutants runs, the newer operators
    included. The same mutants are sampled out on every run."""
    weak = {"chunker/core.py": GUARDED.replace(
        "    return [", "    if size > 1000:\n        size = (1000 // 2) * 2\n    return ["
    )}  # fmt: skip
    task = TaskBuilder(tmp_path / "suite")(manifest(), holdout=SIZE_ZERO_HOLDOUT, solution=weak)
    rc, data, _ = prove(str(task), "--only", "mutants", "--no-cache", cache=cache)
    checks = [c for c in data["tasks"][0]["checks"] if c["check"].startswith("mutant m")]
    sampled = [c for c in checks if c["outcome"] == "skipped"]
    assert sampled and all(c["detail"].startswith("sampled out") for c in sampled)
    assert {re.search(r"line (\d+)'s first", c["detail"]).group(1)  # type: ignore[union-attr]
            for c in sampled} == {"6"}  # the comprehension the holdout checks
    outcome = {c["check"].split()[1]: c["outcome"] for c in checks}
    on_line = [m for m in generate(task / "fixture", task / "solution").mutants if m.line == 6]
    for c in sampled:  # each names its line's first ones, every one of them killed
        leaders = re.findall(r"m[0-9a-f]{8}", c["detail"].split("(", 1)[1])
        assert len(leaders) == leader_count(len(on_line)) >= 4
        assert {outcome[m] for m in leaders} == {"pass"}
    line5 = [m.id for m in generate(task / "fixture", task / "solution").mutants if m.line == 5]
    assert len(line5) > 4 and {outcome[m] for m in line5} == {"fail"}  # all run, all live
    survivors = [c for c in checks if c["outcome"] == "fail"]
    assert any("`//` → `^`" in c["detail"] for c in survivors)  # a newer operator, graded
    assert "ES911" in codes(data)
    score = data["tasks"][0]["mutation_score"]
    assert rc == 1 and score["survived"] == len(survivors) >= len(line5)
    assert score["sampled_out"] == len(sampled) and score["complete"]
    assert score["run"] + score["sampled_out"] == score["generated"]
    _rc, again, _ = prove(str(task), "--only", "mutants", "--no-cache", cache=cache)
    assert {c["check"] for c in again["tasks"][0]["checks"] if c["outcome"] == "skipped"} == {
        c["check"] for c in sampled}


def test_a_removed_keyword_argument_survives_a_weak_holdout(tmp_path: Path, cache: Path) -> None:
    """The held-out corpus's missed mistake: `reverse=True` dropped passes a holdout that never
    checks the order; the operator generates it and prove reports it."""
    fixture = {"rank/__init__.py": "", "rank/core.py": "def top(s):\n    return s[:2]\n",
               "tests/__init__.py": "", "tests/test_rank.py": (
                   "import unittest\n\nfrom rank.core import top\n\n\n"
                   "class RankTest(unittest.TestCase):\n    def test_top(self):\n"
                   "        self.assertEqual(top([2, 2, 2]), [2, 2])\n")}  # fmt: skip
    solution = {"rank/core.py": "def top(s):\n    return sorted(s, reverse=True)[:2]\n"}
    weak = {"tests/test_holdout_rank.py": (
        "import unittest\n\nfrom rank.core import top\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n    def test_size(self):\n"
        "        self.assertEqual(len(top([5, 4, 6])), 2)\n")}  # fmt: skip
    graders = copy.deepcopy(manifest()["graders"])  # manifest() shares its args dicts
    graders[1]["args"]["paths"] = ["tests/__init__.py", "tests/test_rank.py"]
    graders[3]["args"]["allowed"] = ["rank/core.py"]
    task = TaskBuilder(tmp_path / "suite")(good(graders=graders), fixture=fixture,
                                           solution=solution, holdout=weak)  # fmt: skip
    _rc, data, _ = prove(str(task), "--only", "mutants", cache=cache)
    survivors = [d["message"] for d in data["diagnostics"] if d["code"] == "ES911"]
    assert any("keyword argument `reverse=` removed passes every grader" in m for m in survivors)
