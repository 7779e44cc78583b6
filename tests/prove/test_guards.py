"""The one rule every guard check is judged by (``endstate_author.prove.checks.guards.judge``).

The end-to-end tests in test_prove.py run each category's guard through the real runner;
these pin the rule itself: a guard that never fired is not removed (ES905 alone), the run
with the guard in place must pass (else ES907), the run without it must fail (else ES904).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from endstate_author.prove.checks.guards import judge


@dataclass
class Run:
    passed: bool
    checks: list[Any] = field(default_factory=list)
    reason: str = "failed"


def judged(*, never_fired: str | None = None, kept: Run | None, removed: Run) -> list[Any]:
    calls: list[str] = []

    def remove() -> Any:
        calls.append("removed")
        return removed

    results = judge(
        "guard fires",
        "guard removed fails",
        never_fired=never_fired,
        kept=None if kept is None else (lambda: kept),
        kept_passed="fired",
        kept_failed="fired but the task failed: ",
        remove=remove,
        still_passed="still passed",
    )
    if never_fired is not None:
        assert calls == [], "a guard that never fired must not be removed"
    return [(r.check, r.outcome, r.code, r.detail) for r in results]


def test_a_guard_that_never_fired_is_es905_alone() -> None:
    got = judged(never_fired="no denial", kept=Run(True), removed=Run(True))
    assert got == [("guard fires", "fail", "ES905", "no denial")]


def test_a_load_bearing_guard_passes_both_ways() -> None:
    got = judged(kept=Run(True), removed=Run(False, reason="tree changed"))
    assert got == [
        ("guard fires", "pass", None, "fired"),
        ("guard removed fails", "pass", None, "tree changed"),
    ]


def test_the_guarded_run_failing_is_es907_and_removal_still_judged() -> None:
    got = judged(kept=Run(False, reason="bound"), removed=Run(True))
    assert got == [
        ("guard fires", "fail", "ES907", "fired but the task failed: bound"),
        ("guard removed fails", "fail", "ES904", "still passed"),
    ]


def test_a_guard_without_a_run_of_its_own_is_judged_by_removal_only() -> None:
    assert judged(kept=None, removed=Run(True)) == [
        ("guard removed fails", "fail", "ES904", "still passed")
    ]
