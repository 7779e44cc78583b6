"""One record per grader: each record is true of its grader, and every grader table is the
records' (``endstate_harness.graders.names``)."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from endstate_harness.graders import BUILTIN_GRADERS, check_contract, reads_sealed_state_only
from endstate_harness.graders import resolve as resolve_grader
from endstate_harness.graders.environment import programs_of
from endstate_harness.graders.names import (
    GRADERS,
    LIBRARY,
    RECORDS,
    REFERENCE_MODULE,
    REFERENCE_SOURCE,
    THIS_MODULE,
    VENDORED_GRADERS,
    VENDORED_MODULES,
    GraderRecord,
    PathArgument,
    _registered,
)
from endstate_harness.graders.reference import REFERENCE_GRADERS
from endstate_harness.task import GraderSpec

ROOT = Path(__file__).resolve().parents[2]


def _grader_docs() -> ModuleType:
    """scripts/grader_docs.py (the docs page's writer, a script rather than a package module)."""
    spec = importlib.util.spec_from_file_location("grader_docs", ROOT / "scripts/grader_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("record", GRADERS, ids=lambda r: r.name)
def test_each_record_is_true_of_its_grader(record: GraderRecord) -> None:
    function = record.load()
    assert function.__module__ == record.module and function.__name__ == record.name
    check_contract(record.name, function)
    try:  # what reads annotations at run time evaluates them: a module may defer them
        signature = inspect.signature(function, eval_str=True)
    except Exception as exc:
        pytest.fail(f"{record.module}.{record.name}: its annotations do not evaluate at run "
                    f"time ({type(exc).__name__}: {exc}); import what they name at the top of "
                    "the module, not under TYPE_CHECKING")
    params = signature.parameters
    signature.bind(None, **record.example)
    if record.runs_tests == "unittest":
        assert "python" in params and isinstance(params["python"].default, str)
        assert {"start_dir", "pattern", "top_level_dir"} <= set(params)
        assert programs_of([GraderSpec(name=f"{THIS_MODULE}:{record.name}")]) == [
            params["python"].default]
    if record.runs_tests == "command":
        assert "command" in params
    if record.reads_paths is not None:
        assert record.reads_paths.name in params
    names = [f"{THIS_MODULE}:{record.name}"]
    if record.reference:
        names.append(f"{REFERENCE_MODULE}:{record.name}")
        assert REFERENCE_GRADERS[record.name] is function
    for name in names:
        spec = GraderSpec(name=name, args=dict(record.example))
        assert resolve_grader(spec).__name__ == record.name
        assert reads_sealed_state_only(spec) is record.sealed_only


def test_the_tables_are_the_records() -> None:
    assert LIBRARY == {r.name: r.module for r in GRADERS}
    assert list(BUILTIN_GRADERS) == list(RECORDS)
    assert set(REFERENCE_GRADERS) == {r.name for r in GRADERS if r.reference}
    assert VENDORED_GRADERS == ("tests_pass", "judged_tests", "delegates_to")
    assert VENDORED_MODULES == (
        "endstate_harness.graders.unittest_grader",
        "endstate_harness.graders.judge.evidence",
        "endstate_harness.graders.judge.launch",
        "endstate_harness.graders.judge.grader",
        "endstate_harness.graders.pysource",
        "endstate_harness.graders.codeshape",
        "endstate_harness.graders.structure",
    )  # the order the vendored module has always been written in (its hash depends on it)


def test_a_record_that_cannot_be_right_says_why() -> None:
    """Each record is checked as the register is built, when the package is imported."""
    bad = {
        r"is not below endstate_harness\.graders": GraderRecord("x", "mysuite.graders"),
        "a reference grader is defined in": GraderRecord(
            "x", "endstate_harness.graders.structure", reference=True),
        "only this toolkit's own are vendored": GraderRecord(
            "x", REFERENCE_SOURCE, reference=True, vendor_with=()),
        "does not read only the sealed state": GraderRecord(
            "x", "endstate_harness.graders.x", sealed_only=True, runs_tests="command"),
        "runs_tests is 'pytest'": GraderRecord(
            "x", "endstate_harness.graders.x", runs_tests="pytest"),  # type: ignore[arg-type]
        "not a Python identifier": GraderRecord("x-y", "endstate_harness.graders.x"),
    }
    for message, record in bad.items():
        with pytest.raises(ValueError, match=message):
            _registered((record,))
    one = GraderRecord("x", "endstate_harness.graders.x", reads_paths=PathArgument("path"))
    _registered((one,))
    with pytest.raises(ValueError, match="two grader records are named 'x'"):
        _registered((one, GraderRecord("x", "endstate_harness.graders.y")))


def test_the_docs_page_lists_every_record() -> None:
    page = _grader_docs().page_sections()
    for record in GRADERS:
        assert f"### `{record.name}`" in page
        assert f"`{THIS_MODULE}:{record.name}`" in page
    assert page.count("(ES506)") == sum(r.reads_paths is not None for r in GRADERS)
