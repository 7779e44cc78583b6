"""No verdict rests on the agent's operators (issue 27, class 5), and what a holdout reads of
the package crosses as values (issue 28, item 4).

The payload (``ANSWERS_EVERYTHING`` in tests/harness/judge_payloads.py) returns an object
whose ``__sub__``, ``__abs__``, ``__contains__``, ``__bool__`` and ordering answer whatever an
assertion needs. Each holdout method below is sound for a plain value, and the honest end
state passes it; before the change the payload passed every one of them too (the judge asked
the agent's object), now each fails with the advice to compare plain values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_harness.verdict import Verdict
from tests.harness import judge_payloads as p
from tests.harness.test_judge import backend  # noqa: F401 - the local/docker fixture

SHAPES = {
    "almost_equal": "self.assertAlmostEqual(mean([20.0, 22.0]), 21.0)",
    "difference": "self.assertTrue(abs(mean([20.0, 22.0]) - 21.0) < 1e-9)",
    "ordering": "self.assertLess(mean([1.0, 2.0]), 2.0)",
    "ordering_outside": "self.assertTrue(mean([1.0, 2.0]) < 2.0)",
    "membership": "self.assertIn(5, unique([5, 7]))",
    "membership_outside": "self.assertTrue(5 in unique([5, 7]))",
    "truth": "self.assertTrue(unique([5]))",
    "truth_outside": "self.assertEqual(bool(unique([5])), True)",
    "all_positive": "self.assertTrue(all(v > 0 for v in unique([5, 7])))",
}


def _holdout(shapes: dict[str, str]) -> str:
    methods = "".join(
        f"\n        def test_{name}(self):\n            {line}\n" for name, line in shapes.items()
    )
    return (
        "    import unittest\n\n    from pkg.calc import add, mean, unique\n\n\n"
        "    class HiddenTest(unittest.TestCase):" + methods
    )


def _outcomes(verdict: Verdict) -> dict[str, str]:
    """Each shape's outcome, as the judge's per-test evidence reports it."""
    assert verdict.evidence is not None
    found = {}
    for record in verdict.evidence.tests:
        name = record.id.rsplit(".test_", 1)[-1]
        if name in SHAPES:
            found[name] = record.outcome
    return found


def _messages(verdict: Verdict) -> list[str]:
    assert verdict.evidence is not None
    return [r.message for r in verdict.evidence.tests if r.outcome != "passed"]


def test_the_honest_end_state_passes_every_shape(backend: str, tmp_path: Path) -> None:  # noqa: F811
    task = p.make_task(tmp_path, _holdout(SHAPES))
    verdict = p.judge(backend, task, p.HONEST)
    assert verdict.passed, p.detail(verdict)


def test_an_object_that_answers_every_assertion_passes_none(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    task = p.make_task(tmp_path, _holdout(SHAPES))
    verdict = p.judge(backend, task, p.ANSWERS_EVERYTHING, visible=False)
    why = p.detail(verdict)
    assert not verdict.passed
    assert _outcomes(verdict) == dict.fromkeys(SHAPES, "failed"), why
    assert all("compare plain values" in m for m in _messages(verdict)), why


def test_equality_with_a_reference_says_what_to_do(tmp_path: Path) -> None:
    task = p.make_task(tmp_path, _holdout({"equal": "self.assertEqual(add(2, 3), 5)"}))
    verdict = p.judge("local", task, p.ANSWERS_EVERYTHING)
    assert verdict.evidence is not None
    (message,) = [r.message for r in verdict.evidence.tests if r.id.endswith(".test_equal")]
    assert "assertEqual was given an object of the code under test" in message, message
    assert "compare plain values" in message and "assertIs" in message


SOUND = """\
    import unittest

    import pkg
    from pkg import calc
    from pkg.calc import Money


    class HiddenTest(unittest.TestCase):
        def test_the_package_s_objects(self):
            m = Money(150) + Money(275)
            self.assertIsInstance(m, Money)
            self.assertIs(m, m)
            self.assertIsNotNone(m)
            self.assertEqual(str(m), "$4.25")
            self.assertEqual(f"{m}", "$4.25")
            self.assertEqual(m.cents, 425)
            self.assertEqual(len(m), 5)
            self.assertEqual(list(m), [4, 25])
            self.assertEqual(m[1], 25)
            self.assertIn(25, list(m))
            self.assertEqual(Money.__doc__, "An amount in cents.")

        def test_module_data(self):
            self.assertEqual(pkg.__all__, ["calc", "Money"])
            self.assertEqual(pkg.__version__, "1.4.0")
            self.assertEqual(pkg.RATE, 0.25)
            self.assertEqual(pkg.__doc__, "Sums and money.")
            self.assertEqual(calc.__doc__, None)
            self.assertEqual(calc.add.__doc__, None)
            self.assertEqual(calc.add.__name__, "add")
            self.assertEqual(pkg.__name__, "pkg")
    """

PACKAGE_INIT = (
    '"""Sums and money."""\n\n__all__ = ["calc", "Money"]\n__version__ = "1.4.0"\nRATE = 0.25\n'
    "from pkg.calc import Money\n"
)


def test_a_sound_holdout_reads_the_package_as_values(backend: str, tmp_path: Path) -> None:  # noqa: F811
    task = p.make_task(tmp_path, SOUND)
    verdict = p.judge(backend, task, p.MONEY, {"pkg/__init__.py": PACKAGE_INIT})
    assert verdict.passed, p.detail(verdict)


@pytest.mark.parametrize("line", [
    "self.assertEqual(pkg.__file__, 'x')",
    "self.assertEqual(pkg.calc.add.__code__, 'x')",
])
def test_other_dunders_of_the_package_do_not_cross(tmp_path: Path, line: str) -> None:
    """What they would say is about the sandbox's files and the child's interpreter (lint
    reports reading them as ES508, before anything runs)."""
    holdout = (
        "    import unittest\n\n    import pkg\n\n\n"
        "    class HiddenTest(unittest.TestCase):\n"
        f"        def test_it(self):\n            {line}\n"
    )
    task = p.make_task(tmp_path, holdout)
    verdict = p.judge("local", task, p.MONEY, {"pkg/__init__.py": PACKAGE_INIT})
    assert not verdict.passed
