"""A batch's time bound (``judge_variants(..., bound=(factor, floor))``): a variant that never
ends is cut at a multiple of the tests' own time on the tree as it is, measured in the same
judge, and the batch goes on past it; a variant that is merely as slow as the solution is never
cut, however slow the solution is; and the tree is as it was afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge.grader import TIMED_OUT, judge_variants
from endstate_harness.verdict import Verdict
from tests.harness.test_judge import _box, backend, make_task  # noqa: F401
from tests.harness.test_judge_variants import SOLVED, WRONG

# the bound is wall-clock time taken beside the run it bounds: a second worker's load beside
# them measures the machine, not the bound (scripts/run-tests.sh runs these one at a time)
pytestmark = pytest.mark.alone

LOOPS = "def add(a, b):\n    while True:\n        a = a\n"
"""Never ends: the shape of a mutant that stops a loop from advancing."""
SLEEPS = "import time\n\n\ndef add(a, b):\n    time.sleep(0.05)\n    return a + b\n"
"""Correct, and slow: each call takes 50 ms, so a run of the tests takes past the floor."""
SLEEPS_TOO = SLEEPS.replace("return a + b", "return b + a")
"""The same, as another text: a survivor exactly as slow as the solution."""


def _batch(kind: str, task: Path, solution: str, variants: list[str],
           bound: tuple[float, float] | None) -> tuple[list[Verdict], float]:
    with _box(kind, task / "fixture") as box:
        box.write_text("pkg/calc.py", solution)
        box.seal()
        box.stage(task / "holdout")
        started = time.monotonic()
        verdicts = judge_variants(box, [{"pkg/calc.py": v} for v in variants], bound)
        took = time.monotonic() - started
        assert box.live.joinpath("pkg/calc.py").read_text() == solution, \
            "every variant's file is written back, the cut ones too"
        assert judged_tests(box).passed, "the tree grades as before after the batch"
    return verdicts, took


def _cut(verdict: Verdict) -> str | None:
    found = [c for c in verdict.checks if c.name.endswith(f": {TIMED_OUT}")]
    return found[0].detail if found and not found[0].passed else None


def test_a_variant_that_loops_is_cut_and_the_batch_goes_on(backend: str,  # noqa: F811
                                                            tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    variants = [SOLVED, LOOPS, WRONG, LOOPS, SOLVED]
    verdicts, took = _batch(backend, task, SOLVED, variants, (4.0, 0.1))
    assert [v.passed for v in verdicts] == [True, False, False, False, True], \
        "every variant judged, in one batch: none left to be graded apart"
    cuts = [_cut(v) for v in verdicts]
    assert cuts[0] is None and cuts[2] is None and cuts[4] is None
    for detail in (cuts[1], cuts[3]):
        assert detail is not None and detail.startswith("killed: timed out"), detail
    # each looping variant costs two or three bounds (0.1 s floor: this suite runs in a few
    # ms) and as many references; the call limit it cost before is 30 s
    assert took < 15, f"the batch took {took:.1f} s"


def test_a_variant_as_slow_as_the_solution_is_never_cut(tmp_path: Path) -> None:
    """The bound follows the solution's own time: a solution whose tests run past the floor
    (0.1 s) raises it, so a survivor that takes as long passes, and one that loops is still
    cut."""
    task = make_task(tmp_path / "task")
    verdicts, _ = _batch("local-no-walls", task, SLEEPS, [SLEEPS_TOO, LOOPS, SLEEPS_TOO],
                         (4.0, 0.1))
    assert [v.passed for v in verdicts] == [True, False, True]
    assert _cut(verdicts[1]) is not None


def test_without_a_bound_nothing_is_cut(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    verdicts, _ = _batch("local-no-walls", task, SOLVED, [SLEEPS_TOO, WRONG], None)
    assert [v.passed for v in verdicts] == [True, False]
    assert all(_cut(v) is None for v in verdicts)


@pytest.mark.parametrize("bound", [(0.0, 0.1), (4.0, -1.0), (float("nan"), 0.1)])
def test_a_malformed_bound_is_no_bound(bound: tuple[float, float], tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    verdicts, _ = _batch("local-no-walls", task, SOLVED, [SLEEPS_TOO], bound)
    assert [v.passed for v in verdicts] == [True]
