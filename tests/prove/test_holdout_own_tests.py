"""ES903 widened again (issue 45 item 1): a holdout module the judge loads but whose own tests
number zero on the grading Python. Its sentinel runs (the file is imported), so the old check
passed it; the judge's per-test evidence shows it contributes nothing.

Each task is the chunker of ``test_prove.py`` graded by ``judged_tests`` with a second
holdout module in one of the shapes that look like tests and are not, run through the real
CLI in the local sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.prove.test_prove import STRICT_HOLDOUT, outcomes, prove
from tests.prove.test_witness import judged
from tests.rules.conftest import TaskBuilder

HEAD = "import unittest\n\nfrom chunker import chunk\n\n\n"

EMPTY_SHAPES = {
    "pytest-style-class": HEAD + (  # unittest, and so the judge, collects no Test… class
        "class TestTail:\n"
        "    def test_tail(self):\n        assert chunk([1, 2, 3], 2) == [[1, 2], [3]]\n"
    ),
    "pytest-functions": HEAD + (
        "def test_tail():\n    assert chunk([1, 2, 3], 2) == [[1, 2], [3]]\n"
    ),
    "not-a-testcase": HEAD + (
        "class TailChecks:\n"
        "    def test_tail(self):\n        assert chunk([1, 2, 3], 2) == [[1, 2], [3]]\n"
    ),
    "generated-from-nothing": HEAD + (
        "CASES = [line.split('|') for line in ''.splitlines()]\n\n\n"
        "class Generated(unittest.TestCase):\n    pass\n\n\n"
        "for i, (items, size) in enumerate(CASES):\n"
        "    setattr(Generated, f'test_{i}', lambda self: self.assertTrue(chunk(items, size)))\n"
    ),
}

SOUND_SHAPES = {
    "plain": HEAD + (
        "class TailTest(unittest.TestCase):\n"
        "    def test_tail(self):\n        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n"
    ),
    "generated-from-a-table": HEAD + (
        "CASES = [([1, 2, 3], 2, [[1, 2], [3]]), ([1], 5, [[1]])]\n\n\n"
        "class Generated(unittest.TestCase):\n    pass\n\n\n"
        "def _case(items, size, expected):\n"
        "    return lambda self: self.assertEqual(chunk(items, size), expected)\n\n\n"
        "for i, case in enumerate(CASES):\n    setattr(Generated, f'test_{i}', _case(*case))\n"
    ),
}


@pytest.mark.parametrize("shape", sorted(EMPTY_SHAPES))
def test_es903_a_loaded_module_with_no_test_of_its_own(
    build: TaskBuilder, cache: Path, shape: str
) -> None:
    holdout = {**STRICT_HOLDOUT, "tests/test_holdout_more.py": EMPTY_SHAPES[shape]}
    task = build(judged(), name=shape, holdout=holdout)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 1, data
    [found] = [d for d in data["diagnostics"] if d["code"] == "ES903"]
    assert found["file"].endswith("holdout/tests/test_holdout_more.py")
    assert "contributes no test of its own" in found["message"]
    assert "test_holdout_chunk" not in found["message"]


@pytest.mark.parametrize("shape", sorted(SOUND_SHAPES))
def test_es903_near_miss_modules_with_tests_of_their_own(
    build: TaskBuilder, cache: Path, shape: str
) -> None:
    holdout = {**STRICT_HOLDOUT, "tests/test_holdout_more.py": SOUND_SHAPES[shape]}
    task = build(judged(), name=shape, holdout=holdout)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 0 and outcomes(data)["holdout sentinel"] == "pass", data["diagnostics"]
