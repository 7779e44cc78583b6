"""Checks and verdicts: what a grader answers."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Check(BaseModel):
    """One named assertion and its outcome."""

    name: str
    passed: bool
    detail: str = ""

    def __str__(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        return f"[{mark}] {self.name}" + (f": {self.detail}" if self.detail else "")


class Verdict(BaseModel):
    """A grader's answer: a conjunction of checks, plus a reason when it failed."""

    passed: bool
    reason: str = ""
    checks: list[Check] = Field(default_factory=list)

    @classmethod
    def ok(cls, reason: str = "", checks: list[Check] | None = None) -> Verdict:
        return cls(passed=True, reason=reason, checks=list(checks or []))

    @classmethod
    def fail(cls, reason: str, checks: list[Check] | None = None) -> Verdict:
        return cls(passed=False, reason=reason, checks=list(checks or []))

    @classmethod
    def from_checks(cls, checks: list[Check]) -> Verdict:
        """Conjunction: passes only when every check passed; the reason names the failures."""
        failed = [c.name for c in checks if not c.passed]
        return cls(passed=not failed, reason="; ".join(failed), checks=list(checks))

    def merged_with(self, other: Verdict) -> Verdict:
        """Conjoin two verdicts keeping every check.

        ``passed`` is conjoined explicitly rather than recomputed from the checks: a grader
        that raised fails with a reason and *no* checks, and recomputing would turn that
        failure into a pass.
        """
        checks = [*self.checks, *other.checks]
        reasons = [v.reason for v in (self, other) if not v.passed and v.reason]
        reasons += [c.name for c in checks if not c.passed]
        return Verdict(
            passed=self.passed and other.passed,
            reason="; ".join(dict.fromkeys(reasons)),
            checks=checks,
        )

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]
