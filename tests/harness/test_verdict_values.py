"""A verdict's plain values (``endstate_harness.verdict``) against the pydantic model they stand
for (``endstate_harness.verdict_model``): the same fields and defaults, the same value for any
data the model accepts (its coercions, its printable text), the model's own errors for what it
refuses; and reading a judge's report imports no pydantic (issue 48)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from endstate_harness import values, verdict, verdict_model

PARTS = ("Check", "TestRecord", "Evidence", "EnvironmentFault", "Verdict")


@pytest.mark.parametrize("name", PARTS)
def test_every_field_and_default_is_the_models(name: str) -> None:
    value: type[values.Value] = getattr(verdict, name)
    model: type[BaseModel] = getattr(verdict_model, name)
    assert list(value._defaults) == list(model.model_fields)
    for field, info in model.model_fields.items():
        ours = value._defaults[field]
        if info.is_required():
            assert ours is values.REQUIRED, field
        else:
            assert (ours() if callable(ours) else ours) == info.get_default(
                call_default_factory=True), field


def _outcome(cls: Any, data: Any) -> Any:
    try:
        return ("ok", cls.model_validate(data).model_dump())
    except ValidationError as exc:
        return ("error", exc.errors(include_url=False))


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                    st.text(max_size=4), st.sampled_from(["\udcff", "grader-unresolved", "1"]))
records = st.fixed_dictionaries(
    {"id": scalars, "outcome": scalars},
    optional={"file": scalars, "source": scalars, "assertions": scalars, "message": scalars,
              "line": scalars, "extra": scalars})
checks = st.fixed_dictionaries({"name": scalars, "passed": scalars},
                               optional={"detail": scalars, "extra": scalars})
evidence = st.fixed_dictionaries({}, optional={"tests": st.lists(records, max_size=2),
                                               "silent": st.lists(scalars, max_size=2)})
faults = st.fixed_dictionaries({"kind": scalars, "detail": scalars})
verdicts = st.fixed_dictionaries(
    {"passed": scalars},
    optional={"reason": scalars, "checks": st.lists(checks, max_size=2),
              "evidence": st.one_of(st.none(), evidence),
              "environment": st.one_of(st.none(), faults)})
DATA = {"Check": checks, "TestRecord": records, "Evidence": evidence,
        "EnvironmentFault": faults, "Verdict": verdicts}


@pytest.mark.parametrize("name", PARTS)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_data_gets_the_models_answer(name: str, data: st.DataObject) -> None:
    doc = data.draw(st.one_of(DATA[name], scalars))
    assert _outcome(getattr(verdict, name), doc) == _outcome(getattr(verdict_model, name), doc)


def test_the_interface_graders_and_prove_use() -> None:
    ok = verdict.Check(name="a", passed=True)
    bad = verdict.Check(name="b\udcff", passed=False, detail="why")
    assert bad.name == "b\\xff" and str(ok) == "[pass] a"
    joined = verdict.Verdict.from_checks([ok, bad])
    assert not joined.passed and joined.reason == "b\\xff" and joined.failed_checks == [bad]
    found = {"tests": [{"id": "t", "outcome": "passed", "assertions": 2}], "silent": ["x.py"]}
    with_evidence = verdict.Verdict.model_validate({**dict(joined), "evidence": found})
    assert with_evidence.checks[0] is ok and with_evidence.evidence is not None
    assert with_evidence.evidence.tests[0].model_dump()["assertions"] == 2
    merged = verdict.Verdict.ok().merged_with(with_evidence)
    assert merged.evidence is None and not merged.passed
    assert verdict.Check(name="c", passed=1).passed is True  # the model's coercion


def test_reading_a_judges_report_imports_no_pydantic() -> None:
    probe = (
        "import sys\n"
        "from endstate_harness.verdict import Check, Verdict\n"
        "v = Verdict.from_checks([Check(name='t', passed=True)])\n"
        "found = {'tests': [{'id': 't', 'file': 'tests/t.py', 'source': 'holdout',\n"
        "  'outcome': 'passed', 'assertions': 1, 'message': '', 'line': None}], 'silent': []}\n"
        "v = Verdict.model_validate({**dict(v), 'evidence': found})\n"
        "assert v.passed and v.evidence.tests[0].id == 't'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_a_value_is_a_field_of_a_pydantic_model_as_the_model_was() -> None:
    """``TaskResult.checks`` (results.json): validated by the model, dumped as plain data."""
    from endstate_harness.runner import TaskResult

    kept = verdict.Check(name="x", passed=True)
    result = TaskResult(task_id="t", category="bug-fix", passed=False,
                        checks=[kept, {"name": "y\udcff", "passed": 0, "detail": "d"}])
    assert result.checks[0] is kept and result.checks[1] == verdict.Check(
        name="y\\xff", passed=False, detail="d")
    assert result.model_dump()["checks"][1] == {"name": "y\\xff", "passed": False, "detail": "d"}
    again = TaskResult.model_validate_json(result.model_dump_json())
    assert again.checks == result.checks
    with pytest.raises(ValidationError):
        TaskResult(task_id="t", category="c", passed=True, checks=[{"name": "z"}])
