"""The judge's own work is bounded (issue 27, class 4): a reply made to be costly fails fast.

Each payload (tests/harness/judge_payloads.py) is the package's code; before the bounds, the
judge rebuilt or compared what it sent for minutes (the harness ended it at the run's wall
clock). The timing bound is generous (20 s against a 60 s run): the point is that the failure
comes from a bound, with its reason, and not from the run's deadline.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.harness import judge_payloads as p
from tests.harness.test_judge import backend  # noqa: F401 - the local/docker fixture

ASKS_ADD = """\
    import unittest

    from pkg.calc import add


    class HiddenTest(unittest.TestCase):
        def test_add(self):
            self.assertEqual(add(2, 3), 5)
    """

ASKS_UNIQUE = """\
    import unittest

    from pkg.calc import unique


    class HiddenTest(unittest.TestCase):
        def test_unique(self):
            self.assertEqual(set(unique([5, 7, 5])), {5, 7})

        def test_listed(self):
            self.assertEqual(unique([7, 5]), [5, 7])
    """

FAST = 20.0
"""Seconds within which a bounded failure must come (the run's own deadline is 60 s)."""


def _timed(kind: str, task: Path, calc: str) -> tuple[bool, str, float]:
    start = time.monotonic()
    verdict = p.judge(kind, task, calc, timeout_s=60.0)
    return verdict.passed, p.detail(verdict), time.monotonic() - start


def test_an_honest_end_state_passes(backend: str, tmp_path: Path) -> None:  # noqa: F811
    for holdout in (ASKS_ADD, ASKS_UNIQUE):
        task = p.make_task(tmp_path / str(len(holdout)), holdout)
        passed, why, _ = _timed(backend, task, p.HONEST)
        assert passed, why


def test_a_reply_that_rebuilds_in_quadratic_time_fails_in_seconds(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    passed, why, took = _timed(backend, p.make_task(tmp_path, ASKS_ADD), p.QUADRATIC_REPLY)
    assert not passed
    assert took < FAST, f"{took:.1f} s"
    assert "share one hash" in why, why


def test_colliding_values_one_answer_at_a_time_fail_in_seconds(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    """Iterating the agent's object brings one value per answer; the bound is per
    conversation, so the set the holdout makes of them is never built."""
    passed, why, took = _timed(backend, p.make_task(tmp_path, ASKS_UNIQUE),
                               p.COLLIDING_ITERATION)
    assert not passed
    assert took < FAST, f"{took:.1f} s"
    assert "share one hash" in why, why


def test_a_value_built_to_be_slow_to_diff_fails_in_seconds(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    passed, why, took = _timed(backend, p.make_task(tmp_path, ASKS_UNIQUE), p.SLOW_TO_DIFF)
    assert not passed
    assert took < FAST, f"{took:.1f} s"
    assert "diff left out" in why or "more than" in why, why


def test_the_judges_own_cpu_per_test_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever else costs the judge (a quadratic comparison of unhashable values, say),
    one test gets the call deadline of the judge's own CPU (3 s here); the next test runs."""
    from endstate_harness.graders.judge import grader

    monkeypatch.setattr(grader, "CALL_TIMEOUT_S", 3.0)
    holdout = """\
    import unittest

    from pkg.calc import add


    class HiddenTest(unittest.TestCase):
        def test_a_slow_comparison(self):
            rows = [[i] for i in range(add(20000, 0))]
            self.assertCountEqual(rows, list(reversed(rows)) + [[-1]])

        def test_add(self):
            self.assertEqual(add(2, 3), 5)
    """
    task = p.make_task(tmp_path, holdout)
    start = time.monotonic()
    verdict = p.judge("local", task, p.HONEST, timeout_s=60.0)
    took = time.monotonic() - start
    why = p.detail(verdict)
    assert not verdict.passed
    assert "test_a_slow_comparison (tests/test_hidden.py:9) failed" in why, why
    assert "s of CPU" in why, why
    assert "test_add" not in why, "the next test ran, and passed"
    assert took < FAST, f"{took:.1f} s"


@pytest.mark.parametrize("size", [10, 40])
def test_powers_of_two_are_not_taken_for_collisions(tmp_path: Path, size: int) -> None:
    """2**(3 + 61k) all hash to 8: a legitimate list of powers of two shares hashes, up to
    the bound, and still crosses."""
    from endstate_harness.judgewire import MAX_SAME_HASH, decode, encode

    values = [2 ** (3 + 61 * k) for k in range(size)]
    assert len({hash(v) for v in values}) == 1 and size < MAX_SAME_HASH
    assert decode(encode(values, repr), repr) == values


@pytest.mark.parametrize("reply", ["DEEP_LINE", "HUGE_INT", "HUGE_STRING", "MANY_VALUES"])
def test_other_costly_replies_fail_in_seconds(tmp_path: Path, reply: str) -> None:
    """Deep nesting, a million-digit int, a 15 MB string, three million values: each fails
    the case (refused, or compared and found wrong) within the bound, and the judge reports.
    (These were bounded before too, at 0.05-2.5 s; they guard the new decoder.)"""
    task = p.make_task(tmp_path, ASKS_ADD)
    passed, why, took = _timed("local", task, p.crafted_reply(getattr(p, reply)))
    assert not passed
    assert took < FAST, f"{took:.1f} s"
    assert "the judge reported: True" in why, why
