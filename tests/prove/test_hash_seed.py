"""ES909 from what a real agent's run varies (issue 45 item 2): the hash seed and the order the
tests run in. The grading pins ``PYTHONHASHSEED`` (0, the task format's), so a holdout that
expects a set's iteration order agreed with itself on every repeat; prove now grades the
solution once more under another seed with the tests reversed, and each ``--repeat`` pass
under a seed and a shuffled order of its own.

Each task is a small package of its own (a function over a word's letters), graded by
``judged_tests`` (the tests in the judge, the package in the sandbox's child) or by a test
command in the sandbox, run through the real CLI in the local sandbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from endstate_author.prove import variation
from tests.prove.test_prove import outcomes, prove
from tests.rules.conftest import TaskBuilder, good

JUDGED = [
    {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}},
    {"name": "endstate.evals.graders:files_unchanged",
     "args": {"paths": ["tests/__init__.py", "tests/test_words.py"]}},
    {"name": "endstate.evals.graders:no_new_skips"},
    {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["words/*.py"]}},
]
COMMAND = [
    {"name": "endstate.evals.graders:command_succeeds",
     "args": {"command": "python -m unittest discover -s tests -t . -q"}},
    *JUDGED[1:],
]
FIXTURE = {
    "words/__init__.py": "def unique_letters(word):\n    return word\n",
    "tests/__init__.py": "",
    "tests/test_words.py": (
        "import unittest\n\nfrom words import unique_letters\n\n\n"
        "class WordsTest(unittest.TestCase):\n"
        "    def test_one_letter(self):\n"
        "        self.assertEqual(unique_letters('aa'), 'a')\n"
    ),
}
SET_ORDER = {"words/__init__.py": "def unique_letters(word):\n    return ''.join(set(word))\n"}
SORTED = {"words/__init__.py": "def unique_letters(word):\n    return ''.join(sorted(set(word)))\n"}
SEED_ZERO_ORDER = " drhoewl"
"""``''.join(set('hello world'))`` under PYTHONHASHSEED=0: what an author who ran the tests
under the pinned seed wrote down."""


def holdout(expected: str) -> dict[str, str]:
    return {"tests/test_holdout_words.py": (
        "import unittest\n\nfrom words import unique_letters\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_hello(self):\n"
        f"        self.assertEqual(unique_letters('hello world'), {expected!r})\n"
    )}


ORDER_DEPENDENT = {"tests/test_holdout_words.py": (
    "import unittest\n\nfrom words import unique_letters\n\n\n"
    "class HoldoutTest(unittest.TestCase):\n"
    "    seen = []\n\n"
    "    def test_a_records(self):\n"
    "        HoldoutTest.seen.append(unique_letters('aab'))\n"
    "        self.assertEqual(len(HoldoutTest.seen[0]), 2)\n\n"
    "    def test_b_reads_what_a_recorded(self):\n"
    "        self.assertEqual(sorted(HoldoutTest.seen[0]), ['a', 'b'])\n"
)}


def task(build: TaskBuilder, name: str, solution: dict[str, str], held: dict[str, str],
         graders: list[dict[str, Any]] = JUDGED) -> Path:
    return build(good(id=name, graders=[dict(g) for g in graders]), name=name,
                 fixture=FIXTURE, solution=solution, holdout=held)


def es909(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in data["diagnostics"] if d["code"] == "ES909"]


@pytest.mark.parametrize("graders", [JUDGED, COMMAND], ids=["judged", "command"])
def test_es909_a_holdout_that_expects_the_pinned_seeds_set_order(
    build: TaskBuilder, cache: Path, graders: list[dict[str, Any]]
) -> None:
    """Passes under seed 0 (ES902 holds), fails under the second grading's seed: ES909 names
    both seeds, the order, and the test that flipped."""
    root = task(build, "set-order", SET_ORDER, holdout(SEED_ZERO_ORDER), graders)
    rc, data, _ = prove(str(root), "--only", "directions", cache=cache)
    checks = outcomes(data)
    assert checks["solution passes"] == "pass", data["diagnostics"]
    assert rc == 1 and checks["same verdict under another hash seed and test order"] == "fail"
    [found] = es909(data)
    other = variation.seed_of(1)
    assert "hash seed 0" in found["message"] and f"hash seed {other}" in found["message"]
    assert "reverse order" in found["message"]
    assert found["evidence"]["gradings"] == [
        {"hash_seed": 0, "test_order": "discovered"},
        {"hash_seed": other, "test_order": "reversed"},
    ]
    flipped = found["evidence"]["flipped"]
    if graders is JUDGED:  # the judge names the test and where it is
        assert found["file"].endswith("holdout/tests/test_holdout_words.py"), found
        assert found["line"] == 7
        assert flipped == {"HoldoutTest.test_hello (tests/test_holdout_words.py)":
                           ["passed", "failed"]}
        assert "HoldoutTest.test_hello" in found["message"]
    else:  # a test command says only its verdict
        assert flipped == {"grader 0": ["passed", "failed"]}


def test_es909_near_miss_a_sorted_answer(build: TaskBuilder, cache: Path) -> None:
    root = task(build, "sorted", SORTED, holdout(" dehlorw"))
    rc, data, _ = prove(str(root), "--only", "directions", cache=cache)
    assert rc == 0 and not es909(data), data["diagnostics"]
    check = next(c for t in data["tasks"] for c in t["checks"]
                 if c["check"] == "same verdict under another hash seed and test order")
    assert check["outcome"] == "pass"
    assert f"hash seed {variation.seed_of(1)}" in check["detail"]


def test_es909_tests_that_pass_only_in_discovery_order(build: TaskBuilder, cache: Path) -> None:
    """The package is sound under any seed; the holdout's second test reads what the first
    left in the class: reversed, it fails."""
    root = task(build, "order", SORTED, ORDER_DEPENDENT)
    rc, data, _ = prove(str(root), "--only", "directions", cache=cache)
    assert outcomes(data)["solution passes"] == "pass", data["diagnostics"]
    [found] = es909(data)
    assert rc == 1 and "tests in reverse order" in found["message"]
    assert "test_b_reads_what_a_recorded" in found["message"]
    assert found["evidence"]["flipped"] == {
        "HoldoutTest.test_b_reads_what_a_recorded (tests/test_holdout_words.py)":
            ["passed", "error"],
    }


def test_repeat_varies_the_seed_per_pass(build: TaskBuilder, cache: Path) -> None:
    """``--repeat 3``: each pass under a seed of its own; a check whose passes disagree is
    ES909 naming the seed of a passing and of a failing pass."""
    root = task(build, "repeat", SET_ORDER, holdout(SEED_ZERO_ORDER))
    rc, data, _ = prove(str(root), "--only", "directions", "--repeat", "3", cache=cache)
    assert rc == 1
    found = [d for d in es909(data) if "disagreed with itself over 3 runs" in d["message"]]
    assert found, data["diagnostics"]
    message = found[0]["message"]
    assert "passed under hash seed 0, tests as discovered (pass 1)" in message
    failing = [n for n in (1, 2) if f"hash seed {variation.seed_of(2 * n)}" in message]
    assert failing and f"(pass {failing[0] + 1})" in message
    assert f"shuffled by seed {variation.seed_of(2 * failing[0])}" in message


def test_repeat_near_miss_a_sorted_answer_agrees_with_itself(
    build: TaskBuilder, cache: Path
) -> None:
    root = task(build, "repeat-sorted", SORTED, holdout(" dehlorw"))
    rc, data, _ = prove(str(root), "--only", "directions", "--repeat", "3", cache=cache)
    assert rc == 0 and not es909(data), data["diagnostics"]


SEED_READER = {"words/__init__.py": (
    "import os\n\n\ndef unique_letters(word):\n    return ''.join(sorted(set(word)))\n\n\n"
    "def seed():\n    return os.environ['PYTHONHASHSEED']\n"
)}
SEED_IS_ZERO = {"tests/test_holdout_words.py": (
    "import os\nimport unittest\n\nfrom words import seed, unique_letters\n\n\n"
    "class HoldoutTest(unittest.TestCase):\n"
    "    def test_letters(self):\n"
    "        self.assertEqual(unique_letters('abba'), 'ab')\n\n"
    "    def test_graded_under_seed_zero(self):\n"
    "        self.assertEqual((seed(), os.environ['PYTHONHASHSEED']), ('0', '0'))\n"
)}


def test_the_default_grading_is_seed_0_and_the_second_another(
    build: TaskBuilder, cache: Path
) -> None:
    """endstate 0.3.0's contract: the grading every other check reads (ES902's) runs the
    package and the judge under PYTHONHASHSEED=0; only the second grading changes it, and a
    test that reads the seed flips there (and only that test)."""
    root = task(build, "seed-zero", SEED_READER, SEED_IS_ZERO)
    rc, data, _ = prove(str(root), "--only", "directions", cache=cache)
    assert outcomes(data)["solution passes"] == "pass", data["diagnostics"]
    [found] = es909(data)
    assert rc == 1 and found["evidence"]["flipped"] == {
        "HoldoutTest.test_graded_under_seed_zero (tests/test_holdout_words.py)":
            ["passed", "failed"],
    }
