"""prove from the witness's evidence (issue #29): ES903 widened, ES914, ES915, ES912 for refactors,
and a failing solution that says which test failed and why (issue #28).

Each task is the chunker of ``test_prove.py`` graded by ``judged_tests`` (the grader that
reports each test), with one thing changed; a few are graded by ``command_succeeds`` to show
the checks also stand where no grader reports per-test evidence. Run through the real CLI in
the local sandbox.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.prove.test_prove import STRICT_HOLDOUT, codes, outcomes, prove
from tests.rules.conftest import FIXTURE, GUIDE_GRADERS, TaskBuilder, good

JUDGED = [
    {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}},
    {
        "name": "endstate.evals.graders:files_unchanged",
        "args": {"paths": ["tests/__init__.py", "tests/test_chunk.py"]},
    },
    {"name": "endstate.evals.graders:no_new_skips"},
    {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["chunker/*.py"]}},
]
ONLY = ["--only", "holdout", "--only", "witness", "--only", "directions", "--only", "visible"]


def judged(**changes: Any) -> dict[str, Any]:
    return good(graders=copy.deepcopy(JUDGED), **changes)


def guide(**changes: Any) -> dict[str, Any]:
    """The authoring guide's task (command_succeeds: no per-test evidence)."""
    return good(graders=copy.deepcopy(GUIDE_GRADERS), **changes)


def holdout_module(body: str, imports: str = "") -> str:
    return (
        f"import unittest\n{imports}\nfrom chunker import chunk\n\n\n"
        f"class HoldoutTest(unittest.TestCase):\n{body}"
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def build(tmp_path: Path) -> TaskBuilder:
    return TaskBuilder(tmp_path / "suite")


def _finding(data: dict[str, Any], code: str) -> dict[str, Any]:
    [found] = [d for d in data["diagnostics"] if d["code"] == code]
    return found


def test_sound_tasks_draw_none_of_the_new_findings(build: TaskBuilder, cache: Path) -> None:
    """The guide's task and its judged twin: every new check runs and passes."""
    for name, manifest in (("guide", guide()), ("judged", judged())):
        task = build(manifest, name=name, holdout=STRICT_HOLDOUT)
        rc, data, _ = prove(str(task), *ONLY, cache=cache)
        assert rc == 0 and [c for c in codes(data) if c != "ES311"] == [], data["diagnostics"]
        found = outcomes(data)
        assert found["holdout sentinel"] == "pass"
        assert found["holdout fails on the fixture"] == "pass"
    assert found["every test asserts"] == "pass"  # the judged twin counts assertions


# ----- ES903 ---------------------------------------------------------------------------------


OUTSIDE_PATTERN = {
    **STRICT_HOLDOUT,
    "tests/holdout_more.py": holdout_module(
        "    def test_single(self):\n        self.assertEqual(chunk([1], 5), [[1]])\n"
    ),
}


@pytest.mark.parametrize("manifest", [judged(), guide()], ids=["judged", "command"])
def test_es903_a_holdout_module_named_outside_the_pattern(
    build: TaskBuilder, cache: Path, manifest: dict[str, Any]
) -> None:
    """The module is never imported; a sentinel *beside* it (named test_….py) would have run
    and passed the old check. Staged in the module itself, it proves the module never runs."""
    task = build(manifest, holdout=OUTSIDE_PATTERN)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 1
    found = _finding(data, "ES903")
    assert found["file"].endswith("holdout/tests/holdout_more.py")
    assert "holdout/tests/holdout_more.py never runs" in found["message"]
    assert "test_holdout_chunk" not in found["message"]  # the module that runs is not named
    if manifest["graders"][0]["name"].endswith("judged_tests"):
        assert "does not match pattern 'test*.py' of grader 0" in found["message"]


def test_es903_a_holdout_module_skipped_on_the_grading_python(
    build: TaskBuilder, cache: Path
) -> None:
    skipped = holdout_module(
        "    def test_single(self):\n        self.assertEqual(chunk([1], 5), [[1]])\n",
        imports="import sys\n",
    ).replace(
        "class HoldoutTest", "@unittest.skipIf(sys.version_info >= (3, 8), 'needs 3.7')\n"
        "class HoldoutTest",
    )
    task = build(judged(), holdout={**STRICT_HOLDOUT, "tests/test_holdout_old.py": skipped})
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    found = _finding(data, "ES903")
    assert rc == 1
    assert "every test of holdout/tests/test_holdout_old.py was skipped on the grading " \
        "Python (needs 3.7)" in found["message"]
    # skipped whole at import: the module's sentinel never runs either
    at_import = (
        "import sys\nimport unittest\n\nif sys.version_info < (3, 99):\n"
        "    raise unittest.SkipTest('needs 3.99')\n\n\n"
        "class NewTest(unittest.TestCase):\n    def test_x(self):\n        self.fail()\n"
    )
    task = build(judged(id="at-import"), name="at-import",
                 holdout={**STRICT_HOLDOUT, "tests/test_holdout_old.py": at_import})  # fmt: skip
    _rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert "every test of holdout/tests/test_holdout_old.py was skipped on the grading " \
        "Python (needs 3.99)" in _finding(data, "ES903")["message"]


def test_es903_a_module_only_the_opaque_grader_runs_is_proven(
    build: TaskBuilder, cache: Path
) -> None:
    """The judge runs one module (its pattern names it); tests_pass runs the other: both are
    proven, the second by grading it alone with its sentinel."""
    graders = copy.deepcopy(JUDGED)
    graders[0]["args"]["pattern"] = "test_holdout_chunk.py"
    graders.insert(1, {"name": "endstate_harness.graders:tests_pass",
                       "args": {"start_dir": "tests"}})  # fmt: skip
    holdout = {**STRICT_HOLDOUT, "tests/test_holdout_more.py": holdout_module(
        "    def test_single(self):\n        self.assertEqual(chunk([1], 5), [[1]])\n"
    )}  # fmt: skip
    task = build(good(graders=graders), holdout=holdout)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 0 and outcomes(data)["holdout sentinel"] == "pass", data["diagnostics"]


# ----- ES914 ---------------------------------------------------------------------------------

INERT = {
    "tests/test_holdout_chunk.py": holdout_module(
        "    def test_even(self):\n        self.assertEqual(chunk([1, 2], 2), [[1, 2]])\n"
        "    def test_empty(self):\n        self.assertEqual(chunk([], 2), [])\n"
    )
}
"""A holdout on inputs the bug (the final partial chunk dropped) never touches."""


@pytest.mark.parametrize("manifest", [judged(), guide()], ids=["judged", "command"])
def test_es914_a_holdout_that_passes_on_the_fixture(
    build: TaskBuilder, cache: Path, manifest: dict[str, Any]
) -> None:
    task = build(manifest, holdout=INERT)
    rc, data, _ = prove(str(task), *ONLY, cache=cache)
    assert rc == 1 and "ES914" in codes(data)
    found = _finding(data, "ES914")
    assert found["message"].startswith("the holdout passes on the untouched fixture: every "
                                       "holdout test passes on the untouched fixture")
    assert found["file"].endswith("holdout/tests/test_holdout_chunk.py")
    if manifest["graders"][0]["name"].endswith("judged_tests"):
        assert "inert (pass on the fixture and on the solution): HoldoutTest.test_empty " \
            "(tests/test_holdout_chunk.py), HoldoutTest.test_even" in found["message"]
    # the other checks do not see it: the fixture still fails (its visible test is red)
    assert outcomes(data)["fixture fails"] == "pass"


def test_es914_inert_tests_beside_a_discriminating_one_and_the_exempt(
    build: TaskBuilder, cache: Path
) -> None:
    mixed = {"tests/test_holdout_chunk.py": INERT["tests/test_holdout_chunk.py"]
             + "    def test_tail(self):\n        self.assertEqual(chunk([1, 2, 3], 2), "
             "[[1, 2], [3]])\n"}  # fmt: skip
    task = build(judged(), holdout=mixed)
    rc, data, _ = prove(str(task), "--only", "witness", cache=cache)
    assert rc == 0 and "ES914" not in codes(data)
    detail = next(c["detail"] for c in data["tasks"][0]["checks"]
                  if c["check"] == "holdout fails on the fixture")  # fmt: skip
    assert "inert (pass on the fixture and on the solution): HoldoutTest.test_empty" in detail
    refactor = build(judged(id="refactor", category="refactor"), name="refactor", holdout=INERT)
    _rc, data, _ = prove(str(refactor), "--only", "witness", "--only", "visible", cache=cache)
    assert "ES914" not in codes(data) and "ES912" not in codes(data)
    assert outcomes(data)["holdout fails on the fixture"] == "skipped"


# ----- ES915 ---------------------------------------------------------------------------------


def test_es915_a_data_driven_test_whose_loop_runs_zero_times(
    build: TaskBuilder, cache: Path
) -> None:
    misspelt = {
        "tests/test_holdout_chunk.py": (
            "import json\nimport unittest\n\nfrom chunker import chunk\n\n"
            "DATA = json.loads('{\"cases\": [[[1], 5, [[1]]]]}')\n\n\n"
            "class HoldoutTest(unittest.TestCase):\n"
            "    def test_tail(self):\n"
            "        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n\n"
            "    def test_cases(self):\n"
            "        for items, size, expected in DATA.get('case', []):\n"
            "            self.assertEqual(chunk(items, size), expected)\n\n"
            "    def test_smoke(self):\n"
            "        chunk([1], 1)\n"
        )
    }
    task = build(judged(), holdout=misspelt)
    rc, data, _ = prove(str(task), "--only", "witness", cache=cache)
    assert rc == 1
    found = _finding(data, "ES915")
    assert found["file"].endswith("holdout/tests/test_holdout_chunk.py") and found["line"] == 13
    assert "1 test(s) passed on the solution having executed no assertion: " \
        "HoldoutTest.test_cases (holdout/tests/test_holdout_chunk.py:13)" in found["message"]
    assert "test_smoke" not in found["message"]  # asserts nothing by design: not reported
    # the same loop over the right key asserts: the near-miss is clean
    fixed = build(judged(id="fixed"), name="fixed", holdout={
        "tests/test_holdout_chunk.py": misspelt["tests/test_holdout_chunk.py"].replace(
            "get('case'", "get('cases'")
    })  # fmt: skip
    rc, data, _ = prove(str(fixed), "--only", "witness", cache=cache)
    assert "ES915" not in codes(data)


# ----- issue #28: a failing check says what failed and why -----------------------------------


def test_a_failing_solution_names_the_test_its_message_and_its_line(
    build: TaskBuilder, cache: Path
) -> None:
    wrong = {"chunker/core.py": (  # special-cases the visible input
        "def chunk(items, size):\n    if items == [1, 2, 3]:\n        return [[1, 2], [3]]\n"
        "    return [items[i:i + size] for i in range(0, len(items) - size + 1, size)]\n"
    )}  # fmt: skip
    task = build(judged(), holdout=STRICT_HOLDOUT, solution=wrong)
    rc, data, _ = prove(str(task), "--only", "directions", cache=cache)
    assert rc == 1
    message = _finding(data, "ES902")["message"]
    assert message.startswith(
        'fails on the solution: expected "judge tests/: all tests passed", got: 1 of 2 tests did '
        "not pass: HoldoutTest.test_cases (tests/test_holdout_chunk.py:14) failed: "
        "'[]' != '[[1]]' - [] + [[1]]. Fix: "
    )  # the assertion's own message, whole, and the line of the test
    assert "(4 of 12 did not pass:)" not in message and "failed: judge" not in message
    # the evidence rides on the check in -o json
    check = next(c for c in data["tasks"][0]["checks"] if c["check"] == "solution passes")
    failed = [t for t in check["tests"] if t["outcome"] == "failed"]
    assert [(t["file"], t["line"], t["source"], t["grader"]) for t in failed] == [
        ("tests/test_holdout_chunk.py", 14, "holdout", 0)
    ]
    # the visible check's detail says what failed on the fixture, never the check's name alone
    _rc, data, _ = prove(str(task), "--only", "visible", cache=cache)
    detail = next(c["detail"] for c in data["tasks"][0]["checks"])
    assert detail.startswith('expected "judge tests/: all tests passed", got: 1 of 1 tests did '
                             "not pass: ChunkTest.test_partial_tail (tests/test_chunk.py:8)")


def test_the_fixture_shapes_of_the_shipped_kinds_stay_silent(
    build: TaskBuilder, cache: Path
) -> None:
    """A visible=False judge with a child helper (the recovery and permissioning shape) and a
    permissioning task: nothing new fires."""
    graders = copy.deepcopy(JUDGED)
    graders[0]["args"]["visible"] = False
    task = build(good(graders=graders), holdout=STRICT_HOLDOUT, fixture=FIXTURE)
    rc, data, _ = prove(str(task), *ONLY, cache=cache)
    assert rc == 0 and codes(data) == [], data["diagnostics"]


def test_es903_a_module_that_loads_its_own_tests_is_proven_by_them(
    build: TaskBuilder, cache: Path
) -> None:
    """`load_tests` builds the module's suite itself, so the appended sentinel never runs; the
    judge saw the module's own tests run, which proves it."""
    own_suite = STRICT_HOLDOUT["tests/test_holdout_chunk.py"] + (
        "\n\ndef load_tests(loader, tests, pattern):\n"
        "    return loader.loadTestsFromTestCase(HoldoutTest)\n"
    )
    task = build(judged(), holdout={"tests/test_holdout_chunk.py": own_suite})
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 0 and outcomes(data)["holdout sentinel"] == "pass", data["diagnostics"]


def test_es903_a_base_class_module_runs_through_its_subclasses(
    build: TaskBuilder, cache: Path
) -> None:
    """A holdout module of shared test methods, named outside the pattern, that a test module
    imports and subclasses: its tests run as the subclass's, so it is not reported."""
    holdout = {
        "tests/holdout_base.py": (
            "import unittest\n\nfrom chunker import chunk\n\n\n"
            "class ChunkContract(unittest.TestCase):\n"
            "    def test_single(self):\n        self.assertEqual(chunk([1], 5), [[1]])\n"
        ),
        "tests/test_holdout_chunk.py": (
            "from tests.holdout_base import ChunkContract\n\n\n"
            "class HoldoutTest(ChunkContract):\n    pass\n"
        ),
    }
    task = build(judged(), holdout=holdout)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 0 and outcomes(data)["holdout sentinel"] == "pass", data["diagnostics"]
