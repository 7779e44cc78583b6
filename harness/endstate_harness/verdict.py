"""Checks and verdicts: what a grader answers.

Plain values (:mod:`endstate_harness.values`) standing for the pydantic model of the same
names, :mod:`endstate_harness.verdict_model`: a verdict built from plain types (every built-in
grader's, the judge's report) is taken as it is, anything else is read by the model (its
coercions, its errors). Why: reading one judge's report imported pydantic, ~0.1 s of a
one-check prove (issue 48).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from endstate_harness.values import REQUIRED, Value


def printable(text: str) -> str:
    """``text`` as valid UTF-8: a path the agent named with bytes that are not UTF-8 (they are
    surrogates in a ``str``) is shown with ``\\xff`` escapes, so every report can hold it."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _text(value: Any) -> bool:
    return type(value) is str


def _count(value: Any) -> bool:
    return value is None or type(value) is int


def _fields(data: Any, cls: type[Value]) -> bool:
    """A dict of no key but the class's fields, every field without a default present."""
    return type(data) is dict and set(data) <= set(cls._defaults) and all(
        name in data for name, default in cls._defaults.items() if default is REQUIRED)


def _part(value: Any, cls: type[Value], optional: bool = False) -> bool:
    """A nested part: one of ``cls``'s values, or data its plain check is sure of."""
    if value is None:
        return optional
    return type(value) is cls or cls._plain(value)


class _Answer(Value):
    _model_module = "endstate_harness.verdict_model"


class Check(_Answer):
    """One named assertion and its outcome."""

    _defaults: ClassVar[dict[str, Any]] = {"name": REQUIRED, "passed": REQUIRED, "detail": ""}
    name: str
    passed: bool
    detail: str

    @classmethod
    def _plain(cls, data: Any) -> bool:
        return (_fields(data, cls) and _text(data["name"]) and type(data["passed"]) is bool
                and _text(data.get("detail", "")))

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        return printable(raw) if name in ("name", "detail") else raw

    def __str__(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        return f"[{mark}] {self.name}" + (f": {self.detail}" if self.detail else "")


class TestRecord(_Answer):
    """One test as a test-running grader saw it (the judge: ``judged_tests``)."""

    __test__ = False  # not a test class, whatever its name says

    _defaults: ClassVar[dict[str, Any]] = {
        "id": REQUIRED, "file": "", "source": "", "outcome": REQUIRED, "assertions": None,
        "message": "", "line": None,
    }  # fmt: skip
    id: str
    file: str
    """The test's file, relative to the tree ("" when the runner cannot tell)."""
    source: str
    """Where the file came from: "holdout", "fixture", or "" when unknown."""
    outcome: str
    """passed, failed, error, skipped, expected_failure or unexpected_success."""
    assertions: int | None
    """Assertions the test executed (assert methods and ``assert`` statements); None when
    the runner does not count."""
    message: str
    """For a test that did not pass: the assertion's message or the exception; for a skip,
    its reason."""
    line: int | None
    """The line of the test file where it failed."""

    @classmethod
    def _plain(cls, data: Any) -> bool:
        return (_fields(data, cls)
                and all(_text(data.get(k, "")) for k in ("id", "file", "source", "outcome",
                                                         "message"))
                and _count(data.get("assertions")) and _count(data.get("line")))


class Evidence(_Answer):
    """What a test-running grader saw each test do: the witness of a verdict."""

    _defaults: ClassVar[dict[str, Any]] = {"tests": list, "silent": list}
    tests: list[TestRecord]
    silent: list[str]
    """Test modules of the holdout that gave no test at all (never discovered)."""

    @classmethod
    def _plain(cls, data: Any) -> bool:
        tests, silent = (data.get("tests", []), data.get("silent", [])) if type(
            data) is dict else (None, None)
        return (_fields(data, cls) and type(tests) is list
                and all(_part(t, TestRecord) for t in tests)
                and type(silent) is list and all(_text(s) for s in silent))

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        if name == "tests":
            return [TestRecord.model_validate(t) for t in raw]
        return list(raw)


class EnvironmentFault(_Answer):
    """Why a failing verdict is the environment's, set by the harness where the harness itself
    failed (today: :func:`endstate_harness.graders.resolve` could not load a grader).

    Why a field and not words in the reason: a reason quotes what the end state holds (file
    names, link targets, a test's output), so any marker text could be written by the agent,
    and one dangling link named with it would turn every failing attempt into an *error*
    (eval) or an *unassessed* check (prove). Nothing reads a reason to classify a verdict;
    only harness code sets this field, and no grader output is ever parsed into it.
    """

    _defaults: ClassVar[dict[str, Any]] = {"kind": REQUIRED, "detail": REQUIRED}
    kind: Literal["grader-unresolved"]
    detail: str

    @classmethod
    def _plain(cls, data: Any) -> bool:
        return (_fields(data, cls) and data["kind"] == "grader-unresolved"
                and type(data["kind"]) is str and _text(data["detail"]))

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        return printable(raw) if name == "detail" else raw


class Verdict(_Answer):
    """A grader's answer: a conjunction of checks, plus a reason when it failed."""

    _defaults: ClassVar[dict[str, Any]] = {
        "passed": REQUIRED, "reason": "", "checks": list, "evidence": None, "environment": None,
    }  # fmt: skip
    passed: bool
    reason: str
    checks: list[Check]
    evidence: Evidence | None
    """Per-test evidence, from a grader that reports it (``judged_tests``); a merged verdict
    has none (it is no one grader's)."""
    environment: EnvironmentFault | None
    """Set by the harness alone when the failure is the environment's (see
    :class:`EnvironmentFault`); a merged verdict keeps the first. ``graders.environment``
    reads this field, never the reason."""

    @classmethod
    def _plain(cls, data: Any) -> bool:
        checks = data.get("checks", []) if type(data) is dict else None
        return (_fields(data, cls) and type(data["passed"]) is bool
                and _text(data.get("reason", "")) and type(checks) is list
                and all(_part(c, Check) for c in checks)
                and _part(data.get("evidence"), Evidence, optional=True)
                and _part(data.get("environment"), EnvironmentFault, optional=True))

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        if name == "reason":
            return printable(raw)
        if name == "checks":
            return [Check.model_validate(c) for c in raw]
        if name == "evidence" and raw is not None:
            return Evidence.model_validate(raw)
        if name == "environment" and raw is not None:
            return EnvironmentFault.model_validate(raw)
        return raw

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
