"""ES509-ES511 — tests that check less than they seem: each shape that draws the finding, and
the sound neighbour that does not (shapes of our own: a chunker package and its tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.conftest import TaskBuilder
from tests.rules.helpers_es345 import absent, found
from tests.support.tasks import FIXTURE, SOLUTION

HEAD = (
    "import builtins\nimport unittest\n\nimport pytest\n\n"
    "import chunker\nfrom chunker import chunk\n"
)


def holdout(body: str, head: str = HEAD) -> dict[str, str | bytes]:
    return {"tests/test_holdout_chunk.py": head + "\n\n" + body}


def in_class(*methods: str) -> str:
    out = "class HoldoutTest(unittest.TestCase):\n"
    for method in methods:
        out += "".join(f"    {line}\n" for line in method.splitlines()) + "\n"
    return out


def _line(task: Path, needle: str, nth: int = 0) -> int:
    text = (task / "holdout" / "tests" / "test_holdout_chunk.py").read_text()
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1


# ----- ES509 ---------------------------------------------------------------------------------


def test_es509_a_test_method_defined_twice_names_the_first(make_task: TaskBuilder) -> None:
    task = make_task(holdout=holdout(in_class(
        "def test_tail(self):\n    self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])",
        "def test_tail(self):\n    self.assertEqual(chunk([1], 5), [[1]])",
    )))
    [d] = found(task, "ES509")
    assert d.severity == "error" and "test_tail" in d.message
    assert d.line == _line(task, "def test_tail") and f"line {_line(task, 'def test_tail', 1)}" \
        in d.message


def test_es509_a_module_level_test_function_defined_twice(make_task: TaskBuilder) -> None:
    body = ("def test_tail():\n    assert chunk([1], 5) == [[1]]\n\n\n"
            "def test_tail():\n    assert chunk([], 5) == []\n")
    task = make_task(holdout=holdout(body))
    [d] = found(task, "ES509")
    assert d.line == _line(task, "def test_tail")


def test_es509_near_misses(make_task: TaskBuilder) -> None:
    """Two classes with the same method name, a helper redefined, versions under `if`."""
    body = in_class("def test_tail(self):\n    pass", "def helper(self):\n    pass",
                    "def helper(self):\n    return 1")
    body += "\n\nclass Other(unittest.TestCase):\n    def test_tail(self):\n        pass\n"
    body += ("\n\nimport sys\nif sys.version_info >= (3, 12):\n    def test_x():\n        pass\n"
             "else:\n    def test_x():\n        pass\n")
    absent(make_task(holdout=holdout(body)), "ES509")


# ----- ES510 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    "with self.assertRaises(Exception):\n    chunk([1], 0)",
    "self.assertRaises(BaseException, chunk, [1], 0)",
    "with self.assertRaises((ValueError, Exception)):\n    chunk([1], 0)",
    "with pytest.raises(Exception):\n    chunk([1], 0)",
    'with self.assertRaisesRegex(Exception, ".*"):\n    chunk([1], 0)',
    "with self.assertRaises(builtins.Exception):\n    chunk([1], 0)",
])
def test_es510_an_expectation_any_crash_meets(make_task: TaskBuilder, call: str) -> None:
    method = "def test_zero(self):\n" + "".join(f"    {line}\n" for line in call.splitlines())
    task = make_task(holdout=holdout(in_class(method)))
    [d] = found(task, "ES510")
    assert d.severity == "warning" and d.line == _line(task, call.split("(")[0].split()[-1])


@pytest.mark.parametrize("call", [
    "with self.assertRaises(ValueError):\n    chunk([1], 0)",
    'with self.assertRaisesRegex(Exception, "size must be positive"):\n    chunk([1], 0)',
    'with pytest.raises(Exception, match="positive"):\n    chunk([1], 0)',
])
def test_es510_near_misses(make_task: TaskBuilder, call: str) -> None:
    method = "def test_zero(self):\n" + "".join(f"    {line}\n" for line in call.splitlines())
    absent(make_task(holdout=holdout(in_class(method))), "ES510")


def test_es510_a_test_files_own_exception_class_is_not_the_builtin(
    make_task: TaskBuilder
) -> None:
    body = "class Exception(ValueError):\n    pass\n\n\n" + in_class(
        "def test_zero(self):\n    with self.assertRaises(Exception):\n        chunk([1], 0)")
    absent(make_task(holdout=holdout(body)), "ES510")


# ----- ES511 ---------------------------------------------------------------------------------

TABLED = {
    **FIXTURE,
    "chunker/__init__.py": "from chunker.core import chunk, SIZES\n",
    "chunker/core.py": FIXTURE["chunker/core.py"] + "\nSIZES = {'pair': 2}\n",
}


@pytest.mark.parametrize("assertion", [
    "self.assertEqual(chunk([1, 2, 3], 2), chunk([1, 2, 3], 2))",
    "assert chunker.chunk([1, 2], 1) == chunker.chunk([1, 2], 1)",
    "self.assertEqual(len(chunk([1, 2], SIZES['pair'])), 1 * SIZES['pair'] - 1)",
    "self.assertEqual(chunker.SIZES['pair'], len(chunk([1, 2], 1)))",
])
def test_es511_both_sides_from_the_code_under_test(make_task: TaskBuilder, assertion: str) -> None:
    head = HEAD + "from chunker import SIZES\n"
    task = make_task(fixture=TABLED, solution={"chunker/core.py": SOLUTION["chunker/core.py"]
                                                + "\nSIZES = {'pair': 2}\n"},
                     holdout=holdout(in_class(f"def test_it(self):\n    {assertion}"), head))
    [d] = found(task, "ES511")
    assert d.severity == "warning" and d.line == _line(task, assertion.split("(")[0])


@pytest.mark.parametrize("assertion", [
    "self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])",
    "self.assertEqual(chunk(list(range(4)), 2), chunk([0, 1], 2) + chunk([2, 3], 2))",
    "self.assertEqual(len(chunk([1, 2], SIZES['pair'])), 1)",
    "self.assertEqual(SIZES['pair'], 2)",
    "self.assertEqual(chunker.chunk([1], 1), [[1]])",
])
def test_es511_near_misses(make_task: TaskBuilder, assertion: str) -> None:
    head = HEAD + "from chunker import SIZES\n"
    task = make_task(fixture=TABLED, holdout=holdout(
        in_class(f"def test_it(self):\n    {assertion}"), head))
    absent(task, "ES511")
