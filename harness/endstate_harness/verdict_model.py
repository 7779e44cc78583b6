"""The pydantic model of what a grader answers: checks, per-test evidence, verdicts.

The one source of truth of what a verdict may hold (its types and their coercions, the
printable text): :mod:`endstate_harness.verdict`'s plain values of the same names take data
their plain checks are sure of as it is and send anything else here (see
:mod:`endstate_harness.values`). Apart so that reading a judge's report, which is plain JSON
of plain types, never imports pydantic (~0.1 s of a one-check prove, issue 48).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from endstate_harness.verdict import printable


class Check(BaseModel):
    """One named assertion and its outcome."""

    name: str
    passed: bool
    detail: str = ""

    @field_validator("name", "detail")
    @classmethod
    def _printable(cls, value: str) -> str:
        return printable(value)


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
    """The model of :class:`endstate_harness.verdict.EnvironmentFault` (why a failing verdict
    is the environment's, and why that is a field rather than words in the reason: see it)."""

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
