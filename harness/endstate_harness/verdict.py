"""Checks and verdicts: what a grader answers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator


def printable(text: str) -> str:
    """``text`` as valid UTF-8: a path the agent named with bytes that are not UTF-8 (they are
    surrogates in a ``str``) is shown with ``\\xff`` escapes, so every report can hold it."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class Check(BaseModel):
    """One named assertion and its outcome."""

    name: str
    passed: bool
    detail: str = ""

    @field_validator("name", "detail")
    @classmethod
    def _printable(cls, value: str) -> str:
        return printable(value)

    def __str__(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        return f"[{mark}] {self.name}" + (f": {self.detail}" if self.detail else "")


class TestRecord(BaseModel):
    """One test as a test-running grader saw it (the judge: ``judged_tests``)."""

    __test__ = False  # not a test class, whatever its name says

    id: str
    file: str = ""
    """The test's file, relative to the tree ("" when the runner cannot tell)."""
    source: str = ""
    """Where the file came from: "holdout", "fixture", or "" when unknown."""
    outcome: str
    """passed, failed, error, skipped, expected_failure or unexpected_success."""
    assertions: int | None = None
    """Assertions the test executed (assert methods and ``assert`` statements); None when
    the runner does not count."""
    message: str = ""
    """For a test that did not pass: the assertion's message or the exception; for a skip,
    its reason."""
    line: int | None = None
    """The line of the test file where it failed."""


class Evidence(BaseModel):
    """What a test-running grader saw each test do: the witness of a verdict."""

    tests: list[TestRecord] = Field(default_factory=list)
    silent: list[str] = Field(default_factory=list)
    """Test modules of the holdout that gave no test at all (never discovered)."""


class EnvironmentFault(BaseModel):
    """Why a failing verdict is the environment's, set by the harness where the harness itself
    failed (today: :func:`endstate_harness.graders.resolve` could not load a grader).

    Why a field and not words in the reason: a reason quotes what the end state holds (file
    names, link targets, a test's output), so any marker text could be written by the agent,
    and one dangling link named with it would turn every failing attempt into an *error*
    (eval) or an *unassessed* check (prove). Nothing reads a reason to classify a verdict;
    only harness code sets this field, and no grader output is ever parsed into it.
    """

    kind: Literal["grader-unresolved"]
    detail: str

    @field_validator("detail")
    @classmethod
    def _printable(cls, value: str) -> str:
        return printable(value)


class Verdict(BaseModel):
    """A grader's answer: a conjunction of checks, plus a reason when it failed."""

    passed: bool
    reason: str = ""
    checks: list[Check] = Field(default_factory=list)
    evidence: Evidence | None = None
    """Per-test evidence, from a grader that reports it (``judged_tests``); a merged verdict
    has none (it is no one grader's)."""
    environment: EnvironmentFault | None = None
    """Set by the harness alone when the failure is the environment's (see
    :class:`EnvironmentFault`); a merged verdict keeps the first. ``graders.environment``
    reads this field, never the reason."""

    @field_validator("reason")
    @classmethod
    def _printable(cls, value: str) -> str:
        return printable(value)

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
            environment=self.environment or other.environment,
        )

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]
