"""prove's wire format (:mod:`endstate_author.prove.wire`): one versioned record of a check
result for ``-o json``, ``--progress-json``, the caches and the language server, written and
read back by one module (issue 43, item 5)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

import pytest

from endstate_author.prove import wire
from endstate_author.prove.model import CheckResult, TaskProof
from endstate_harness.sandbox.choice import SandboxChoice
from tests.prove.test_checkcache import task  # noqa: F401  (the fixture)
from tests.prove.test_prove import prove

FULL = CheckResult(
    "probe stub-out", "probes", "fail", seconds=1.23456, detail="the graders accepted it",
    code="ES903", grader_index=2, severity="warning", path="solution/a.py", line=7,
    cached=True, tests=[{"id": "t.T.test_x", "outcome": "pass"}], unrun=False,
    walls="bubblewrap", counterexample={"call": "f(1)", "assertion": "self.assertEqual(f(1), 2)"},
)
BARE = CheckResult("fixture fails", "directions", "pass")


def _through_json(data: object) -> object:
    return json.loads(json.dumps(data))


def test_every_field_has_its_rule_on_the_wire() -> None:
    assert set(wire._VALID) == {f.name for f in fields(CheckResult)}


@pytest.mark.parametrize("result", [FULL, BARE], ids=["every-field", "defaults"])
def test_a_check_result_round_trips(result: CheckResult) -> None:
    back = wire.decode_check(_through_json(wire.encode_check(result)))
    assert back is not None
    assert asdict(back) == {**asdict(result), "seconds": round(result.seconds, 3)}


def test_null_fields_are_left_out_and_read_back_as_null() -> None:
    data = wire.encode_check(BARE)
    assert "tests" not in data and "counterexample" not in data and "code" not in data
    assert data["group"] == "directions" and data["cached"] is False


@pytest.mark.parametrize(
    "data",
    [
        {"check": "x", "group": "g", "outcome": "maybe"},
        {"check": "x", "group": "g", "outcome": "pass", "seconds": "1"},
        {"check": "x", "group": "g", "outcome": "pass", "cached": "yes"},
        {"check": "x", "group": "g", "outcome": "pass", "line": True},
        {"check": "x", "group": "g", "outcome": "pass", "surprise": 1},
        {"group": "g", "outcome": "pass"},
        ["check", "x"],
    ],
)
def test_what_is_not_a_check_result_is_refused(data: object) -> None:
    assert wire.decode_check(data) is None


def test_the_unversioned_report_of_before_is_read_alike() -> None:
    old = {"tasks": [{"task": "t", "path": "/t", "checks": [
        {"check": "solution passes", "outcome": "fail", "seconds": 0.2, "detail": "x",
         "walls": "none"}]}]}
    [check] = wire.report_checks(old)
    assert (check.check, check.outcome, check.group, check.walls) == (
        "solution passes", "fail", "", "none")


def test_a_newer_version_is_refused_never_guessed_at() -> None:
    newer = wire.WIRE_VERSION + 1
    event = {**wire.done_event("t", BARE.check, BARE), "wire_version": newer}
    with pytest.raises(wire.WireVersionError, match=f"wire version {newer}"):
        wire.decode_event(event)
    with pytest.raises(wire.WireVersionError):
        wire.report_checks({"wire_version": newer, "tasks": []})


def test_events_round_trip() -> None:
    choice = SandboxChoice("docker", "endstate-sandbox:1", reason="Docker answers")
    sandbox = wire.decode_line(json.dumps(wire.sandbox_event(choice)))
    assert sandbox is not None and sandbox.sandbox == choice.for_grading()
    done = wire.decode_line(json.dumps(wire.done_event("t", FULL.check, FULL)))
    assert done is not None and done.result is not None and done.result.cached is True
    assert (done.kind, done.task, done.check) == ("done", "t", FULL.check)
    finished = wire.decode_event(wire.task_event(TaskProof("t", Path("/t"), cached=True)))
    assert finished is not None and (finished.kind, finished.cached) == ("task", True)
    assert wire.decode_line("checking: fixture fails") is None
    # a result under another check's name is no event of that check
    assert wire.decode_event({**wire.done_event("t", "other", FULL)}) is None


def test_the_report_and_the_stream_carry_one_record(task: Path, tmp_path: Path) -> None:  # noqa: F811
    """A real prove, ``-o json`` and ``--progress-json`` at once: the report says its
    version, and each of its checks is the very record the stream carried for it."""
    rc, report, err = prove(str(task), "--only", "directions", "--progress-json",
                            cache=tmp_path / "cache")
    assert rc == 0, report
    assert report["wire_version"] == wire.WIRE_VERSION
    streamed = {}
    for line in err.splitlines():
        event = wire.decode_line(line)
        if event is not None and event.result is not None:
            streamed[event.check] = event.result
    reported = wire.report_checks(report)
    ran = [c for c in reported if c.outcome != "skipped"]
    assert ran and {c.check for c in ran} == set(streamed)
    for check in ran:
        assert asdict(check) == asdict(streamed[check.check])
        assert check.group == "directions" and check.walls in ("bubblewrap", "none")
