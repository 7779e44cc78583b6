"""The judge as a witness (issue #29): what it reports of each test, and why the code under test
cannot change that.

A tiny package and a holdout written here, graded by ``judged_tests`` in the local sandbox (the
judge runs on the host whatever the sandbox; one test repeats the run in Docker). Each test
reads the verdict's :class:`~endstate_harness.verdict.Evidence`: every test with its file, its
outcome, the assertions it executed, and for one that did not pass the message and the line.
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge.evidence import defines_tests
from endstate_harness.graders.judge.witness import instrument
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.container import IMAGE_ENV, DockerSandbox
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.verdict import Verdict

FIXTURE = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a - b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": textwrap.dedent("""\
        import unittest

        from pkg.calc import add


        class CalcTest(unittest.TestCase):
            def test_small(self):
                self.assertEqual(add(1, 1), 2)
        """),
}
HOLDOUT = {
    "tests/test_hidden.py": textwrap.dedent("""\
        import unittest

        from pkg.calc import add

        CASES = {"cases": [[2, 3, 5], [0, 0, 0]]}


        class HiddenTest(unittest.TestCase):
            def test_methods(self):
                for a, b, want in CASES["cases"]:
                    self.assertEqual(add(a, b), want, f"add({a}, {b})")

            def test_statements(self):
                assert add(2, 2) == 4, "two and two"
                assert add(0, 0) == 0

            def test_if_fail(self):
                if add(1, 2) != 3:
                    self.fail("one and two")

            def test_loop_over_nothing(self):
                for a, b, want in CASES.get("case", []):
                    self.assertEqual(add(a, b), want)

            @unittest.skip("not on this Python")
            def test_skipped(self):
                self.assertTrue(False)

            def test_mock(self):
                from unittest import mock

                seen = mock.Mock()
                seen(add(1, 1))
                seen.assert_called_once_with(2)
        """),
    "tests/holdout_named_elsewhere.py": textwrap.dedent("""\
        import unittest


        class NeverFound(unittest.TestCase):
            def test_a(self):
                self.assertTrue(True)
        """),
    "tests/doubles.py": "class Clock:\n    now = 0\n",
}
SOLUTION = "def add(a, b):\n    return a + b\n"

# The code under test reaches for the judge's counters and for unittest: in the child, where
# it runs, there are none worth reaching (the judge counts in its own process).
FORGER = textwrap.dedent("""\
    import builtins, sys, unittest

    builtins.__endstate_witness__ = lambda: None
    unittest.TestCase.assertEqual = lambda *a, **k: None
    for name in list(sys.modules):
        module = sys.modules[name]
        if hasattr(module, "Tally"):
            module.Tally.hit = lambda self: None

    def add(a, b):
        return a - b
    """)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture
def task(tmp_path: Path) -> Path:
    _write(tmp_path / "fixture", FIXTURE)
    _write(tmp_path / "holdout", HOLDOUT)
    return tmp_path


def _judge(box: TreeSandbox, task: Path, calc: str | None) -> Verdict:
    with box:
        if calc is not None:
            box.write_text("pkg/calc.py", calc)
        box.seal()
        box.stage(task / "holdout")
        return judged_tests(box)


def _by_name(verdict: Verdict) -> dict[str, dict[str, object]]:
    assert verdict.evidence is not None
    return {t.id.rsplit(".", 1)[-1]: t.model_dump() for t in verdict.evidence.tests}


def test_each_test_is_reported_with_its_file_outcome_and_assertions(task: Path) -> None:
    verdict = _judge(LocalSandbox(task / "fixture"), task, SOLUTION)
    assert verdict.passed
    tests = _by_name(verdict)
    assert tests["test_small"] == {
        "id": "tests.test_calc.CalcTest.test_small", "file": "tests/test_calc.py",
        "source": "fixture", "outcome": "passed", "assertions": 1, "message": "", "line": None,
    }  # fmt: skip
    assert tests["test_methods"]["assertions"] == 2  # once per call, not per inner helper
    assert tests["test_statements"]["assertions"] == 2  # plain `assert` statements
    assert tests["test_if_fail"]["assertions"] == 1  # an `if` that fails the test asserts
    assert tests["test_loop_over_nothing"]["assertions"] == 0
    assert tests["test_mock"]["assertions"] == 1  # a mock's assert_… method counts too
    assert tests["test_skipped"]["outcome"] == "skipped"
    assert tests["test_skipped"]["message"] == "not on this Python"
    assert {t["source"] for n, t in tests.items() if n != "test_small"} == {"holdout"}
    # a holdout test module discovery never picked up is named; a helper module is not
    assert verdict.evidence is not None
    assert verdict.evidence.silent == ["tests/holdout_named_elsewhere.py"]


def test_a_failure_is_reported_with_its_message_and_line(task: Path) -> None:
    verdict = _judge(LocalSandbox(task / "fixture"), task, None)
    assert not verdict.passed
    tests = _by_name(verdict)
    assert tests["test_methods"]["message"] == "-1 != 5 : add(2, 3)"
    assert tests["test_methods"]["line"] == 11 and tests["test_methods"]["outcome"] == "failed"
    assert tests["test_statements"]["message"] == "two and two"
    assert tests["test_statements"]["line"] == 14
    assert tests["test_if_fail"]["message"] == "one and two"
    # the check says which tests failed and why, outcome first, the check's name aside
    check = next(c for c in verdict.checks if c.name.endswith("all tests passed"))
    assert check.detail.startswith("5 of 7 tests did not pass: ")
    assert "HiddenTest.test_methods (tests/test_hidden.py:11) failed: -1 != 5 : add(2, 3)" in (
        check.detail
    )
    assert "CalcTest.test_small (tests/test_calc.py:8) failed: 0 != 2" in check.detail
    assert "\n" not in check.detail and "Traceback" not in check.detail


def test_the_code_under_test_cannot_change_what_the_witness_counts(task: Path) -> None:
    """The package patches unittest, the builtins and whatever module holds a tally — in the
    child, where it runs. The judge's counts and verdict are those of the unfixed code."""
    honest = _by_name(_judge(LocalSandbox(task / "fixture"), task, None))
    forged = _judge(LocalSandbox(task / "fixture"), task, FORGER)
    assert not forged.passed
    seen = _by_name(forged)
    for name, test in honest.items():
        assert (seen[name]["outcome"], seen[name]["assertions"]) == (
            test["outcome"], test["assertions"]
        ), name  # fmt: skip


def test_a_module_that_fails_to_load_names_its_file(task: Path) -> None:
    _write(task / "holdout", {"tests/test_broken.py": "import unittest\nfrom pkg import nope\n"})
    verdict = _judge(LocalSandbox(task / "fixture"), task, SOLUTION)
    assert verdict.evidence is not None
    broken = [t for t in verdict.evidence.tests if t.file == "tests/test_broken.py"]
    assert [(t.outcome, t.line) for t in broken] == [("error", 2)]  # the import's line
    assert broken[0].message == "ModuleNotFoundError: No module named 'pkg.nope'"
    ran = next(c for c in verdict.checks if c.name.endswith("all expected tests ran"))
    assert ran.detail.endswith(
        "failed to load: tests.test_broken (tests/test_broken.py:2) error: "
        "ModuleNotFoundError: No module named 'pkg.nope'"
    )


def test_a_long_failure_list_is_bounded_and_counted(tmp_path: Path) -> None:
    many = "".join(
        f"    def test_case_{i:02d}(self):\n        self.assertEqual(add({i}, 1), {i + 1})\n"
        for i in range(20)
    )
    _write(tmp_path / "fixture", {**FIXTURE, "tests/test_calc.py": (
        "import unittest\n\nfrom pkg.calc import add\n\n\nclass ManyTest(unittest.TestCase):\n"
        + many
    )})  # fmt: skip
    _write(tmp_path / "holdout", {"tests/__init__.py": ""})
    verdict = _judge(LocalSandbox(tmp_path / "fixture"), tmp_path, None)
    check = next(c for c in verdict.checks if c.name.endswith("all tests passed"))
    assert check.detail.startswith("20 of 20 tests did not pass: ")
    assert check.detail.count("failed: ") == 8
    assert check.detail.endswith("and 12 more test(s) not listed")


def test_the_assert_statement_counter_is_put_before_each_assertion() -> None:
    tree = instrument(ast.parse(textwrap.dedent("""\
        def f(x):
            assert x
            if x > 1:
                raise AssertionError
            try:
                g()
            except ValueError:
                fail("raised")
            return x
        """)))
    calls = [
        n.lineno for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "__endstate_witness__"
    ]  # fmt: skip
    assert calls == [2, 3, 5]


def test_the_same_evidence_in_docker(task: Path, docker_image: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IMAGE_ENV, docker_image)
    local = _by_name(_judge(LocalSandbox(task / "fixture"), task, SOLUTION))
    box = DockerSandbox(task / "fixture", image=os.environ[IMAGE_ENV], pull=False)
    assert _by_name(_judge(box, task, SOLUTION)) == local


def test_what_counts_as_a_holdout_test_module() -> None:
    case = (
        b"import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        b"        pass\n"
    )
    assert defines_tests(case, "tests/checks_elsewhere.py")  # a TestCase, whatever the name
    guarded = b"import sys, unittest\nif sys.version_info > (3,):\n" + b"".join(
        b"    " + line + b"\n" for line in case.splitlines()[1:]
    )
    assert defines_tests(guarded, "tests/x.py")  # a class under an `if`
    helper = b"def test_data_path():\n    return 'cases.json'\n"
    assert not defines_tests(helper, "tests/helpers.py")  # a helper's name is not a test
    assert defines_tests(helper, "tests/test_paths.py")  # pytest style, in a test module
    assert not defines_tests(b"class Clock:\n    now = 0\n", "tests/doubles.py")
